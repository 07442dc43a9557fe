"""Two builds of nbtext side by side: a git revision against the work tree, on the rows a user feels.

    make compare REV=main~3                      # or: .venv/bin/python bench/builds.py REV [--reps N]
    .venv/bin/python bench/builds.py 9edfaa1 --reps 15 --rows filter,learned

Each build is a copy of its `nbtext/` package (the revision's by `git archive`, the work tree's as it is
on disk, uncommitted edits too) under build/builds/, run by a launcher beside it, as the console
script runs it, with this .venv's Python and libraries: only nbtext's own code differs. Each build
trains its own models first (their files may differ between revisions). Then every row runs as whole
processes, the two builds interleaved and their order swapped every repetition (A B B A ...), so a
noisy machine slows both alike. Prints, per row, each build's median and the ratio work tree / revision;
exits 1 when a row is slower than --limit (default 1.03, the house's bound for a refactoring).
"""

import argparse
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import DATA, PYTHON, ROOT, class_folders, run  # bench/bench.py: one process, timed

WORK = ROOT / "build" / "builds"
CORPUS = "spamassassin"
ROWS = ("filter", "learned", "forgotten", "train", "train -j 1", "predict")


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


def prepared(name, folder):
    """The commands of every row for one build (its byte code compiled, its models trained here)."""
    nbtext = launcher(folder)
    # compiled once, as pip does on install: with PYTHONDONTWRITEBYTECODE set no run would cache its
    # byte code, and every one would pay for compiling the whole package
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(folder / "nbtext")], check=True)
    # (the general defaults in every build: a build with --preset trains spam and ham by the spam preset's)
    offered = subprocess.run([nbtext, "train", "--help"], capture_output=True, text=True, check=True).stdout
    train = ["--preset", "general"] * ("--preset" in offered) + class_folders(CORPUS, "train")
    test = class_folders(CORPUS, "test")
    model, learner, learned_model = folder / "model", folder / "learner.model", folder / "learned.model"
    run([nbtext, "train", "-q", "-o", str(model), *train])
    messages = sorted(Path(test[0]).iterdir())
    message, learned = str(messages[0]), str(messages[1])
    learn = [nbtext, "train", "--update", "-q", "-m", str(learner), f"ham={learned}"]
    shutil.copy(model, learner)
    run(learn)
    shutil.copy(learner, learned_model)
    scratch = str(folder / "scratch.model")
    # (command, its stdin, the state it starts from: every run of a row starts from the same model file)
    return {
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revision", help="a git revision: the build to compare the work tree against")
    parser.add_argument("--reps", type=int, default=11, help="repetitions of each row and build (default 11)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"rows to run, of {', '.join(ROWS)}")
    parser.add_argument("--limit", type=float, default=1.03, help="the slowest ratio allowed (default 1.03)")
    args = parser.parse_args()
    rows = args.rows.split(",")
    if unknown := [row for row in rows if row not in ROWS]:
        sys.exit(f"builds: no such row: {', '.join(unknown)} (rows: {', '.join(ROWS)})")
    if not (DATA / CORPUS).is_dir():
        sys.exit(f"builds: needs data/{CORPUS}: run `make corpora`")
    builds = {args.revision: revision_build(args.revision), "work tree": work_tree_build()}
    commands = {name: prepared(name, folder) for name, folder in builds.items()}
    names = list(builds)
    slower = []
    print(f"{'row':<12} {names[0][:14]:>14} {'work tree':>14} {'ratio':>7}   ({args.reps} runs each, medians)")
    for row in rows:
        times = {name: [] for name in names}
        for rep in range(args.reps + 1):  # the first round warms the caches and is not counted
            for name in names if rep % 2 else reversed(names):
                command, stdin, start = commands[name][row]
                if start:
                    start()
                seconds = run(command, stdin)[0]
                if rep:
                    times[name].append(seconds)
        base, ours = (statistics.median(times[name]) for name in names)
        ratio = ours / base
        slower += [row] if ratio > args.limit else []
        print(f"{row:<12} {base:>12.3f} s {ours:>12.3f} s {ratio:>7.3f}")
    if slower:
        sys.exit(f"builds: slower than {args.limit} x {args.revision}: {', '.join(slower)}")


if __name__ == "__main__":
    main()
