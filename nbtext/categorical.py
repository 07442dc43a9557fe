"""Categorical Naive Bayes on tables (seed 000's dating example).

Every column but the label is a categorical feature. A row becomes one token per column,
`column=value`, so the counting of the text models serves unchanged: B_kt is the number
of class-k rows whose column takes that value. Then, with n_j the number of values
feature j takes in training,

    P(x_j = v | y = k) = (B_k,(j,v) + λ) / (N_k + n_j·λ)

and a value never seen in training gets λ / (N_k + n_j·λ) in every class (λ > 0), or is
skipped for that row (λ = 0, where it would rule every class out).
"""

import numpy as np

from nbtext.errors import NbtextError


class RowTokenizer:
    """row (a tuple of cell values, in `columns` order) -> ["column=value", ...]."""

    def __init__(self, columns):
        for name in columns:
            if "=" in name:
                raise NbtextError(f"column name {name!r} contains '='; rename it")
        self.columns = list(columns)
        self.mail_documents = 0

    def settings(self):
        return {"kind": "row", "columns": self.columns}

    def __call__(self, row):
        if isinstance(row, (str, bytes)):
            raise NbtextError("a categorical model classifies table rows (use --table FILE)")
        return [f"{column}={value}" for column, value in zip(self.columns, row)]


def feature_index(tokens, columns):
    """For every token `column=value`, the index of its column in `columns`."""
    position = {name: j for j, name in enumerate(columns)}
    return np.array([position[t.split("=", 1)[0]] for t in tokens], dtype=np.intp)


def categorical_log_prob(feature_count, class_count, alpha, feature_of, n_features):
    """(log P(x_j = v | k) for every token, shape (n_classes, n_tokens); the log-probability
    of an unseen value of each feature, shape (n_classes, n_features), or None for λ = 0)."""
    n_values = np.bincount(feature_of, minlength=n_features)  # n_j
    denominator = class_count[:, None] + n_values[None, :] * alpha  # N_k + n_j·λ
    with np.errstate(divide="ignore"):  # λ = 0: an unseen (class, value) pair is log 0 = -inf
        seen = np.log(feature_count + alpha) - np.log(denominator[:, feature_of])
        unseen = np.log(alpha) - np.log(denominator) if alpha > 0 else None
    return seen, unseen


def categorical_jll(ids_per_row, unseen_features, seen, unseen):
    """Σ_j log P(x_j | k) for each row: gathered per row (never a dense product, where
    0·(−inf) would be NaN). Unseen values add `unseen`, or nothing when it is None."""
    jll = np.zeros((len(ids_per_row), seen.shape[0]))
    for i, (ids, missing) in enumerate(zip(ids_per_row, unseen_features)):
        jll[i] = seen[:, ids].sum(axis=1)
        if unseen is not None and missing:
            jll[i] += unseen[:, missing].sum(axis=1)
    return jll
