"""One document scored in pure Python, straight from a model file's bytes: no numpy.

A mail pipeline starts nbtext once per message, and importing numpy is most of such a
start-up. For the event models with a form of one document (their `one_document`:
nbtext.stats.event_models, which says the formulas), one document needs only its own few
hundred tokens: each is found by its 64-bit key and confirmed by its bytes
(nbtext.features.vocabindex.find_one), and its count in each class's CSR row by bisect. What would
need every token (the features kept, UNK's counts, and what the form reads: the
multinomial's totals, Bernoulli's Σ_j log(1 − θ_kj)) is in the header's derived
`one_document` record, which the numpy model writes (nbtext.classifier.model). Pruned and
unseen tokens are UNK (its counts in the record) or dropped. The posterior is
softmax(jll / T(x)) with a calibrated temperature T(x) = T · max(n, m)^γ, as NaiveBayes.posterior.

Whatever this path does not serve (event models without that form, tf-idf, files without the
record, a big-endian machine, a file that fails a check, a document of more than
MAX_DISTINCT_TOKENS distinct tokens) gives None: the caller then
loads the model with numpy, which also reports a bad file in its usual words.
"""

import math
import sys
from bisect import bisect_left
from collections import Counter
from itertools import repeat

from nbtext.classifier.settings import corpus_alpha, make_tokenizer, unk_counts_pruned_documents
from nbtext.cutoff import cutoff_of, held_back
from nbtext.errors import NbtextError
from nbtext.features.vocabindex import encode, find_many, find_one, indices_in_sorted_blob
from nbtext.modelfile import pending
from nbtext.modelfile.container import split
from nbtext.modelfile.schema import check_arrays, check_header, raw_array, same_record
from nbtext.stats.changes import CountBelowZero
from nbtext.stats.event_models import EVENT_MODELS
from nbtext.stats.prior import class_log_prior
from nbtext.stats.tempering import document_temperature, log_sum_exp, tempered_posterior

_TYPECODES = {"<f8": "d", "<i4": "i", "<i8": "q", "<u8": "Q", "|u1": "B"}  # little-endian only
# Past this many distinct tokens the numpy path is the faster one: its import costs more than
# scoring a few tokens in pure Python, its cost per token is lower on long input.
MAX_DISTINCT_TOKENS = 10_000
MAX_LOOKUPS = 40_000  # (distinct tokens x classes) counts looked up one by one: past it, numpy's turn
_COUNTED_AT_ONCE = 16_384  # tokens counted before the distinct ones are checked against the bounds above
_USED = (
    "class_count",
    "token_keys",
    "token_order",
    "token_starts",  # (absent from files before format 6: a token is then confirmed by a search of the bytes)
    "count_data",
    "count_indices",
    "count_indptr",
)


class Unserved(Exception):
    """This model, or this document, is one for the numpy path."""


class Disagrees(Unserved):
    """A pending section whose last record's `derived` is not the one-document record its
    changes lead to (PureModel.rederived): the model loaded whole refuses the file
    (pending.DISAGREES)."""


class PureModel:
    """What scores one document from a model file, as sequences over the file's bytes."""

    def __init__(self, header, payload, vocabulary):
        settings = header["settings"]
        form = EVENT_MODELS[settings["event_model"]].one_document
        record = header.get("one_document")
        if record is None or form is None or settings.get("features") not in ("counts", "binary"):
            raise Unserved
        if "token_keys" not in header["arrays"]:
            raise Unserved
        arrays = {name: _array(payload, spec) for name, spec in header["arrays"].items() if name in _USED}
        self.header, self.payload = header, payload
        self.classes = header["classes"]
        self.alpha = float(settings["alpha"])
        self.min_count = settings["min_count"]
        self.presence = settings["features"] == "binary" or form.flags.presence
        self.tokenize = make_tokenizer(settings["tokenizer"])
        self.class_count = arrays["class_count"]
        self.keys, self.order, self.starts = arrays["token_keys"], arrays["token_order"], arrays.get("token_starts")
        self.blob = vocabulary  # (the vocabulary's bytes, as schema.check_arrays gives them)
        self.data, self.indices, self.indptr = arrays["count_data"], arrays["count_indices"], arrays["count_indptr"]
        self.rows = [(self.indptr[k], self.indptr[k + 1]) for k in range(len(self.classes))]  # each class's entries
        self.unk, self.kept_rule = record["unk"], record["kept"]
        self.form = form.of_record(
            record, self.class_count, self.alpha, self.classes
        )  # the event model's (KeyError: not its record)
        self.log_prior = log_prior(list(self.class_count), self.alpha, settings["prior"])
        self.max_evidence = settings.get("max_evidence")  # train --max-evidence, or None
        self.changes = None  # nbtext.modelfile.pending.Changes folded in, if any
        self.named = {}  # {token index: the token found at it}, of the tokens looked up (token_counts)
        self.long_tokens = {}  # the vocabulary's long tokens read so far, where they lie (find_one's)
        calibration = header.get("calibration") or {}
        self.calibration = calibration

    def follows_changes(self):
        """Whether records of learned and forgotten documents can be folded into this
        model without every token's counts: a model whose form's record follows them (the
        multinomial's), its features chosen by --min-count alone (a --max-features rule
        moves with every count), of counts or of presence with an UNK feature that counts
        no pruned token's documents (which documents held one is not stored)."""
        return (
            self.form.flags.follows_changes
            and self.kept_rule is None
            and not unk_counts_pruned_documents(self.header["settings"])
        )

    def with_changes(self, changes):
        """This model with `changes` (nbtext.modelfile.pending.Changes of its log) folded in: the
        class counts and the one-document record after them, each token's counts as
        token_counts gives them. The calibration is the file's until the log is folded
        into the file (then it is refitted). The last record's `derived` is taken only once
        it is the record the changes lead to from the file's own (`rederived`), else
        Disagrees: every one-message reader and learner of a section comes here, so none
        scores with, or appends to, a section the model loaded whole refuses."""
        if not self.follows_changes():
            raise Unserved
        if changes.derived and not same_record(changes.derived, self.rederived(changes)):
            raise Disagrees
        self.changes = changes
        if not changes.derived:
            return self
        self.class_count = [a + b for a, b in zip(self.class_count, changes.class_count)]
        if min(self.class_count) < 0:
            raise Unserved  # more forgotten than learned: the numpy path says the section is corrupt
        record, corpus = changes.derived, self.header.get("corpus")
        if corpus is not None:  # (λ left to the corpus: the one its documents choose now, as the model loaded whole)
            corpus = {**corpus, "mail_documents": corpus["mail_documents"] + changes.mail_documents}
            self.alpha = float(corpus_alpha(self.header["settings"], corpus, sum(self.class_count)))
        self.unk, self.form = (
            record["unk"],
            type(self.form).of_record(record, self.class_count, self.alpha, self.classes),
        )
        self.log_prior = log_prior(self.class_count, self.alpha, self.header["settings"]["prior"])
        return self

    def rederived(self, changes):
        """The one-document record `changes` (nbtext.modelfile.pending.Changes) leave, derived
        again from the file's own record and the counts of the tokens they move: what the
        model loaded whole checks the last record's `derived` against (nbtext.jobs.loading).
        The learner's formulas (`derived_after`) telescope over the records (a token's terms of
        one record cancel those of the next), so each token moved is looked up once, its
        counts in the file before and after all of them."""
        start = {key: self.header["one_document"][key] for key in ("features", "unk", "totals")}
        return self.derived_after(start, changes.deltas, self.file_counts(changes.deltas).get)

    def derived_after(self, derived, deltas, counts_before):
        """The one-document record after `deltas` ({token: what is added to its count in each
        class}) from `derived`, the record before them, `counts_before(token)` giving a token's
        counts per class before them (None: never seen): the event model's record_after (the
        change core's rule, nbtext.stats.changes). A count taken below 0 (forgotten where never
        counted) is Unserved: the model loaded whole refuses it."""
        try:
            return self.form.record_after(derived, deltas, counts_before, self.min_count)
        except CountBelowZero:
            raise Unserved from None

    def file_counts(self, tokens):
        """{token: its counts per class in the file} of the distinct `tokens` that the
        vocabulary holds (the pending records not counted), each found in the vocabulary's
        bytes (vocabindex.indices_in_sorted_blob: its place there is its index, as the
        model loaded whole numbers it): for a section's thousands of tokens, most of them not
        in the vocabulary, cheaper than a search for each."""
        encoded = {encode(token): token for token in tokens}
        return {encoded[data]: self.counts(index) for data, index in indices_in_sorted_blob(self.blob, encoded).items()}

    def token_counts(self, token):
        """(token index in the file or -1, the token's counts per class, or None for a token
        never seen), the log's changes included."""
        return self.found_counts([token])[0]

    def found_counts(self, tokens):
        """token_counts of each of the distinct `tokens`, all found at once (token_indices)."""
        counts_of, named, changes = self.counts, self.named, self.changes
        if changes is None:
            return self._found_in_file(tokens)
        found = []
        for token, index in zip(tokens, self.token_indices(tokens)):
            if index is None:
                raise Unserved  # two tokens of the vocabulary share a key: the numpy path sorts it out
            if index >= 0:
                if named.setdefault(index, token) != token:  # (the loader: each index named once)
                    raise ValueError("two tokens of the vocabulary have one index")
                counts = counts_of(index)
            else:
                counts = None
            delta = changes.delta(token) if changes is not None else None
            if delta is not None:
                counts = [a + b for a, b in zip(counts or [0.0] * len(self.classes), delta)]
                if min(counts) < 0:
                    raise Unserved  # forgotten where it was never counted: the numpy path refuses the section
            found.append((index, counts))
        return found

    def _found_in_file(self, tokens):
        """found_counts of a model without changes: the same checks in the same order, then
        the counts of the tokens found, a class at a time (counts_of_many)."""
        named = self.named
        indices = self.token_indices(tokens)
        for token, index in zip(tokens, indices):
            if index is None:
                raise Unserved  # two tokens of the vocabulary share a key: the numpy path sorts it out
            if index >= 0 and named.setdefault(index, token) != token:  # (the loader: each index named once)
                raise ValueError("two tokens of the vocabulary have one index")
        counts = iter(self.counts_of_many([index for index in indices if index >= 0]))
        return [(index, next(counts) if index >= 0 else None) for index in indices]

    def token_indices(self, tokens):
        """The index in the file of each of the distinct `tokens` (-1: not in the vocabulary;
        None: two tokens of the vocabulary share its key), as vocabindex.find_one finds it
        (many at once by find_many, which searches the bytes less)."""
        encoded = [encode(token) for token in tokens]
        if self.starts is None:
            return [find_one(data, self.keys, self.order, self.blob, None, self.long_tokens) for data in encoded]
        return find_many(encoded, self.keys, self.order, self.blob, self.starts, self.long_tokens)

    def journal_label(self, key):
        """The class the file's journal holds the document of 16-byte `key` under, or None."""
        spec = self.header["arrays"].get("journal_hashes")
        if spec is None:
            return None
        hashes = raw_array(self.payload, spec)
        lo, hi = 0, spec["shape"][0]
        while lo < hi:
            mid = (lo + hi) // 2
            if bytes(hashes[16 * mid : 16 * mid + 16]) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < spec["shape"][0] and bytes(hashes[16 * lo : 16 * lo + 16]) == key:
            return self.classes[_array(self.payload, self.header["arrays"]["journal_labels"])[lo]]
        return None

    def counts(self, index):
        """The counts of token `index` in each class (0 where its CSR row has none)."""
        counts = []
        indices, data = self.indices, self.data
        for lo, hi in self.rows:
            p = bisect_left(indices, index, lo, hi)
            counts.append(data[p] if p < hi and indices[p] == index else 0.0)
        return counts

    def counts_of_many(self, indices):
        """`counts` of each of the token `indices`, each class's row searched by bisect in C (map)."""
        data, found = self.data, self.indices
        columns = [
            [
                data[p] if p < hi and found[p] == index else 0.0
                for index, p in zip(indices, map(bisect_left, repeat(found), indices, repeat(lo), repeat(hi)))
            ]
            for lo, hi in self.rows
        ]
        return list(map(list, zip(*columns)))

    def is_kept(self, index, counts):
        """Whether token `index` (with these counts) is a feature, not pruned."""
        total = sum(counts)
        if total < self.min_count:
            return False
        if self.kept_rule is None:
            return True
        least, last = self.kept_rule
        return total > least or (total == least and index <= last)

    def features(self, tokens):
        """([(token, x_j, the feature's counts per class)], n) of a document's tokens: its
        kept tokens, then UNK (token None); x_j counts occurrences, or is 1 with presence
        features; n is the number of tokens that enter the likelihood
        (NaiveBayes.jll_and_lengths's length)."""
        features: list[tuple[str | None, int, list[float]]] = []  # (None: UNK)
        unknown, distinct = 0, Counter[str]()
        most = min(MAX_DISTINCT_TOKENS, MAX_LOOKUPS // len(self.classes))
        for start in range(0, len(tokens), _COUNTED_AT_ONCE):  # (a long document is left early, not counted whole)
            distinct.update(tokens[start : start + _COUNTED_AT_ONCE])
            if len(distinct) > most:
                raise Unserved
        is_kept = self.is_kept
        for (token, n), (index, counts) in zip(distinct.items(), self.found_counts(list(distinct))):
            if counts is not None and is_kept(index, counts):
                features.append((token, n, counts))
            else:
                unknown += n
        if unknown and self.unk is not None:
            features.append((None, unknown, self.unk))
        length = sum(n for _, n, _ in features)
        return ([(t, 1, counts) for t, _, counts in features] if self.presence else features), length

    def joint_log_likelihood(self, features):
        """jll_k for each class of a document's features (as `features` gives them), by the
        event model's form."""
        return self.form.joint_log_likelihood(self.log_prior, features, self.max_evidence)

    def _scored(self, document):
        """(P(k | document) for each class, the document's features, its tempered jll,
        T(x)): softmax(jll / T(x)), as NaiveBayes.posterior."""
        features, length = self.features(self.tokenize(document))
        temperature = document_temperature(self.calibration, length)  # T(x), as NaiveBayes.temperatures
        probabilities, jll = tempered_posterior(self.joint_log_likelihood(features), temperature)
        return probabilities, features, jll, temperature

    def probabilities(self, document):
        """P(k | document) for each class."""
        return self._scored(document)[0]

    def explained(self, document, n):
        """(P(k | document), the n tokens that pushed the winner over the runner-up most) as
        NaiveBayes.explain gives them: [(token, x_j (W_winner,j − W_runner-up,j) / T(x))]."""
        probabilities, features, jll, temperature = self._scored(document)
        if len(jll) < 2:
            return probabilities, []
        runner_up, winner = sorted(range(len(jll)), key=jll.__getitem__)[-2:]  # stable, as numpy's
        evidence = [
            (token, term / temperature)
            for token, term in self.form.explanation(features, winner, runner_up, self.max_evidence)
        ]
        evidence.sort(key=lambda pair: (-pair[1], pair[0]))  # equals in token order, as the model's columns
        return probabilities, evidence[:n]


def of_file(data, path):
    """The PureModel of a model file's bytes (its pending section not counted: as_read), or
    None if this path does not serve it."""
    if sys.byteorder != "little":
        return None
    try:
        header, payload = split(data, path)
        check_header(header, len(payload), len(data))
        vocabulary = check_arrays(header, payload)  # as the numpy loader does; a file it refuses goes there
        return PureModel(header, payload, vocabulary)
    except (Unserved, NbtextError, ValueError, KeyError, TypeError, IndexError, OverflowError):
        return None


def as_read(data, path):
    """The PureModel every one-message reader scores with: the file's (of_file), its pending
    section (nbtext.modelfile.pending) counted in; None when the model loaded whole must
    score (or say what is wrong with the file or its section)."""
    model = of_file(data, path)
    if model is None:
        return None
    log = pending.Log(data, model.header)
    if log.problem or log.past_bounds():
        return None  # the numpy path says what is wrong with it (or checks a section no learner leaves)
    if not log.records:
        return model
    try:  # (a section that does not lead to its last `derived` is Disagrees: the numpy path refuses it)
        return model.with_changes(pending.Changes(model.classes, log.records, presence=model.presence))
    except (Unserved, ValueError, KeyError, TypeError, OverflowError):
        return None


def probabilities(model, document):
    """P(k | document) by `model` (a PureModel), or None if the numpy path must score it."""
    return _or_none(model.probabilities, document)


def explained(model, document, n):
    """(P(k | document), the n tokens that decided) by `model`, as PureModel.explained, or
    None if the numpy path must score it."""
    return _or_none(model.explained, document, n)


def _or_none(score, *arguments):
    try:
        return score(*arguments)
    except (Unserved, NbtextError, ValueError, OverflowError, ZeroDivisionError, IndexError, TypeError, KeyError):
        return None  # the numpy path scores it, or says what is wrong in its usual words


def unsure_threshold(unsure_below, settings):
    """The --unsure-below a model's labels are decided by: the command's own (`unsure_below`),
    else the model's (train --unsure-below, in its stored `settings`), else None. Every model
    asks it here before it decides, and before its one-message path asks if it is clear of it."""
    return unsure_below if unsure_below is not None else settings.get("unsure_below")


def decide(classes, probabilities, unsure_below=None, calibration=None):
    """(label, its probability): the most probable class (the first of equals, as numpy's
    argmax), or 'unsure' below the threshold, or (a model trained with --max-ham-flagged:
    its `calibration` record's cut-off, nbtext.cutoff) when that class is the positive one
    ('spam') and the cut-off holds it back. The one rule every path decides by."""
    k = max(range(len(classes)), key=probabilities.__getitem__)
    p = float(probabilities[k])
    if held_back(classes, probabilities, k, calibration):
        return "unsure", p
    if unsure_below is not None and p < unsure_below:
        return "unsure", p
    return classes[k], p


def log_odds_against_rest(log_probabilities, k):
    """ln P(k) − ln Σ_{j ≠ k} P(j) of a document's log-probabilities: class k's log-odds
    against the rest, which go on where P(k) reads 1.0 (float64's P is 1.0 from about 37 on)."""
    rest = [float(v) for j, v in enumerate(log_probabilities) if j != k]
    return float(log_probabilities[k]) - log_sum_exp(rest)


def spam_log_odds_from(classes, spam, unsure_below=None, calibration=None):
    """The log-odds of `spam` against the rest, ln(P(spam) / (1 − P(spam))), from which
    `decide` gives `spam` for a model of two `classes` (the plain decision's 0; --unsure-below
    u > 1/2: ln(u / (1 − u)); a spam cut-off's own: nbtext.cutoff; the largest of them), or
    None for more classes, where spam must also beat each of the others."""
    if len(classes) != 2:
        return None
    turns = [0.0]
    if unsure_below is not None and unsure_below > 0.5:
        turns.append(math.log(unsure_below / (1.0 - unsure_below)) if unsure_below < 1.0 else math.inf)
    cutoff = cutoff_of(calibration)
    if cutoff is not None and cutoff.positive == spam:
        turns.append(cutoff.log_odds_from())
    return max(turns)


def _array(payload, spec):
    """A memoryview of a one-dimensional array of the payload (dtype and bounds checked by
    schema.check_header)."""
    return raw_array(payload, spec).cast(_TYPECODES[spec["dtype"]])


def log_prior(class_count, alpha, prior):
    """log P(k) (nbtext.stats.prior), where no class's is log 0 (a class with no documents
    under the empirical prior: −inf is the whole model's to score with)."""
    logs = class_log_prior(class_count, alpha, prior)
    if -math.inf in logs:
        raise Unserved("a class with no documents under the empirical prior")
    return logs
