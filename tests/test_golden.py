"""Every golden model file and command output, byte for byte (see golden_cases.py)."""

from golden_cases import FILES, produce


def test_golden_outputs_are_byte_identical(tmp_path):
    produced = produce(tmp_path)
    assert sorted(produced) == sorted(p.name for p in FILES.iterdir())
    changed = [name for name, data in produced.items() if (FILES / name).read_bytes() != data]
    assert not changed, f"outputs differ from tests/golden/files: {changed}"
