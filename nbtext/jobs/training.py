"""Training: a labelled corpus, read in batches, becomes a NaiveBayes model.

`train()` takes lists of documents and labels; `train_corpus()` streams batches of
Documents (so memory is O(classes × vocabulary) plus one batch); `update()` adds
documents to a trained model; `fit_tokens()` fits already-tokenized documents
(cross-validation folds).
"""

from __future__ import annotations


from nbtext.choices import learned_by_tone
from nbtext.classifier.counted import changed_corpus, counts_to_change, mail_documents, model_of_table, recounted
from nbtext.classifier.model import Calibrated, NaiveBayes
from nbtext.classifier.settings import (
    BUDGET_REFUSED,
    TONE_SPLIT_REFUSED,
    TrainSettings,
    make_settings,
    make_tokenizer,
    table_rows_model,
    unk_counts_pruned_documents,
)
from nbtext.errors import NbtextError
from nbtext.features.weighting import counts_presence, is_tfidf
from nbtext.labels import classes_problem, new_classes_refused
from nbtext.reading.documents import (
    DEFAULT_BATCH,
    Document,
    in_batches,
    report_errors,
    tokenized,
)
from nbtext.stats.counting import CountTable, count_batch, token_hash, under
from nbtext.stats.changes import LearnedBatch, Ledger, outcome_counts, steps

TYPE_CHECKING = False  # (the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from nbtext.classifier.model import Text


def train(documents: Iterable[Text], labels: Iterable[str], **options: Any) -> NaiveBayes:
    """Train from parallel sequences of documents (str or bytes) and labels.

    Options (all optional) are those of `nbtext train`: model, alpha, prior, min_count,
    max_features, ngrams, unknown, input, headers, lexer, features, tf, idf, length_norm,
    weight_norm, calibration, max_ham_flagged, learn, tone_margin, unsure_below, preset (and
    columns, for categorical rows); see nbtext.choices.TRAIN_DEFAULTS. The labels are the
    classes --preset auto chooses by (a spam filter's: the spam preset).

    >>> clf = train(["cheap pills now", "lunch at noon"], ["spam", "ham"], min_count=1)
    >>> clf.predict(["cheap lunch pills"])
    ['spam']
    """
    documents = list(documents)
    labels = list(labels)
    if len(documents) != len(labels):
        raise NbtextError(f"{len(documents)} documents but {len(labels)} labels")
    if problem := classes_problem(labels):  # (the API takes any value: one that is no name, before it is sorted)
        raise NbtextError(problem)
    # (refused before the documents are looked at; --preset auto chooses by the classes)
    settings = make_settings(**{"classes": tuple(dict.fromkeys(labels)), **options})
    corpus = [Document(str(i), doc, label) for i, (doc, label) in enumerate(zip(documents, labels))]
    return train_corpus(lambda: in_batches(corpus, DEFAULT_BATCH), settings)


def train_corpus(batches, settings, on_error=None, jobs=1, partial=False, on_stage=None):
    """Train from `batches()`, a callable returning an iterator of lists of labelled Documents,
    with `settings` (nbtext.classifier.settings.TrainSettings: make_settings, made once from
    the options by the caller).
    `partial`: the documents are a part of a corpus (`--shard`), to be merged: a class may
    be missing, so one class is enough.

    The corpus is read once (by `jobs` worker processes when jobs > 1, each counting whole
    batches); with --learn tone, once by its pass (nbtext.jobs.online.tone_chosen), then the
    documents it chose are counted, from the pass's token lists, as a training of them would
    count them, and calibrated on
    all those it saw (nbtext.jobs.calibration.pass_calibration). It is read a second time
    for presence features with an UNK feature (which documents hold a pruned token is known
    only after counting) and for tf-idf features (the idf is known only after counting).
    """
    if partial and settings.budget is not None:
        raise NbtextError(BUDGET_REFUSED)
    if learned_by_tone(settings):  # the documents its TONE pass learns, then trained as any others
        if partial:
            raise NbtextError(TONE_SPLIT_REFUSED.format("--shard"))
        from nbtext.jobs.online import tone_chosen

        chosen, seen, settings = tone_chosen(batches, settings, jobs, on_error)
        if on_stage is not None:
            on_stage(f"the TONE pass learned {len(chosen):,} of the {len(seen[1]):,} documents it read: counting them")
        uncalibrated = TrainSettings(settings.stored(), "none", None, settings.default_alpha)
        chosen_tokens = [tokens for tokens, was in zip(seen[0], seen[2]) if was]  # (the pass's own lists)
        model = _counted_tokenized(chosen, chosen_tokens, uncalibrated)
        if settings.calibration != "none":
            from nbtext.jobs.calibration import pass_calibration

            if on_stage is not None:
                on_stage(f"calibrating: scores of the {len(seen[1]):,} documents the pass saw, then the temperature")
            model = model.take_calibration(pass_calibration(model, seen, settings.calibration, settings.budget))
        model.pass_read = len(seen[1])  # (said by train's summary beside the documents learned)
        return model
    return _counted(batches, on_error, jobs, partial, on_stage, settings)


def _counted(batches, on_error, jobs, partial, on_stage, settings):
    """train_corpus's model of every document of `batches()`."""
    table, learned = CountTable(binary=counts_presence(settings)), Ledger()
    candidates = None
    if settings.calibration != "none":  # the calibration sample is gathered while counting
        from nbtext.jobs.calibration import Candidates

        candidates = Candidates(table)
    if jobs > 1:
        from nbtext.jobs.parallel import count_in_workers

        counted = count_in_workers(settings, batches(), jobs, candidates)
    else:
        counted = _counted_here(settings, table, batches(), on_error, candidates)
    add_counted(table, learned, counted, on_error, candidates)
    second_pass = over_batches(settings, batches, expected=int(table.class_count.sum()))
    return trained_model(settings, table, learned, second_pass, partial, candidates, on_stage)


def _counted_tokenized(reads, token_lists, settings):
    """_counted's model of the documents the TONE pass read (`reads`: nbtext.jobs.online.Read,
    labelled, their data let go) already tokenized with `settings` (`token_lists`: the pass's,
    held for its calibration anyway): counted, journalled and read a second time batch by
    batch, cut as _counted's are (in_batches, by what they held), without tokenizing them
    again (the same model file, byte for byte)."""
    table, learned = CountTable(binary=counts_presence(settings)), Ledger()
    batches, start = [], 0
    for batch in in_batches(reads, weigh=lambda read: read.bytes):
        batches.append(slice(start, start + len(batch)))
        start += len(batch)
    for batch in batches:
        labels = [read.label for read in reads[batch]]
        table.count(token_lists[batch], labels)
        learned.learn(
            LearnedBatch([(read.key, read.label) for read in reads[batch]], sum(read.mail for read in reads[batch]))
        )

    def second_pass(function):
        for batch in batches:
            yield function(token_lists[batch], [read.label for read in reads[batch]])

    return trained_model(settings, table, learned, second_pass)


def with_table_columns(options, inputs):
    """The train options of a model of table rows (categorical) with its feature columns,
    the --table's columns but the label's (`inputs`: labelled_input's keyword arguments),
    as train and eval --folds find them; others as given."""
    from nbtext.reading.sources import table_columns

    if not table_rows_model(options["model"]):
        return options
    return dict(options, columns=table_columns(inputs["table"], inputs["label_col"], options["model"]))


def reads_twice(settings):
    """Whether training with these settings reads its corpus a second time: presence
    features with an UNK feature when tokens are pruned (which documents hold a pruned
    token), and tf-idf (the idf weighs the second reading's values)."""
    return is_tfidf(settings) or unk_counts_pruned_documents(settings)


def _counted_here(settings, table, batches, on_error, candidates):
    """This process's counting of `batches`, each counted straight into `table` (as a worker
    counts its chunk into its own), as the records add_counted takes: its counts None (in
    the table already), its documents' journal pairs, its documents read as mail and its
    calibration candidates (the unreadable ones went to `on_error`)."""
    tokenizer = make_tokenizer(settings["tokenizer"])
    for batch in batches:
        rate = candidates.bound_after(len(batch)) if candidates is not None else None
        mail_before = tokenizer.mail_documents
        _, keys, found = count_batch(settings, tokenizer, batch, on_error, rate, counter=table)
        yield None, None, keys, (), tokenizer.mail_documents - mail_before, None if found is None else (found, rate)


def add_counted(table, learned, counted, on_error=None, candidates=None):
    """Add partial counts (as workers send them: who counted them, the exported counts,
    journal pairs, errors, documents read as mail, and the calibration candidates with the
    rate they were taken under, or None), in order, to `table` and to `learned` (a Ledger:
    each batch a training's change, nbtext.stats.changes.LearnedBatch, which writes the journal
    and counts the documents read as mail), and the candidates to `candidates`
    (nbtext.jobs.calibration.Candidates); the documents that could not be read go to
    `on_error`. Counts from one source (a worker: ColumnCounter) name only the tokens it
    had not sent before; those from None are whole tables (a cluster's, combined), or None:
    counted into `table` already (_counted_here)."""
    known = {}  # a source's columns in `table`, so far
    for source, exported, keys, errors, mail_count, sampled in counted:
        report_errors(errors, on_error)
        columns = None if exported is None else table.merge(exported, known.get(source))
        if source is not None:
            known[source] = columns
        if candidates is not None and sampled is not None:
            found, rate = sampled
            candidates.add(found, rate, columns=columns)
        learned.learn(LearnedBatch(keys, mail_count))


def trained_model(
    settings,
    table,
    learned,
    over_batches,
    partial=False,
    candidates=None,
    on_stage=None,
):
    """The model of a counted corpus (by one process, by workers or by a cluster: `table`,
    and `learned`, the Ledger of its batches) with
    `settings` (TrainSettings): `model_of_table` (λ chosen there, if it was left to the corpus);
    unless the settings' calibration is "none", the calibration sample of the corpus (gathered while counting as `candidates`, or else in
    one more pass), kept in the model, and a temperature fitted on it (nbtext.jobs.calibration;
    not for a part, `partial`, --shard: the merge fits it on all the parts' samples)."""
    corpus = {"mail_documents": int(learned.mail_documents), "default_alpha": settings.default_alpha}
    if partial and not table.labels:
        raise NbtextError("no documents to train on (an empty shard: give fewer shards)")
    journal = learned.journal_over({})
    model = model_of_table(settings, table, journal, over_batches, corpus, min_classes=1 if partial else None)
    if settings.calibration != "none":
        from nbtext.jobs.calibration import calibrate, sample_of, stored_rate

        rate = stored_rate(model.class_count.sum())
        sample = sample_of(model, over_batches, candidates, rate=rate)
        if on_stage is not None and not partial:  # (on_stage: what a long job is doing now, said on a terminal)
            on_stage(f"calibrating: out-of-fold scores of {len(sample[1]):,} documents, then the temperature")
        model.take_calibration(calibrate(model, sample, rate, settings.calibration, partial, settings.budget))
    return model


def over_batches(settings, batches, expected=None):
    """`over(function)`: function(token lists, labels) for each batch of `batches()`, in
    order (a second pass over the corpus; unreadable documents were reported already).
    With `expected`, the documents the first pass read: a second pass that reads another
    number (stdin or a pipe, which can be read only once; a file changed meanwhile) is an
    error, not a model counted from two different corpora."""

    def over(function):
        tokenize = make_tokenizer(settings["tokenizer"])
        read = 0
        for batch in batches():
            kept, token_lists = tokenized(tokenize, batch, lambda doc, message: None)
            read += len(kept)
            yield function(token_lists, [doc.label for doc in kept])
        if expected is not None and read != expected:
            raise NbtextError(
                f"this model reads its corpus twice, and the second reading found {read:,} documents "
                f"where the first found {expected:,}: stdin and pipes can be read only once (give "
                "regular files), and files must not change while train runs"
            )

    return over


def fit_tokens(settings, token_lists, labels, mail_documents=None):
    """A model from documents already tokenized with `settings` (cross-validation folds), of
    which `mail_documents` were read as e-mail (None: λ as `settings` hold it)."""
    table = CountTable(binary=counts_presence(settings))
    table.count(token_lists, labels)
    corpus = (
        None if mail_documents is None else {"mail_documents": mail_documents, "default_alpha": settings.default_alpha}
    )
    return model_of_table(settings, table, {}, lambda function: [function(token_lists, labels)], corpus)


def replayed(model, records):
    """`model` with the records of its pending log (nbtext.modelfile.pending) folded in, as
    `update` and `forget` fold in the documents they record: its counts changed
    (nbtext.classifier.counted.recounted), its calibration sample following each change and
    its temperature refitted on it: the model those commands write. `model` is loaded with
    its calibration sample."""
    changed, changes = recounted(model, records)
    sample = _Sample(model)
    for change in changes:
        sample.follow(change)
    return sample.calibrated(changed)


def _learnable(model, verb):
    if model.sample_unread:
        raise NbtextError(
            f"cannot {verb} a model loaded without its calibration sample or with its pending changes "
            "unfolded (load it with nbtext.load(path, fold=True))"
        )
    return counts_to_change(model, verb)


def forget(model, batches, on_error=None, on_unknown=None):
    """`model` without the documents of `batches()` that its journal knows: each one's counts
    leave the class the journal holds it under (whatever label the batch gives it). A
    document the journal does not know goes to `on_unknown(document)` and is left alone.
    Learning, forgetting and learning again gives back the same model.
    Returns (new model, {"forgotten": n, "unknown": n})."""
    return _changed(model, batches, "forget documents of", on_error, forget=True, on_unknown=on_unknown)


def update(model, batches, on_error=None, new_classes=False):
    """`model` plus the documents of `batches()`: equal to training on all of them at once.

    New tokens get new columns, and new classes new rows when `new_classes` allows them
    (else a document of a class the model lacks is refused before anything is counted:
    labels.new_classes_refused). A document already learned under the same label (same
    content hash) is not counted again; one learned under another label is moved: its
    counts leave the old class and join the new one.
    Returns (new model, {"added": n, "moved": n, "duplicates": n}).
    """
    return _changed(model, batches, "--update", on_error, new_classes=new_classes)


def _changed(model, batches, verb, on_error, forget=False, on_unknown=None, new_classes=False):
    """`update` (or, with `forget`, `forget`): the changes each batch of `batches()` makes
    (nbtext.stats.changes, Ledger.changes_of: from the class the model holds a document under to
    its label, forgotten: to none) applied to the model's counts, journal and calibration
    sample; the model of the changed counts and (new model, its stats)."""
    table = _learnable(model, verb)
    ledger = Ledger(model.journal.get)
    stats = outcome_counts(forget)
    sample = _Sample(model)
    for batch in batches():
        changes = []
        for change in ledger.changes_of(batch, model.tokenize, forget, stats, on_error, on_unknown):
            ledger.add(change)
            sample.follow(change)
            changes.append(change)
        # (a document already learned under its label makes no change: a class it names is the model's)
        if not forget and (refusal := new_classes_refused(model.classes, [c.after for c in changes], new_classes)):
            raise NbtextError(refusal)
        table.apply(changes)
    if table.forgets_uncounted():  # (a model of a negative count is one no reader takes: never written)
        raise NbtextError(
            "the model's counts do not hold a document its journal says it learned (a pending section or "
            "file not as nbtext writes them); nothing was changed"
        )
    journal, documents_as_mail = ledger.journal_over(model.journal), mail_documents(model) + ledger.mail_documents
    return sample.calibrated(
        model_of_table(
            model.settings,
            table,
            journal,
            over_batches(model.settings, batches),
            changed_corpus(model, documents_as_mail),
        )
    ), stats


class _Sample:
    """A model's calibration sample as documents are learned, moved and forgotten, and the
    calibration of the changed model (nbtext.jobs.calibration.calibrate): the file one training
    of the same documents writes, T and γ included. Documents are known in the sample by
    their token hash and label (token-identical documents are interchangeable in it)."""

    def __init__(self, model):
        self.old = model
        self.rate = None  # every document under it is in the sample: none without one
        self.documents = {}  # (hash, label) -> the token lists of the documents of the sample
        if model.calibration_sample is not None:
            from nbtext.jobs.calibration import complete_rate

            self.rate = complete_rate(model)
            for tokens, label, h in zip(*model.calibration_sample):
                self.documents.setdefault((h, label), []).append(tokens)

    def follow(self, change):
        """The sample after `change` (nbtext.stats.changes): its document leaves the sample of
        the class it leaves, and joins that of the class it joins when its hash is under the rate."""
        if self.rate is None:
            return
        h = token_hash(change.tokens)
        for label, sign in steps(change):
            if sign < 0:
                same = self.documents.get((h, label))
                if same:
                    same.pop()
            elif under(self.rate, [h]):
                self.documents.setdefault((h, label), []).append(change.tokens)

    def calibrated(self, changed):
        """The changed model, calibrated as one training on its documents; when the sample
        cannot give that (a model of older builds without one, or too much forgotten), it
        keeps the old model's temperature, with a warning that a retraining refits it."""
        import warnings

        if self.rate is None:
            if (self.old.calibration or {}).get("max_ham_flagged") is not None:  # (its cut-off kept: two classes)
                from nbtext.jobs.calibration import check_budget_classes

                check_budget_classes(changed.classes)
            changed.take_calibration(Calibrated(self.old.calibration, None, None, None))
            # (a --learn tone model keeps none by design: its temperature stays as its training fitted it)
            if self.old.calibration is not None and not learned_by_tone(self.old.settings):
                warnings.warn(
                    "this model holds no calibration sample (an older nbtext wrote it): its temperature "
                    "is kept as it was; retrain it to fit one for its documents",
                    stacklevel=3,
                )
            return changed
        from nbtext.jobs.calibration import calibrate

        documents = [(tokens, label, h) for (h, label), same in sorted(self.documents.items()) for tokens in same]
        sample = tuple(map(list, zip(*documents))) if documents else ([], [], [])
        budget = (self.old.calibration or {}).get("max_ham_flagged")  # the model's own budget, refitted
        calibrated = calibrate(changed, sample, self.rate, self.old.sample_mode or "auto", budget=budget)
        if calibrated is not None:
            return changed.take_calibration(calibrated)
        changed.take_calibration(Calibrated(self.old.calibration, sample, self.rate, self.old.sample_mode))
        warnings.warn(
            "so many documents were forgotten that the calibration sample no longer holds the ones "
            "a training would fit its temperature on: it is kept as it was; retrain to refit it",
            stacklevel=3,
        )
        return changed
