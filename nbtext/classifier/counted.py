"""A model made of counts: the model of a finished count table (a training's, an update's,
a merge's), a model's counts as a table to change, and a model with the changes of its
file's pending section counted in (nbtext.modelfile.pending): what every reader scores with.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from nbtext.classifier.model import Calibrated, NaiveBayes, vocabulary_of
from nbtext.classifier.settings import corpus_alpha, model_settings, table_rows_model, unk_counts_pruned_documents
from nbtext.errors import NbtextError
from nbtext.features.matrix import one_hot
from nbtext.features.weighting import counts_presence, feature_matrix, idf_weights, is_binary, is_tfidf
from nbtext.labels import class_problem, label_problem
from nbtext.modelfile.pending import COMPACT_AFTER, NOT_WRITTEN
from nbtext.stats.changes import Ledger, of_record
from nbtext.stats.counting import CountTable
from nbtext.stats.event_models import EVENT_MODELS
from nbtext.stats.token_counts import ClassCounts


def no_tokens_remain(min_count):
    """What a model is told whose every token --min-count prunes, with no UNK to score by: the
    full way's training refuses it, and so does the one-message learner (jobs/learnone)."""
    return f"after pruning, no tokens remain (try a lower --min-count than {min_count})"


def model_of_table(
    settings, table, journal, over_batches, corpus=None, min_classes=None, file_info=None, classes_as_read=False
):
    """The model of a finished count table: its classes checked (labels.class_problem; with
    `classes_as_read`, the classes of a model file replayed with its pending records, as its
    reader checked them: labels.label_problem, since an older build's may hold a class named
    unsure), the vocabulary pruned and checked, then (a second pass over the corpus:
    `over_batches(function)` yields function(token lists, labels) of each batch, in order)
    the documents holding a pruned token for presence features with UNK, or the tf-idf sums
    for tf-idf features. `corpus` is the model's record of what it was trained on (its λ
    is the one that record and the table's documents choose: corpus_alpha),
    `file_info` what it holds of the file it stands for (a replayed one's: its pending
    records) (nbtext.classifier.model.NaiveBayes)."""
    classes, tokens, class_count, token_counts = table.sorted_view()
    if (alpha := corpus_alpha(settings, corpus, class_count.sum())) != settings["alpha"]:
        settings = {**model_settings(settings), "alpha": alpha}
    for label in classes:
        if problem := (label_problem if classes_as_read else class_problem)(label):
            raise NbtextError(problem)
    if len(classes) < (min_classes or EVENT_MODELS[settings["event_model"]].flags.min_classes):
        raise NbtextError(
            f"need at least two classes to train, got {len(classes)}" + (f" ({classes[0]!r})" if classes else "")
        )
    EVENT_MODELS[settings["event_model"]].check_classes(classes)
    token_counts = ClassCounts(token_counts)
    vocabulary = vocabulary_of(settings, tokens, token_counts)
    if not vocabulary.n_kept and not vocabulary.has_unk and not min_classes:  # a part may have none
        if not tokens:  # nothing was pruned: there was nothing
            raise NbtextError("the documents hold no tokens (a token is a word of two letters or digits or more)")
        raise NbtextError(no_tokens_remain(settings["min_count"]))
    unk_doc_count = tfidf_sums = tfidf_squares = None
    if _counts_unk_documents(settings) and vocabulary.n_kept < len(tokens):  # (has_unk: "unknown" is "unk")
        unk_doc_count = np.zeros(len(classes))
        for (count,) in over_batches(partial(documents_with_unk, vocabulary, classes)):
            unk_doc_count += count
    if is_tfidf(settings):
        idf = idf_weights(token_counts.token_totals[vocabulary.kept], class_count.sum())
        squares = EVENT_MODELS[settings["event_model"]].flags.needs_squares
        tfidf_sums = np.zeros((len(classes), vocabulary.n_features))
        tfidf_squares = np.zeros_like(tfidf_sums) if squares else None
        for sums, sums_of_squares in over_batches(partial(tfidf_sums_of, settings, vocabulary, idf, classes, squares)):
            tfidf_sums += sums
            if squares:
                tfidf_squares += sums_of_squares
    return NaiveBayes(
        settings,
        classes,
        class_count,
        token_counts,
        vocabulary,
        unk_doc_count,
        tfidf_sums,
        tfidf_squares,
        journal,
        file_info=file_info,
        corpus=corpus,
    )


def _class_rows(classes, labels):
    row = {label: k for k, label in enumerate(classes)}
    return np.array([row[label] for label in labels], dtype=np.intp)


def tfidf_sums_of(settings, vocabulary, idf, classes, squares, token_lists, labels):
    """(Yᵀ X, and Yᵀ (X∘X) when `squares`, else None) of a batch's tf-idf feature values X:
    a second pass, since the idf and the vocabulary are known only after counting."""
    ids, indptr = vocabulary.ids(token_lists)
    X = feature_matrix(ids, indptr, vocabulary.n_features, settings, idf)
    Y = one_hot(_class_rows(classes, labels), len(classes))
    sums = np.asarray((Y.T @ X).todense())
    return sums, (np.asarray((Y.T @ X.multiply(X)).todense()) if squares else None)


def documents_with_unk(vocabulary, classes, token_lists, labels):
    """(Per class, how many documents of a batch contain a token outside the vocabulary,)"""
    ids, indptr = vocabulary.ids(token_lists)
    doc_of_id = np.repeat(np.arange(len(labels)), np.diff(indptr))
    has_unk = np.zeros(len(labels), dtype=bool)
    has_unk[doc_of_id[ids == vocabulary.unk_column]] = True
    rows = _class_rows(classes, labels)
    return (np.bincount(rows[has_unk], minlength=len(classes)).astype(np.float64),)


def _counts_unk_documents(settings):
    """Whether UNK's count is the documents holding a pruned token (presence features with
    an UNK feature): known only from a second reading, once the vocabulary is pruned."""
    return is_binary(settings) and settings["unknown"] == "unk"


def with_pending(model, records):
    """`model` with the records of its file's pending log counted in: the model every reader
    scores with until they are folded into the file (the counts changed, the file's
    calibration kept), which cannot be saved."""
    changed, _ = recounted(model, records)
    return changed.take_calibration(Calibrated(model.calibration, None, model.sample_bound, model.sample_mode))


def recounted(model, records):
    """(the model of `model`'s counts with the records of its pending log counted in, its
    journal and corpus record as after them, its calibration still to be taken; the records
    as changes, nbtext.stats.changes.of_record, in order)."""
    try:
        table = counts_to_change(model)
    except NbtextError:  # (its advice is for a user's change) no learner appends a record to such a model
        raise NbtextError(f"its pending section holds {NOT_WRITTEN}") from None
    changes = [of_record(record) for record in records]
    ledger = Ledger()
    for change in changes:
        ledger.add(change)
    table.apply(changes)
    if table.forgets_uncounted():
        raise NbtextError("its pending section forgets what was never counted")
    changed = model_of_table(
        model.settings,
        table,
        ledger.journal_over(model.journal),
        _no_second_pass,
        changed_corpus(model, mail_documents(model) + ledger.mail_documents),
        file_info={
            **model.file_info,
            "pending": len(records),
            "pending_fold": COMPACT_AFTER,
            "written_calibration": model.calibration,
        },
        classes_as_read=True,
    )
    return changed, changes


def _no_second_pass(function):
    raise NbtextError("a model whose changes need its corpus read again cannot have pending changes")


def counts_to_change(model, verb="change"):
    """The CountTable of a model's counts, to change them."""
    if table_rows_model(model.event_model):  # (its rows would be read as text, every one skipped)
        raise NbtextError(f"cannot {verb} a model of a table's columns (categorical): retrain it on the whole table")
    if is_tfidf(model.settings):
        raise NbtextError(f"cannot {verb} a model of tf-idf features (every idf changes); retrain it")
    if unk_counts_pruned_documents(model.settings):
        raise NbtextError(
            f"cannot {verb} a Bernoulli or binary-feature model with an UNK feature of pruned tokens (which past "
            "documents held a pruned token is not stored); retrain, or train it with --unknown ignore or --min-count 1"
        )
    return CountTable.from_counts(
        counts_presence(model.settings),
        model.classes,
        model.vocabulary.tokens,
        model.class_count,
        model.token_counts.dense,
    )


def mail_documents(model):
    return model.corpus["mail_documents"] if model.corpus is not None else 0


def changed_corpus(model, mail_documents):
    """The corpus record of a changed model (unknown stays unknown: files of older builds)."""
    return None if model.corpus is None else {**model.corpus, "mail_documents": mail_documents}
