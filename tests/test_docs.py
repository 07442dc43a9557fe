"""The README and docs/ as a user reads them: every command they show runs as written, and
every link leads somewhere.

Commands: each ```sh block of README.md and docs/*.md is cut into its commands (a line, or
lines joined by a trailing backslash), and each page's commands run in order with bash, in a
scratch folder of their own, with the installed `nbtext` first on PATH. The folder links the
bundled corpus (`corpora/`, as tests/golden_cases.py does) and holds the files the examples
name (`spam/` and `ham/`, `inbox/`, `message.txt`, `~/Maildir`, `spam.mbox`, ...), all made
from corpora/mail; `nbtext.model` and `~/.nbtext/mail.model` are trained from it first, as a
user who followed the README has them. Every command must exit 0. A command that cannot run
here is listed in NOT_RUN with the reason; a command that is neither run nor listed fails the
test, and so does a listed one the pages no longer show. ```python blocks run with this
Python; every other block must say what it is (```text), so nothing is left out unread.

Links: every relative link of those pages names a file that exists and, with a #fragment,
a heading of that page (GitHub's anchors).
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NBTEXT = Path(sys.executable).with_name("nbtext")
CORPUS = ROOT / "corpora" / "mail"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = {"sh", "python", "text"}

REAL_CORPORA = "needs the real corpora (make corpora) and minutes of work"
INSTALLS = "installs nbtext outside this folder (pipx, pip, sudo): not for a test run"
MAKE = "make sets up .venv in the checkout (and `make test` runs the whole suite)"
ZSH = "zsh code: bash cannot evaluate it"
CLUSTER = "needs a Dask cluster or a SLURM array, and data on /data or s3://"
IMAP = "reads an IMAP server: tests/test_imap.py runs these against a Dovecot of its own"
DOVECOT = "sets up the system's Dovecot as root: tests/test_dovecot.py does the same with a Dovecot of its own"

# command (without its trailing comment) -> why it is not run here
NOT_RUN = {
    "make demo": MAKE,
    "make test": MAKE,
    "make accuracy": REAL_CORPORA,
    "make bench": REAL_CORPORA,
    "make compare REV=main~3": REAL_CORPORA,
    ".venv/bin/python bench/figures.py": REAL_CORPORA,
    "pipx install .": INSTALLS,
    "python3 -m pip install --user .": INSTALLS,
    "sudo /usr/bin/python3 -m venv /opt/nbtext && sudo /opt/nbtext/bin/pip install . && "
    "sudo ln -s /opt/nbtext/bin/nbtext /usr/local/bin/nbtext": INSTALLS,
    "sudo nbtext check --as-user vmail -m /var/vmail/alice/.nbtext/mail.model": "needs the mail user vmail and "
    "their model: tests/test_setupcheck.py checks uid 65534",
    'eval "$(_NBTEXT_COMPLETE=zsh_source nbtext)"': ZSH,
    "nbtext train --table ../shared/corpora/SMSSpamCollection.tsv -o sms.model": REAL_CORPORA,
    "nbtext train --shard $SLURM_ARRAY_TASK_ID/16 --learn all -o parts/$SLURM_ARRAY_TASK_ID.model "
    "spam=/data/spam ham=/data/ham": CLUSTER,
    "dask scheduler &": CLUSTER,
    "dask worker tcp://HOST:8786 --nworkers 4 --nthreads 1 &": CLUSTER,
    "nbtext train --scheduler tcp://HOST:8786 --learn all -o mail.model spam=s3://bucket/spam/ ham=s3://bucket/ham/": CLUSTER,
    "nbtext predict --scheduler tcp://HOST:8786 -m mail.model s3://bucket/inbox/ > labels.tsv": CLUSTER,
    "sudo mkdir -p /etc/dovecot/nbtext/bin": DOVECOT,
    "sudo cp contrib/dovecot/*.sieve contrib/dovecot/nbtext-service.conf /etc/dovecot/nbtext/": DOVECOT,
    "sudo cp contrib/dovecot/90-nbtext.conf /etc/dovecot/conf.d/": DOVECOT,
    'sudo ln -s "$(command -v nbtext)" /etc/dovecot/nbtext/bin/nbtext': DOVECOT,
    "sudo sievec /etc/dovecot/nbtext": DOVECOT,
    "sudo doveadm reload": DOVECOT,
    "nbtext train -o mail.model spam=imaps://me@mail.example.org/Junk ham=imaps://me@mail.example.org/Archive": IMAP,
    "nbtext predict -m mail.model imaps://me@mail.example.org/INBOX": IMAP,
    "nbtext train --update -q -m mail.model spam=imaps://me@mail.example.org/learn-spam": IMAP,
    "nbtext imap-scan --dry-run -m mail.model --move-to Junk imaps://me@mail.example.org/INBOX": IMAP,
}
PLOTS = "--plot"  # commands that draw need matplotlib (the plot extra)


def fenced_blocks(text):
    """[(language, [lines])] of every fenced block of a Markdown text."""
    blocks, current = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current = (line[3:].strip(), [])
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current[1].append(line)
    assert current is None, "a fence is never closed"
    return blocks


def shell_commands(lines):
    """The commands of a shell block: lines joined at a trailing backslash; blank lines and
    comment lines left out."""
    commands, pending = [], ""
    for line in lines:
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        if line.strip() and not line.lstrip().startswith("#"):
            commands.append(line.strip())
    return commands


def key(command):
    """The command without its trailing `# comment` (how NOT_RUN names it)."""
    return re.sub(r"\s+# .*$", "", command)


def page_commands(page):
    return [
        c
        for language, lines in fenced_blocks(page.read_text(encoding="utf-8"))
        if language == "sh"
        for c in shell_commands(lines)
    ]


def python_blocks(page):
    return [
        "\n".join(lines) for language, lines in fenced_blocks(page.read_text(encoding="utf-8")) if language == "python"
    ]


def make_world(folder):
    """The scratch folder the examples run in: the bundled corpus and the files they name."""
    messages = lambda label, split="test": sorted((CORPUS / split / label).iterdir())  # noqa: E731
    (folder / "corpora").symlink_to(ROOT / "corpora")
    for label in ("spam", "ham"):
        (folder / label).symlink_to(CORPUS / "train" / label)
        (folder / "test").mkdir(exist_ok=True)
        (folder / "test" / label).symlink_to(CORPUS / "test" / label)
    (folder / "news").symlink_to(CORPUS / "train")  # news/*: one folder per class
    (folder / "inbox").symlink_to(CORPUS / "test" / "ham")
    (folder / "junk").mkdir()
    text = messages("spam")[0].read_bytes()
    for name in ("message.txt", "msg", "a.txt"):
        (folder / name).write_bytes(text)
    (folder / "message.eml").write_bytes(b"From: someone@example.com\nSubject: a prize\n\n" + text)
    lines = [m.read_text(encoding="utf-8").replace("\n", " ") for m in messages("spam") + messages("ham")]
    (folder / "tweets.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "big.txt").write_text("\n".join(lines * 200) + "\n", encoding="utf-8")
    (folder / "test.txt").write_text(
        "".join(f"__label__{'spam' if i < 13 else 'ham'} {line}\n" for i, line in enumerate(lines)), encoding="utf-8"
    )
    (folder / "reviews.csv").write_text(
        "stars,review\n" + "".join(f'{5 if i >= 13 else 1},"{line}"\n' for i, line in enumerate(lines)),
        encoding="utf-8",
    )
    with open(folder / "spam.mbox", "wb") as mbox:
        for m in messages("spam", "train"):
            mbox.write(
                b"From spammer@example.com Thu Jan  1 00:00:00 2015\nSubject: offer\n\n"
                + m.read_bytes().rstrip(b"\n")
                + b"\n\n"
            )
    home = folder / "home"
    for maildir, label in ((home / "Maildir", "ham"), (home / "Maildir" / ".Spam", "spam")):
        for part in ("cur", "new", "tmp"):
            (maildir / part).mkdir(parents=True)
        for n, m in enumerate(messages(label, "train")):
            (maildir / "cur" / f"17000000{n:02d}.M1P1.host:2,S").write_bytes(
                b"From: someone@example.com\nSubject: mail\n\n" + m.read_bytes()
            )
    (home / "Mail").mkdir()
    for m in messages("ham"):
        shutil.copy(m, home / "Mail" / (m.stem + ".eml"))
    (home / ".config" / "fish" / "completions").mkdir(parents=True)
    (home / ".nbtext").mkdir()
    env = environment(home)
    for model in ("nbtext.model", str(home / ".nbtext" / "mail.model")):
        subprocess.run(
            [str(NBTEXT), "train", "-q", "-o", model, "spam", "ham"],
            cwd=folder,
            env=env,
            check=True,
            capture_output=True,
        )
    return env


def environment(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NBTEXT_", "DASK_"))}
    env.update(HOME=str(home), PATH=f"{NBTEXT.parent}{os.pathsep}{os.environ.get('PATH', '')}", CI="1")
    return env


PAGES_TO_RUN = [p for p in PAGES if python_blocks(p) or any(key(c) not in NOT_RUN for c in page_commands(p))]


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
@pytest.mark.parametrize("page", PAGES_TO_RUN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_a_page_shows_runs_as_written(page, tmp_path):
    commands = [c for c in page_commands(page) if key(c) not in NOT_RUN]
    without_plots = importlib.util.find_spec("matplotlib") is None
    not_run = [c for c in commands if without_plots and PLOTS in c]
    commands = [c for c in commands if c not in not_run]
    blocks = python_blocks(page)
    env = make_world(tmp_path)
    failed = []
    for command in commands:
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            failed.append(f"{command}\n  exit {result.returncode}: {result.stderr.strip()[-500:]}")
    for code in blocks:
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        if result.returncode != 0:
            failed.append(f"python block {code.splitlines()[0]!r}...\n  {result.stderr.strip()[-500:]}")
    assert not failed, "\n".join(failed)
    if not_run:
        pytest.skip(f"the others ran; without matplotlib (the plot extra), not run: {not_run}")


def test_every_command_is_run_or_said_why_not():
    """A command the pages show is run above unless NOT_RUN gives the reason; a reason for a
    command no page shows any more is stale. Enough of them run for the test to mean something."""
    shown = [c for page in PAGES for c in page_commands(page)]
    stale = set(NOT_RUN) - {key(c) for c in shown}
    assert not stale, f"NOT_RUN lists commands no page shows: {sorted(stale)}"
    run_here = [c for c in shown if key(c) not in NOT_RUN]
    assert len(run_here) >= 40, run_here


def test_every_block_says_what_it_is():
    """```sh blocks are run and ```python blocks too; a block without a language would be
    skipped unseen, so every block names one."""
    for page in PAGES:
        for language, lines in fenced_blocks(page.read_text(encoding="utf-8")):
            assert language in LANGUAGES, f"{page.relative_to(ROOT)}: a ```{language} block: {lines[:1]}"


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page):
    text = page.read_text(encoding="utf-8")
    seen, found = {}, set()
    for _language, lines in fenced_blocks(text):  # headings inside code blocks are not headings
        text = text.replace("\n".join(lines), "")
    for match in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE):
        base = slug(match.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page):
    text = page.read_text(encoding="utf-8")
    for _, lines in fenced_blocks(text):
        text = text.replace("\n".join(lines), "")
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return re.findall(r"\[[^\]]+\]\(([^)\s]+)\)", text)


def test_every_relative_link_leads_to_a_file_and_a_heading():
    broken, checked = [], 0
    for page in PAGES:
        for target in links(page):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, fragment = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            checked += 1
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif fragment and file.suffix == ".md" and fragment not in anchors(file):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
    assert checked >= 30, checked


def test_the_index_links_every_page_and_the_readme_the_index():
    index = set(links(ROOT / "docs" / "README.md"))
    assert {p.name for p in PAGES if p.parent.name == "docs" and p.name != "README.md"} <= index
    assert "docs/README.md" in links(ROOT / "README.md")


def test_no_page_speaks_of_how_the_work_was_organized():
    """The pages say what the tool does and how it was measured, not which issue or which run
    of a session asked for it (the history is in the commit messages)."""
    said = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for page in PAGES
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\b[Ii]ssue (\d+|'s)|\bruns? [A-L]( and [A-L])?\b", line)
    ]
    assert said == []
