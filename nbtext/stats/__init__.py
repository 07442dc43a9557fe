"""The statistics a model is: per-class counts of a corpus, the event models that turn them into
log-probabilities, their formulas, and the metrics of predictions."""
