"""The sufficient statistics every event model reads, and the one function that scores.

A Naive Bayes model is its counts. Over the model's features (the kept tokens, then UNK):

    class_count      N_k, documents per class, shape (n_classes,)
    feature_sums     B_kj = Σ_{i in k} x_ij, shape (n_classes, n_features): token counts,
                     documents containing the token (presence), or tf-idf sums
    feature_squares  Σ_{i in k} x_ij², the same shape, or None (only the gaussian model needs them)

with λ (`alpha`), the settings that shape the formulas (the prior, weight normalization,
a table's columns) and the vocabulary that names the columns. An event model (nbtext.stats.event_models) turns them into its scoring
form (W, b, W2); `linear_scores` scores documents with it. The model file stores the counts
per token seen (nbtext.stats.token_counts), pruned ones included, from which a model derives
this record over its features; a merge adds token counts, a calibration fold subtracts its
documents here (`without`).
"""

import numpy as np


class Statistics:
    """The record above. `vocabulary` (nbtext.features.vocabulary.Vocabulary) names the
    columns, for the models that read a feature's name (categorical: its table column)."""

    __slots__ = ("class_count", "feature_sums", "feature_squares", "alpha", "settings", "vocabulary")

    def __init__(self, class_count, feature_sums, feature_squares, alpha, settings, vocabulary=None):
        self.class_count = class_count
        self.feature_sums = feature_sums
        self.feature_squares = feature_squares
        self.alpha = alpha
        self.settings = settings
        self.vocabulary = vocabulary

    @property
    def n_classes(self):
        return len(self.class_count)

    @property
    def n_features(self):
        return self.feature_sums.shape[1]

    def without(self, Y, X):
        """The statistics without the documents of X (their feature values, CSR) whose
        classes are the one-hot rows of Y: a cross-validation fold's model, no retraining.
        (Clipped at 0: a sum rounded below what was taken out is no negative count.)"""
        squares = None
        if self.feature_squares is not None:
            squares = np.maximum(self.feature_squares - np.asarray((Y.T @ X.multiply(X)).todense()), 0.0)
        return Statistics(
            np.maximum(self.class_count - np.asarray(Y.sum(axis=0)).ravel(), 0.0),
            np.maximum(self.feature_sums - np.asarray((Y.T @ X).todense()), 0.0),
            squares,
            self.alpha,
            self.settings,
            self.vocabulary,
        )

    def others_than(self, k):
        """The statistics of one class pooling every class but k (what `nbtext info` weighs a
        token's probability in class k against)."""
        return Statistics(
            np.delete(self.class_count, k).sum(keepdims=True),
            np.delete(self.feature_sums, k, axis=0).sum(axis=0, keepdims=True),
            None,
            self.alpha,
            self.settings,
            self.vocabulary,
        )


def linear_scores(X, form):
    """Each document's Σ_j x_j W_kj + b_k − ½ Σ_j x_j² W2_kj, shape (n_documents, n_classes),
    of feature values X (a scipy CSR matrix) and an event model's scoring form (W, b, W2),
    W2 None but for the gaussian model (the prior is added by the caller, where it enters)."""
    weights, bias, squared = form
    scores = np.asarray(X @ weights.T) + bias
    if squared is not None:
        scores -= 0.5 * np.asarray(X.multiply(X) @ squared.T)
    return scores
