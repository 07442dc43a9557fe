"""Two builds of nbtext side by side: a git revision against the work tree, on the rows a user feels.

    make compare REV=main~3                      # or: .venv/bin/python bench/builds.py REV [--reps N]
    .venv/bin/python bench/builds.py 9edfaa1 --reps 15 --rows filter,learned
    .venv/bin/python bench/builds.py main --cpu --rows filter,"filter preset"
    .venv/bin/python bench/builds.py 9edfaa1 --cpu --corpus 20news --rows train --reps 5

The row `filter preset` filters the same message with each build's model of the spam preset
(train --preset spam; a revision without presets is left out of it), and each build's preset /
general ratio per message is printed after the rows (`make bench` holds it to 1.15). With --cpu
a run is timed by the CPU it used (user + sys, from wait4), less moved than the wall clock by
other work on a shared machine.

The rows read SpamAssassin's splits, or --corpus's (20news: its twenty classes; the row
`filter preset`, of spam and ham, is then left out).

Each build is a copy of its `nbtext/` package (the revision's by `git archive`, the work tree's as it is
on disk, uncommitted edits too) under build/builds/, run by a launcher beside it, as the console
script runs it, with this .venv's Python and libraries: only nbtext's own code differs. Each build
trains its own models first (their files may differ between revisions). Then every row runs as whole
processes, the two builds interleaved and their order swapped every repetition (A B B A ...), so a
noisy machine slows both alike. Prints, per row, each build's median and the ratio work tree / revision;
exits 1 when a row is slower than --limit (default 1.03, the house's bound for a refactoring).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import DATA, PYTHON, ROOT, class_folders, run  # bench/bench.py: one process, timed

WORK = ROOT / "build" / "builds"
ROWS = ("filter", "filter preset", "learned", "forgotten", "train", "train -j 1", "predict")


def launcher(folder):
    """A script beside `folder`/nbtext that runs nbtext's entry point as the console script does
    (the script's folder comes first on sys.path, so this copy is the one imported)."""
    script = folder / "run-nbtext"
    script.write_text(f"#!{PYTHON}\nimport sys\nfrom nbtext.cli.entry import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return str(script)


def revision_build(revision):
    """build/builds/rev-SHA: the revision's nbtext/ package, extracted once."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{revision}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if sha.returncode != 0:
        sys.exit(f"builds: no such revision: {revision}")
    folder = WORK / f"rev-{sha.stdout.strip()[:12]}"
    if not (folder / "nbtext").is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", sha.stdout.strip(), "nbtext"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def work_tree_build():
    """build/builds/work-tree: the work tree's nbtext/ package as it is now."""
    folder = WORK / "work-tree"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(ROOT / "nbtext", folder / "nbtext", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def cpu_seconds(command, stdin=None):
    """The CPU (user + sys) of one command as a whole process (its output discarded)."""
    with open(stdin or os.devnull, "rb") as source, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdin=source, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            sys.exit(f"builds: {' '.join(command)} failed:\n{err.read().decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime


def prepared(name, folder, rows, corpus):
    """The commands of `rows` for one build (its byte code compiled, its models trained here)."""
    nbtext = launcher(folder)
    # compiled once, as pip does on install: with PYTHONDONTWRITEBYTECODE set no run would cache its
    # byte code, and every one would pay for compiling the whole package
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(folder / "nbtext")], check=True)
    # (the general defaults in every build: a build with --preset trains spam and ham by the spam preset's)
    offered = subprocess.run([nbtext, "train", "--help"], capture_output=True, text=True, check=True).stdout
    train = ["--preset", "general"] * ("--preset" in offered) + class_folders(corpus, "train")
    test = class_folders(corpus, "test")
    model, learner, learned_model = folder / "model", folder / "learner.model", folder / "learned.model"
    run([nbtext, "train", "-q", "-o", str(model), *train])
    messages = sorted(Path(test[0]).iterdir())
    message, learned = str(messages[0]), str(messages[1])
    learn = [nbtext, "train", "--update", "-q", "-m", str(learner), f"{Path(test[0]).name}={learned}"]  # (its class)
    shutil.copy(model, learner)
    run(learn)
    shutil.copy(learner, learned_model)
    scratch = str(folder / "scratch.model")
    # (command, its stdin, the state it starts from: every run of a row starts from the same model file)
    commands = {
        "filter": ([nbtext, "filter", "-m", str(model)], message, None),
        "learned": (learn, None, lambda: shutil.copy(model, learner)),
        "forgotten": (
            [nbtext, "forget", "-q", "-m", str(learner), learned],
            None,
            lambda: shutil.copy(learned_model, learner),
        ),
        "train": ([nbtext, "train", "-q", "-o", scratch, *train], None, None),
        "train -j 1": ([nbtext, "train", "-q", "-j", "1", "-o", scratch, *train], None, None),
        "predict": ([nbtext, "predict", "-m", str(model), *test], None, None),
    }
    # (trained only for its row, some 20 s; a preset of spam and ham)
    if "filter preset" in rows and "--preset" in offered and corpus == "spamassassin":
        preset = folder / "preset.model"
        run([nbtext, "train", "-q", "-o", str(preset), "--preset", "spam", *class_folders(corpus, "train")])
        commands["filter preset"] = ([nbtext, "filter", "-m", str(preset)], message, None)
    return commands


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revision", help="a git revision: the build to compare the work tree against")
    parser.add_argument("--reps", type=int, default=11, help="repetitions of each row and build (default 11)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"rows to run, of {', '.join(ROWS)}")
    parser.add_argument("--limit", type=float, default=1.03, help="the slowest ratio allowed (default 1.03)")
    parser.add_argument("--cpu", action="store_true", help="time each run by its CPU (user + sys), not the wall clock")
    parser.add_argument("--corpus", default="spamassassin", help="data/'s corpus the rows read")
    args = parser.parse_args()
    rows = args.rows.split(",")
    if unknown := [row for row in rows if row not in ROWS]:
        sys.exit(f"builds: no such row: {', '.join(unknown)} (rows: {', '.join(ROWS)})")
    if not (DATA / args.corpus).is_dir():
        sys.exit(f"builds: needs data/{args.corpus}: run `make corpora`")
    builds = {args.revision: revision_build(args.revision), "work tree": work_tree_build()}
    commands = {name: prepared(name, folder, rows, args.corpus) for name, folder in builds.items()}
    names = list(builds)
    slower, medians = [], {}
    timed = cpu_seconds if args.cpu else lambda command, stdin: run(command, stdin)[0]
    print(
        f"{'row':<14} {names[0][:14]:>14} {'work tree':>14} {'ratio':>7}   "
        f"({args.reps} runs each, medians{', CPU' if args.cpu else ''})"
    )
    for row in rows:
        if any(row not in commands[name] for name in names):
            print(f"{row:<14} (left out: a build without it)")
            continue
        times = {name: [] for name in names}
        for rep in range(args.reps + 1):  # the first round warms the caches and is not counted
            for name in names if rep % 2 else reversed(names):
                command, stdin, start = commands[name][row]
                if start:
                    start()
                seconds = timed(command, stdin)
                if rep:
                    times[name].append(seconds)
        base, ours = (statistics.median(times[name]) for name in names)
        medians.update({(name, row): statistics.median(times[name]) for name in names})
        ratio = ours / base
        slower += [row] if ratio > args.limit else []
        print(f"{row:<14} {base:>12.3f} s {ours:>12.3f} s {ratio:>7.3f}")
    for name in names:  # one message of the spam preset's model against the general defaults'
        if (name, "filter") in medians and (name, "filter preset") in medians:
            preset = medians[name, "filter preset"] / medians[name, "filter"]
            print(f"{name}: filter preset / filter {preset:.3f} (make bench holds it to 1.15)")
    if slower:
        sys.exit(f"builds: slower than {args.limit} x {args.revision}: {', '.join(slower)}")


if __name__ == "__main__":
    main()
