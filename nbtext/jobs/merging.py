"""Merging models: one model of all the documents several models learned.

Naive Bayes is a sum of counts, and a model file keeps every token's counts (pruned ones
included), so a merge is exact: counts are summed by token and classes by name, and each
model is a batch of a training (nbtext.stats.changes.LearnedBatch: its journal and its documents
read as mail), so a document two of them learned counts twice, as it would in one training
that read it twice, and is held under the later model's label (a warning says how many);
then pruning (--min-count, --max-features) and the default λ are decided again on the
sums. The result equals, byte for byte, the model of one training on all the documents.
Every calibrated model (and every --shard part) keeps its calibration sample
(nbtext.jobs.calibration): the merge takes the documents of all the samples that one
training's sample would hold, and fits T and γ on them.

Two kinds of model cannot be merged exactly, and are refused: tf-idf features (each idf
is a function of every document) and presence features with an UNK feature once tokens
are pruned (which documents held a pruned token is not in the counts).
"""

from __future__ import annotations

import numpy as np

from nbtext.classifier.settings import (
    CALIBRATED_MERGE,
    TFIDF_MERGE,
    TONE_MERGE,
    UNK_MERGE,
)
from nbtext.choices import learned_by_tone
from nbtext.errors import NbtextError
from nbtext.features.weighting import counts_presence, is_tfidf
from nbtext.jobs.calibration import calibrate, complete_rate
from nbtext.classifier.counted import model_of_table
from nbtext.labels import new_classes_refused
from nbtext.stats.changes import LearnedBatch, Ledger
from nbtext.stats.counting import CountTable

TYPE_CHECKING = False  # (the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Iterable

    from nbtext.classifier.model import NaiveBayes


def merge(
    models: Iterable[NaiveBayes], names: Iterable[str] | None = None, into: int | None = None, new_classes: bool = False
) -> NaiveBayes:
    """The model of all the documents of `models` (NaiveBayes objects, trained with the same
    settings). `names` (e.g. their paths) name them in errors. `into`: the index of the
    model the merge replaces (merge -o A A B), which takes the others' classes it lacks only
    with `new_classes` (labels.new_classes_refused, as train --update)."""
    models = list(models)
    names = list(names) if names is not None else [f"model {i + 1}" for i in range(len(models))]
    if not models:
        raise NbtextError("give the models to merge")
    if into is not None and (
        refusal := new_classes_refused(
            models[into].classes, [c for model in models for c in model.classes], new_classes
        )
    ):
        raise NbtextError(refusal)
    for model, name in zip(models, names):
        _check_mergeable(model, name)
    settings = _common_settings(models, names)
    calibration = _common_calibration(models, names)
    table = CountTable(binary=counts_presence(settings))
    learned, shared = Ledger(), 0
    for model in models:
        table.merge(exported_counts(model))
        shared += len(model.journal.keys() & learned.journal.keys())
        # (a model without its corpus record, or calibrated without its sample: refused by _check_mergeable)
        learned.learn(LearnedBatch(model.journal.items(), model.corpus["mail_documents"]))  # type: ignore[index]
    # (λ left to the corpus: chosen again from the documents of all of them by model_of_table, as one training would)
    corpus = {"mail_documents": learned.mail_documents, "default_alpha": models[0].corpus["default_alpha"]}  # type: ignore[index]
    merged = model_of_table(settings, table, learned.journal_over({}), _documents_needed, corpus)
    if calibration is not None:
        mode, budget = calibration
        samples = [model.calibration_sample for model in models]
        united = tuple([d for sample in samples for d in sample[part]] for part in range(3))  # type: ignore[index]
        calibrated = calibrate(merged, united, min(complete_rate(m) for m in models), mode, budget=budget)
        if calibrated is None:
            raise NbtextError(
                "cannot merge: a model's calibration sample has lost documents to forget; "
                "retrain that model, or train on all the documents at once"
            )
        merged.take_calibration(calibrated)
    if shared:  # said last: a merge refused says its refusal alone
        import warnings

        were = "document was" if shared == 1 else "documents were"
        warnings.warn(
            f"{shared:,} {were} learned by more than one of the models: counted once for each "
            "(merge models of disjoint parts)",
            stacklevel=2,
        )
    return merged


def _common_calibration(models, names):
    """(--calibration mode, --max-ham-flagged budget) all `models` share, None when none is
    calibrated; refused when they differ (before any work, as the settings are)."""
    samples = [model.calibration_sample for model in models]
    if all(sample is None for sample in samples):
        return None
    if any(sample is None for sample in samples):
        missing = names[samples.index(None)]
        raise NbtextError(
            f"cannot merge: {missing} was trained with --calibration none and others were not; "
            "train the parts with the same options"
        )
    modes = {model.sample_mode or "auto" for model in models}
    if len(modes) > 1:
        raise NbtextError(
            "cannot merge models trained with --calibration auto and temperature; train them with the same options"
        )
    budgets = {(model.calibration or {}).get("max_ham_flagged") for model in models}
    if len(budgets) > 1:
        raise NbtextError("cannot merge models trained with different --max-ham-flagged budgets")
    return modes.pop(), budgets.pop()


def exported_counts(model):
    """A model's counts in CountTable.export's form, to merge into a table (sparse: no
    (classes × tokens) table of each model is made)."""
    data, indices, indptr = model.token_counts.csr()
    rows = np.repeat(np.arange(len(model.classes), dtype=np.int32), np.diff(indptr))
    return (
        list(model.classes),
        model.vocabulary.tokens,
        np.asarray(model.class_count, dtype=np.float64),
        rows,
        np.asarray(indices, dtype=np.int32),
        np.asarray(data, dtype=np.float64),
    )


def _check_mergeable(model, name):
    if is_tfidf(model.settings):
        raise NbtextError(f"cannot merge {name}: {TFIDF_MERGE}")
    if model.calibration is not None and model.calibration_sample is None:
        why = TONE_MERGE if learned_by_tone(model.settings) else CALIBRATED_MERGE
        raise NbtextError(f"cannot merge {name}, a calibrated model without its calibration sample: {why}")
    if model.corpus is None:
        raise NbtextError(
            f"cannot merge {name}: it was written by an older nbtext, which did not keep what a merge needs "
            "(documents read as mail); train it again"
        )


# What a model file that does not hold a setting was trained with (files of builds before the
# setting, and settings stored only when not the default): said so when two models differ.
_UNSTORED = {"learn": "all", "lexer": "words"}


def _common_settings(models, names):
    """The settings all `models` share (λ aside when every one chose the default λ)."""
    first = models[0]
    for model, name in zip(models[1:], names[1:]):
        if model.settings["event_model"] != first.settings["event_model"]:  # the difference that matters most
            raise NbtextError(
                f"cannot merge {names[0]} and {name}: one is a {first.settings['event_model']} model, "
                f"the other a {model.settings['event_model']} one; train them with the same options"
            )
        if model.corpus["default_alpha"] != first.corpus["default_alpha"]:
            given, default = (names[0], name) if not first.corpus["default_alpha"] else (name, names[0])
            raise NbtextError(
                f"cannot merge {names[0]} and {name}: {given} was trained with a λ given (--alpha, or the "
                f"spam preset's, a model of spam and ham by default), {default} with the λ its corpus chose; "
                "train them with the same options (--preset too)"
            )
        for key in sorted(set(first.settings) | set(model.settings)):
            if key == "alpha" and first.corpus["default_alpha"]:
                continue
            ours, theirs = first.settings.get(key), model.settings.get(key)
            if ours != theirs:
                if (
                    key == "tokenizer"
                ):  # (the tokenizer setting that differs; char_bytes last: it goes with char_ngrams)
                    keys = sorted(set(ours) | set(theirs), key=lambda k: (k == "char_bytes", k))
                    key = next(k for k in keys if ours.get(k) != theirs.get(k))
                else:
                    ours, theirs = first.settings, model.settings
                ours, theirs = ours.get(key, _UNSTORED.get(key)), theirs.get(key, _UNSTORED.get(key))
                raise NbtextError(
                    f"cannot merge {names[0]} and {name}: their {key} setting differs ({ours!r} and {theirs!r}); "
                    "train them with the same options"
                )
    return dict(first.settings)


def _documents_needed(function):
    raise NbtextError(f"cannot merge these models once tokens are pruned: {UNK_MERGE}")
