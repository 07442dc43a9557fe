"""A model file loaded, with the records of its pending section folded in (nbtext.modelfile.pending).

Every reader of a model comes here (the command line and `nbtext.load`), so each sees what
the one-message path sees: the file and the documents learned or forgotten since it was
written. The one-message path's model (nbtext.classifier.purescore) is folded here too
(`with_pending`); this module imports numpy only to load a model whole, so that path
never does.
"""

from __future__ import annotations

import os

from nbtext.errors import NbtextError
from nbtext.modelfile import pending
from nbtext.modelfile.container import read_bytes

TYPE_CHECKING = False  # (the type checker reads the block)
if TYPE_CHECKING:
    from nbtext.classifier.model import NaiveBayes
    from nbtext.modelfile.container import PathLike


def model_bytes(path, sample=False):
    """The bytes of the model file at `path` (its calibration sample only with `sample`); a
    missing one is an error saying what to do."""
    if not os.path.exists(path):
        origin = " (from $NBTEXT_MODEL)" if os.environ.get("NBTEXT_MODEL") == path else ""
        raise NbtextError(f"model {path}{origin} does not exist (train one with 'nbtext train', or pass -m FILE)")
    return read_bytes(path, sample)


def load_model(path, alpha=None, sample=False):
    """The model at `path`, loaded whole, λ replaced by `alpha` unless None; with `sample`
    its calibration sample too (what train --update, forget and merge change)."""
    return model_of_bytes(model_bytes(path, sample), path, alpha)


def load(path: PathLike, sample: bool = True, fold: bool = False) -> NaiveBayes:
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
    from nbtext.classifier.model import from_bytes
    from nbtext.modelfile.schema import same_record
    from nbtext.features.weighting import counts_presence

    model = from_bytes(data, path)
    log = pending.Log(data)
    log.check(path)
    if log.records:
        from nbtext.jobs.training import replayed

        try:
            # its records checked against the model
            changes = pending.Changes(model.classes, log.records, presence=counts_presence(model.settings))
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
            raise NbtextError(f"{path} is corrupt ({pending.DISAGREES})")
    return model if alpha is None else model.with_alpha(alpha)


def with_pending(pure, data):
    """A PureModel (nbtext.classifier.purescore) with its model file's pending section folded
    in, or None when the model loaded whole must fold it (or say what is wrong with it)."""
    from nbtext.classifier.purescore import Unserved

    log = pending.Log(data, pure.header)
    if log.problem:
        return None  # the numpy path says what is wrong with it
    if not log.records:
        return pure
    try:
        return pure.with_changes(pending.Changes(pure.classes, log.records, presence=pure.presence))
    except (Unserved, ValueError, KeyError, TypeError):
        return None
