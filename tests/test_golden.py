"""Every golden model file and command output (see golden_cases.py), compared as
golden_compare.py says: exact where it must be, floats to a stated tolerance, and a failure
lists what moved, field by field."""

import numpy as np
import pytest

from golden_cases import FILES, produce
from golden_compare import decoded, differences


@pytest.fixture(scope="module")
def produced(tmp_path_factory):
    return produce(tmp_path_factory.mktemp("golden"))


def test_golden_outputs_match_the_recorded_ones(produced):
    assert sorted(produced) == sorted(p.name for p in FILES.iterdir())
    report = []
    for name, data in sorted(produced.items()):
        found = differences(name, (FILES / name).read_bytes(), data)
        if found:
            report.append(f"{name}:\n  " + "\n  ".join(found[:8]))
    assert not report, "outputs differ from tests/golden/files:\n" + "\n".join(report)


def test_the_comparison_sees_a_moved_number_and_a_changed_label():
    line = b'{"path": "a", "label": "spam", "probabilities": {"ham": 0.08033634867310598}}\n'
    assert differences("x.json", line, line.replace(b"0.08033634867310598", b"0.080336348673106")) == []
    assert differences("x.json", line, line.replace(b"0.08033634867310598", b"0.0803363")) != []
    assert differences("x.json", line, line.replace(b"spam", b"ham")) != []
    assert differences("x.tsv", b"a\tspam\t0.9987\n", b"a\tspam\t0.9988\n") == []  # its last printed digit
    assert differences("x.tsv", b"a\tspam\t0.9987\n", b"a\tspam\t0.9990\n") != []
    assert differences("x.txt", b"documents 26\n", b"documents 27\n") != []


def test_the_comparison_decodes_a_model_field_by_field(produced):
    data = produced["multinomial.model"]
    header, arrays = decoded(data)
    assert differences("m.model", data, data) == []
    changed = bytearray(data)
    from nbtext.modelfile.container import HEADER_CRC, MAGIC, PREAMBLE

    _, length = PREAMBLE.unpack_from(data, len(MAGIC))
    offset = len(MAGIC) + PREAMBLE.size + HEADER_CRC.size + length + header["arrays"]["class_count"]["offset"]
    changed[offset : offset + 8] = np.float64(arrays["class_count"][0] + 1).tobytes()
    changed = _with_checksum(bytes(changed), header)
    assert any(line.startswith("array class_count[0]") for line in differences("m.model", data, changed))


def _with_checksum(data, header):
    """A model file's bytes with its payload checksum made good again (a legal file)."""
    import json
    import struct
    import zlib

    from nbtext.modelfile.container import HEADER_CRC, MAGIC, PREAMBLE

    _, length = PREAMBLE.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + PREAMBLE.size + HEADER_CRC.size
    full = json.loads(data[start : start + length])
    payload = data[start + length : start + length + full["payload_bytes"]]
    full["payload_crc32"] = zlib.crc32(payload)
    text = json.dumps(full).encode()
    return (
        MAGIC
        + PREAMBLE.pack(full["format_version"], len(text))
        + struct.pack("<I", zlib.crc32(text))
        + text
        + data[start + length :]
    )
