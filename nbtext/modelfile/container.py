"""The model file's container, without numpy: magic, preamble, the header's checksum
(the layout: docs/model-file.md).

`read_bytes` reads no more than the file's own header says it holds; `split` checks magic,
version, sizes and both checksums and gives the header and the payload; nbtext.modelfile.format
reads the arrays with numpy, nbtext.classifier.purescore one message's worth of them without;
`sample_section` gives the calibration sample's bytes, checked, when they were read.
"""

from __future__ import annotations

import json
import os
import struct
import zlib

from nbtext.choices import FORMAT_4_SETTINGS
from nbtext.errors import NbtextError, WriteFailed
from nbtext.version import __version__

TYPE_CHECKING = False  # (typing is not imported on the one-message path; the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from mmap import mmap
    from typing import Any, BinaryIO

    PathLike = str | os.PathLike[str]  # a model file's path, as the commands and the API take it
    FileBytes = bytes | mmap  # a model file's bytes: read, or mapped (`mapped`)
    Header = dict[str, Any]  # the header's JSON (docs/model-file.md)

MAGIC = b"NBTEXT-MODEL\n"
FORMAT_VERSION = 6  # the newest format this build reads (and writes: written_version)
PREAMBLE = struct.Struct("<IQ")  # format version, header length
HEADER_CRC = struct.Struct("<I")  # format 2 on: the header's CRC-32, after the preamble
PENDING_MAGIC = b"NBTEXT-PENDING\n"  # starts the pending section at the file's end (nbtext.modelfile.pending)


def written_version(settings: Mapping[str, Any], arrays: Iterable[str]) -> int:
    """The format a model file of `settings` and `arrays` (their names) is written in: the
    oldest whose readers honour all it holds. 6 when it holds where each token starts
    (token_starts), an array readers of format 5 call unknown. 5 when its tokenizer makes
    character n-grams (train --char-ngrams), which readers of format 4 call a bad tokenizer:
    they refuse format 5 ("upgrade nbtext"). 4 when it holds a setting that decides its
    labels or scores (train --unsure-below, --max-evidence: choices.FORMAT_4_SETTINGS), which
    readers of format 3 would take and ignore, deciding without it: they refuse format 4.
    Else 3."""
    if "token_starts" in arrays:
        return 6
    if "char_ngrams" in (settings.get("tokenizer") or {}):
        return 5
    return 4 if any(name in settings for name in FORMAT_4_SETTINGS) else 3


def read_bytes(path: PathLike, sample: bool = False) -> bytes:
    """The bytes of the model file at `path`, read no further than its own header says it
    holds: what is not a regular file (a FIFO would wait forever, /dev/zero never ends) is
    refused before it is opened, the magic and preamble are checked on the first bytes, and
    a header or payload that claims more than the file holds is refused before anything of
    that size is read or allocated. The calibration sample is read only with `sample`.
    (A problem reading it is an NbtextError.)"""
    try:
        regular_file_checked(path)
        with open(path, "rb") as f:
            return read_open(f, path, sample)
    except OSError as e:
        raise NbtextError(f"cannot read model {path}: {e.strerror or e}") from None


def regular_file_checked(path: PathLike) -> None:
    """Refuse a model path that is not a regular file, before it is opened: a FIFO would
    wait forever, /dev/zero never ends (every reader, and the learner that opens the file to
    append to it, ask here). (OSError: it cannot be looked at.)"""
    import stat

    if not stat.S_ISREG(os.stat(path).st_mode):
        kind = "a folder" if os.path.isdir(path) else "not a regular file (a FIFO, device or socket)"
        raise NbtextError(f"model {path} is {kind}; give a model file")


def mapped(f: BinaryIO, path: PathLike) -> mmap | None:
    """The whole model file open as `f` (at its start), mapped read-only with its pages read
    in at once (MAP_POPULATE where there is one): a learner's way to its bytes, for a large
    model several times faster than reading them into a new buffer, whose pages the kernel
    must hand out one by one (docs/performance.md, figures behind the code). Mapped only once
    its first bytes and header say it is a model file whose sections it holds (what
    read_open checks): a 2 GB file of zeros was mapped, all its pages read in, before its
    magic was looked at. Only under the model's lock: a file that shrank while mapped would
    fault, and only a learner ever shrinks one (cutting a torn record off). None where the
    file cannot be mapped, or is not such a file (read_open then says what it is)."""
    import mmap

    start = len(MAGIC) + PREAMBLE.size + HEADER_CRC.size
    fd = f.fileno()
    try:
        head, size = os.pread(fd, start, 0), os.fstat(fd).st_size
        if len(head) < start or not head.startswith(MAGIC):
            return None
        version, header_length = PREAMBLE.unpack_from(head, len(MAGIC))
        if version < 2 or start + header_length > size:
            return None
        if _claimed_sizes(os.pread(fd, header_length, start), size - start - header_length, path) is None:
            return None
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        return mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
    except (OSError, ValueError, AttributeError):
        return None


def read_open(f: BinaryIO, path: PathLike, sample: bool = False) -> bytes:
    """read_bytes of a model file open for reading at its start (`f`, a binary file)."""
    try:
        size = os.fstat(f.fileno()).st_size
        start = len(MAGIC) + PREAMBLE.size + HEADER_CRC.size
        head = f.read(start)
        if not head.startswith(MAGIC) or len(head) < start:
            split(head, path)  # says what it is instead: empty, text, a pickle, truncated
        version, header_length = PREAMBLE.unpack_from(head, len(MAGIC))
        if version < 2:  # format 1 had no header checksum: small enough to read whole
            return head + f.read(size)
        if start + header_length > size:
            raise NbtextError(f"{path} is truncated (its header claims {header_length:,} bytes)")
        header = f.read(header_length)
        claimed = _claimed_sizes(header, size - start - header_length, path)
        if claimed is None:
            return head + header  # split says it is unreadable (or its checksum does)
        payload_bytes, sample_bytes = claimed
        # the file read again from its start in one piece (its head and header are small): a
        # model's bytes are not copied to join them (what one message pays for a large model)
        f.seek(0)
        if sample or not sample_bytes:  # then the pending section, if any (split checks what it is)
            return f.read(size)
        data = f.read(start + header_length + payload_bytes)
        f.seek(sample_bytes, os.SEEK_CUR)
        pending = f.read(size - start - header_length - payload_bytes - sample_bytes)
        return data + pending if pending else data
    except OSError as e:
        raise NbtextError(f"cannot read model {path}: {e.strerror or e}") from None


def _claimed_sizes(header: bytes, after: int, path: PathLike) -> tuple[int, int] | None:
    """(the payload's size, the calibration sample's) that a model file's `header` (its
    bytes) claims, refused (NbtextError) where they are more than the `after` bytes that
    follow it in the file hold; None where the header cannot be read (split says why).
    Every way to a model file's bytes checks them here: read_open, mapped."""
    try:
        record = json.loads(header.decode("utf-8", "surrogateescape"))
        payload_bytes, sample_bytes = record["payload_bytes"], _sample_bytes(record)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    if not isinstance(payload_bytes, int) or not 0 <= payload_bytes <= after:
        raise NbtextError(f"{path} is truncated (its header claims {payload_bytes!r} bytes of arrays)")
    if payload_bytes + sample_bytes > after:
        raise NbtextError(f"{path} is truncated or corrupt (its sample's size does not agree)")
    return payload_bytes, sample_bytes


def read_header(path: PathLike) -> Header:
    """The header (a dict) of the model file at `path`, read alone: its magic, preamble and
    header checksum checked, the arrays not read (what must be known before any document is
    read: the classes train --update may name). Anything else than a whole header of a
    format this build reads is read as read_bytes and split do, which say what is wrong;
    the model's arrays are checked when it is loaded."""
    import stat

    start = len(MAGIC) + PREAMBLE.size + HEADER_CRC.size
    try:
        if stat.S_ISREG(os.stat(path).st_mode):  # (else read_bytes says what it is)
            with open(path, "rb") as f:
                head = f.read(start)
                version, length = PREAMBLE.unpack_from(head, len(MAGIC)) if len(head) == start else (0, 0)
                if head.startswith(MAGIC) and 2 <= version <= FORMAT_VERSION and length <= os.fstat(f.fileno()).st_size:
                    header = f.read(length)
                    if zlib.crc32(header) == HEADER_CRC.unpack_from(head, len(MAGIC) + PREAMBLE.size)[0]:
                        record = json.loads(header.decode("utf-8", "surrogateescape"))
                        if isinstance(record, dict):
                            return record
    except (OSError, ValueError, RecursionError):
        pass
    return split(read_bytes(path), path)[0]


def split(data: FileBytes, path: PathLike) -> tuple[Header, memoryview]:
    """(header dict, payload memoryview), after checking magic, version, sizes and checksum."""
    if data[: len(MAGIC)] != MAGIC:  # (data: bytes, or a mapped file)
        if data[:1] == b"\x80" or data[:2] in (b"(d", b"(l", b"}q", b"]q"):
            kind = "a Python pickle (nbtext never loads pickles)"
        elif not data:
            kind = "an empty file"
        else:
            kind = "not an nbtext model file"
        raise NbtextError(f"{path} is {kind}; train one with 'nbtext train'")
    start = len(MAGIC) + PREAMBLE.size
    if len(data) < start:
        raise NbtextError(f"{path} is truncated")
    version, header_length = PREAMBLE.unpack_from(data, len(MAGIC))
    if version > FORMAT_VERSION:
        raise NbtextError(
            f"{path} has model format version {version}, newer than this nbtext {__version__} "
            f"reads (up to {FORMAT_VERSION}); upgrade nbtext"
        )
    if version >= 2:  # the header's own checksum, before its JSON is parsed
        if len(data) < start + HEADER_CRC.size + header_length:
            raise NbtextError(f"{path} is truncated")
        (header_crc,) = HEADER_CRC.unpack_from(data, start)
        start += HEADER_CRC.size
        if zlib.crc32(memoryview(data)[start : start + header_length]) != header_crc:
            raise NbtextError(f"{path} is corrupt (header checksum mismatch)")
    if len(data) < start + header_length:
        raise NbtextError(f"{path} is truncated")
    try:
        header = json.loads(data[start : start + header_length].decode("utf-8", "surrogateescape"))
        payload = memoryview(data)[start + header_length :]
        expected, crc = header["payload_bytes"], header["payload_crc32"]
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (expected, crc)):
            raise TypeError("sizes must be whole numbers")
        _sample_bytes(header)  # (a sample record without a size: read_open read no further than the header)
    except (ValueError, KeyError, TypeError, RecursionError):
        raise NbtextError(f"{path} is corrupt (unreadable header)") from None
    if header.get("format_version") != version:
        raise NbtextError(
            f"{path} is corrupt (its header says format {header.get('format_version')!r}, its preamble {version})"
        )
    if len(payload) < expected:
        raise NbtextError(f"{path} is truncated")
    if sections(data, header)[1] is None:  # what follows the payload is neither sample nor pending section
        raise NbtextError(f"{path} is corrupt (checksum mismatch)")
    payload = payload[:expected]
    if zlib.crc32(payload) != crc:
        raise NbtextError(f"{path} is corrupt (checksum mismatch)")
    return header, payload


def _sample_bytes(header: object) -> int:
    """The size of the calibration sample section a header announces (0: none)."""
    record = header.get("sample") if isinstance(header, dict) else None
    if record is None:
        return 0
    size = record.get("bytes") if isinstance(record, dict) else None
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise TypeError("bad sample record")
    return size


def sections(data: FileBytes, header: Header) -> tuple[memoryview | None, int | None]:
    """(the calibration sample's bytes, or None when the file has none or they were not
    read; the position in `data` of the pending section, len(data) when there is none, or
    None when what follows the payload is neither) of a model file's `data` (split's
    `header`). The sample is there when what follows the payload does not start as a
    pending section does (arrays of token indices never spell its magic)."""
    version, header_length = PREAMBLE.unpack_from(data, len(MAGIC))
    end = (
        len(MAGIC) + PREAMBLE.size + (HEADER_CRC.size if version >= 2 else 0) + header_length + header["payload_bytes"]
    )
    size, sample = _sample_bytes(header), None
    if size and len(data) >= end + size and not _pending_at(data, end):
        sample, end = memoryview(data)[end : end + size], end + size
    if end < len(data) and not _pending_at(data, end):
        return sample, None
    return sample, end


def _pending_at(data: FileBytes, position: int) -> bool:
    """Whether a pending section starts at `position`: its magic, or the start of it at the
    end of the data (a first append cut short, which holds no record yet)."""
    found = data[position : position + len(PENDING_MAGIC)]
    return found == PENDING_MAGIC or (position + len(found) == len(data) and PENDING_MAGIC.startswith(found))


def sample_section(data: FileBytes, header: Header, path: PathLike) -> memoryview | None:
    """The calibration sample's bytes of a model file's `data` (split's `header`), checked
    against their CRC-32, or None when the file has none or they were not read (read_bytes
    without `sample`)."""
    view = sections(data, header)[0]
    if view is not None and zlib.crc32(view) != header["sample"].get("crc32"):
        raise ValueError("the calibration sample's checksum does not match")
    return view


def lock_path(path: PathLike) -> str:
    """The file whose flock says a file is being changed (a model, a scan's state): PATH.lock
    beside the file itself, a symbolic link to it followed, so that every spelling of one file
    (the link, the file, a path through a linked folder) takes one lock, as the writer
    (write_atomically) writes through a link to the one file."""
    return os.path.realpath(os.fspath(path)) + ".lock"


class locked:
    """An exclusive lock on a model while it is read, changed and written (`train
    --update`, `forget`): `with locked(path): ...`. The lock is a file beside the model,
    PATH.lock, held with flock; two learners take turns, and readers (predict, filter)
    never wait, since a model is only ever replaced whole by rename."""

    def __init__(self, path: PathLike):
        self.lock_path = lock_path(path)

    def __enter__(self) -> locked:
        import fcntl

        try:
            self.fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError as denied:  # made by another user of a shared model: flock needs to read it only
            try:
                self.fd = os.open(self.lock_path, os.O_RDONLY)
            except FileNotFoundError:  # none to read: it was the folder that said no
                raise NbtextError(
                    f"cannot lock the model ({self.lock_path}: {denied.strerror}; its folder must be "
                    "writable to change the model)"
                ) from None
            except OSError as e:
                raise NbtextError(f"cannot lock the model ({self.lock_path}: {e.strerror or e})") from None
        except OSError as e:
            raise NbtextError(f"cannot lock the model ({self.lock_path}: {e.strerror or e})") from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        import fcntl

        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def check_writable(path: PathLike) -> None:
    """Fail before any corpus is read if a model file could not be written at `path`."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise NbtextError(f"{path} is a folder; give a file name with -o")
    _refuse_special(path)
    if not os.path.isdir(folder):
        raise WriteFailed(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise WriteFailed(f"cannot write {path}: folder {folder} is not writable")
    import tempfile

    try:  # what the write will do (a special or read-only file system says no only here)
        fd, probe = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX.format(os.getpid()), suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise WriteFailed(f"cannot write {path}: {e.strerror or e}") from None


_TEMPORARY_PREFIX = ".nbtext-{}-"  # and the writer's process id: a file of a process gone is stale


def _refuse_special(path: PathLike) -> None:
    """A model is written only where a regular file is, or none: never over a device, a
    FIFO or a socket (as root, `-o /dev/null` would have replaced /dev/null)."""
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        raise NbtextError(f"{path} is not a regular file (a device, FIFO or socket): give another path with -o")


def _remove_stale_temporaries(folder: str) -> None:
    """Remove the temporary files our own writes left in `folder` when they were killed
    (SIGKILL, a power cut): `.nbtext-PID-*.tmp` of a process that no longer runs."""
    import re

    try:
        names = [n for n in os.listdir(folder) if n.startswith(".nbtext-") and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        match = re.fullmatch(r"\.nbtext-(\d+)-\w+\.tmp", name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:  # gone: the file is ours and nobody's now
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass
        except (PermissionError, OverflowError):
            pass  # another user's process, alive: its file


def write_atomically(path: PathLike, chunks: Iterable[bytes], private: bool = True) -> None:
    """Write bytes so that `path` is either the old file or the complete new one, never half.

    A temporary file in the same folder (mode 0600 while it is written), then rename. A path
    that is a symbolic link is written through to the file it points to (the link stays a
    link); an existing file keeps its mode and, where the writer may set it, its owner. A new
    file is the writer's alone, 0600 whatever the umask, when `private` (a model holds the
    words of the mail it learned, a scan's state the names of a user's folders: kept as a mail
    server keeps mail), else the mode the umask gives (a plot). A path that is a device, FIFO
    or socket is refused; temporary files left by writers that were killed are removed."""
    import tempfile

    path = os.fspath(path)
    target = os.path.realpath(path) if os.path.islink(path) else path
    _refuse_special(target)
    folder = os.path.dirname(os.path.abspath(target))
    _remove_stale_temporaries(folder)
    try:
        existing = os.stat(target)
    except OSError:
        existing = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX.format(os.getpid()), suffix=".tmp", dir=folder)
    except OSError as e:
        raise WriteFailed(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if existing is not None:
            os.chmod(tmp, existing.st_mode & 0o7777)
            if (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.chown(tmp, existing.st_uid, existing.st_gid)
                except PermissionError:
                    pass  # only root may give a file away: it is then the writer's
        elif private:
            os.chmod(tmp, 0o600)  # (mkstemp's 0600 is less what the umask takes away: said here whole)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):  # a full disk, a read-only or special file system, permissions
            raise WriteFailed(f"cannot write {path}: {e.strerror or e}") from None
        raise
