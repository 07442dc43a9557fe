"""Learning or forgetting a few messages at the cost of the messages, not of the model.

`train --update -m MODEL LABEL=PATH...` and `forget -m MODEL PATH...` of at most
pending.MAX_BATCH documents, on a model whose one-message record can follow them
(PureModel.follows_changes: counts or presence, features chosen by --min-count), append one
record per document to the model file's pending section (nbtext.modelfile.pending) under the
model's lock, without numpy: the journal is looked up by bisect in the file, each token's counts as the
one-message path finds them, and the one-document record after the document is derived
from the counts of its own tokens (B_kj: occurrences, or documents holding token j in a model
of presence, which counts a document once per distinct token: changes.document_counts), by
the formulas of PureModel.derived_after. The section already there is checked first as
every one-message reader checks it (PureModel.with_changes: its last `derived` derived
again from the file's own record), so a lie is never carried into the records appended.

Anything else (more documents, a class the model lacks, a section due to be folded into
the file, another kind of model, a file not writable in place, a class named as nbtext labels
with itself, which an older build let be: labels.class_problem) returns a Fallback: the
caller takes the full way, which folds the section in and writes the model file anew (or
refuses the change).
"""

from nbtext.modelfile import pending
from nbtext.stats.changes import HeldCounts, outcome_counts


class Fallback:
    """The full way it is: the documents read so far (`consumed`, an iterable), to be learned
    before the rest."""

    def __init__(self, consumed=()):
        self.consumed = consumed


def through_log(model_path, documents, forget=False):
    """Learn (or forget) `documents` (an iterator) through the model file's pending
    section, all under the model's lock: ({"added", "moved", "duplicates"} or
    {"forgotten", "unknown"}, [(document, message or None for one not learned)], records
    in the section), or a Fallback when they must take the full way (nothing is read from
    `documents` unless the model can take them)."""
    import os

    from nbtext.classifier.purescore import Disagrees, Unserved, of_file
    from nbtext.errors import NbtextError
    from nbtext.labels import classes_problem
    from nbtext.modelfile.container import locked, mapped, read_open, regular_file_checked, sample_section

    with locked(model_path):
        try:
            regular_file_checked(model_path)  # (as every reader: a FIFO is not opened to wait on)
        except OSError:
            return Fallback()  # the full way says why it cannot be read
        try:
            f = open(model_path, "r+b")  # the file read is the file written: one put in its place is not
        except OSError:
            return Fallback()  # not writable in place (read-only): the full way writes it anew, or says why not
        with f:
            if os.fstat(f.fileno()).st_nlink > 1:
                return Fallback()  # hard links: a backup made by `ln` must not change with it
            data = mapped(f, model_path) or read_open(f, model_path)
            pure = of_file(data, str(model_path))
            if pure is None or not pure.follows_changes() or classes_problem(pure.classes):
                return Fallback()  # (a class an older build let be named unsure: the full way refuses it)
            try:  # what the fold will read: the sample's bytes as written (one CRC, no decoding)
                sample_section(data, pure.header, model_path)
            except ValueError as e:
                raise NbtextError(f"{model_path} is corrupt ({e})") from None
            log = pending.Log(data)
            log.check(model_path)
            if len(log.records) >= pending.COMPACT_AFTER or log.bytes > pending.MAX_SECTION_BYTES:
                return Fallback()  # time to fold the section into the file
            try:  # (the section checked as every one-message reader checks it: PureModel.with_changes)
                changes = pending.Changes(pure.classes, log.records, pure.journal_label, presence=pure.presence)
                pure.with_changes(changes)
            except Disagrees:  # what every reader refuses: never built on
                raise NbtextError(f"{model_path} is corrupt ({pending.DISAGREES})") from None
            except (ValueError, KeyError, TypeError) as e:
                raise NbtextError(f"{model_path} is corrupt (its pending section: {e})") from None
            except (Unserved, OverflowError):
                return Fallback()  # (the full way then says what is wrong with the section)
            return _appended(f, model_path, pure, changes, log, documents, forget)


def _appended(f, model_path, pure, changes, log, documents, forget):
    """through_log's work once the model file can take records: the documents read, their
    records derived and appended (or a Fallback, holding the documents read)."""
    from itertools import chain, islice

    from nbtext.classifier.purescore import Unserved
    from nbtext.errors import NbtextError
    from nbtext.reading.documents import each_loaded, in_batches

    batches = in_batches(documents, pending.MAX_BATCH + 1)  # (bounded by bytes too, as every batch)
    first, more = next(batches, []), next(batches, None)
    first = chain(first, more or (), chain.from_iterable(batches)) if more is not None else first
    if more is not None:  # more than one batch: the full way, a batch at a time
        return Fallback(first)
    batch = list(islice(each_loaded(first), pending.MAX_BATCH + 1))
    if len(batch) > pending.MAX_BATCH or len(log.records) + len(batch) > pending.COMPACT_AFTER:
        return Fallback(first)
    if not forget and any(doc.label not in pure.classes for doc in batch):
        return Fallback(first)  # a new class: the full way refuses it or adds it (labels.new_classes_refused)
    derived = dict(changes.derived or {key: pure.header["one_document"][key] for key in ("features", "unk", "totals")})
    stats = outcome_counts(forget)
    records, skipped = [], []
    least = log.bytes  # the section's size with the records so far, at least
    unread = lambda doc, message: skipped.append((doc, message))
    unknown = lambda doc: skipped.append((doc, None))  # (None: not learned, nothing to forget)
    try:  # (each document read, its key found and its change asked by the change core: Ledger.changes_of)
        for change in changes.changes_of(batch, pure.tokenize, forget, stats, unread, unknown):
            least += pending.tokens_bytes_at_least(change.tokens)
            if least > pending.MAX_SECTION_BYTES:  # found before its counts are looked up one by one
                return Fallback(first)  # large messages: the full way folds them in
            derived = _derived_after(pure, derived, change)
            record = pending.record_of(change, derived)
            changes.add(record)
            records.append(record)
    except (Unserved, ValueError, OverflowError):
        return Fallback(first)
    if log.bytes + sum(len(pending.framed(record)) for record in records) > pending.MAX_SECTION_BYTES:
        return Fallback(first)  # large messages: the full way folds them in
    if records and not derived["features"]:  # (the full way's training of what is left refuses it alike)
        from nbtext.classifier.counted import no_tokens_remain

        raise NbtextError(no_tokens_remain(pure.min_count))
    if records:
        log.append(f, model_path, records)
    return stats, skipped, len(log.records)


def _derived_after(pure, derived, change):
    """The one-document record after `change` (nbtext.stats.changes) from `derived`, from the
    counts of its document's tokens alone (PureModel.derived_after: the module's formulas),
    as `pure` (the section's changes followed) holds them."""
    moved = HeldCounts(pure.classes, pure.presence, 0)  # (what the change adds to each of its tokens' counts)
    moved.add(change)
    return pure.derived_after(derived, moved.counts, lambda token: pure.token_counts(token)[1])
