"""Rewrite tests/golden/files from the current code: only on purpose, when an output is
meant to change (say why in the commit). Run: .venv/bin/python tests/golden/regenerate.py"""

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this tree's nbtext, not an installed one

from golden_cases import FILES, produce

with tempfile.TemporaryDirectory() as scratch:
    produced = produce(scratch)
shutil.rmtree(FILES, ignore_errors=True)
FILES.mkdir(parents=True)
for name, data in produced.items():
    (FILES / name).write_bytes(data)
print(f"{len(produced)} golden files in {FILES}")
