"""`train --update` and `forget` of a trained model's file: the documents given become changes
(nbtext.stats.changes) through the model file's pending section when it can take them
(nbtext.jobs.learnone), else the full way: the model loaded with its section folded in,
changed (nbtext.jobs.training.update, forget) and written whole. The command line (the full
one and the one without click, nbtext.cli.oneshot.learn) says what came of it
(nbtext.report.text.learning_summary).
"""

import os
from nbtext.errors import NbtextError
from nbtext.jobs.loading import load_to_change, model_bytes


# What `changed_model` did: the model written (None when the documents went to the pending
# section), the stats of the documents given (training.update's or forget's, and
# "unchanged": True when the file was left as it was) and the number of records the
# pending section holds now (None: the full way, which folds them into the file).
class UpdateOutcome:
    __slots__ = ("model", "stats", "pending")

    def __init__(self, model, stats, pending):
        self.model, self.stats, self.pending = model, stats, pending


def changed_model(model_path, output, documents, batched, skipped, forget=False, on_unknown=None, new_classes=False):
    """`train --update` (or `forget`) of `documents` (an iterator of Documents) into the model
    at `model_path`, written to `output`: through the model file's pending section when it
    can take them, else the full way, under the model's lock (`batched(documents)` gives the
    batches). A document that cannot be read goes to `skipped(document, message)`, one that
    `forget` does not know to `on_unknown(document)`. A class the model lacks is learned only
    with `new_classes` (--new-classes; the pending section never takes one). Returns UpdateOutcome."""
    from itertools import chain

    from nbtext.jobs.learnone import Fallback, through_log
    from nbtext.modelfile.container import check_writable, locked
    from nbtext.stats.changes import changes_anything

    if not os.path.isfile(model_path):  # missing, a folder, a FIFO or a device
        model_bytes(model_path)  # says what to do (or what it is), before any lock file is made beside it
    if os.path.realpath(output) == os.path.realpath(model_path):
        result = through_log(model_path, documents, forget)
        if not isinstance(result, Fallback):
            stats, not_learned, records = result
            for doc, message in not_learned:
                if message is None:
                    if on_unknown is not None:
                        on_unknown(doc)
                else:
                    skipped(doc, message)
            return UpdateOutcome(None, stats if changes_anything(stats) else dict(stats, unchanged=True), records)
        documents = chain(result.consumed, documents)
    from nbtext.jobs.training import forget as forget_documents, update

    check_writable(output)  # before the rest of the documents is read
    once = iter([documents])  # a model of counts reads its documents once
    with locked(model_path):
        model = load_to_change(model_path)
        if forget:
            model, stats = forget_documents(model, lambda: batched(next(once)), skipped, on_unknown)
        else:
            model, stats = update(model, lambda: batched(next(once)), skipped, new_classes)
        if changes_anything(stats) or os.path.realpath(output) != os.path.realpath(model_path):
            model.save(output)  # whole, by rename: its pending records are in it now
        else:  # nothing learned or forgotten: the file is left as it was (a cron job's common case)
            stats = dict(stats, unchanged=True)
    return UpdateOutcome(model, stats, None)


def nothing_to_update(model_path, specs, new_classes=False):
    """Whether `train --update` of the CLASS_DIRs `specs` has nothing to learn: every folder
    given is empty (a learn-on-error job's common case). Checked first, whatever the folders
    hold, before any document is read: the model, and every label the arguments name
    (LABEL=PATH, a folder's own name, an IMAP folder's, LABEL=- for stdin) against its
    classes (a class the model lacks, without `new_classes`: labels.new_classes_refused). A
    wrong -m in a cron line, or a learn folder given without LABEL=, is then an error on its
    first run, not on the day mail first reaches that folder. With nothing to learn the model
    is read whole (a corrupt one said now); else its header alone, the rest read when it is
    loaded."""
    from nbtext.labels import new_classes_refused
    from nbtext.modelfile.container import read_header, split
    from nbtext.reading.sources import class_sources, nothing_to_learn

    labels = [label for label, _ in class_sources(specs)]
    nothing = nothing_to_learn(specs)
    if nothing:
        header, _ = split(model_bytes(model_path), model_path)  # (NbtextError: missing, a folder, not a model, corrupt)
    elif not os.path.exists(model_path):
        model_bytes(model_path)  # says what to do
    else:
        header = read_header(model_path)
    known = header.get("classes") if isinstance(header, dict) else None  # (checked whole when documents come)
    if isinstance(known, list) and (refusal := new_classes_refused(known, labels, new_classes)):
        raise NbtextError(refusal)
    return nothing
