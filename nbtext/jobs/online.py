"""The spam track's protocol (TREC): messages in a fixed order, each classified by the model
of the messages learned before it, then its true label revealed and, on an error (near
one, or always: `learns`), learned. How a filter lives in a mailbox, in one process.

The model at each step is the multinomial model (or the event model's whose `online` form it
is: --model fisher's, of presence counts) of the documents learned so far, with
every class of the corpus (a class with none yet has its smoothed prior), exactly as
`nbtext train` of those documents would count it, and scored as its one-message filter
scores (the event model's `online` form, nbtext.stats.event_models: the multinomial's
one-document form) over the message's kept tokens (a total count of at least --min-count)
and UNK, x_j its count (or 1 each, presence features: B_kj then counts messages). Counts change by one message at a time, so each step costs its own tokens: the
messages are read and tokenized ahead (on -j workers), then scored and learned in order in
this process.
"""

import heapq
import math
from collections import Counter, namedtuple

from nbtext.choices import ONLINE_FEATURES
from nbtext.cutoff import cutoff_of, report_fields
from nbtext.errors import NbtextError
from nbtext.labels import classes_problem, new_classes, new_classes_said, positive_class
from nbtext.stats.changes import Change, HeldCounts
from nbtext.stats.event_models import EVENT_MODELS, Multinomial
from nbtext.stats.prior import learner_log_prior
from nbtext.stats.tempering import document_temperature, tempered_posterior


# the journal key of a document the online learner learns (it keeps no journal)
NO_KEY = b""


class OnlineMultinomial:
    """Counts that grow one document at a time, and the posterior of the model they make
    (by `form`, an event model's `online` form: the counts' totals, features and λ make it)."""

    @classmethod
    def of_settings(cls, classes, settings, min_count=None, start=None, calibration=None, start_documents=None):
        """The learner of a model of stored `settings` (λ resolved) and `classes`, from `start`
        (a model's counts, and its classes' documents, `start_documents`) or nothing: its
        smoothing, prior, UNK, form, features and cap; `min_count` the pruning its counts are
        kept by (None: the settings')."""
        return cls(
            classes,
            settings["alpha"],
            settings["min_count"] if min_count is None else min_count,
            settings["unknown"] == "unk",
            settings["prior"],
            start,
            calibration,
            EVENT_MODELS[settings["event_model"]].online,
            presence=settings.get("features", "counts") == "binary",
            max_evidence=settings.get("max_evidence"),
            start_documents=start_documents,
        )

    def __init__(
        self,
        classes,
        alpha,
        min_count,
        unk,
        prior="smoothed",
        start=None,
        calibration=None,
        form=Multinomial,
        presence=False,
        max_evidence=None,
        start_documents=None,
    ):
        self.classes, self.alpha, self.min_count, self.unk, self.prior = list(classes), alpha, min_count, unk, prior
        self.form = form
        self.presence = presence  # x_j = 1 for a token the document holds (--features binary), else its count
        self.max_evidence = max_evidence  # train --max-evidence: the features that score a document (or None: all)
        self.calibration = calibration  # its spam cut-off, if any, decides as the model's filter does
        # the counts of the documents learned (each a Change from no class to its label), the
        # one-document record of them (d, UNK_k, T_k) followed by the change core
        self.held = HeldCounts(self.classes, presence, 0.0, min_count, unk, start, start_documents)
        self.row, self.counts, self.class_count = self.held.row, self.held.counts, self.held.class_count
        self._form = None  # the form of the counts as they are (it keeps the weights it worked out), until a learn

    def learn(self, tokens, label):
        """`tokens` learned under `label`: a document that joins its class (changes.Change)."""
        self.held.add(Change(NO_KEY, None, label, tokens, False))
        self._form = None

    def learned_elsewhere(self, label, kept_n, new_tokens, new_n):
        """A document of `label` learned by a learner of --min-count 1 (held_steps) that holds
        the tokens' counts itself (HeldCounts.add_counted_elsewhere): its tokens held before
        add `kept_n`, its `new_tokens` counted for the first time `new_n`."""
        self.held.add_counted_elsewhere(Change(NO_KEY, None, label, (), False), kept_n, new_tokens, new_n)
        self._form = None

    @property
    def unk_counts(self):
        """UNK's counts per class (None: no UNK)."""
        return self.held.record["unk"]

    def posterior(self, tokens):
        """(P(k | tokens) for each class, jll_k for each class)."""
        features, unknown = [], 0
        counts_of, min_count, presence = self.counts.get, self.min_count, self.presence
        # every token held a feature (a pass's, --min-count 1: a token learned once is kept), or
        # each token's total is checked as it is scored
        all_kept = self.held.n_kept() == len(self.counts)
        for token, n in Counter(tokens).items():
            counts = counts_of(token)
            if counts is None or not all_kept and sum(counts) < min_count:
                unknown += n
            else:
                features.append((token, 1 if presence else n, counts))
        if unknown and self.unk:
            features.append((None, 1 if presence else unknown, self.unk_counts))
        length = len(tokens) if self.unk else len(tokens) - unknown  # the tokens that enter the likelihood
        # (no feature yet, and no UNK: nothing enters the likelihood, the prior decides, as training's d = 0)
        jll = self.current_form().joint_log_likelihood(self._log_prior(), features, self.max_evidence)
        scale = document_temperature(self.calibration, length)  # a model's P(k | x): softmax(jll / T(x)), as it scores
        return tempered_posterior(jll, scale)[0], jll

    def current_form(self):
        """The event model's form of the counts as they are (kept until a learn: it keeps the weights it worked out)."""
        if self._form is None:
            record = self.held.record
            self._form = self.form.of_counts(
                record["totals"], record["features"], self.alpha, self.class_count, self.classes
            )
        return self._form

    def _log_prior(self):
        return learner_log_prior(self.class_count, self.alpha, self.prior)  # (a class with none yet: uniform)


def learns(rule, wrong, jll, tone_margin, unseen=False):
    """Whether the online learning `rule` learns a message, `wrong` when its most probable
    class is not its label, of joint log-likelihoods `jll`: "all" every one, "errors" the
    wrong ones, "tone" (train on or near error) the wrong ones, those whose two most likely
    classes are within `tone_margin` of each other in jll (for spam and ham: |log-odds| <=
    the margin, the score the ranking orders by) and those of a class it holds no document
    of yet (`unseen`: a margin over a class it knows nothing of is no margin; with counts of
    character n-grams every spam outscored ham by more than any margin before one was learned)."""
    if rule == "all" or wrong:
        return True
    if rule != "tone":
        return False
    top, second = heapq.nlargest(2, jll)
    return unseen or top - second <= tone_margin


def step(online, tokens, label, learn, tone_margin):
    """One message of the protocol: classified by `online` (an OnlineMultinomial), then learned
    by the rule `learn` (see `learns`): (P(k | tokens), jll, the most probable class's row,
    whether it was learned)."""
    p, jll = online.posterior(tokens)
    guess, learned = _decided(online, p, jll, label, learn, tone_margin)
    if learned:
        online.learn(tokens, label)
    return p, jll, guess, learned


def _decided(online, p, jll, label, learn, tone_margin):
    """(the most probable class's row, whether the rule `learn` learns the message) of a
    message of `label` that `online` scores P(k | x) `p`, jll `jll`."""
    guess = max(range(len(p)), key=p.__getitem__)
    unseen = not online.class_count[online.row[label]]
    return guess, learns(learn, online.classes[guess] != label, jll, tone_margin, unseen)


def run(stream, online, learn="errors", unsure_below=None, on_step=None, *, tone_margin):
    """Classify each (name, tokens, label) of `stream` in order with `online` (an
    OnlineMultinomial), then learn it by the rule `learn` (see `learns`; `tone_margin` on
    the jll's scale of `online`'s event model): the report (see `report`). `on_step(i)`
    after each message."""
    from nbtext.classifier.purescore import decide

    labels, guesses, scores, learned = [], [], [], 0
    positive = online.row[positive_class(online.classes)] if len(online.classes) == 2 else None
    for i, (_, tokens, label) in enumerate(stream):
        if label not in online.row:
            raise NbtextError(f"the label {label!r} is not one of the model's classes ({', '.join(online.classes)})")
        p, jll, guess, was_learned = step(online, tokens, label, learn, tone_margin)
        labels.append(label)  # (unsure: by --unsure-below, or a model's spam cut-off, as its filter decides)
        guesses.append(
            (online.classes[guess], decide(online.classes, p, unsure_below, online.calibration)[0] == "unsure")
        )
        if positive is not None:  # the ROC ranks by log-odds: probabilities saturate at 1.0 and tie
            scores.append(jll[positive] - jll[1 - positive])
        learned += was_learned
        if on_step is not None:
            on_step(i)
    result = report(
        online.classes, labels, guesses, scores, learned, learn, unsure_below, cutoff_of(online.calibration)
    )
    if learn == "tone":
        result["tone_margin"] = tone_margin
    return result


def report(classes, labels, guesses, scores, learned, learn, unsure_below=None, cutoff=None):
    """The online run's figures: errors of the most probable class (and their cumulative
    count, for the picture), per class how many were decided as another (flagged, missed:
    not the unsure ones), the unsure band's catch, and for two classes
    1-ROCA% (the area above the ROC curve of the positive class's log-odds, in percent).
    `cutoff`: a model's spam cut-off (nbtext.cutoff.Cutoff), or None."""
    from nbtext.stats.metrics import roc_auc

    errors, cumulative, missed = 0, [], {label: 0 for label in classes}
    unsure = {"n": 0, "errors": 0}
    support = Counter(labels)
    for label, (guess, is_unsure) in zip(labels, guesses):
        wrong = guess != label
        errors += wrong
        missed[label] += wrong and not is_unsure  # delivered as another class: what the filter does
        cumulative.append(errors)
        if is_unsure:
            unsure["n"] += 1
            unsure["errors"] += wrong
    result = {
        "n": len(labels),
        "learn": learn,
        "learned": learned,
        "errors": errors,
        "error_rate": errors / len(labels) if labels else math.nan,
        "classes": {label: {"n": support[label], "taken_for_another": missed[label]} for label in classes},
        "cumulative_errors": cumulative,
    }
    if len(classes) == 2 and scores:
        positive = positive_class(classes)
        negative = next(c for c in classes if c != positive)
        result["positive"], result["negative"] = positive, negative
        has_both = support[positive] and support[negative]
        result["roca_percent"] = (
            100 * (1 - roc_auc(scores, [label == positive for label in labels])) if has_both else math.nan
        )
        result["scores"] = scores
        result["labels"] = labels
    if unsure_below is not None or cutoff is not None:
        result["unsure"] = {"threshold": unsure_below, **report_fields(cutoff), **unsure}
        if "positive" in result:
            result["delivered"] = delivered(result["positive"], labels, guesses)
    return result


def delivered(positive, labels, guesses):
    """The errors as a mail user sees them, where what is unsure goes to the inbox with the ham:
    the `positive` class's documents not filed as it (missed, or left unsure: `unsure` of them)
    and the other's filed as it (flagged, sure)."""
    missed = unsure = flagged = 0
    for label, (guess, is_unsure) in zip(labels, guesses):
        if label == positive:
            missed += guess != label or is_unsure
            unsure += is_unsure
        else:
            flagged += guess == positive and not is_unsure
    return {"errors": missed + flagged, "missed": missed, "missed_unsure": unsure, "flagged": flagged}


def evaluate_online(
    documents,
    settings,
    model=None,
    learn=None,
    seed=0,
    unsure_below=None,
    jobs=None,
    on_error=None,
    on_step=None,
    tone_margin=None,
):
    """The online run of labelled `documents` (shuffled by `seed`), starting from `model` (its
    counts, settings and calibration, which stays as the model's) or from nothing with train
    `settings` (then the probabilities are Naive Bayes' own, uncalibrated): the report of
    `run`. The messages are tokenized ahead on `jobs` workers. `learn` None: the rule the
    settings train by (online_rule); `tone_margin` None: the model's own, else the event
    model's; `unsure_below` None: the model's own, if any."""
    import random

    from nbtext.classifier.purescore import unsure_threshold
    from nbtext.classifier.settings import make_settings, tone_margin_of, unk_counts_pruned_documents
    from nbtext.jobs.parallel import CHUNK, ordered_runs
    from nbtext.reading.documents import in_batches, report_errors

    settings = model.settings if model is not None else make_settings(**settings)
    if model is None and settings.calibration == "temperature":
        raise NbtextError(
            "eval --online from nothing stays uncalibrated (its model learns one message at a "
            "time): drop --calibration temperature (a model trained calibrated, given as -m MODEL "
            "without train options, is scored with its temperature)"
        )
    features = settings.get("features", "counts")
    form = EVENT_MODELS[settings["event_model"]].online  # (a model of counts, scored from them)
    if form is None or features not in ONLINE_FEATURES or settings["max_features"] is not None:
        raise NbtextError(
            "eval --online runs a multinomial model of counts or of presence, or the spam filters' Fisher "
            "combining (--model multinomial or fisher, --features counts or binary, no --max-features)"
        )
    if unk_counts_pruned_documents(settings):
        raise NbtextError(  # UNK's count would be the documents holding a token not yet kept: it changes as they are
            "eval --online of presence features with UNK counts no pruned token: give --min-count 1 or --unknown ignore"
        )
    documents = list(documents)
    random.Random(seed).shuffle(documents)
    labels = {doc.label for doc in documents if doc.error is None}  # (one that cannot be read is skipped by name)
    known = model.classes if model is not None else ()
    if model is not None and not labels & set(known):
        raise NbtextError(f"no document has a label the model knows (its classes: {', '.join(known)})")
    new = new_classes(known, sorted(labels))  # (from nothing: every label)
    if problem := classes_problem(new):
        raise NbtextError(problem)  # (a class the run makes, as a training would refuse it: told apart from unsure)
    if model is not None and new:
        import warnings  # (nothing is written: said, as the classes of none they start as)

        warnings.warn(f"{new_classes_said(known, new)}, each starting from no documents", stacklevel=2)
    classes = sorted([*known, *new])
    if len(classes) < 2:
        raise NbtextError("eval --online needs documents of two classes or more")
    EVENT_MODELS[settings["event_model"]].check_classes(classes)

    def tokenized_chunk(chunk):
        kept, token_lists, errors, mail_documents, _ = _tokenized(settings, chunk)
        return [(doc.name, tokens, doc.label) for doc, tokens in zip(kept, token_lists)], errors, mail_documents

    chunks = ordered_runs(tokenized_chunk, in_batches(documents, CHUNK), jobs)
    first = next(chunks, ([], [], 0))
    if settings["alpha"] is None:  # as a training of the first messages would choose it (TrainSettings)
        settings = settings.resolved(first[2], len(first[0]))
    start = start_documents = None
    if model is not None:  # (its classes' rows, and 0 in the classes the run adds)
        tokens, dense = model.vocabulary.tokens, model.token_counts.dense
        rows = [model.classes.index(label) if label in model.classes else None for label in classes]
        start = {token: [float(dense[r, j]) if r is not None else 0.0 for r in rows] for j, token in enumerate(tokens)}
        start_documents = [float(model.class_count[r]) if r is not None else 0.0 for r in rows]
    online = OnlineMultinomial.of_settings(
        classes, settings, None, start, model.calibration if model is not None else None, start_documents
    )

    def stream():
        for chunk in _chained(first, chunks):
            results, errors, _ = chunk
            report_errors(errors, on_error)
            yield from results

    learn = learn or online_rule(settings)
    if tone_margin is not None and learn != "tone":  # (as make_settings refuses it for a training)
        raise NbtextError(f"--tone-margin does nothing here: it is --learn tone's margin, and this run learns {learn}")
    # the given margin, else the model's own (train --learn tone --tone-margin), else the event model's
    tone_margin = tone_margin_of(settings["event_model"], tone_margin, settings.get("tone_margin"))
    unsure_below = unsure_threshold(unsure_below, settings)  # (the given, else the model's own, as it decides)
    result = run(stream(), online, learn, unsure_below, on_step, tone_margin=tone_margin)
    result["alpha"] = settings["alpha"]
    result["seed"] = seed
    return result


def online_rule(settings):
    """The online rule of a model of `settings` (stored, or train's) when none is given: the
    one its training learns by when that is a TONE pass (--learn tone, the spam preset's:
    an online run of the preset from nothing then learns as its training does), else errors.
    (Chosen on the train splits, docs/performance.md: TONE had the better 1-ROCA and fewer
    errors as delivered on each of the three spam corpora.)"""
    return "tone" if settings.get("learn") == "tone" else "errors"


def _tokenized(settings, batch, keyed=False, packed=None):
    """(the documents of `batch` that could be read, with their data, their token lists (each
    `packed(tokens)` as it is made, if given), [(name, message)] of those that could not, how
    many were read as mail, and with `keyed` [(journal key, whether it reads as mail)] of
    each read, of the bytes its tokens are of)."""
    from nbtext.classifier.settings import make_tokenizer
    from nbtext.reading.documents import document_key, tokenized_with

    tokenize, errors = make_tokenizer(settings["tokenizer"]), []
    kept, token_lists, keys = tokenized_with(
        tokenize if packed is None else lambda data: packed(tokenize(data)),
        batch,
        (lambda doc, data: (document_key(data), tokenize.reads_as_mail(data))) if keyed else None,
        lambda doc, message: errors.append((doc.name, message)),
    )
    return kept, token_lists, errors, tokenize.mail_documents, keys


def tone_chosen(batches, settings, jobs=1, on_error=None):
    """(the documents of `batches()` (lists of labelled Documents) that one TONE pass learns,
    in the order they were read, as Reads (their data let go); every document the pass saw, as (token
    lists, labels, whether it learned each); `settings` with λ chosen on all of them, if it
    was left to the corpus): `train --learn tone`'s pass. Every document is tokenized (on
    `jobs` workers) and held as numbers of its tokens (nbtext.features.vocabulary.HeldTokens:
    the token lists are TokenRows, read as lists of strings one at a time), then taken in the order of its content key (the journal's, then its
    label: neither the files' order nor -j changes it), classified by the multinomial model of
    the documents learned before it (its counts or presence, its λ and prior, UNK as the
    settings say; every token a feature: --min-count 1, no --max-features) and learned when
    misclassified or when its two most likely classes are within the settings' tone_margin
    in jll (`learns`). A document that cannot be read goes to `on_error`."""
    from nbtext.features.vocabulary import HeldTokens, TokenPacking
    from nbtext.jobs.parallel import ordered_runs
    from nbtext.reading.documents import held_bytes, report_errors
    from nbtext.stats.changes import LearnedBatch, Ledger

    def keyed_chunk(batch):
        packing = TokenPacking()  # (their data let go: the tokens are what is held, each distinct one once)
        kept, rows, errors, mail_documents, keys = _tokenized(settings, batch, keyed=True, packed=packing.row)
        read = [Read(doc.label, key, mail, held_bytes(doc)) for doc, (key, mail) in zip(kept, keys)]
        return read, (packing.distinct(), rows), errors, mail_documents

    reads, held, seen = [], HeldTokens(), Ledger()  # seen: as a training of them all learns them
    for read, packed, errors, mail in ordered_runs(keyed_chunk, batches(), jobs):
        report_errors(errors, on_error)
        reads += read
        held.add(*packed)
        seen.learn(LearnedBatch(((one.key, one.label) for one in read), mail))
    # (each read as a list of strings when the pass, the counting or the calibration reads it)
    token_lists = held.rows()
    settings = settings.resolved(seen.mail_documents, len(reads))
    labels = [one.label for one in reads]
    learned = tone_learned(token_lists, labels, [one.key for one in reads], settings)
    return [one for one, was in zip(reads, learned) if was], (token_lists, labels, learned), settings


# a document the TONE pass read: its label, journal key, whether it was read as mail, its bytes
Read = namedtuple("Read", "label key mail bytes")


def tone_learned(token_lists, labels, keys, settings):
    """[whether one TONE pass learns each document] of documents of `token_lists` and
    `labels` (tokenized with `settings`, resolved), taken in the order of their journal
    `keys` then labels, as tone_chosen says: every one when there is one class (nothing to
    tell apart: training says so). Token lists held as numbers (TokenRows, train's) of a
    multinomial go through held_steps, others (eval --folds' lists, fisher) through `step`:
    the same steps."""
    classes = sorted(set(labels))
    if len(classes) < 2:
        return [True] * len(labels)
    EVENT_MODELS[settings["event_model"]].check_classes(classes)  # (before its form is made of them)
    online = OnlineMultinomial.of_settings(classes, settings, min_count=1)  # (a pass prunes nothing)
    from nbtext.features.vocabulary import TokenRows

    order = sorted(range(len(labels)), key=lambda i: (keys[i], labels[i]))
    learned = [False] * len(labels)
    if isinstance(token_lists, TokenRows) and online.form is Multinomial:
        for i, (_, _, _, was) in zip(order, held_steps(token_lists, labels, order, online, settings["tone_margin"])):
            learned[i] = was
        return learned
    for i in order:
        learned[i] = step(online, token_lists[i], labels[i], "tone", settings["tone_margin"])[3]
    return learned


def held_steps(held, labels, order, online, tone_margin):
    """Each step of a TONE pass (`step`'s (P(k | x), jll, guess, whether learned)) over the
    documents of `held` (TokenRows: each a row of token numbers) at `order`, by `online` (a
    multinomial's learner of --min-count 1, as a pass's, of no counts yet): the same steps as
    `step` of their token lists, with each token's counts in an array row by its number, not
    in a dict by its string (the strings are read once, ranked in token order). A document's
    features and UNK, their terms (x_j W_kj by the form's weights), the cap's choice
    (nbtext.stats.evidence.used_cells_of: used_features's rule, equals in token order: the
    tokens' ranks), jll_k = log P(k) + the exact sum of its chosen terms: as posterior."""
    import numpy as np

    if online.min_count != 1 or online.counts:
        raise ValueError("held_steps learns from no counts, every token a feature (--min-count 1)")
    strings, rows = held.tokens, held.rows
    counts = np.zeros((len(strings), len(online.classes)))  # each token's count in each class
    rank = np.empty(len(strings) + 1, dtype=np.int64)  # the token order (token_key's), UNK (the last number) last
    rank[sorted(range(len(strings)), key=strings.__getitem__)] = np.arange(len(strings))
    rank[-1] = len(strings)
    for i in order:
        ids, occurrences = np.unique(rows[i], return_counts=True)
        held_counts = counts[ids]
        kept = held_counts.sum(axis=1) >= 1  # (--min-count 1: a token once learned; UNK's counts stay 0)
        unknown = int(occurrences[~kept].sum())
        features, x = held_counts[kept], None if online.presence else occurrences[kept].astype(np.float64)
        columns = rank[ids[kept]]
        if unknown and online.unk:
            features = np.vstack([features, np.array(online.unk_counts)[None, :]])
            x = None if x is None else np.append(x, float(unknown))
            columns = np.append(columns, rank[-1])
        length = len(rows[i]) if online.unk else len(rows[i]) - unknown
        jll = _held_jll(online, features, x, columns)
        p = tempered_posterior(jll, document_temperature(online.calibration, length))[0]
        label = labels[i]
        guess, learned = _decided(online, p, jll, label, "tone", tone_margin)
        if learned:
            added = np.ones(len(ids)) if online.presence else occurrences.astype(np.float64)
            counts[ids, online.row[label]] += added
            online.learned_elsewhere(label, float(added[kept].sum()), int((~kept).sum()), float(added[~kept].sum()))
        yield p, jll, guess, learned


def _held_jll(online, features, x, columns):
    """jll_k of one document's `features` (rows of counts per class), x_j (None: 1 each) and
    token ranks `columns`, by `online`'s form: as LinearModel.joint_log_likelihood."""
    import numpy as np

    from nbtext.stats.evidence import used_cells_of

    log_prior = online._log_prior()
    if not len(features):
        return [math.fsum([p]) for p in log_prior]
    form = online.current_form()
    terms = np.empty(features.shape)
    for k in range(features.shape[1]):  # each distinct count's weight once, by the form's own memo
        distinct, where = np.unique(features[:, k], return_inverse=True)
        weights = form.weights(k)
        terms[:, k] = np.array([weights[c] for c in distinct.tolist()])[where]
    if x is not None:
        terms *= x[:, None]
    if online.max_evidence is not None:
        by_rank = np.argsort(columns)
        used = by_rank[
            used_cells_of(np.zeros(len(columns), dtype=np.int64), columns[by_rank], terms[by_rank], online.max_evidence)
        ]
        terms = terms[used]
    return [math.fsum([p, *terms[:, k].tolist()]) for k, p in enumerate(log_prior)]


def _chained(first, rest):
    yield first
    yield from rest
