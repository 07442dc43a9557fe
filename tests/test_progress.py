"""Progress on a terminal (issue 12): a bar with the total, the rate and the time left when
stderr is a TTY (checked through a pseudo-terminal), nothing in a pipe, under CI or -q."""

import os
import pty
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import MAIL_TRAIN, ROOT, real_corpus, run, trained_on_mail

NBTEXT = Path(sys.executable).with_name("nbtext")
GENERAL = ["--preset", "general"]  # the general defaults (spam/ham folders would train the spam preset)


def on_a_terminal(*args, env=None):
    """(stdout, what the terminal showed on stderr) of `nbtext ARGS` with stderr a pseudo-terminal."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CI"} | (env or {})
    with tempfile.TemporaryFile() as out:  # not a pipe: a full pipe would stop the command while we read
        process = subprocess.Popen([str(NBTEXT), *map(str, args)], stdout=out, stderr=slave, env=env)
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait() == 0
        os.close(master)
        out.seek(0)
        return out.read().decode(), shown.decode(errors="replace")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("progress") / "m.model"
    trained_on_mail(path)
    return path


def test_a_long_job_on_a_terminal_shows_the_total_rate_and_time_left(model):
    # both splits: the test split alone took barely more than the second before the bar is
    # drawn on an idle machine, so the bar could first appear finished, without time left
    splits = [real_corpus("20news") / "test", real_corpus("20news") / "train"]
    total = sum(len(files) for split in splits for _, _, files in os.walk(split))
    stdout, shown = on_a_terminal("predict", "-m", model, *splits)
    assert stdout.count("\n") == total  # the lines themselves go to stdout, untouched
    assert "classifying" in shown and f"/{total}" in shown and "documents/s" in shown
    assert re.search(r"\d+%", shown)  # (the time left: below, on a clock the test keeps)


def test_the_bar_shows_the_time_left_once_it_knows_it(monkeypatch):
    """The time left, on a clock the test moves (a real job's speed depends on the machine:
    on a fast one the whole of 20 Newsgroups went by before click knew a time left)."""
    import io
    import time

    from nbtext.cli.console import drawn

    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(time, "time", lambda: clock[0])

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    for _ in drawn(range(100), "classifying", total=100):
        clock[0] += 0.05  # 50 ms a document: 5 s in all
    shown = screen.getvalue()
    assert "classifying" in shown and "100/100" in shown and "documents/s" in shown
    assert re.search(r"00:00:0[1-4]", shown)  # the time left, while there was some
    assert " 0/100" not in shown  # its first line shows the 20 documents done by then, not 0 beside a rate


def test_no_progress_in_a_pipe_under_ci_or_with_quiet(model):
    test = real_corpus("20news") / "test"
    assert "classifying" not in on_a_terminal("predict", "-q", "-m", model, test)[1]
    assert "classifying" not in on_a_terminal("predict", "-m", model, test, env={"CI": "true"})[1]
    piped = subprocess.run(
        [str(NBTEXT), "predict", "-m", str(model), str(test)],
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "CI"},
    )
    assert piped.returncode == 0 and piped.stderr == b""


def test_cross_validation_says_each_fold_as_it_finishes(model):
    """A fold is reported when it is done, with its accuracy (it was reported when sent to a
    worker: 'fold 4/5' and 'fold 5/5' came together, then nothing for 18 s)."""
    mail = ROOT / "corpora" / "mail" / "train"
    _, shown = on_a_terminal("eval", "--folds", "3", "--compare", "multinomial,bernoulli", mail / "spam", mail / "ham")
    for name in ("multinomial", "bernoulli"):
        for f in (1, 2, 3):
            assert re.search(rf"nbtext: fold {f}/3 done: {name}, accuracy \d\.\d{{4}}", shown)


def test_a_second_pass_has_a_bar_of_its_own_name(tmp_path, monkeypatch):
    """tf-idf (and complement) training reads its corpus twice: the second bar says so (two
    bars both called 'training', the second from 0%, looked like a restart). Drawn from the
    first document on (no wait for a second to pass: nothing here depends on the machine's speed)."""
    from nbtext.cli import console

    monkeypatch.setattr(console, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(console, "shows_progress", lambda quiet=False: not quiet)
    mail = ROOT / "corpora" / "mail" / "train"
    result = run("train", "-j", "1", "--features", "tfidf", "-o", tmp_path / "m", mail / "spam", mail / "ham")
    assert result.exit_code == 0, result.stderr
    bars = result.stderr.splitlines()[:2]  # (click writes a bar's label alone where stderr is no terminal)
    assert bars == ["training", "second pass (what the counts decide: idf, UNK documents)"]


def test_training_says_when_it_calibrates(tmp_path):
    """The calibration at the end of a training (seconds on a large corpus) is said on a
    terminal, not a silent pause after the bar."""
    _, shown = on_a_terminal("train", "-o", tmp_path / "m.model", *GENERAL, "--calibration", "temperature", *MAIL_TRAIN)
    assert "calibrating: out-of-fold scores of 78 documents" in shown
    _, quiet = on_a_terminal(
        "train", "-q", "-o", tmp_path / "q.model", *GENERAL, "--calibration", "temperature", *MAIL_TRAIN
    )
    assert "calibrating" not in quiet


def test_cross_validation_reads_as_its_bar_moves(monkeypatch):
    """eval --folds listed its documents (a file name each: the bar ran to 100% at once),
    then read and tokenized them all with nothing on the screen for seconds. Each
    document is now tokenized as the bar passes it."""
    from nbtext.cli import commands
    from nbtext.jobs import crossval

    events, shown, tokenized, tokenized_with = [], commands.with_progress, crossval.tokenized, crossval.tokenized_with

    def watched(docs, label, *rest, **options):
        def each():
            for doc in shown(docs, label, *rest, **options):
                events.append(label)
                yield doc

        return each()

    def counting(tokenize):
        def counted(data):
            events.append("tokenized")
            return tokenize(data)

        return counted

    def logged(tokenize, batch, on_error=None):
        return tokenized(counting(tokenize), batch, on_error)

    def logged_with(tokenize, batch, of_data, on_error=None):  # (the spam preset's folds keep keys: TONE's order)
        return tokenized_with(counting(tokenize), batch, of_data, on_error)

    monkeypatch.setattr(commands, "with_progress", watched)  # (the bar eval's jobs are handed)
    monkeypatch.setattr(crossval, "tokenized", logged)
    monkeypatch.setattr(crossval, "tokenized_with", logged_with)
    mail = ROOT / "corpora" / "mail" / "train"
    assert run("eval", "--folds", "3", mail / "spam", mail / "ham").exit_code == 0
    assert events.count("reading") == events.count("tokenized") == 78
    assert events[:6] == ["reading", "tokenized"] * 3
