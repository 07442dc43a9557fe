"""Feature values: raw counts, presence (binary), or tf-idf, from a document's counts.

    binary   x_j = 1 if the token occurs
    tfidf    x_j = tf_j · idf_j, then the row scaled to unit L2 length (--length-norm),
             tf_j = count (--tf raw) or log(1 + count) (--tf log),
             idf_j = log((1 + N) / (1 + df_j)) + 1 (--idf; N documents, df_j of them with j)

The idf is scikit-learn's TfidfTransformer(smooth_idf=True) formula, so the two agree.
"""

import numpy as np

FEATURES = ("counts", "binary", "tfidf")
TF_MODES = ("raw", "log")


def idf_weights(document_frequency, n_documents):
    """idf_j = log((1 + N) / (1 + df_j)) + 1."""
    return np.log((1.0 + n_documents) / (1.0 + document_frequency)) + 1.0


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
        np.log1p(X.data, out=X.data)
    if settings["idf"]:
        X.data *= idf[X.indices]
    if settings["length_norm"]:
        lengths = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X.data /= np.repeat(lengths, np.diff(X.indptr))  # empty rows have no data to scale
    return X
