"""Where a training's time goes, by a sampling profiler (py-spy, the dev extra): the share of
samples each nbtext function is on the stack (inclusive) and at its top (own).

    .venv/bin/python bench/profile.py [CORPUS] [-- TRAIN OPTIONS...]     # `make profile`

CORPUS is a folder of data/ (default 20news); the training is `nbtext train -q -j 1` on its
train split, so every sample is of one process.
"""

import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def main(argv):
    corpus, options = (
        (argv[0] if argv and argv[0] != "--" else "20news"),
        argv[argv.index("--") + 1 :] if "--" in argv else [],
    )
    train = ROOT / "data" / corpus / "train"
    if not train.is_dir():
        sys.exit(f"profile: data/{corpus} is missing; run 'make corpora' first")
    classes = sorted(str(p) for p in train.iterdir() if p.is_dir())
    with tempfile.TemporaryDirectory() as work:
        raw = Path(work) / "stacks.txt"
        subprocess.run(
            [
                str(BIN / "py-spy"),
                "record",
                "--format",
                "raw",
                "--rate",
                "200",
                "-o",
                str(raw),
                "--",
                str(BIN / "nbtext"),
                "train",
                "-q",
                "-j",
                "1",
                *options,
                "-o",
                str(Path(work) / "m"),
                *classes,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        inclusive, own, total = Counter(), Counter(), 0
        for line in raw.read_text().splitlines():
            stack, n = line.rsplit(" ", 1)
            frames = [re.sub(r":\d+\)$", ")", frame) for frame in stack.split(";")]
            total += int(n)
            own[frames[-1]] += int(n)
            for frame in set(frames):
                inclusive[frame] += int(n)
    print(f"{total} samples of `nbtext train -q -j 1` on data/{corpus}/train\n  incl    own  function")
    for frame, n in inclusive.most_common():
        if "nbtext/" in frame and n / total >= 0.01:
            print(f"{100 * n / total:5.1f}% {100 * own[frame] / total:5.1f}%  {frame}")


if __name__ == "__main__":
    main(sys.argv[1:])
