"""Feature values: raw counts, presence (binary), or tf-idf, from a document's counts.

    binary   x_j = 1 if the token occurs
    tfidf    x_j = tf_j · idf_j, then the row scaled to unit L2 length (--length-norm),
             tf_j = count (--tf raw) or log(1 + count) (--tf log),
             idf_j = log((1 + N) / (1 + df_j)) + 1 (--idf; N documents, df_j of them with j)

The idf is scikit-learn's TfidfTransformer(smooth_idf=True) formula, so the two agree.
"""

import numpy as np

from nbtext.exactmath import log

from nbtext.features.matrix import csr_from_ids


def idf_weights(document_frequency, n_documents):
    """idf_j = log((1 + N) / (1 + df_j)) + 1."""
    return log((1.0 + n_documents) / (1.0 + document_frequency)) + 1.0


def is_binary(settings):
    """Whether the features are token presence (0/1): then training counts documents."""
    return settings.get("features") == "binary"


def is_tfidf(settings):
    """Whether the features are tf-idf values: then training counts document frequencies."""
    return settings.get("features") == "tfidf"


def counts_presence(settings):
    """Whether training counts documents containing a token rather than its occurrences:
    for presence features, and for tf-idf (whose document frequencies give the idf)."""
    return is_binary(settings) or is_tfidf(settings)


def feature_matrix(ids, indptr, n_features, settings, idf=None):
    """The documents' feature values as a CSR matrix, from their flat feature ids."""
    X = csr_from_ids(ids, indptr, n_features, is_binary(settings))
    return transform(X, settings, idf) if is_tfidf(settings) else X


def transform(X, settings, idf=None):
    """The feature values of documents whose counts are the CSR matrix X (modified in place)."""
    features = settings.get("features", "counts")
    if features == "binary":
        X.sum_duplicates()
        X.data[:] = 1.0
        return X
    if features != "tfidf":
        return X
    X.sum_duplicates()
    if settings["tf"] == "log":
        X.data[:] = log(1.0 + X.data)  # counts: 1 + x is exact
    if settings["idf"]:
        X.data *= idf[X.indices]
    if settings["length_norm"]:
        lengths = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X.data /= np.repeat(lengths, np.diff(X.indptr))  # empty rows have no data to scale
    return X
