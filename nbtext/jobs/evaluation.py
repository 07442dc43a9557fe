"""Scoring a model on labelled documents: the report `nbtext eval` prints.

>>> report = nbtext.evaluate(model, ["free pills", "lunch at noon"], ["spam", "ham"])
>>> report["accuracy"], report["confusion"]
"""

from __future__ import annotations

from nbtext.cutoff import cutoff_of
from nbtext.errors import NbtextError
from nbtext.exactmath import exp
from nbtext.jobs.parallel import scored_batches
from nbtext.labels import positive_class
from nbtext.reading.documents import Document
from nbtext.stats.metrics import labels_report as score, expected_calibration_error, log_loss, roc_auc

TYPE_CHECKING = False  # (the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from nbtext.classifier.model import NaiveBayes


def evaluate(
    model: NaiveBayes,
    documents: Iterable[Any],  # Documents, or texts (str or bytes) with `labels`
    labels: Iterable[str] | None = None,
    unsure_below: float | None = None,
    jobs: int = 1,
    on_error: Callable[..., Any] | None = None,
    curves: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report of `model` on labelled documents (see nbtext.stats.metrics.labels_report), with
    `log_loss`, `roc_auc` (two classes; the positive one is labels.positive_class's), `ece` (the
    expected calibration error, 10 bins, over all documents) and, with `unsure_below` (or the
    model's own, train --unsure-below) or a spam cut-off, how
    many documents were `unsure` (left out of the rest), how many the most probable class
    gets wrong over all documents (`errors`), and how many of those were unsure
    (`unsure_errors`).

    `documents` are labelled Documents (nbtext.reading.sources), or texts with `labels` beside them.
    Documents whose label the model does not know are left out of the report, and a
    warning says how many; so does one when every document is of one class. A `curves`
    dict gets what the pictures of `eval --plot` need: every document's `confidences` and
    whether it was `right`, and for two classes `log_odds` and `positives`.
    """
    if labels is not None:
        labels = list(labels)
        texts = list(documents)
        if len(texts) != len(labels):
            raise NbtextError(f"{len(texts)} documents but {len(labels)} labels")
        documents = [Document(str(i), d, label) for i, (d, label) in enumerate(zip(texts, labels))]
    index = {label: k for k, label in enumerate(model.classes)}

    unknown: dict[str, int] = {}
    seen: set[str] = set()

    def checked():
        for doc in documents:
            if doc.error is not None:  # skipped by name where it is read
                yield doc
            elif doc.label not in index:
                unknown[doc.label] = unknown.get(doc.label, 0) + 1
            else:
                seen.add(doc.label)
                yield doc

    truth, guesses, unsure, true_log_proba, log_odds, positives = [], [], 0, [], [], []
    confidences, right, unsure_errors = [], [], 0
    if len(model.classes) == 2:  # the positive class as every path names it (the spam class, by name)
        positive = model.classes.index(positive_class(model.classes))
    for kept, log_proba, _ in scored_batches(model, checked(), jobs, on_error):
        for doc, row in zip(kept, log_proba):
            true_log_proba.append(float(row[index[doc.label]]))
            if len(model.classes) == 2:
                log_odds.append(float(row[positive] - row[1 - positive]))
                positives.append(doc.label == model.classes[positive])
            probabilities = exp(row)
            best = model.classes[int(probabilities.argmax())]  # the most probable class, unsure or not
            confidences.append(float(probabilities.max()))
            right.append(best == doc.label)
            label, _ = model.decide(probabilities, unsure_below)
            if label == "unsure":
                unsure += 1
                unsure_errors += best != doc.label
                continue
            truth.append(doc.label)
            guesses.append(label)
    _warn_about_labels(model, unknown, seen)
    if curves is not None:
        curves.update(confidences=confidences, right=right, log_odds=log_odds, positives=positives)
    report = score(truth, guesses, model.classes)
    report["log_loss"] = log_loss(true_log_proba)
    if len(model.classes) == 2:
        report["roc_auc"] = roc_auc(log_odds, positives)
    report["ece"] = expected_calibration_error(confidences, right)
    unsure_below = model.unsure_threshold(unsure_below)  # (the command's, else the model's own)
    if unsure_below is not None or cutoff_of(model.calibration) is not None:
        report["unsure"] = unsure
        report["unsure_below"] = unsure_below
        # of the documents the most probable class gets wrong, how many the band catches
        report["errors"] = right.count(False)
        report["unsure_errors"] = unsure_errors
    return report


def _warn_about_labels(model, unknown, seen):
    """One line each: labels the model does not know (their documents left out), one class."""
    import warnings

    known = ", ".join(model.classes)
    if unknown and not seen:
        raise NbtextError(
            f"no document has a label the model knows (labels {', '.join(sorted(unknown))}; "
            f"the model's classes: {known})"
        )
    if unknown:
        n = sum(unknown.values())
        warnings.warn(
            f"{n:,} document{'s' if n != 1 else ''} with labels the model does not know "
            f"({', '.join(sorted(unknown))}; its classes: {known}) left out of the report",
            stacklevel=3,
        )
    if len(seen) == 1 and len(model.classes) > 1:
        warnings.warn(
            f"every document is of one class ({next(iter(seen))}): the other classes' recall and "
            "the ROC AUC say nothing",
            stacklevel=3,
        )
