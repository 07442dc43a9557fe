"""Stratified K-fold cross-validation, and several models compared on the same folds.

Each document is read and tokenized once, one at a time (nbtext.reading.documents.in_batches);
every fold then counts its K-1 training folds and scores the held-out one. The corpus's tokens
are held in memory for this (not its bytes), as numbers of its distinct tokens
(nbtext.features.vocabulary.HeldTokens).
"""

import math
from collections import Counter
from functools import partial

import numpy as np

from nbtext.choices import learned_by_tone
from nbtext.classifier.purescore import unsure_threshold
from nbtext.classifier.options_read import options_read_by, unread_by_all
from nbtext.classifier.settings import FOLDS_UNSURE_REFUSED, make_settings, make_tokenizer, preset_of
from nbtext.errors import NbtextError
from nbtext.features.vocabulary import HeldTokens, TokenPacking
from nbtext.labels import positive_class
from nbtext.jobs.parallel import ordered_runs
from nbtext.jobs.training import fit_tokens
from nbtext.reading.documents import data_key, in_batches, tokenized, tokenized_with
from nbtext.stats.event_models import EVENT_MODELS
from nbtext.stats.metrics import labels_report


def stratified_folds(labels, k, seed):
    """fold[i] in 0..k-1 for every document: each class is shuffled (with `seed`) and dealt
    round-robin, so every fold gets its share of every class."""
    fold = np.empty(len(labels), dtype=np.intp)
    if not len(labels):
        return fold
    rng = np.random.default_rng(seed)
    # each class's members in document order, classes in sorted order: one sort, not a
    # scan of every label per class (quadratic when most lines have a label of their own)
    _, class_of, sizes = np.unique(np.asarray(labels), return_inverse=True, return_counts=True)
    by_class = np.argsort(class_of.ravel(), kind="stable")
    offset = 0
    for members in np.split(by_class, np.cumsum(sizes)[:-1]):
        rng.shuffle(members)
        fold[members] = (np.arange(len(members)) + offset) % k  # offset: small classes spread out
        offset += len(members)
    return fold


def cross_validate(documents, k, seed, models, on_error=None, on_fold=None, jobs=1, unsure_below=None, **options):
    """{model: {"folds": [{accuracy, macro_f1, n}], accuracy/macro_f1 mean and std}}; of
    two classes also, per fold, the documents of the positive class (labels.positive_class,
    the model's "positive") its model does not decide to be of it (`missed`; `missed_unsure`
    of them left unsure) and those of the other class it decides are (`flagged`), and
    `unsure`, all the documents it leaves unsure: below `unsure_below`, else below the
    model's own (train --unsure-below; the spam preset's), as `unsure_below` in its results
    (its models are not calibrated: the probabilities of a model trained with
    --calibration none).

    `documents` are labelled Documents; `models` the event models to compare (the other
    options are shared). `on_fold(model, fold, report)` is told of each fold as it finishes
    (0-based; folds finish in order). The
    folds run on `jobs` forked workers once the corpus is tokenized (None: in this process
    while they are quick, nbtext.jobs.parallel.ordered_runs).
    """
    if k < 2:
        raise NbtextError("--folds must be at least 2")
    if seed < 0:  # (numpy's generator takes none)
        raise NbtextError(f"--seed must be 0 or more for --folds, not {seed}")
    if len(models) > 1 and (unread := unread_by_all(options, models)):
        raise NbtextError(f"{unread[0]} does nothing here: {unread[1]}; drop it")
    # compared models each take what they read; one model takes every option, as train does (make_settings refuses)
    given_to = {
        name: options_read_by(options, name)[0] if len(models) > 1 else {**options, "model": name} for name in models
    }
    settings_of = {name: make_settings(**given) for name, given in given_to.items()}
    if unsure_below is not None and any(settings.calibration != "none" for settings in settings_of.values()):
        raise NbtextError(FOLDS_UNSURE_REFUSED.format("--unsure-below"))  # (the command line's: cli.options.REFUSED)
    tokenizer = make_tokenizer(settings_of[models[0]]["tokenizer"])
    packing = TokenPacking()  # the corpus's tokens are held, not its bytes: each distinct token once
    mail = []  # whether each document read was read as e-mail (what a fold's λ left to the corpus is chosen by)

    def packed(data):
        before = tokenizer.mail_documents
        row = packing.row(tokenizer(data))
        mail.append(tokenizer.mail_documents > before)
        return row

    # the journal's keys, the order a TONE pass takes documents in (train --learn tone)
    keys = [] if any(map(learned_by_tone, settings_of.values())) else None
    labels, rows = [], []
    for batch in in_batches(documents, 1):  # one at a time, as they come (a progress bar over them moves)
        if keys is None:
            kept, batch_rows = tokenized(packed, batch, on_error)
        else:
            kept, batch_rows, batch_keys = tokenized_with(packed, batch, data_key, on_error)
            keys += batch_keys
        labels += [doc.label for doc in kept]
        rows += batch_rows
    held = HeldTokens()
    held.add(packing.distinct(), rows)
    token_lists = held.rows()  # (a fold reads its documents as lists of strings, each when it reads it)
    counts = Counter(labels)  # (not labels.count per label: quadratic when every line has its own label)
    if len(counts) < 2:
        raise NbtextError(f"need at least two classes to cross-validate, got {len(counts)}")
    if unsure_below is not None and len(counts) != 2:  # (what the folds decide is said of two classes only)
        raise NbtextError(
            f"--unsure-below does nothing here: --folds reports what its models decide of two classes "
            f"(the positive one's missed, the other's flagged), and these documents have {len(counts)}; drop it"
        )
    smallest = min(counts, key=counts.get)
    if counts[smallest] < k:
        raise NbtextError(
            f"class {smallest!r} has {counts[smallest]} document{'s' if counts[smallest] != 1 else ''}, "
            f"fewer than --folds {k} (try fewer folds)"
        )
    fold = stratified_folds(labels, k, seed)
    sides = _sides(counts) if len(counts) == 2 else {}  # (of two classes: what the folds decide is said)
    results = {}
    for name in models:
        settings = settings_of[name].resolved(tokenizer.mail_documents, len(labels))  # (all of them: its "alpha")
        threshold = unsure_threshold(unsure_below, settings)  # (eval's, else the model's own)
        folds = []
        run = partial(held_out_guesses, settings_of[name], token_lists, labels, fold, keys, threshold, mail=mail)
        for f, (test, guesses, classes, decided) in enumerate(ordered_runs(run, range(k), jobs)):
            truth = [labels[i] for i in test]
            report = labels_report(truth, guesses, classes)
            folds.append({"n": len(test), "accuracy": report["accuracy"], "macro_f1": report["macro_f1"]})
            if sides:
                folds[-1].update(_two_classes(truth, decided, sides["positive"], threshold is not None))
            if on_fold is not None:
                on_fold(name, f, folds[-1])
        results[name] = {
            "preset": preset_of(given_to[name]),  # whose defaults it took: the spam preset is the multinomial's alone
            "alpha": settings["alpha"],
            "smooths": EVENT_MODELS[name].flags.smooths,
            **sides,
            **({"unsure_below": threshold} if sides and threshold is not None else {}),
            "folds": folds,
            **_spread(folds, "accuracy"),
            **_spread(folds, "macro_f1"),
        }
    return results


def _sides(classes):
    """{"positive", "negative"} of two classes (labels.positive_class)."""
    positive = positive_class(classes)
    return {"positive": positive, "negative": next(c for c in classes if c != positive)}


def _two_classes(truth, decided, positive, unsure):
    """What a fold's model of two classes decided of its documents: {"missed", "flagged"}
    (and `unsure`: "missed_unsure", those of the missed left unsure, and "unsure", all the
    documents left unsure), as cross_validate says."""
    counts = {
        "missed": sum(t == positive and d != positive for t, d in zip(truth, decided)),
        "flagged": sum(t != positive and d == positive for t, d in zip(truth, decided)),
    }
    if not unsure:
        return counts
    missed_unsure = sum(t == positive and d == "unsure" for t, d in zip(truth, decided))
    return {**counts, "missed_unsure": missed_unsure, "unsure": decided.count("unsure")}


def held_out_guesses(settings, token_lists, labels, fold, keys, unsure_below, f, mail=None):
    """(the indices of fold f's documents, the most probable class a model of the other
    folds gives each, that model's classes, what it decides of each: that class, or with
    `unsure_below` 'unsure' below it, as the model decides): one step of K-fold
    cross-validation of tokenized documents. The model learns the other folds' documents as
    train would: all of them, or (--learn tone) those one TONE pass over them learns, taken
    in the order of their journal `keys`; λ left to the corpus chosen as train would, by
    the share of them read as e-mail (`mail`: whether each document was; None: λ as
    `settings` hold it)."""
    train = np.flatnonzero(fold != f).tolist()
    test = np.flatnonzero(fold == f).tolist()
    mail_documents = None if mail is None else sum(mail[i] for i in train)
    if mail_documents is not None:
        settings = settings.resolved(mail_documents, len(train))
    try:
        if learned_by_tone(settings):
            from nbtext.jobs.online import tone_learned

            learned = tone_learned(
                [token_lists[i] for i in train], [labels[i] for i in train], [keys[i] for i in train], settings
            )
            train = [i for i, was in zip(train, learned) if was]
            mail_documents = None if mail is None else sum(mail[i] for i in train)
        model = fit_tokens(settings, [token_lists[i] for i in train], [labels[i] for i in train], mail_documents)
    except NbtextError as e:  # (which fold's model could not be made)
        raise NbtextError(f"fold {f + 1} of {fold.max() + 1}: {e}") from None
    jll, lengths = model.jll_and_lengths([token_lists[i] for i in test])
    guesses = [model.classes[j] for j in jll.argmax(axis=1).tolist()]
    if unsure_below is None:
        return test, guesses, model.classes, guesses
    decided = [model.decide(p, unsure_below)[0] for p in np.exp(model.posterior(jll, lengths))]
    return test, guesses, model.classes, decided


def _spread(folds, metric):
    """Mean and standard deviation (over the folds, ddof=0) of one metric."""
    values = [f[metric] for f in folds]
    mean = sum(values) / len(values)
    return {f"{metric}_mean": mean, f"{metric}_std": math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))}
