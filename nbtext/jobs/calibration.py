"""Calibrated probabilities (`train --calibration temperature`): temperature scaling, the
temperature growing with the document's length; and the spam cut-off of a ham-flagged
budget (`train --max-ham-flagged`), chosen on out-of-fold probabilities too.

Naive Bayes counts every token's evidence as independent, so its posteriors are far too
sure: on the SpamAssassin test split nearly every message gets 1.0000, errors included. And
the longer the document, the more of that double-counted evidence it piles up. A temperature
fitted at train time keeps the decision and makes the probabilities say what they mean:

    P(k | x) = softmax_k( jll_k(x) / T(x) ),   T(x) = T · max(n(x), m)^γ      (argmax unchanged)

n(x) is the number of the document's tokens that enter its likelihood: γ = 0 is one
temperature for all, γ = 1 divides by the length (the mean evidence per token); a document
shorter than m (nbtext.stats.fitting.LENGTH_FLOORS) is tempered as one of m tokens (nbtext.stats.tempering). A document
with n = 0 has no evidence to temper and keeps its raw posterior (the prior, for the
multinomial). T, γ and m
minimize the Brier score (Σ_k (P(k | x) − [k = y])², a proper scoring rule bounded per
document) of out-of-fold predictions on a sample of the training documents (at most
SAMPLE, chosen by a stable hash of their tokens, so a training always picks the same
ones). Not the log-loss: a handful of errors with log-odds in the hundreds then decide T
alone, and every other message comes out unsure. (Both choices were made on training data;
the figures are in docs/calibration.md; the fit is nbtext.stats.fitting's.) A Naive Bayes fold
model needs no retraining: it is the model's feature sums minus those of the fold's documents
(nbtext.stats.out_of_fold: K = FOLDS folds of the sample; the vocabulary, its pruning and the
idf stay the full model's).
"""

from functools import partial

import numpy as np

from nbtext.classifier.model import Calibrated
from nbtext.cutoff import budget_record
from nbtext.errors import NbtextError
from nbtext.exactmath import exp
from nbtext.features.matrix import DROPPED
from nbtext.features.vocabulary import TokenRows, taken
from nbtext.labels import positive_class, spam_filter_classes
from nbtext.stats.bounds import most_within, upper_share
from nbtext.stats.counting import packed_rows, sample_of_batch, token_hash, under
from nbtext.stats.fitting import fit_tempering
from nbtext.stats.out_of_fold import FOLDS, out_of_fold_of

SAMPLE = 2000  # documents the temperature is fitted on, at most (about)
AUTO_MINIMUM = 100  # --calibration auto fits T once its sample holds this many documents of two classes
# --max-ham-flagged B: the spam cut-off keeps the share of ham flagged at most B with
# confidence 1 − BUDGET_RISK (one-sided Clopper-Pearson over the out-of-fold sample; chosen by
# cross-validation on training splits, docs/calibration.md)
BUDGET_RISK = 0.2
# how far under the first document of the other class it excludes the spam cut-off stands, relative to
# that document's probability (of the other class): more than the one-message path's probabilities
# differ from the model's (nbtext.delivery.judging.RELATIVE_AGREEMENT)
CEILING_MARGIN = 1e-9


class Candidates:
    """The calibration sample gathered while counting, so that no second pass is needed:
    every document whose hash is under a bound that only falls, 2·SAMPLE over the documents
    read so far. The final rate, stored_rate (below 2·SAMPLE over the documents counted), is
    never above it while at least half the documents read are counted, so the documents kept
    are all those the final rate takes, and more; `sample(rate)` cuts them to it. (`covers(rate)` says whether
    that held; if not, the sample is taken in one more pass.)

    A document is kept as the column ids its tokens have in `table` (the CountTable being
    counted into), 4 bytes a token: a small part of what the same tokens held as strings
    (docs/performance.md, figures behind the code)."""

    def __init__(self, table, bound=1.0):
        self.table = table
        self.read = 0
        self.bound = bound  # the lowest rate documents were gathered under (a cluster sets its own)
        self.kept = ([], [], [])  # column id arrays, labels, hashes

    def bound_after(self, n):
        """The rate for a batch of `n` more documents (what a worker is told with its chunk)."""
        self.read += n
        self.bound = min(1.0, 2 * SAMPLE / self.read)
        return self.bound

    def covers(self, rate):
        """Whether every document under `rate` was kept: `rate` is at most the last bound."""
        return rate <= self.bound

    def add(self, packed, rate, columns=None):
        """A batch's documents under `rate` (nbtext.stats.counting.packed_sample's), then all of them
        cut to it. Their ids are the table's columns, or those of a worker's batch table, whose
        column in the table `columns` gives (CountTable.merge's)."""
        (ids, indptr), labels, hashes = packed
        if columns is not None:
            ids = columns[ids]
        documents = [ids[a:b].copy() for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())]  # each its own
        documents, labels, hashes = (old + new for old, new in zip(self.kept, (documents, labels, hashes)))
        keep = under(rate, hashes)
        self.kept = ([documents[i] for i in keep], [labels[i] for i in keep], [hashes[i] for i in keep])

    def packed(self):
        """The documents kept, as nbtext.stats.counting.packed_sample gives them (ids of the table's
        columns): what a cluster worker sends on."""
        documents, labels, hashes = self.kept
        return packed_rows(documents), list(labels), list(hashes)

    def sample(self, rate, tokens):
        """(token lists as TokenRows over `tokens`, the model's vocabulary of every token in
        the table, sorted; labels; hashes) of the documents under `rate`."""
        chosen = under(rate, self.kept[2])
        index = dict(zip(tokens, range(len(tokens))))
        position = np.fromiter(
            map(index.__getitem__, self.table.token_columns), dtype=np.int64, count=len(self.table.token_columns)
        )  # a column's token, in the sorted tokens
        rows = [position[self.kept[0][i]] for i in chosen]
        return TokenRows(rows, tokens), [self.kept[1][i] for i in chosen], [self.kept[2][i] for i in chosen]


def sample_rate(n_documents):
    """The share of a corpus of `n_documents` in the calibration sample: SAMPLE of them."""
    return min(1.0, SAMPLE / max(float(n_documents), 1.0))


def stored_rate(n_documents):
    """The share of a corpus of `n_documents` its model file keeps as its calibration
    sample: SAMPLE over the largest power of two at most N (SAMPLE to 2·SAMPLE documents),
    never less than sample_rate's. A step in N, so that the sample kept is what one training
    of the same documents keeps, whatever the path: an update (N grows, the rate can only
    fall: the old sample and the new documents hold everything under it), a merge (the
    union's rate is at most each part's) and a forget that leaves N above the same power
    of two (the rate stays)."""
    n = max(int(n_documents), 1)
    return min(1.0, SAMPLE / float(1 << (n.bit_length() - 1)))


def complete_rate(model):
    """The rate every document of `model` under which its calibration sample holds (files
    of older builds, parts only, cut theirs at sample_rate and did not say so)."""
    return model.sample_bound if model.sample_bound is not None else sample_rate(model.class_count.sum())


def calibrate(model, sample, complete_rate, mode="auto", partial=False, budget=None):
    """The calibration (a Calibrated, for model.take_calibration) one training of a trained or
    changed `model`'s documents would give it: the sample under stored_rate, and T and γ
    fitted on the documents under sample_rate (not for a `partial` model, a --shard part:
    its merge fits them), as --calibration `mode` ("auto" or "temperature") fits them. `sample`
    (token lists, labels, hashes) must hold every one of the model's documents whose hash is
    under `complete_rate`. None when it does not reach sample_rate (documents forgotten since
    past the power of two the sample was cut for): then T cannot be fitted exactly, and a
    retraining can. With `budget` (a share of ham flagged), the spam cut-off is chosen too,
    on the out-of-fold probabilities of the whole sample kept."""
    n = model.class_count.sum()
    if complete_rate < sample_rate(n):
        return None
    token_lists, labels, hashes = sample
    cut = min(stored_rate(n), complete_rate)
    kept = sorted(under(cut, hashes), key=lambda i: (hashes[i], labels[i]))  # a canonical order
    kept_sample = (taken(token_lists, kept), [labels[i] for i in kept], [hashes[i] for i in kept])
    fitted = model.calibration if partial else None  # (a part's is its merge's to fit)
    if not partial:
        token_lists, labels, hashes = kept_sample
        fit = under(sample_rate(n), hashes)
        # a budget's cut-off is chosen on the whole sample kept (twice the documents, or near): the more
        # ham out of fold, the less margin its upper bound needs
        if budget is None:
            stored, fit_rows = None, feature_rows(model.vocabulary, taken(token_lists, fit))
        else:  # (the fit's rows are some of the stored sample's: mapped once)
            stored = (feature_rows(model.vocabulary, token_lists), labels, hashes)
            fit_rows = taken(stored[0], fit)
        fitted = temperature_of(
            model,
            (fit_rows, [labels[i] for i in fit], [hashes[i] for i in fit]),
            required=mode == "temperature",
            budget=budget,
            budget_sample=stored,
        )
        _check_budget_met(budget, fitted)
    return Calibrated(fitted, kept_sample, cut, mode)


def _check_budget_met(budget, fitted):
    if budget is not None and fitted is None:  # (every path that fits T comes here)
        raise NbtextError(
            "--max-ham-flagged needs a calibrated model of two classes (with --calibration auto, "
            "100 documents or more to fit the temperature on)"
        )


def pass_calibration(model, documents, mode="auto", budget=None):
    """The Calibrated of a model of the documents a pass chose (`train --learn tone`), of the
    pass's `documents` (token lists, labels, whether the model learned each): T, γ and with
    `budget` the spam cut-off, fitted on those under sample_rate, each learned one out of fold
    among the learned, each other one scored by the model, which never learned it (a sample of
    the learned ones alone would be the hard documents only). No sample is kept: the
    documents a pass left are not the model's to keep, and --update, forget and filter's
    learning keep the temperature as it was fitted (nbtext.jobs.training)."""
    token_lists, labels, learned = documents
    hashes = [token_hash(tokens) for tokens in token_lists]
    kept = under(sample_rate(len(labels)), hashes)
    sample = (feature_rows(model.vocabulary, taken(token_lists, kept)), [labels[i] for i in kept], taken(hashes, kept))
    fitted = temperature_of(model, sample, mode == "temperature", budget, learned=[learned[i] for i in kept])
    _check_budget_met(budget, fitted)
    return Calibrated(fitted, None, None, None)


def sample_of(model, over_batches, candidates=None, rate=None):
    """(token lists, labels, hashes) of the calibration sample of a trained model's corpus:
    the documents whose hash is under `rate` (by default the model's sample_rate), from the
    `candidates` gathered while counting, or else a pass over the corpus (`over_batches`,
    as nbtext.classifier.counted.model_of_table takes it)."""
    rate = sample_rate(model.class_count.sum()) if rate is None else rate
    if candidates is not None and candidates.covers(rate):
        return candidates.sample(rate, model.vocabulary.tokens)
    token_lists, labels, hashes = [], [], []
    for batch_tokens, batch_labels, batch_hashes in over_batches(partial(sample_of_batch, rate)):
        token_lists += batch_tokens
        labels += batch_labels
        hashes += batch_hashes
    return token_lists, labels, hashes


def feature_rows(vocabulary, token_lists):
    """Each document's feature ids (an array), as vocabulary.ids gives them."""
    rows = token_lists.over(vocabulary.tokens) if isinstance(token_lists, TokenRows) else None
    if rows is not None:  # token indices: their feature columns, tokens without one left out
        columns = [vocabulary.column_of_token[row] for row in rows]
        return [ids[ids != DROPPED] for ids in columns]
    ids, indptr = vocabulary.ids(token_lists)
    return [ids[a:b] for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())]


def check_budget_classes(classes):
    """Refuse a spam cut-off (--max-ham-flagged) for a model of these classes unless they are
    two, one named spam or ham (labels.spam_filter_classes, the spam preset's rule too):
    every path that fits or keeps one asks here."""
    if spam_filter_classes(classes):
        return
    if len(classes) != 2:
        raise NbtextError(
            f"--max-ham-flagged is for two classes, and the model has {len(classes)} ({', '.join(classes)})"
        )
    raise NbtextError(
        f"--max-ham-flagged needs to know which class is spam, and neither of "
        f"{', '.join(classes)} is named spam or ham: name them, as in spam=PATH ham=PATH"
    )


def temperature_of(model, sample, required=True, budget=None, budget_sample=None, learned=None):
    """{"method": "temperature", "temperature": T, "length_exponent": γ, "length_floor": m (when
    above 1), "documents": n} for a trained model (T(x) = T · max(n(x), m)^γ), fitted on
    `sample` (sample_of's, or a merge's: each document its feature ids), or None when the
    sample is too small for --calibration auto (with `required`, as --calibration
    temperature, that is an error). The sample is taken in the order of its hashes (then
    labels), so that every way of training on the same documents (-j, a cluster, shards
    merged) fits the same T. With `budget`, the spam cut-off too (spam_cutoff's), on the
    out-of-fold probabilities of `budget_sample` (the same form; by default `sample`).
    `learned`: out_of_fold_of's, for a sample that holds documents the model did not learn."""
    if budget is not None:  # before the out-of-fold pass, not after it
        check_budget_classes(model.classes)
    documents, labels, _ = sample
    with_tokens = [label for document, label in zip(documents, labels) if len(document)]  # (others keep theirs)
    if len(set(with_tokens)) < 2 or len(with_tokens) < (FOLDS if required else AUTO_MINIMUM):
        if not required:
            return None
        raise NbtextError("--calibration temperature needs at least 5 documents of two classes, with tokens")
    jll, rows, lengths = out_of_fold_of(model, sample, learned)
    temperature, exponent, floor = fit_tempering(jll, rows, lengths)
    record = {
        "method": "temperature",
        "temperature": temperature,
        "length_exponent": exponent,
        **({"length_floor": floor} if floor > 1 else {}),
        "documents": len(labels),
    }
    if budget is not None:
        if budget_sample is not None:
            jll, rows, lengths = out_of_fold_of(model, budget_sample)
        record.update(spam_cutoff(model.classes, jll, rows, lengths, record, budget))
    return record


def spam_cutoff(classes, jll, rows, lengths, calibration, budget):
    """The calibration record's fields of `budget` (nbtext.cutoff.budget_record): the ceiling
    q <= 1/2 on the probability of the other class under which a document is the positive
    class (labels.positive_class: the spam class; nbtext.cutoff says why a ceiling on the
    other class's probability and not a floor on spam's), the highest at which the share of the other class's documents under
    it is at most `budget` with confidence 1 − BUDGET_RISK: the Clopper-Pearson upper bound
    (nbtext.stats.bounds) on that share, from the k of its n out-of-fold documents under q, is
    at most `budget`. (Not k/n itself: on a sample of n the share that passes on mail never
    seen is often above k/n.) When even k = 0 is not enough for so small a budget, q is under
    every one of them.

    Their probabilities are computed as the model computes every probability
    (NaiveBayes.posterior, exact logs and exps: the cut-off is a number in the file, the same
    on every CPU), and q stands clear of the first one excluded by a relative CEILING_MARGIN,
    more than the one-message path's own rounding differs from it. q = 0 (nothing is the
    positive class) only when that one's probability is 0 in float64 (log-odds past 745)."""
    from nbtext.stats.formulas import tempered_log_posterior

    positive = positive_class(classes)
    k = classes.index(positive)
    p_other = exp(tempered_log_posterior(jll, calibration, lengths))[:, 1 - k]
    negatives = np.sort(p_other[rows != k])  # the other class's own documents, the surest of the positive first
    allowed, too_few = most_within(len(negatives), budget, BUDGET_RISK), None
    if allowed is None:  # what the cut-off then keeps is no such bound: said, as the summary's words are not
        import warnings

        other = classes[1 - k]
        warnings.warn(
            f"--max-ham-flagged {budget:.2%}: {len(negatives):,} {other} documents out of fold are too few "
            f"to bound the share flagged by that (with none flagged, the bound at {1 - BUDGET_RISK:.0%} "
            f"confidence is {upper_share(0, len(negatives), BUDGET_RISK):.2%}): {positive} only above "
            "every one of them",
            stacklevel=2,
        )
        allowed, too_few = 0, len(negatives)
    ceiling = 0.5 if allowed >= len(negatives) else min(0.5, float(negatives[allowed]) * (1 - CEILING_MARGIN))
    return budget_record(positive, ceiling, budget, too_few)
