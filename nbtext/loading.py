"""A model file loaded whole, with the records of its pending log folded in (nbtext.pending).

Every reader of a model loaded whole comes here (the command line and `nbtext.load`), so
each sees what the one-message path sees: the file and the documents learned or forgotten
since it was written.
"""

from nbtext import pending
from nbtext.container import read_bytes
from nbtext.errors import NbtextError
from nbtext.model import from_bytes, same_record


def load(path, sample=True):
    """The model at `path` (nbtext.load). With `sample` (its calibration sample read), the
    model `train --update` and `forget` change and write; without, the model that scores."""
    return model_of_bytes(read_bytes(path, sample), path)


def model_of_bytes(data, path, alpha=None):
    """The model of a model file's bytes (`path` names it, and its log is beside it), with
    its pending records folded in (nbtext.training.replayed), λ replaced by `alpha` if given."""
    model = from_bytes(data, path)
    log = pending.Log(data)
    if log.records:
        from nbtext.training import replayed

        try:
            changes = pending.Changes(model.classes, log.records)  # its records checked against the model
        except (ValueError, KeyError, TypeError) as e:
            raise NbtextError(f"{path} is corrupt (its pending section: {e})") from None
        model = replayed(model, log.records)
        record = model.one_document_record()  # what nbtext.purescore trusts, as for the file's own record
        if record is None or not same_record(changes.derived, {key: record[key] for key in changes.derived}):
            raise NbtextError(f"{path} is corrupt (its pending section does not agree with its counts)")
    return model if alpha is None else model.with_alpha(alpha)
