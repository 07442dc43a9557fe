"""Signals in nbtext's first moments: how many runs end as promised.

    .venv/bin/python bench/startup_signals.py [--runs N] [--seed S]

Each run starts `nbtext filter -m MODEL < message` or `nbtext predict -m MODEL < message`,
sends SIGINT, SIGTERM or SIGHUP after a random delay of 0 to 150 ms, and records how it
ended: a Python traceback on stderr, killed by the signal with nothing said (the default
action: the interpreter's own start-up, before any of nbtext's code runs), or its exit
status (filter: 75, the message kept by the mail server, or 0 when it was out before the
signal; predict: 130 for SIGINT, or killed by the signal after saying so). Two executables
are compared in the same run, interleaved: nbtext's own launcher (the installed `nbtext`,
launcher/nbtext) and the launcher pip makes of a console_scripts entry (written here, as pip
writes it: it imports `re` and the package before nbtext holds a signal). Then the start-up
time of one message through `filter` by each, against `python -c pass` (medians).
The figures are in docs/mail.md.
"""

import argparse
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PYTHON = str(BIN / "python")
MAIL = ROOT / "corpora" / "mail"
# What pip writes for `nbtext = "nbtext.cli.entry:main"` under [project.scripts]
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from nbtext.cli.entry import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MESSAGE = b"From: a@example.org\nTo: b@example.org\nSubject: free prize\n\nclick now to claim your free prize money\n"


def ending(result, stderr):
    """How a run ended, in a word."""
    if b"Traceback" in stderr:
        return "traceback"
    if result < 0:
        return f"killed by {signal.Signals(-result).name}" + (", said" if stderr else ", silent")
    return f"exit {result}" + (f" ({stderr.decode(errors='replace').strip()})" if result not in (0, 75, 130) else "")


def _signals_by_default():
    """In the child: the three signals' default actions (a job started in the background
    inherits SIGINT ignored, and nbtext leaves an ignored signal ignored)."""
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def one_run(executable, command, model, message, signum, delay):
    with open(message, "rb") as stdin:
        process = subprocess.Popen(
            [executable, command, "-m", str(model)],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_signals_by_default,
        )
        time.sleep(delay)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    return ending(process.returncode, stderr)


def start_up(executables, model, message, reps):
    """Median seconds of one message through `filter` by each executable, and of python -c pass."""
    contenders = {name: [path, "filter", "-m", str(model)] for name, path in executables.items()}
    contenders["python -c pass"] = [PYTHON, "-c", "pass"]
    times = {name: [] for name in contenders}
    for _ in range(reps):
        for name, command in contenders.items():
            with open(message, "rb") as stdin:
                started = time.perf_counter()
                subprocess.run(command, stdin=stdin, stdout=subprocess.DEVNULL, check=False)
                times[name].append(time.perf_counter() - started)
    return {name: statistics.median(v) for name, v in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="runs per executable and command")
    parser.add_argument("--seed", type=int, default=49)
    parser.add_argument("--reps", type=int, default=30, help="start-up time repetitions")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        model = work / "m.model"
        subprocess.run(
            [str(BIN / "nbtext"), "train", "-o", str(model), str(MAIL / "train" / "spam"), str(MAIL / "train" / "ham")],
            check=True,
            capture_output=True,
        )
        message = work / "message.eml"
        message.write_bytes(MESSAGE)
        console = work / "nbtext-console-script"
        console.write_text(CONSOLE_SCRIPT.format(python=BIN / "python"))
        console.chmod(0o755)
        executables = {"nbtext's launcher": str(BIN / "nbtext"), "pip's console script": str(console)}
        counts = {(name, command): Counter() for name in executables for command in ("filter", "predict")}
        for _ in range(args.runs):
            signum, delay = rng.choice(SIGNALS), rng.uniform(0, 0.150)
            for command in ("filter", "predict"):
                for name, path in executables.items():  # the same signal and delay for each
                    outcome = one_run(path, command, model, message, signum, delay)
                    counts[name, command][f"{signal.Signals(signum).name}: {outcome}"] += 1
        for (name, command), found in counts.items():
            print(f"{name}, {command} ({sum(found.values())} runs):")
            for outcome, n in sorted(found.items()):
                print(f"    {n:4d}  {outcome}")
        medians = start_up(executables, model, message, args.reps)
        bare = medians["python -c pass"]
        print(f"start-up, one message through filter (median of {args.reps}):")
        for name, seconds in medians.items():
            print(f"    {name:24s} {seconds * 1000:6.1f} ms  ({seconds / bare:.2f} x python -c pass)")


if __name__ == "__main__":
    main()
