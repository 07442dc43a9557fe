"""Learning one message with no model-file checks at all: how far issue 24's target (learn one
on a model five times larger within 1.3x the time on SpamAssassin's) is from the learner's
own floor.

    python bench/learn_floor.py [REPS]    (after `make bench`, which builds both models)

Interleaved runs of `train --update` of one message on fresh copies of
build/bench/spamassassin.model and build/bench/spamassassin-x5.model, each as nbtext runs and
with the array checks and the payload's CRC turned off in the process (what a validation
cache would save), both started the same way (python -c, which costs a few milliseconds more
than the installed script); medians in milliseconds.
"""

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "bench"
PYTHON = sys.executable
# nbtext's command line, run the same way for both (python -c), and with its checks off
AS_IT_RUNS = """
import sys
from nbtext.cli.entry import main
sys.argv[0] = "nbtext"
main()
"""
# the one-message learner with its model-file checks off (check_arrays; the payload's CRC)
UNCHECKED = """
import sys, zlib
import nbtext.classifier.purescore as purescore
import nbtext.modelfile.container as container
from nbtext.modelfile.schema import raw_array
purescore.check_arrays = lambda header, payload: bytes(raw_array(payload, header["arrays"]["vocabulary"]))  # (unchecked)
class _NoPayloadCrc:
    def crc32(self, data, *rest):
        return container.PAYLOAD[1] if len(data) == container.PAYLOAD[0] else zlib.crc32(data, *rest)
split = container.split
def unchecked_split(data, path):
    import json
    start = len(container.MAGIC) + container.PREAMBLE.size + container.HEADER_CRC.size
    _, length = container.PREAMBLE.unpack_from(data, len(container.MAGIC))
    header = json.loads(bytes(data[start:start + length]))
    container.PAYLOAD = (header["payload_bytes"], header["payload_crc32"])
    return split(data, path)
container.zlib, container.split, purescore.split = _NoPayloadCrc(), unchecked_split, unchecked_split
from nbtext.cli.entry import main
sys.argv[0] = "nbtext"
main()
"""


def timed(command, cwd):
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=cwd)  # (not here: ./nbtext is the source tree)
    return (time.perf_counter() - started) * 1000


def main(reps):
    models = {"SpamAssassin": WORK / "spamassassin.model", "five times larger": WORK / "spamassassin-x5.model"}
    if not all(path.exists() for path in models.values()):
        sys.exit("bench/learn_floor.py needs build/bench/spamassassin.model and spamassassin-x5.model: run make bench")
    message = sorted((ROOT / "data" / "spamassassin" / "test" / "spam").iterdir())[1]
    times = {}
    with tempfile.TemporaryDirectory() as folder:
        copies = {name: Path(folder) / path.name for name, path in models.items()}
        for _ in range(reps):
            for name, copy in copies.items():
                shutil.copy(models[name], copy)  # a fresh copy each time: its pending section never folds
                for how, code in (("as it runs", AS_IT_RUNS), ("no checks", UNCHECKED)):
                    times.setdefault((name, how), []).append(
                        timed([PYTHON, "-c", code, "train", "--update", "-m", str(copy), f"ham={message}"], folder)
                    )
                    shutil.copy(models[name], copy)
        times[("python -c pass", "")] = [timed([PYTHON, "-c", "pass"], folder) for _ in range(reps)]
    median = {key: statistics.median(values) for key, values in times.items()}
    for (name, how), value in median.items():
        print(f"{name:18s} {how:11s} {value:6.1f} ms")
    for how in ("as it runs", "no checks"):
        ratio = median[("five times larger", how)] / median[("SpamAssassin", how)]
        print(f"learn one, five times larger / SpamAssassin's, {how}: {ratio:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
