"""Counting a labelled corpus: the sufficient statistics that are the model.

With Y the one-hot label matrix (documents x classes) and X the document-term matrix
(documents x tokens), each batch adds (summed by its (class, token) pairs, in numpy)

    class_count   = column sums of Y          (documents per class)
    token_counts  = Yᵀ X                      (token occurrences, or documents containing
                                               the token when X is binary)

Nothing but these counts and the vocabulary is kept, so memory is
O(classes x vocabulary) plus one batch, however large the corpus.
"""

from collections import defaultdict

import numpy as np

from nbtext.choices import MAX_CLASSES
from nbtext.errors import NbtextError
from nbtext.features.matrix import ids_and_indptr
from nbtext.features.weighting import counts_presence
from nbtext.reading.documents import data_key, tokenized_with
from nbtext.stats.changes import LEARNED_STEP, moves


class CountTable:
    """Counts of every token seen, per class; grows as batches are added.

    Columns are handed out in order of first appearance; `sorted_view()` returns the
    counts with the vocabulary sorted, so the result does not depend on batch order.
    """

    def __init__(self, binary):
        self.binary = binary
        self.token_columns: defaultdict[str, int] = defaultdict()
        self.token_columns.default_factory = self.token_columns.__len__  # new token -> next column
        self.labels = {}
        self._class_count = np.zeros(0)
        self._token_counts = np.zeros((0, 0))

    @property
    def class_count(self):
        """Documents per class, shape (n_classes,)."""
        return self._class_count[: len(self.labels)]

    @property
    def token_counts(self):
        """Counts of every token, shape (n_classes, n_tokens)."""
        return self._token_counts[: len(self.labels), : len(self.token_columns)]

    def _reserve(self, n_classes, n_tokens):
        if n_classes > MAX_CLASSES:  # every table and report holds a row per class; a model file too
            raise NbtextError(f"more than {MAX_CLASSES:,} classes: nbtext models hold at most that many")
        rows, cols = self._token_counts.shape
        if n_classes <= rows and n_tokens <= cols:
            return
        # double only the side that is short: doubling both at once grew the tokens' side
        # whenever a class arrived, to far more columns than there were tokens
        # (docs/performance.md, figures behind the code)
        grown = np.zeros(
            (
                rows if n_classes <= rows else max(n_classes, 2 * rows),
                cols if n_tokens <= cols else max(n_tokens, 2 * cols),
            )
        )
        grown[:rows, :cols] = self._token_counts
        self._token_counts = grown
        if grown.shape[0] > len(self._class_count):
            class_count = np.zeros(grown.shape[0])
            class_count[: len(self._class_count)] = self._class_count
            self._class_count = class_count

    @classmethod
    def from_counts(cls, binary, classes, tokens, class_count, token_counts):
        """A table holding existing counts (a trained model's), to add documents to."""
        table = cls(binary)
        table.labels.update((label, k) for k, label in enumerate(classes))
        table.token_columns.update((token, j) for j, token in enumerate(tokens))
        table._class_count = np.array(class_count, dtype=np.float64)
        table._token_counts = np.array(token_counts, dtype=np.float64).reshape(len(classes), len(tokens))
        return table

    def add(self, token_lists, labels, sign):
        """Count documents that all take one step (nbtext.stats.changes.moves): `token_lists[i]`,
        a document's tokens, joins (`sign` +1) or leaves (−1, an exact inverse) the class
        `labels[i]`. Returns the documents' column ids and CSR row pointer.
        """
        rows = np.fromiter(
            (self.labels.setdefault(label, len(self.labels)) for label in labels),
            dtype=np.intp,
        )
        ids, indptr = ids_and_indptr(token_lists, self.token_columns.__getitem__)
        self._reserve(len(self.labels), len(self.token_columns))
        self._class_count[: len(self.labels)] += class_steps(rows, len(self.labels), sign)
        if len(ids) == 0:
            return ids, indptr
        classes, columns, counts = cell_counts(rows, ids, indptr, len(self.token_columns), self.binary)
        self._token_counts[classes, columns] += sign * counts
        return ids, indptr

    def apply(self, changes):
        """Count `changes` (nbtext.stats.changes.Change) in: each one's tokens leave the class it
        leaves and join the one it joins (changes.moves), the leaving ones first."""
        for sign, token_lists, labels in moves(changes):
            self.add(token_lists, labels, sign)

    def forgets_uncounted(self):
        """Whether changes applied took a count below 0: a document forgotten or moved from a
        class whose counts never held it (a journal, or a pending record's tokens, that lie)."""
        return bool((self.class_count < 0).any() or (self.token_counts < 0).any())

    def count(self, token_lists, labels):
        """A training's batch added (each document joins its class: changes.LEARNED_STEP), as
        count_batch calls a counter: (this table, now holding the batch, ids, indptr)."""
        return (self, *self.add(token_lists, labels, LEARNED_STEP))

    def export(self):
        """The counts as plain lists and arrays (sparse), cheap to send between processes."""
        rows, cols = np.nonzero(self.token_counts)
        return (
            list(self.labels),
            list(self.token_columns),
            self.class_count.copy(),
            rows.astype(np.int32),
            cols.astype(np.int32),
            self.token_counts[rows, cols],
        )

    def merge(self, exported, known=None):
        """Add counts exported by another table (a worker that counted other documents), or
        by a ColumnCounter, whose batches name only the tokens it had not sent before: then
        `known` is the column in this table of each one it sent (what the last merge of its
        batches returned). Returns the column in this table of each of that table's columns."""
        labels, tokens, class_count, rows, cols, data = exported
        row_map = np.array([self.labels.setdefault(label, len(self.labels)) for label in labels], dtype=np.intp)
        col_map = np.fromiter(map(self.token_columns.__getitem__, tokens), dtype=np.intp, count=len(tokens))
        if known is not None:
            col_map = np.concatenate([known, col_map])
        self._reserve(len(self.labels), len(self.token_columns))
        self._class_count[row_map] += class_count
        self._token_counts[row_map[rows], col_map[cols]] += data  # (row, col) pairs are unique
        return col_map

    def sorted_view(self):
        """(classes, tokens, class_count, token_counts), classes and tokens sorted."""
        classes = sorted(self.labels)
        row_order = np.array([self.labels[c] for c in classes], dtype=np.intp)
        # a token whose every count went back to 0 (its documents forgotten) is as unseen
        totals = np.abs(self.token_counts).sum(axis=0) if len(self.labels) else np.zeros(len(self.token_columns))
        names = list(self.token_columns)  # in column order: columns are handed out as tokens arrive
        alive = totals > 0
        columns = range(len(names)) if alive.all() else np.flatnonzero(alive).tolist()
        sorted_columns = sorted(columns, key=names.__getitem__)  # the columns in the order of their tokens
        tokens = [names[j] for j in sorted_columns]
        col_order = np.array(sorted_columns, dtype=np.intp)
        token_counts = self.token_counts
        if len(classes) and len(tokens):
            token_counts = token_counts[np.ix_(row_order, col_order)]
        else:
            token_counts = np.zeros((len(classes), len(tokens)))
        return classes, tokens, self.class_count[row_order], token_counts


def class_steps(rows, n_classes, sign):
    """The change of each class's documents when the documents of class rows `rows` all take
    the step `sign` (nbtext.stats.changes.moves: +1 joining, −1 leaving): floats, a count
    table's."""
    return (sign * np.bincount(rows, minlength=n_classes)).astype(np.float64)


def cell_counts(rows, ids, indptr, n_columns, binary):
    """Yᵀ X of a batch as its nonzero cells, (classes, columns, counts): each (class,
    column) pair once, with how often it occurs, or (`binary`: presence) in how many
    documents. `rows` is each document's class row, (ids, indptr) its columns (CSR, of
    `n_columns`). In numpy alone (no scipy import for counting, a cost every process would
    pay: docs/performance.md, figures behind the code).
    Whole numbers, so the sums are exact in any order."""
    if len(ids) == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    document, column = np.repeat(np.arange(len(rows)), np.diff(indptr)), ids
    if binary:
        document, column = np.divmod(np.unique(document * n_columns + ids), n_columns)
    pairs, counts = np.unique(rows[document] * n_columns + column, return_counts=True)
    classes, columns = np.divmod(pairs, n_columns)
    return classes, columns, counts


class ColumnCounter:
    """A worker's counting of batch after batch: its token columns are kept from one batch
    to the next, and each batch's counts go out as CountTable.export's, sparse, naming only
    the tokens new since the batch before. The table they are merged into looks each token
    up once per worker, not once per batch (and its strings cross the pipe once)."""

    def __init__(self, binary):
        self.binary = binary
        self.token_columns: defaultdict[str, int] = defaultdict()
        self.token_columns.default_factory = self.token_columns.__len__
        self.sent = 0  # columns whose tokens went out with an earlier batch

    def count(self, token_lists, labels):
        """A training's batch (each document joins its class: changes.LEARNED_STEP):
        (CountTable.export of the batch, with only the new tokens, ids, indptr)."""
        from itertools import islice

        classes: dict[str, int] = {}
        rows = np.fromiter(
            (classes.setdefault(label, len(classes)) for label in labels), dtype=np.intp, count=len(labels)
        )
        ids, indptr = ids_and_indptr(token_lists, self.token_columns.__getitem__)
        n_columns = len(self.token_columns)
        new_tokens = list(islice(reversed(self.token_columns), n_columns - self.sent))[::-1]  # (dicts keep order)
        self.sent = n_columns
        cell_rows, cell_columns, counts = cell_counts(rows, ids, indptr, n_columns, self.binary)
        exported = (
            list(classes),
            new_tokens,
            class_steps(rows, len(classes), LEARNED_STEP),
            cell_rows.astype(np.int32),
            cell_columns.astype(np.int32),
            (LEARNED_STEP * counts).astype(np.float64),
        )
        return exported, ids, indptr


def count_batch(settings, tokenize, batch, on_error=None, sample_rate=None, counter=None):
    """The counts of one batch of labelled Documents: (what `counter`.count gives (a ColumnCounter
    kept from batch to batch, by default a new one: CountTable.export's form naming the tokens
    new to it; a CountTable counts the batch into itself and gives itself), [(journal key,
    label)], with `sample_rate` the calibration candidates as packed_sample gives them (ids of
    the counter's columns), else None)."""
    kept, token_lists, keys = tokenized_with(tokenize, batch, data_key, on_error)
    counter = counter or ColumnCounter(binary=counts_presence(settings))
    labels = [doc.label for doc in kept]
    exported, ids, indptr = counter.count(token_lists, labels)
    candidates = None if sample_rate is None else packed_sample(sample_rate, token_lists, labels, ids, indptr)
    return exported, list(zip(keys, labels)), candidates


def token_hash(tokens):
    """A document's stable 64-bit hash, from its tokens (what every worker has)."""
    from hashlib import blake2b

    digest = blake2b("\x1f".join(tokens).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def under(rate, hashes):
    """The positions of the hashes a sample of `rate` takes (a document is in it when its
    64-bit hash is below rate · 2⁶⁴): the one rule every calibration sample is cut by."""
    limit = rate * 2.0**64
    return [i for i, h in enumerate(hashes) if h < limit]


def sample_of_batch(rate, token_lists, labels):
    """The documents of a batch in a hash-chosen sample of `rate` (nbtext.jobs.calibration's):
    ([token lists], [labels], [hashes])."""
    hashes = [token_hash(tokens) for tokens in token_lists]
    chosen = under(rate, hashes)
    return [token_lists[i] for i in chosen], [labels[i] for i in chosen], [hashes[i] for i in chosen]


def packed_sample(rate, token_lists, labels, ids, indptr):
    """sample_of_batch's documents as a worker sends them: each one's tokens as the column
    ids it has in the batch's table (`ids`, `indptr` from CountTable.add), not as strings,
    which cost far more to send: ((ids, indptr) of the chosen documents, labels, hashes)."""
    hashes = [token_hash(tokens) for tokens in token_lists]
    chosen = under(rate, hashes)
    rows = packed_rows([ids[indptr[i] : indptr[i + 1]] for i in chosen])
    return rows, [labels[i] for i in chosen], [hashes[i] for i in chosen]


def packed_rows(rows):
    """Arrays of column ids as one int32 array and its row pointer (CSR without values)."""
    ids = np.concatenate(rows).astype(np.int32) if rows else np.zeros(0, dtype=np.int32)
    return ids, np.concatenate([[0], np.cumsum([len(row) for row in rows], dtype=np.int64)])
