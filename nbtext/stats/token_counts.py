"""A model's per-class counts of every token seen: dense, or the model file's CSR rows.

A model trained in this process holds its counts as a dense (n_classes, n_tokens) array;
one loaded from a file holds the file's CSR rows and expands them only when something
needs every column. `ClassCounts` answers the same questions either way, so the
question of which form it is in lives here alone.
"""

from functools import cached_property

import numpy as np


class ClassCounts:
    """Counts B_kt, shape (n_classes, n_tokens): occurrences of token t in class k, or
    (presence counting) the class-k documents that contain it."""

    def __init__(self, dense=None, csr=None, shape=None):
        self._dense = None if dense is None else np.asarray(dense, dtype=np.float64)
        self._csr = csr  # (data, indices sorted within a row, indptr)
        self.shape = self._dense.shape if dense is not None else shape

    @classmethod
    def from_csr(cls, data, indices, indptr, n_tokens):
        return cls(csr=(data, indices, indptr), shape=(len(indptr) - 1, n_tokens))

    @cached_property
    def dense(self):
        """Every count, (n_classes, n_tokens) (expanded from CSR rows on first use)."""
        if self._dense is not None:
            return self._dense
        data, indices, _ = self._csr
        dense = np.zeros(self.shape)
        dense[self._rows, indices] = data
        return dense

    @property
    def expanded(self):
        return self._dense is not None or "dense" in self.__dict__

    def csr(self):
        """(data, indices, indptr) of the nonzero counts, row by row (what the file stores)."""
        if self._csr is not None:
            return self._csr
        rows, cols = np.nonzero(self._dense)
        indptr = np.zeros(self.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.shape[0]), out=indptr[1:])
        return self._dense[rows, cols], cols, indptr

    @cached_property
    def _rows(self):
        """The class of each stored CSR entry."""
        return np.repeat(np.arange(self.shape[0]), np.diff(self._csr[2]))

    def _sum_by(self, rows, weights, n):
        return np.bincount(rows, weights=weights, minlength=n).astype(np.float64)

    @cached_property
    def token_totals(self):
        """Σ_k B_kt, each token's count over all classes, shape (n_tokens,)."""
        if self._csr is None:
            return self._dense.sum(axis=0)
        data, indices, _ = self._csr
        return self._sum_by(indices, data, self.shape[1])

    @cached_property
    def class_totals(self):
        """Σ_t B_kt, each class's count over all tokens, shape (n_classes,)."""
        if self._csr is None:
            return self._dense.sum(axis=1)
        return self._sum_by(self._rows, self._csr[0], self.shape[0])

    def class_totals_over(self, chosen):
        """Σ_t chosen_t · B_kt per class, for a 0/1 vector `chosen` over the tokens."""
        if self._csr is None:
            return self._dense @ chosen
        data, indices, _ = self._csr
        return self._sum_by(self._rows, data * chosen[indices], self.shape[0])

    def placed(self, column_of_token, n_columns):
        """B with token t's counts moved to column column_of_token[t] (< 0: left out), shape
        (n_classes, n_columns): one scatter of the stored entries, where `columns` would
        search every class's row once per wanted token: several times faster on a loaded
        model's feature counts, paid before `predict -j N` forks its workers
        (docs/performance.md, figures behind the code)."""
        out = np.zeros((self.shape[0], n_columns))
        placed = column_of_token >= 0
        if self._csr is None:
            out[:, column_of_token[placed]] = self._dense[:, placed]
            return out
        data, indices, _ = self._csr
        target = column_of_token[indices]
        stored = target >= 0
        out[self._rows[stored], target[stored]] = data[stored]
        return out

    def columns(self, wanted):
        """B[:, wanted], shape (n_classes, len(wanted)): from CSR rows without expanding them."""
        if self.expanded:
            return self.dense[:, wanted]
        data, indices, indptr = self._csr
        out = np.zeros((self.shape[0], len(wanted)))
        for k, (start, end) in enumerate(zip(indptr[:-1], indptr[1:])):
            at = start + np.searchsorted(indices[start:end], wanted)  # sorted within a row
            hit = at < end
            hit[hit] = indices[at[hit]] == wanted[hit]
            out[k, hit] = data[at[hit]]
        return out
