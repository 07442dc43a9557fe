"""The model file's container, without numpy: magic, preamble, the header's checksum.

    b"NBTEXT-MODEL\\n"     13-byte magic
    u32                   format version (FORMAT_VERSION)
    u64                   header length H
    u32                   CRC-32 of the header (format 2; files of format 1 have none)
    H bytes               header: UTF-8 JSON
    payload               the arrays (nbtext.modelfile says which)

`split` checks all of it and gives the header and the payload; nbtext.modelfile reads the
arrays with numpy, nbtext.purescore one message's worth of them without.
"""

import json
import struct
import zlib

from nbtext.errors import NbtextError
from nbtext.version import __version__

MAGIC = b"NBTEXT-MODEL\n"
FORMAT_VERSION = 2
PREAMBLE = struct.Struct("<IQ")  # format version, header length
HEADER_CRC = struct.Struct("<I")  # format 2 on: the header's CRC-32, after the preamble


def read_bytes(path):
    """The bytes of the model file at `path` (a problem reading it is an NbtextError)."""
    try:
        with open(path, "rb") as f:
            return f.read()
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
    if len(payload) != expected or zlib.crc32(payload) != crc:
        raise NbtextError(f"{path} is corrupt (checksum mismatch)")
    return header, payload
