"""The vocabulary: every token seen in training, the features kept from them, and UNK.

Tokens seen fewer than --min-count times (summed over classes), and those beyond the
--max-features most frequent, are pruned. The features are the kept tokens, in token
order, then (with --unknown unk) one UNK feature that stands for every pruned or unseen
token; with --unknown ignore such tokens are dropped.
"""

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from nbtext.features.matrix import DROPPED, FeatureLookup, ids_and_indptr
from nbtext.features.vocabindex import TokenIndex

UNK = "<UNK>"  # the name shown for the unknown-token feature (it is no token: tokens are \w+)


def kept_tokens(token_totals, min_count, max_features):
    """Indices of the tokens kept: counted at least `min_count` times, at most
    `max_features` of them (the most frequent; ties keep the earlier token)."""
    kept = np.flatnonzero(token_totals >= min_count)
    if max_features is not None and len(kept) > max_features:
        most_frequent = np.argsort(-token_totals[kept], kind="stable")[:max_features]
        kept = np.sort(kept[most_frequent])
    return kept


class Vocabulary:
    """`tokens`: every token seen, sorted (a list, or a model file's TokenIndex, decoded only
    when every token is needed); `kept`: indices into them of the kept features."""

    def __init__(self, tokens, kept, has_unk):
        self._tokens = tokens if isinstance(tokens, TokenIndex) else list(tokens)
        self.kept = kept
        self.has_unk = has_unk

    @cached_property
    def tokens(self):
        """Every token seen in training, sorted."""
        return self._tokens.tokens() if isinstance(self._tokens, TokenIndex) else self._tokens

    @property
    def n_tokens(self):
        return self._tokens.n_tokens if isinstance(self._tokens, TokenIndex) else len(self._tokens)

    @property
    def n_kept(self):
        return len(self.kept)

    @property
    def n_features(self):
        return self.n_kept + self.has_unk

    @property
    def unk_column(self):
        """The UNK feature's column (after the kept tokens), or None without UNK."""
        return self.n_kept if self.has_unk else None

    @cached_property
    def feature_names(self):
        """The feature names in column order: the kept tokens, then UNK if present."""
        names = [self.tokens[i] for i in self.kept.tolist()]
        return names + [UNK] if self.has_unk else names

    @cached_property
    def lookup(self):
        """token -> feature column; pruned and unseen tokens -> the UNK column, or DROPPED."""
        missing = self.n_kept if self.has_unk else DROPPED
        return FeatureLookup(zip(self.feature_names[: self.n_kept], range(self.n_kept)), missing)

    def ids(self, token_lists):
        """(flat feature ids, CSR row pointer) of tokenized documents (DROPPED ones left out)."""
        return ids_and_indptr(token_lists, self.lookup.__getitem__)

    @cached_property
    def column_of_token(self):
        """token index -> feature column: the kept tokens' columns, else UNK (or DROPPED)."""
        column = np.full(self.n_tokens + 1, self.n_kept if self.has_unk else DROPPED)
        column[self.kept] = np.arange(self.n_kept)
        return column  # the extra last entry serves tokens not in the vocabulary (index -1)

    def ids_of_one_document(self, tokens):
        """Feature ids of one document's tokens: by the file's token index while the lookup
        dict has not been built (one message then builds no dict of the vocabulary), unless
        the document holds more tokens than the vocabulary (sorting them would cost more than
        the dict: a large message a batch alone, nbtext.reading.documents.in_batches)."""
        if not isinstance(self._tokens, TokenIndex) or "lookup" in self.__dict__ or len(tokens) > self.n_tokens:
            return self.ids([tokens])[0]
        if not tokens:
            return np.zeros(0, dtype=np.int64)
        distinct = dict.fromkeys(tokens)  # (each token once, in order of first appearance)
        distinct = dict(zip(distinct, range(len(distinct))))
        inverse = np.fromiter(map(distinct.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        ids = self.column_of_token[self._tokens.find(list(distinct))][inverse]  # not found: -1, the last entry
        return ids[ids != DROPPED]


class TokenRows(Sequence):
    """Documents as rows of indices into `tokens`, each row in its document's token order: a
    model's calibration sample (`tokens` its vocabulary's, every token seen, sorted) or a
    corpus held for a pass over it (HeldTokens: the tokens in order of first appearance).
    Read as a sequence of token lists, each decoded when read (an update, a merge); the
    model's feature ids (jobs.calibration.feature_rows) and the file's encoding of the
    sample (NaiveBayes) are taken from the indices of its own vocabulary, never decoding
    them (for 20 Newsgroups' sample, 0.7 million tokens)."""

    def __init__(self, rows, tokens):
        self.rows, self.tokens = rows, tokens

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._strings[self.rows[i]].tolist()

    @cached_property
    def _strings(self):
        """`tokens` as an array of objects: a row's strings taken in one numpy step."""
        strings = np.empty(len(self.tokens), dtype=object)
        strings[:] = self.tokens
        return strings

    def take(self, positions):
        """The rows at `positions`, in that order."""
        return TokenRows([self.rows[i] for i in positions], self.tokens)

    def over(self, tokens):
        """The rows, if they index `tokens` (that very list), else None."""
        return self.rows if self.tokens is tokens else None


class _Numbering(dict):
    """token -> its number, a new token the next (the tokens in order of first appearance)."""

    __slots__ = ()

    def __missing__(self, token):
        self[token] = number = len(self)
        return number


class TokenPacking:
    """Documents' token lists packed as each is made, for HeldTokens.add (what a worker sends:
    each distinct token once): `row(tokens)`, a document's tokens as their numbers among
    the distinct tokens so far (a uint32 array), so that only one document's list of strings
    is alive at a time; `distinct()`, those tokens in order of first appearance."""

    def __init__(self):
        self.numbering = _Numbering()

    def row(self, tokens):
        numbers = map(self.numbering.__getitem__, tokens)  # (a Python call only for a new token)
        return np.fromiter(numbers, dtype=np.uint32, count=len(tokens))

    def distinct(self):
        return list(self.numbering)


class HeldTokens:
    """The token lists of a corpus held for a pass over all of them (train --learn tone: its
    pass, the counting of what it chose, its calibration; eval --folds), in the order added: each
    distinct token once, each document a uint32 array of its tokens' numbers, 4 bytes a
    token where a list of strings holds a pointer and, for each token not shared, a string
    object of some 50 bytes or more. `rows()`: TokenRows."""

    def __init__(self):
        self.numbering = {}  # token -> its number (a batch's new tokens numbered at once, in `add`)
        self.documents = []

    def add(self, distinct, rows):
        """Documents after those added before: `rows` of numbers among `distinct` (TokenPacking's)."""
        numbering = self.numbering  # (the new ones numbered at once: `distinct` holds each token once)
        new = [token for token in distinct if token not in numbering]
        numbering.update(zip(new, range(len(numbering), len(numbering) + len(new))))
        ours = np.fromiter(map(numbering.__getitem__, distinct), dtype=np.uint32, count=len(distinct))
        self.documents += [ours[row] for row in rows]

    def rows(self):
        """The documents held, as TokenRows (read as token lists: each decoded when read)."""
        return TokenRows(self.documents, list(self.numbering))


def taken(token_lists, positions):
    """The token lists at `positions` of a list or of TokenRows (which stay rows)."""
    if isinstance(token_lists, TokenRows):
        return token_lists.take(positions)
    return [token_lists[i] for i in positions]
