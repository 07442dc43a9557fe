"""The cross-validation behind the mail defaults (nbtext.event_models.Multinomial): errors
of 5-fold cross-validation on each corpus's training split, the mean over five shuffles,
for the defaults and the settings they were chosen against. Training splits only: no test
document is read.

    .venv/bin/python bench/defaults.py [CORPUS...]     # about 15 minutes for all three
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
NBTEXT = str(Path(sys.executable).parent / "nbtext")
SEEDS = range(5)

SETTINGS = [
    [],  # each token once per message, λ 0.03, min count 1 (for a corpus of mail)
    ["--features", "counts", "--alpha", "0.1", "--min-count", "2"],  # the mail defaults before
    ["--features", "counts", "--alpha", "0.03", "--min-count", "1"],  # counts, the new λ and min count
    ["--min-count", "2"],
    ["--alpha", "0.1"],
    ["--alpha", "0.01"],
    ["--features", "binary", "--alpha", "0.03", "--min-count", "1"],  # presence with one UNK feature
]


def errors(corpus, options):
    """(mean errors, the errors of each shuffle, documents) of 5-fold cross-validation."""
    classes = sorted(str(p) for p in (DATA / corpus / "train").iterdir() if p.is_dir())
    counts = []
    for seed in SEEDS:
        out = subprocess.run([NBTEXT, "eval", "-q", "--folds", "5", "--seed", str(seed), "--format", "json",
                              *options, *classes], check=True, capture_output=True).stdout
        [result] = json.loads(out)["models"].values()
        folds = result["folds"]
        counts.append(round(sum(f["n"] * (1 - f["accuracy"]) for f in folds)))
    return sum(counts) / len(counts), counts, sum(f["n"] for f in folds)


def main():
    corpora = sys.argv[1:] or ["spamassassin", "20news", "sms"]
    print(f"{'corpus':14s} {'settings':50s} {'errors':>8s}  of each shuffle (seeds {SEEDS[0]}-{SEEDS[-1]})")
    for corpus in corpora:
        if not (DATA / corpus).is_dir():
            sys.exit(f"defaults: data/{corpus} is missing; run 'make corpora' first")
        for options in SETTINGS:
            mean, each, n = errors(corpus, options)
            print(f"{corpus:14s} {' '.join(options) or '(defaults)':50s} {mean:8.1f}  "
                  f"{' '.join(f'{e:,}' for e in each)}  of {n:,}", flush=True)


if __name__ == "__main__":
    main()
