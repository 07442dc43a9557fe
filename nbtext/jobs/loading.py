"""A model file loaded, with the records of its pending section counted in (nbtext.modelfile.pending).

Every reader of a model comes here (the command line, `nbtext.load`, the one-message path
for the file's bytes), so each sees what the one-message path sees: the file and the
documents learned or forgotten since it was written (that path counts them in itself:
nbtext.classifier.purescore.as_read). Readers get the records counted into the model's
counts (nbtext.classifier.counted); update, forget and merge get them folded in as the file
will hold them (nbtext.jobs.training.replayed). This module imports numpy only to load a
model whole, so the one-message path never does.
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


def load_model(path, alpha=None):
    """The model at `path` as every reader scores with it, loaded whole (its pending records
    counted in), λ replaced by `alpha` unless None."""
    return model_of_bytes(model_bytes(path), path, alpha)


def load_to_change(path):
    """The model at `path` with its calibration sample and its pending records folded in:
    what train --update, forget and merge change and save."""
    return folded_model_of_bytes(model_bytes(path, sample=True), path)


def load(path: PathLike, sample: bool = True, fold: bool = False) -> NaiveBayes:
    """The model at `path` (nbtext.load): the one every reader scores with, documents
    learned since the file was written (its pending section) counted, the calibration the
    file's. With `fold`, the model those documents folded into the file make (its
    calibration fitted again), which can be changed and saved (with `sample`, its
    calibration sample read, as train --update, forget and merge need)."""
    data = read_bytes(path, sample or fold)
    return folded_model_of_bytes(data, path) if fold else model_of_bytes(data, path)


def model_of_bytes(data, path, alpha=None):
    """The model of a model file's bytes (`path` names it) as readers score with it until its
    pending records are folded into the file: they are counted in, the file's calibration
    kept (nbtext.classifier.counted.with_pending). λ replaced by `alpha`."""
    from nbtext.classifier.counted import with_pending as counted_in

    model = _with_pending_checked(data, path, counted_in)
    return model if alpha is None else model.with_alpha(alpha)


def folded_model_of_bytes(data, path):
    """The model of a model file's bytes read with its calibration sample, its pending
    records folded in as the file will hold them (nbtext.jobs.training.replayed: the
    temperature refitted on the sample, as update and forget do)."""
    from nbtext.jobs.training import replayed

    return _with_pending_checked(data, path, replayed)


def _with_pending_checked(data, path, counted_in):
    """The model of the file's bytes, `counted_in(model, records)` with the records of its
    pending section once they are checked against it; the one-document record of the result
    checked against theirs (what the one-message path derives again before it takes it:
    PureModel.with_changes)."""
    from nbtext.classifier.model import from_bytes
    from nbtext.features.weighting import counts_presence
    from nbtext.modelfile.schema import same_record

    model = from_bytes(data, path)
    log = pending.Log(data)
    log.check(path)
    if not log.records:
        return model
    try:
        changes = pending.Changes(model.classes, log.records, presence=counts_presence(model.settings))
    except (ValueError, KeyError, TypeError) as e:
        raise NbtextError(f"{path} is corrupt (its pending section: {e})") from None
    try:
        model = counted_in(model, log.records)
    except NbtextError as e:
        raise NbtextError(f"{path} is corrupt ({e})") from None
    record = model.one_document_record()  # (what nbtext.classifier.purescore scores with)
    if (
        record is None
        or not set(changes.derived) <= set(record)
        or not same_record(changes.derived, {key: record[key] for key in changes.derived})
    ):
        raise NbtextError(f"{path} is corrupt ({pending.DISAGREES})")
    return model
