"""The floor of scoring one message in a fresh Python process: what any Python filter must
do (import re and json, read and checksum the model file, parse its header, tokenize the
message on stdin with the model's word pattern), and no more (no mail parsing, no look-ups).

    python bench/message_floor.py MODEL < message
"""

import json
import re
import struct
import sys
import zlib

MAGIC = b"NBTEXT-MODEL\n"

with open(sys.argv[1], "rb") as f:
    data = f.read()
_, header_length = struct.unpack_from("<IQ", data, len(MAGIC))
start = len(MAGIC) + 12 + 4
header = json.loads(data[start : start + header_length])
payload = memoryview(data)[start + header_length : start + header_length + header["payload_bytes"]]
assert zlib.crc32(payload) == header["payload_crc32"]
tokens = re.compile(header["settings"]["tokenizer"]["pattern"]).findall(
    sys.stdin.buffer.read().decode("utf-8", "replace").lower()
)
