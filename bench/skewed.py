"""The spam preset against the general defaults on mailboxes of mostly ham: subsets of a spam
corpus's train split, ten ham to one spam, each cross-validated by `nbtext eval --folds 5`
as a user would judge a setting on their own mail (train splits only; docs/performance.md,
"The spam preset").

    .venv/bin/python bench/skewed.py                      # SpamAssassin and Enron1, three sizes, two draws
    .venv/bin/python bench/skewed.py --corpora sms --sizes 1000:100

Prints, per corpus, size, draw and preset: spam missed (unsure among them), ham flagged and
errors, summed over the folds.
"""

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
NBTEXT = str(Path(sys.executable).parent / "nbtext")


def subset(corpus, ham, spam, draw, root):
    """data/CORPUS/train's `ham` and `spam` messages drawn by `draw`, as root/{spam,ham} of links."""
    for label, n in (("ham", ham), ("spam", spam)):
        files = sorted((DATA / corpus / "train" / label).iterdir())
        (root / label).mkdir(parents=True)
        for f in random.Random(f"{corpus} {label} {draw}").sample(files, n):
            (root / label / f.name).symlink_to(f)
    return [str(root / "spam"), str(root / "ham")]


def figures(folders, preset):
    """(spam missed, of them unsure, ham flagged) of eval --folds 5 --preset PRESET, summed over the folds."""
    out = subprocess.run(
        [NBTEXT, "eval", "--folds", "5", "--seed", "1", "-q", "--preset", preset, "--format", "json", *folders],
        check=True,
        capture_output=True,
    ).stdout
    folds = json.loads(out)["models"]["multinomial"]["folds"]
    return tuple(sum(fold.get(key, 0) for fold in folds) for key in ("missed", "missed_unsure", "flagged"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", nargs="+", default=["spamassassin", "enron1"])
    parser.add_argument("--sizes", nargs="+", default=["200:20", "1000:100", "2000:200"], help="HAM:SPAM")
    parser.add_argument("--draws", type=int, default=2)
    args = parser.parse_args()
    print(
        f"{'corpus':14s} {'ham:spam':9s} {'draw':>4s} {'preset':8s} {'spam missed (unsure)':>21s} {'ham flagged':>11s} {'errors':>6s}"
    )
    for corpus in args.corpora:
        if not (DATA / corpus / "train").is_dir():
            sys.exit(f"skewed: data/{corpus} is missing; run 'make corpora' first")
        for size in args.sizes:
            ham, spam = map(int, size.split(":"))
            for draw in range(1, args.draws + 1):
                with tempfile.TemporaryDirectory() as tmp:
                    folders = subset(corpus, ham, spam, draw, Path(tmp))
                    for preset in ("spam", "general"):
                        missed, unsure, flagged = figures(folders, preset)
                        print(
                            f"{corpus:14s} {size:9s} {draw:4d} {preset:8s} {f'{missed} ({unsure})':>21s} "
                            f"{flagged:11d} {missed + flagged:6d}"
                        )


if __name__ == "__main__":
    main()
