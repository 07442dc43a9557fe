"""The classifier: the NaiveBayes model, its train settings, and one document scored in pure Python."""
