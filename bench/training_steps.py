"""Where a `-j 1` training's time goes, timed around each step without a profiler (a
profiler's own cost inflates the Python-heavy steps): the table of docs/performance.md.

    python bench/training_steps.py [CORPUS]    (default: 20news; after `make corpora`)

Four jobs, each in a process of its own: the floor's job (`--input text --calibration none`),
mail without calibration, text with calibration, and the default job.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOBS = {
    "floor's job": ["--input", "text", "--calibration", "none"],
    "mail, no calibration": ["--calibration", "none"],
    "text, calibrated": ["--input", "text"],
    "default": [],
}
# run in a child: nbtext's train with a stopwatch around each step (their sums, in seconds)
TIMED = """
import json, sys, time
from collections import defaultdict
started = time.perf_counter()
import nbtext.classifier.model as model
import nbtext.jobs.training as training
import nbtext.stats.counting as counting
spent = defaultdict(float)
def timed(owner, name, step):
    function = getattr(owner, name)
    def stopwatch(*args, **kwargs):
        t = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[step] += time.perf_counter() - t
    setattr(owner, name, stopwatch)
timed(counting, "tokenized", "reading and tokenizing")
timed(counting.CountTable, "add", "the column look-ups and counting")
timed(counting, "document_key", "the journal's content hashes")
timed(counting, "packed_sample", "the sample's token hashes while counting")
timed(training, "trained_model", "the model, its sample and calibration")
timed(model.NaiveBayes, "save", "the model file")
from nbtext.cli.entry import main
sys.argv[0] = "nbtext"
try:
    main()
except SystemExit:
    pass
spent["the whole process"] = time.perf_counter() - started
print(json.dumps(spent), file=sys.stderr)
"""


def main(corpus):
    train = sorted(str(p) for p in (ROOT / "data" / corpus / "train").iterdir() if p.is_dir())
    if not train:
        sys.exit(f"bench/training_steps.py: data/{corpus} is missing; run 'make corpora' first")
    columns = {}
    for job, options in JOBS.items():
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                TIMED,
                "train",
                "-q",
                "-j",
                "1",
                *options,
                "-o",
                str(ROOT / "build" / "steps.model"),
                *train,
            ],
            capture_output=True,
            text=True,
            cwd="/",
            check=True,
        )
        columns[job] = json.loads(result.stderr.strip().splitlines()[-1])
    steps = list(columns["default"])
    print(f"{corpus}, -j 1, seconds\t" + "\t".join(JOBS))
    for step in steps:
        print(f"{step}\t" + "\t".join(f"{columns[job].get(step, 0.0):.2f}" for job in JOBS))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "20news")
