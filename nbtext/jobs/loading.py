"""A model file loaded whole, with the records of its pending section folded in (nbtext.modelfile.pending).

Every reader of a model loaded whole comes here (the command line and `nbtext.load`), so
each sees what the one-message path sees: the file and the documents learned or forgotten
since it was written.
"""

from nbtext.classifier.model import from_bytes, same_record
from nbtext.errors import NbtextError
from nbtext.modelfile import pending
from nbtext.modelfile.container import read_bytes


def load(path, sample=True, fold=False):
    """The model at `path` (nbtext.load): the one every reader scores with, documents
    learned since the file was written (its pending section) counted, the calibration the
    file's. With `fold`, the model those documents folded into the file make (its
    calibration fitted again), which can be changed and saved (with `sample`, its
    calibration sample read, as train --update, forget and merge need)."""
    return model_of_bytes(read_bytes(path, sample or fold), path, fold=fold)


def model_of_bytes(data, path, alpha=None, fold=None):
    """The model of a model file's bytes (`path` names it), with its pending records folded
    in (nbtext.jobs.training.replayed): as the file will hold them (`fold`; None: when the
    calibration sample was read), or as readers score until then. λ replaced by `alpha`."""
    model = from_bytes(data, path)
    log = pending.Log(data)
    log.check(path)
    if log.records:
        from nbtext.jobs.training import replayed

        try:
            changes = pending.Changes(model.classes, log.records)  # its records checked against the model
        except (ValueError, KeyError, TypeError) as e:
            raise NbtextError(f"{path} is corrupt (its pending section: {e})") from None
        try:
            model = replayed(model, log.records, to_score=None if fold is None else not fold)
        except NbtextError as e:
            raise NbtextError(f"{path} is corrupt ({e})") from None
        record = model.one_document_record()  # what nbtext.classifier.purescore trusts, as for the file's own record
        if (
            record is None
            or not set(changes.derived) <= set(record)
            or not same_record(changes.derived, {key: record[key] for key in changes.derived})
        ):
            raise NbtextError(f"{path} is corrupt (its pending section does not agree with its counts)")
    return model if alpha is None else model.with_alpha(alpha)
