"""The model file's container, without numpy: magic, preamble, the header's checksum
(the layout: docs/model-file.md).

`read_bytes` reads no more than the file's own header says it holds; `split` checks magic,
version, sizes and both checksums and gives the header and the payload; nbtext.modelfile
reads the arrays with numpy, nbtext.purescore one message's worth of them without;
`sample_section` gives the calibration sample's bytes, checked, when they were read.
"""

import json
import struct
import zlib

from nbtext.errors import NbtextError
from nbtext.version import __version__

MAGIC = b"NBTEXT-MODEL\n"
FORMAT_VERSION = 3
PREAMBLE = struct.Struct("<IQ")  # format version, header length
HEADER_CRC = struct.Struct("<I")  # format 2 on: the header's CRC-32, after the preamble


def read_bytes(path, sample=False):
    """The bytes of the model file at `path`, read no further than its own header says it
    holds: what is not a regular file (a FIFO would wait forever, /dev/zero never ends) is
    refused before it is opened, the magic and preamble are checked on the first bytes, and
    a header or payload that claims more than the file holds is refused before anything of
    that size is read or allocated. The calibration sample is read only with `sample`.
    (A problem reading it is an NbtextError.)"""
    import os
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            kind = "a folder" if os.path.isdir(path) else "not a regular file (a FIFO, device or socket)"
            raise NbtextError(f"model {path} is {kind}; give a model file")
        with open(path, "rb") as f:
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
            try:
                record = json.loads(header.decode("utf-8", "surrogateescape"))
                payload_bytes, sample_bytes = record["payload_bytes"], _sample_bytes(record)
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                return head + header  # split says it is unreadable (or its checksum does)
            if not isinstance(payload_bytes, int) or not 0 <= payload_bytes <= size - start - header_length:
                raise NbtextError(f"{path} is truncated (its header claims {payload_bytes!r} bytes of arrays)")
            if sample_bytes and start + header_length + payload_bytes + sample_bytes != size:
                raise NbtextError(f"{path} is truncated or corrupt (its sample's size does not agree)")
            if sample and sample_bytes:
                return head + header + f.read(payload_bytes + sample_bytes)
            return head + header + f.read(payload_bytes + (0 if sample_bytes else 1))  # trailing bytes: corrupt
    except OSError as e:
        raise NbtextError(f"cannot read model {path}: {e.strerror or e}") from None


def split(data, path):
    """(header dict, payload memoryview), after checking magic, version, sizes and checksum."""
    if not data.startswith(MAGIC):
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
    except (ValueError, KeyError, TypeError, RecursionError):
        raise NbtextError(f"{path} is corrupt (unreadable header)") from None
    if header.get("format_version") != version:
        raise NbtextError(f"{path} is corrupt (its header says format {header.get('format_version')!r}, "
                          f"its preamble {version})")
    if len(payload) < expected:
        raise NbtextError(f"{path} is truncated")
    sample_bytes = _sample_bytes(header)
    if len(payload) not in ((expected, expected + sample_bytes) if sample_bytes else (expected,)):
        raise NbtextError(f"{path} is corrupt (checksum mismatch)")
    payload = payload[:expected]
    if zlib.crc32(payload) != crc:
        raise NbtextError(f"{path} is corrupt (checksum mismatch)")
    return header, payload


def _sample_bytes(header):
    """The size of the calibration sample section a header announces (0: none)."""
    record = header.get("sample") if isinstance(header, dict) else None
    if record is None:
        return 0
    size = record.get("bytes") if isinstance(record, dict) else None
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise TypeError("bad sample record")
    return size


def sample_section(data, header, path):
    """The calibration sample's bytes of a model file's `data` (split's `header`), checked
    against their CRC-32, or None when the file has none or they were not read (read_bytes
    without `sample`)."""
    size = _sample_bytes(header)
    _, header_length = PREAMBLE.unpack_from(data, len(MAGIC))
    end = len(MAGIC) + PREAMBLE.size + HEADER_CRC.size + header_length + header["payload_bytes"]
    if not size or len(data) != end + size:
        return None
    view = memoryview(data)[end:]
    if zlib.crc32(view) != header["sample"].get("crc32"):
        raise ValueError("the calibration sample's checksum does not match")
    return view
