"""What a model file's pending section costs every filtered message: `nbtext filter` of one
message with a section of 0, 5, 20 and 50 records, and the section's lookups three ways.

    .venv/bin/python bench/pending_filter.py [--reps 30]     # after make corpora; a few minutes

The spam preset's model of data/spamassassin/train; the test split's first 25 spam and first 25
ham learned one at a time by `train --update` (a record each), a copy kept at 5, 20 and 50
records. Each copy filters the test split's last ham, the four taking turns, --reps runs each
(one round more first, not counted); a run's figure is the CPU time (user and system) of the
whole process. Then, in this process, the distinct tokens of the 50 records are looked up in the
model's vocabulary: by a binary search of its bytes each (vocabindex.find_one, as a message's
own tokens are), by splitting the vocabulary and a bisect each, and by its signposts
(vocabindex.indices_in_sorted_blob, what the section's check uses); best of 5 taking turns
(docs/performance.md, "The pending section's check").
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBTEXT = str(Path(sys.executable).with_name("nbtext"))
CORPUS = ROOT / "data" / "spamassassin"
KEPT = (5, 20, 50)  # records in the copies measured (and none)


def cpu_seconds(command, stdin):
    """The CPU seconds (user and system) of one whole process of `command`, `stdin` its input."""
    with open(stdin, "rb") as source:
        process = subprocess.Popen(command, stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"pending_filter: {' '.join(command)} failed: {process.stderr.read().decode(errors='replace')}")
    process.stderr.close()
    return usage.ru_utime + usage.ru_stime


def models(folder):
    """{records: a model file with that many in its pending section}, and the message to filter."""
    train = [str(CORPUS / "train" / label) for label in ("spam", "ham")]
    spam, ham = (sorted((CORPUS / "test" / label).iterdir()) for label in ("spam", "ham"))
    model = folder / "m.model"
    subprocess.run([NBTEXT, "train", "-q", "-o", str(model), *train], check=True, capture_output=True)
    made = {0: folder / "m0.model"}
    shutil.copy(model, made[0])
    for n, (label, path) in enumerate([("spam", p) for p in spam[:25]] + [("ham", p) for p in ham[:25]], 1):
        subprocess.run([NBTEXT, "train", "--update", "-q", "-m", str(model), f"{label}={path}"], check=True)
        if n in KEPT:
            made[n] = folder / f"m{n}.model"
            shutil.copy(model, made[n])
    return made, ham[-1]


def best_of_each(*runs, times=5):
    spent = [[] for _ in runs]
    for _ in range(times):
        for run, seconds in zip(runs, spent):
            started = time.process_time()
            run()
            seconds.append(time.process_time() - started)
    return [min(seconds) for seconds in spent]


def lookups(path):
    """The section's distinct tokens, and the seconds of each way of looking them up."""
    from nbtext.classifier.purescore import of_file
    from nbtext.features.vocabindex import encode, find_one, indices_in_sorted_blob
    from nbtext.modelfile import pending

    data = path.read_bytes()
    pure = of_file(data, str(path))
    tokens = list({encode(t) for record in pending.Log(data).records for t in record["tokens"]})

    def one_by_one():
        return [find_one(t, pure.keys, pure.order, pure.blob) for t in tokens]

    def split():
        vocabulary = pure.blob.split(b"\0")
        return [bisect_left(vocabulary, t) for t in tokens]

    return len(tokens), best_of_each(one_by_one, split, lambda: indices_in_sorted_blob(pure.blob, tokens))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=30, help="runs of each (default 30)")
    args = parser.parse_args()
    if not (CORPUS / "train").is_dir():
        sys.exit("pending_filter: needs data/spamassassin: run `make corpora`")
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as folder:
        made, message = models(Path(folder))
        spent = {n: [] for n in made}
        for rep in range(args.reps + 1):
            for n, path in made.items() if rep % 2 else reversed(made.items()):
                seconds = cpu_seconds([NBTEXT, "filter", "-m", str(path)], message)
                if rep:
                    spent[n].append(seconds)
        print(f"filter of {message.name} ({message.stat().st_size:,} bytes), CPU median of {args.reps} runs:")
        for n, seconds in spent.items():
            print(f"  {n:>2} records  {statistics.median(seconds) * 1000:6.1f} ms")
        n_tokens, (one_by_one, split, signposts) = lookups(made[KEPT[-1]])
        print(f"the {KEPT[-1]} records' {n_tokens:,} distinct tokens looked up, best of 5 taking turns:")
        print(f"  find_one each {one_by_one * 1000:.1f} ms, split and bisect {split * 1000:.1f} ms, ", end="")
        print(f"signposts {signposts * 1000:.1f} ms")


if __name__ == "__main__":
    main()
