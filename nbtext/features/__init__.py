"""Tokens to features: the vocabulary and UNK, column ids, CSR matrices, counts, presence or tf-idf."""
