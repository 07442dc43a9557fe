"""Tokens to feature ids to a scipy CSR matrix, built in one pass into flat buffers.

The per-token work is `map(lookup, tokens)`, which runs the dict look-up at C level:
no Python bytecode runs per token, only per document.
"""

from array import array

import numpy as np

DROPPED = -1  # the id of a token that has no feature (unknown, with --unknown ignore)


class FeatureLookup(dict):
    """token -> feature column; a token not in the dict gets `missing` (UNK or DROPPED)."""

    __slots__ = ("missing",)

    def __init__(self, columns, missing):
        super().__init__(columns)
        self.missing = missing

    def __missing__(self, token):
        return self.missing


def ids_and_indptr(token_lists, lookup):
    """Flat feature ids of all documents and the CSR row pointer (offsets into the ids)."""
    flat = array("q")  # a flat C buffer: no Python int object is kept per token
    extend = flat.extend
    ends = [0]
    for tokens in token_lists:
        extend(map(lookup, tokens))
        ends.append(len(flat))
    ids = np.frombuffer(flat, dtype=np.int64) if len(flat) else np.zeros(0, dtype=np.int64)
    indptr = np.array(ends, dtype=np.int64)
    if len(ids) and ids.min() < 0:
        ids, indptr = _drop(ids, indptr)
    return ids, indptr


def _drop(ids, indptr):
    """Remove DROPPED ids and shift the row pointer to match."""
    keep = ids != DROPPED
    row_of_id = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    kept_per_row = np.bincount(row_of_id[keep], minlength=len(indptr) - 1)
    new_indptr = np.zeros_like(indptr)
    np.cumsum(kept_per_row, out=new_indptr[1:])
    return ids[keep], new_indptr


def csr_from_ids(ids, indptr, n_features, binary):
    """The documents x features CSR matrix: counts, or 1 for presence when `binary`."""
    import scipy.sparse as sp

    X = sp.csr_matrix((np.ones(len(ids)), ids, indptr), shape=(len(indptr) - 1, n_features))
    # A token repeated in a document is a repeated (row, id) entry. Sparse products add
    # repeated entries up, so counts need no sorting; presence does.
    if binary:
        X.sum_duplicates()
        X.data[:] = 1.0
    return X


def scores_of_counts(ids, indptr, weights):
    """Σ_j x_ij W_kj for each document i, (documents, rows of W), x_ij the count of id j in
    document i's flat ids. In numpy alone, so that scoring a batch never imports scipy (a
    cost larger than these sums over a run's first few thousand documents: docs/performance.md,
    figures behind the code), and to the
    bit what csr_from_ids(ids, indptr, d, False) @ Wᵀ gives: each sum starts at 0 and adds
    the document's entries in order, as the CSR product does."""
    n_documents = len(indptr) - 1
    document = np.repeat(np.arange(n_documents), np.diff(indptr))
    scores = np.empty((n_documents, weights.shape[0]))
    for k, row in enumerate(weights):
        scores[:, k] = np.bincount(document, weights=row[ids], minlength=n_documents)
    return scores


def document_cells(ids, indptr):
    """(the distinct columns, each distinct (document, column) cell's document, its column's
    index into them, its count) of documents given as flat feature ids with a CSR row
    pointer: cells in document order, columns ascending within each."""
    lengths = np.diff(indptr)
    columns, local = np.unique(ids, return_inverse=True)
    width = max(len(columns), 1)
    document = np.repeat(np.arange(len(lengths)), lengths)
    cells, counts = np.unique(document * width + local.ravel(), return_counts=True)
    cell_document, cell_column = np.divmod(cells, width)
    return columns, cell_document, cell_column, counts


def one_hot(rows, n_classes, weight=1.0):
    """Y, the documents x classes CSR matrix with `weight` at (i, class of document i)."""
    import scipy.sparse as sp

    return sp.csr_matrix(
        (np.full(len(rows), float(weight)), rows, np.arange(len(rows) + 1)), shape=(len(rows), n_classes)
    )
