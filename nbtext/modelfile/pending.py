"""Messages learned or forgotten since a model file was written: records appended to it.

Learning one message by rewriting the model costs the whole model (read, count, calibrate,
write). `train --update` and `forget` of a few messages of a model whose one-message
record can follow them (nbtext.jobs.learnone) append one record per document to the model
file's pending section instead, and every reader folds the records in: the one-message
path (nbtext.classifier.purescore), the model loaded whole (nbtext.jobs.loading). When the section holds
COMPACT_AFTER records, or whenever the model is changed the full way, the records are
folded into the model itself: the file that `train --update` and `forget` of those
documents write, byte for byte (written as every model is, whole, by rename), with no
pending section. A copy of the file is a copy of all of it.

    the model file      as nbtext.modelfile.container says, then
    b"NBTEXT-PENDING\\n" the pending section's magic
    records             each: u32 length, u32 CRC-32 of the body, body (UTF-8 JSON)

A record is one document: `hash` (its journal key, hex), `label` (the class it is now
learned under, or null: forgotten), `from` (the class it was learned under before, or
null: new), `tokens` (as tokenized, in order), `mail` (read as e-mail), and `derived`, the
model's one-document record after it (number of features, UNK counts, totals: what a
reader would otherwise need every token's counts for). A record cut short by a kill runs
past the file's end and ends the section (readers stop there; the next learner cuts it
off), so a reader sees the state before or after each record, never half of one. A whole
record that fails its checksum is damage, not a kill: the file is refused (Log.check). No
record is empty, so zeros after the records (a file grown without its data) are none either.
"""

from __future__ import annotations

import json
import os
import struct
import zlib

from nbtext.modelfile.container import HEADER_CRC, MAGIC, PENDING_MAGIC, PREAMBLE, sections
from nbtext.stats.changes import Ledger, of_record

TYPE_CHECKING = False  # (typing is not imported on the one-message path; the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any, BinaryIO

    from nbtext.modelfile.container import FileBytes, Header, PathLike
    from nbtext.stats.changes import Change

    # a record as written and read: {"hash": hex, "label", "from", "tokens", "mail", "derived"}
    Record = dict[str, Any]

RECORD = struct.Struct("<II")
COMPACT_AFTER = 50  # records: then the learner folds them into the model file
MAX_BATCH = 20  # documents one `train --update` or `forget` learns through the pending section
# What every message's filter reads of it, bounded: a section past this many bytes is folded
# into the model (a learn-on-error job that learns huge spam must not slow every delivery).
MAX_SECTION_BYTES = 1 << 20
# What every reader that checks the section against the counts says of one that lies
# (nbtext.jobs.loading, the model loaded whole; nbtext.jobs.learnone, before it appends).
DISAGREES = "its pending section does not agree with its counts"
# ... and of a whole record no learner writes (Log.check; nbtext.classifier.counted, a record
# on a model that takes none: every reader says "is corrupt (its pending section holds ...)")
NOT_WRITTEN = "a record that is not one nbtext writes"


class Log:
    """The records of a model file's pending section, from the file's bytes `data` (as
    nbtext.modelfile.container.read_bytes reads them, the sample left out or not), and where in the
    file the section and its last whole record end."""

    def __init__(self, data: FileBytes, header: Header | None = None):
        self.records: list[Record] = []
        self.problem: str | None = None  # what is wrong with a whole record that is not one
        version, header_length = PREAMBLE.unpack_from(data, len(MAGIC))
        start = len(MAGIC) + PREAMBLE.size + (HEADER_CRC.size if version >= 2 else 0)
        if header is None:  # (a reader that split the file already passes its header)
            header = json.loads(data[start : start + header_length].decode("utf-8", "surrogateescape"))
        sample = header["sample"]["bytes"] if "sample" in header else 0
        at = sections(data, header)[1]
        # where the section starts in the file (where the sample always is)
        self.start = start + header_length + header["payload_bytes"] + sample
        self.end: int | None = None  # in the file, the end of the last whole record: None, no section yet
        if at is None or data[at : at + len(PENDING_MAGIC)] != PENDING_MAGIC:
            return  # none (or the start of its magic, a first append cut short: none either)
        position = at + len(PENDING_MAGIC)
        while position + RECORD.size <= len(data):
            length, crc = RECORD.unpack_from(data, position)
            if length == 0:  # no record is empty (a body is a JSON object): zeros are not one
                if data[position:].strip(b"\0"):
                    self.problem = "a damaged record"
                break  # the file grown with zeros after its records (a crash): as if cut there
            body = data[position + RECORD.size : position + RECORD.size + length]
            if len(body) < length:
                break  # cut short by a kill (the file ends inside it): the section ends before it
            if zlib.crc32(body) != crc:  # whole, yet not as written: the records after it are not to be dropped
                self.problem = "a damaged record"
                break
            try:
                self.records.append(_checked(json.loads(body.decode("utf-8"))))
            except (ValueError, KeyError, TypeError, RecursionError):
                self.problem = NOT_WRITTEN  # whole, by its checksum: crafted
                break
            position += RECORD.size + length
        self.end = self.start + position - at

    def check(self, path: PathLike) -> None:
        """Refuse a section with a record no learner wrote whole (every reader that folds
        it, or appends to it, goes through here)."""
        if self.problem:
            from nbtext.errors import NbtextError

            raise NbtextError(f"{path} is corrupt (its pending section holds {self.problem})")

    @property
    def bytes(self) -> int:
        """The section's size in the file, its whole records' (0: none)."""
        return 0 if self.end is None else self.end - self.start

    def past_bounds(self) -> bool:
        """Whether the section holds more records or bytes than a learner leaves in one
        (COMPACT_AFTER, MAX_SECTION_BYTES): the one-message path leaves its check to the
        model loaded whole, so that what it pays a message stays bounded."""
        return len(self.records) > COMPACT_AFTER or self.bytes > MAX_SECTION_BYTES

    def append(self, f: BinaryIO, path: PathLike, records: Sequence[Record]) -> None:
        """Write `records` after the whole ones (a torn tail cut off first), durably, to the
        model file open as `f` (the file read, under the model's lock: a file put in its
        place meanwhile is not written). A write that fails at any step leaves the file as
        every reader saw it: its torn tail cut off, never grown back."""
        body = b"".join(framed(record) for record in records)
        from nbtext.errors import WriteFailed

        fd, end = f.fileno(), self.end
        if end is None:  # the first: the section starts
            body, end = PENDING_MAGIC + body, self.start
        if os.fstat(fd).st_size < end:  # (never, under the lock: no writer grows a file with zeros)
            raise WriteFailed(f"cannot write {path}: it changed while it was read")
        try:
            os.ftruncate(fd, end)  # the torn tail cut off: what every reader saw
            os.lseek(fd, end, os.SEEK_SET)
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as e:
            try:  # back to the cut, never to the size before it: growing the file back would leave
                os.ftruncate(fd, end)  # zeros where the torn tail was
            except OSError:
                pass  # what is left is the cut, a torn tail or whole records: each reads as a state
            raise WriteFailed(f"cannot write {path}: {e.strerror or e}") from None
        self.records.extend(records)
        self.end = end + len(body)


def record_of(change: Change, derived: dict[str, Any]) -> Record:
    """The record of `change` (nbtext.stats.changes.Change) that leaves the model's one-document
    record `derived`."""
    return {
        "hash": change.key.hex(),
        "label": change.after,
        "from": change.before,
        "tokens": change.tokens,
        "mail": change.mail,
        "derived": derived,
    }


def framed(record: Record) -> bytes:
    body = json.dumps(record, separators=(",", ":")).encode("utf-8")
    return RECORD.pack(len(body), zlib.crc32(body)) + body


def tokens_bytes_at_least(tokens: Iterable[str]) -> int:
    """What `tokens` take of a record `framed` writes, at least: each token its length and 3
    (its quotes and a comma; an escaped character takes more), so that a learner can tell a
    record too large for the section before it derives the rest of it."""
    return sum(len(token) + 3 for token in tokens)


def _checked(record: Any) -> Record:
    """A record as read, its fields of the right types (else ValueError)."""
    if not (
        isinstance(record, dict)
        and isinstance(record["hash"], str)
        and len(record["hash"]) == 32
        and all(record[k] is None or isinstance(record[k], str) for k in ("label", "from"))
        and isinstance(record["tokens"], list)
        and set(map(type, record["tokens"])) <= {str}
        and not any("\0" in token for token in record["tokens"])
        and isinstance(record["mail"], bool)
        and isinstance(record["derived"], dict)
    ):
        raise ValueError("not a record")
    bytes.fromhex(record["hash"])
    return record


def _check_derived(derived: object, n_classes: int) -> None:
    """A record's one-document record as the file's own is checked (without its kept rule:
    the section follows models that have none), else ValueError."""
    from nbtext.modelfile.schema import check_one_document

    if not isinstance(derived, dict) or set(derived) != {"features", "unk", "totals"}:
        raise ValueError("a pending record's one-document record is not one")
    check_one_document({**derived, "kept": None}, n_classes, 2**53)


class Changes(Ledger):
    """What a log's records change (nbtext.stats.changes.Ledger, each record a Change over the
    model's `classes`, checked): the journal's changes, per class the documents added
    (class_count), a token's counts added in each class (`delta`), and the one-document
    record after the last record (`derived`, None if none). A model of `presence` counts
    each distinct token of a record's document once."""

    row: dict[str, int]  # (a Ledger given its classes)
    class_count: list[int]

    def __init__(
        self,
        classes: Sequence[str],
        records: Iterable[Record] = (),
        learned_before: Callable[[bytes], str | None] | None = None,
        *,
        presence: bool,
    ):
        super().__init__(learned_before, classes, presence)
        self.derived: dict[str, Any] | None = None
        for record in records:
            self.add(record)

    def add(self, record: Record) -> None:  # type: ignore[override]  # (a record, made a Change here)
        if any(record[k] is not None and record[k] not in self.row for k in ("label", "from")):
            raise ValueError("a pending record of a class the model does not have")
        if record["label"] == record["from"]:
            raise ValueError("a pending record that changes nothing")
        _check_derived(record["derived"], len(self.class_count))
        super().add(of_record(record))
        self.derived = record["derived"]
