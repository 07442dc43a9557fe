"""Faults: a full disk, an unwritable place, Ctrl-C, a kill -9. Each ends in one line and
the right exit status, and nothing is lost: no half-written model, no temporary file."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import nbtext

from conftest import ROOT, run

NBTEXT = Path(sys.executable).with_name("nbtext")
DEMO = ROOT / "corpora" / "mail"
needs_executable = pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")


def nbtext_to(stdout, *args, stdin=b""):
    with open(stdout, "wb") as out:
        return subprocess.run([NBTEXT, *map(str, args)], input=stdin, stdout=out, stderr=subprocess.PIPE)


def test_no_command_prints_the_help():
    result = run()
    assert result.exit_code == 0 and result.stdout.startswith("Usage: nbtext") and "train" in result.stdout


@needs_executable
@needs_dev_full
@pytest.mark.parametrize(
    "args",
    [
        ["predict", "-m", "{model}"],  # the click-free path
        ["predict", "-m", "{model}", DEMO / "test" / "ham"],
        ["eval", "-m", "{model}", DEMO / "test" / "spam", DEMO / "test" / "ham"],
        ["info", "-m", "{model}"],
    ],
)
def test_a_full_disk_is_one_line(demo_model, args):
    args = [str(a).format(model=demo_model) for a in args]
    result = nbtext_to("/dev/full", *args, stdin=b"free prize now")
    assert result.returncode == 1
    assert result.stderr.decode() == "Error: cannot write output: No space left on device\n"


@needs_executable
@needs_dev_full
def test_filter_that_cannot_write_the_message_asks_for_a_retry(demo_model):
    result = nbtext_to("/dev/full", "filter", "-m", demo_model, stdin=b"Subject: hi\n\nfree prize\n")
    assert result.returncode == 75  # EX_TEMPFAIL: the delivery agent keeps the message
    assert result.stderr.decode() == "Error: cannot write the message: No space left on device\n"


def test_an_unwritable_place_is_one_line_and_leaves_no_temporary_file(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    model = folder / "m"
    assert run("train", "-o", model, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    before = model.read_bytes()
    os.chmod(folder, 0o500)  # no new files here (root may still write: then skip)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("this user writes into read-only folders")
        result = run("train", "--update", "-m", model, "spam=" + str(DEMO / "test" / "spam"))
    finally:
        os.chmod(folder, 0o700)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert model.read_bytes() == before and sorted(p.name for p in folder.iterdir()) == ["m"]


def test_an_immutable_model_is_one_line_and_kept(tmp_path):
    model = tmp_path / "m"
    assert run("train", "-o", model, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    before = model.read_bytes()
    if subprocess.run(["chattr", "+i", str(model)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        result = run("train", "--update", "-m", model, "spam=" + str(DEMO / "test" / "spam"))
    finally:
        subprocess.run(["chattr", "-i", str(model)])
    assert result.exit_code == 1 and result.stderr.startswith(f"Error: cannot write {model}: ")
    assert result.stderr.count("\n") == 1 and model.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "m.lock"]  # the learners' lock, no temporary file


def test_a_failed_write_is_one_line_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    """The disk fills up while the model is written: one line, the old model, no leftovers."""
    model = tmp_path / "m"
    assert run("train", "-o", model, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    before = model.read_bytes()

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    result = run("train", "-o", model, DEMO / "test" / "spam", DEMO / "test" / "ham")
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot write {model}: No space left on device\n"
    assert model.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["m"]


def limited_to(limit, *args):
    """The nbtext executable, its files limited to `limit` bytes (RLIMIT_FSIZE, as `ulimit -f`
    sets it): a model file larger than that cannot be written (EFBIG), stderr (a pipe) is not
    limited."""
    limit_then_run = (
        f"import resource, os, sys; resource.setrlimit(resource.RLIMIT_FSIZE, ({limit},) * 2); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    return subprocess.run(
        [sys.executable, "-c", limit_then_run, str(NBTEXT), *map(str, args)], capture_output=True, timeout=120
    )


SAID_OF_THE_INPUT = ("nbtext: warning: ", "nbtext: skipped ", "nbtext: not learned, left alone: ")

# Every command line that writes a model file, each given input it has something to say of
# (a warning, a document skipped, a document not learned), the click-free learners among them
# (plain arguments), the pending section's way (a few documents) and the full way (more).
WRITERS = {
    "train, a warning": ["train", "--max-bytes", "50", "-o", "{new}", "{train}/spam", "{train}/ham"],
    "train, a document skipped": ["train", "-o", "{new}", "spam={fifo}", "{train}/ham"],
    "train, a folder given twice": ["train", "-o", "{new}", "{train}/spam", "{train}/ham", "spam={train}/spam"],
    "train --update, a warning": ["train", "--update", "-m", "{model}", "--max-bytes", "50", "{test}/spam"],
    "train --update, a few, one skipped": ["train", "--update", "-m", "{model}", "spam={fifo}"],
    "train --update, many, one skipped": ["train", "--update", "-m", "{model}", "spam={fifo}", "{test}/ham"],
    "train --update -o, one skipped": ["train", "--update", "-m", "{model}", "-o", "{new}", "spam={fifo}"],
    "forget, a few, some not learned": ["forget", "-m", "{model}", "{unknown}", "{train}/spam/spam-001.txt"],
    "forget, many, some not learned": ["forget", "-m", "{model}", "{unknown}", "{train}/spam"],
    "forget, the full command line": ["forget", "-m", "{model}", "--max-bytes", "100000", "{fifo}", "{train}/spam"],
    "merge, a warning": ["merge", "-o", "{new}", "{model}", "{model}"],
}


@needs_executable
@pytest.mark.parametrize("name", WRITERS)
def test_a_model_that_cannot_be_written_says_that_alone(tmp_path, demo_model, name):
    """A command that writes a model file says what it has to say of its input (warnings,
    documents skipped or not learned) once the model is written; when the write fails (a
    full disk, a file size limit), its one line alone and status 1, the old file as it was.
    Train, train --update and forget (their click-free path too, the pending section's way
    and the full way) said their warnings and skipped documents before the error."""
    import shutil

    spam = tmp_path / "spam"
    shutil.copytree(DEMO / "test" / "spam", spam)
    os.mkfifo(spam / "pipe")  # skipped by name: not a regular file
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    for i in range(2):
        (unknown / f"{i}.txt").write_text(f"words never learned {i}\n")
    places = {"train": DEMO / "train", "test": DEMO / "test", "fifo": spam, "unknown": unknown}
    for limit in (None, 100):
        model, new = tmp_path / f"m{limit}", tmp_path / f"new{limit}"
        shutil.copyfile(demo_model, model)
        args = [a.format(model=model, new=new, **places) for a in WRITERS[name]]
        written = new if "{new}" in WRITERS[name] else model
        if limit is None:  # it has something to say, and says it
            result = subprocess.run([NBTEXT, *args], capture_output=True, timeout=120)
            assert any(line.startswith(SAID_OF_THE_INPUT) for line in result.stderr.decode().splitlines()), name
            assert written.exists() and result.returncode in (0, 1), result.stderr
        else:
            result = limited_to(limit, *args)
            assert result.stderr.decode() == f"Error: cannot write {written}: File too large\n", name
            assert result.returncode == 1
            assert model.read_bytes() == demo_model.read_bytes() and not new.exists()


@needs_executable
def test_a_special_file_system_is_one_line(tmp_path):
    result = subprocess.run(
        [NBTEXT, "train", "-o", "/proc/nbtext-test.model", DEMO / "train" / "spam", DEMO / "train" / "ham"],
        capture_output=True,
    )
    assert result.returncode == 1 and result.stderr.decode().startswith("Error: ")
    assert result.stderr.count(b"\n") == 1 and b"Traceback" not in result.stderr


def many_documents(folder, n):
    for label in ("spam", "ham"):
        (folder / label).mkdir(parents=True)
        for i in range(n):
            (folder / label / f"{i}.txt").write_text(f"{label} words {i} " * 50)
    return [folder / "spam", folder / "ham"]


def _signals_as_by_default():
    """In the child: SIGINT, SIGTERM and SIGHUP as a fresh login gives them. A background job
    starts with SIGINT ignored, and a run under nohup with SIGHUP ignored; nbtext keeps an
    ignored signal ignored (nbtext.errors), so these tests would see nothing to stop it."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _session(pid):
    """The processes of the session `pid` leads."""
    return subprocess.run(["pgrep", "-s", str(pid)], capture_output=True, text=True).stdout.split()


def _wait_until_read(pipe, process, seconds=120):
    """Wait until `process` has read every byte written to `pipe` (an event, not a delay: a
    loaded machine takes longer to start nbtext, and a signal before it runs is no test)."""
    import fcntl
    import struct
    import termios

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        waiting = struct.unpack("i", fcntl.ioctl(pipe.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
        if waiting == 0:  # it is past its imports and its handlers, reading or waiting for more
            return
        time.sleep(0.01)
    raise AssertionError(f"{process.args[:2]} did not read its input in {seconds} s")


def _reading(command, given, **popen):
    """`nbtext COMMAND` started (stdout and stderr piped unless `popen` says otherwise), `given`
    written to its stdin and read to the last byte: the process, waiting for more."""
    process = subprocess.Popen(
        [NBTEXT, *command], **{"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen}
    )
    process.stdin.write(given)
    process.stdin.flush()
    _wait_until_read(process.stdin, process)
    return process


def _as_given(command, model, tmp_path):
    """A parametrized command as run: {model} the model's path, a training's output tmp_path/m."""
    command = [a.format(model=model) for a in command]
    return command + ["-o", str(tmp_path / "m")] if command[0] == "train" else command


# what the stopped commands read (fastText's labelled lines: a training's input, and a prediction's)
LABELLED_LINES = b"".join(
    b"__label__%s word%d free prize %d\n" % (b"spam" if i % 2 else b"ham", i, i) for i in range(3000)
)


@needs_executable
@pytest.mark.parametrize(
    "command",
    [
        ["train", "-j", "1", "--fasttext", "/dev/stdin"],
        ["train", "-j", "2", "--fasttext", "/dev/stdin"],  # forked workers hold chunks
        ["predict", "--lines", "-m", "{model}"],
        ["predict", "--lines", "-j", "2", "-m", "{model}"],
    ],
)
def test_ctrl_c_is_one_line_and_status_130(tmp_path, demo_model, command):
    """Ctrl-C while nbtext waits for more input (workers busy or idle): status 130, the
    one word, no traceback from the main process or a worker."""
    # SIGINT as a terminal leaves it (a shell's background job, as CI may run, ignores it)
    process = _reading(_as_given(command, demo_model, tmp_path), LABELLED_LINES, preexec_fn=_signals_as_by_default)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr.decode().strip() == "Aborted!" and b"Traceback" not in stderr
    assert not (tmp_path / "m").exists()


@needs_executable
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("whom", ["the process", "its group"])
@pytest.mark.parametrize(
    "command",
    [
        ["train", "-j", "2", "--fasttext", "/dev/stdin"],  # forked workers hold chunks
        ["predict", "--lines", "-j", "2", "-m", "{model}"],
    ],
)
def test_sigterm_and_sighup_end_in_one_line_and_leave_nothing(tmp_path, demo_model, signum, whom, command):
    """SIGTERM or SIGHUP (to nbtext alone, or to its process group, workers and all, as a
    service manager or a closed terminal sends it): one line, the status of a process
    killed by that signal, no traceback from a worker, no worker left, no temporary file.
    (Workers once shared a queue lock with the main process: one killed holding it left
    the main process waiting for it forever.)"""
    process = _reading(
        _as_given(command, demo_model, tmp_path),
        LABELLED_LINES,
        start_new_session=True,
        preexec_fn=_signals_as_by_default,
    )
    os.killpg(process.pid, signum) if whom == "its group" else process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == -signum, stderr
    assert stderr.decode() == f"nbtext: stopped by {signal.Signals(signum).name}\n"
    left = _session(process.pid)
    assert left == [] and not list(tmp_path.glob(".nbtext-*")) and not (tmp_path / "m").exists()


@needs_executable
def test_a_hangup_ignored_when_nbtext_started_stays_ignored(demo_model):
    """Under nohup (SIGHUP ignored when nbtext starts) a closed terminal's SIGHUP stops
    nothing: the job runs to its end, its workers' too, and says every line."""

    def as_under_nohup():
        _signals_as_by_default()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    process = _reading(
        ["predict", "--lines", "-j", "2", "-m", demo_model],
        b"".join(b"free prize %d\n" % i for i in range(3000)),
        start_new_session=True,
        preexec_fn=as_under_nohup,
    )
    deadline = time.monotonic() + 60
    while len(_session(process.pid)) < 3 and time.monotonic() < deadline:  # its two workers forked
        time.sleep(0.01)
    assert len(_session(process.pid)) == 3
    os.killpg(process.pid, signal.SIGHUP)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0 and stderr == b"", stderr
    assert stdout.count(b"\n") == 3000


@needs_executable
def test_a_worker_killed_mid_job_is_one_line_not_a_hang(tmp_path, demo_model):
    """A worker that dies (the kernel's out-of-memory killer, an operator's kill -9) ends the
    job with one line naming how, where a pool of workers would wait for its answer forever."""
    process = _reading(
        ["predict", "--lines", "-j", "2", "-m", demo_model], b"free prize money now\n" * 3000, stdout=subprocess.DEVNULL
    )
    workers = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
    assert workers, "predict -j 2 has no workers"
    os.kill(int(workers[0]), signal.SIGKILL)
    _, stderr = process.communicate(b"more lines for the workers\n" * 3000, timeout=60)  # they meet the dead one
    assert process.returncode == 1
    assert stderr == b"Error: a worker process ended unexpectedly (killed by signal 9)\n"


@needs_executable
def test_sigterm_while_writing_the_model_leaves_the_old_one_and_no_temporary_file(tmp_path):
    """The signal comes once the temporary file holds bytes (an event, not a delay). On a loaded
    machine the writer may have renamed it by the time the signal lands: then the file is the
    new model, whole (what a training without the signal writes), never a part."""
    folders = many_documents(tmp_path / "corpus", 1500)
    model = tmp_path / "m"
    assert run("train", "-o", model, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    old = model.read_bytes()
    process = subprocess.Popen(
        [NBTEXT, "train", "-j", "1", "-o", model, *folders], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    while process.poll() is None:
        try:
            if [p for p in tmp_path.glob(".nbtext-*.tmp") if p.stat().st_size > 0]:
                process.terminate()
                break
        except FileNotFoundError:
            pass
    _, stderr = process.communicate(timeout=60)
    if process.returncode == 0:
        pytest.skip("the write ended before the signal came")
    assert process.returncode == -signal.SIGTERM and stderr == b"nbtext: stopped by SIGTERM\n"
    assert not list(tmp_path.glob(".nbtext-*"))
    if model.read_bytes() != old:  # (the rename came first)
        whole = tmp_path / "whole"
        assert run("train", "-j", "1", "-o", whole, *folders).exit_code == 0
        assert model.read_bytes() == whole.read_bytes()


@needs_executable
def test_filter_stopped_by_sigterm_passes_nothing_on_and_says_75(tmp_path, demo_model):
    """The delivery agent keeps a message whose filter was stopped (EX_TEMPFAIL), so the
    filter writes none of it: a part of a message is no message."""
    process = subprocess.Popen(
        [NBTEXT, "filter", "-m", demo_model], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    process.stdin.write(b"Subject: free prize\n\nthe message is still arriving")
    process.stdin.flush()
    _wait_until_read(process.stdin, process)
    process.terminate()
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 75 and stdout == b""
    assert stderr == b"Error: stopped by SIGTERM: the message was not passed on\n"


@needs_executable
def test_kill_9_while_writing_leaves_the_old_model_or_the_new(tmp_path):
    """However a training dies, the model file is a whole model: the old one or the new.
    The kills come at events, not after delays (a fast or a loaded machine moves those):
    at once, once its temporary file is in the folder (training under way, or writing), once
    that file holds bytes (writing), and never (the training ends)."""
    folders = many_documents(tmp_path / "corpus", 1500)
    model = tmp_path / "m"
    assert run("train", "-o", model, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    old = model.read_bytes()

    def temporary_files(holding_bytes):
        return [p for p in tmp_path.glob(".nbtext-*.tmp") if not holding_bytes or p.stat().st_size > 0]

    outcomes = []
    for kill_when in (lambda: True, lambda: temporary_files(False), lambda: temporary_files(True), None):
        process = subprocess.Popen(
            [NBTEXT, "train", "-j", "1", "-o", model, *folders], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while kill_when is not None and process.poll() is None:
            try:
                if kill_when():
                    process.kill()
                    break
            except FileNotFoundError:  # the temporary file went between listing and stat
                pass
        process.wait()
        loaded = nbtext.load(model)  # never corrupt
        assert loaded.classes == ["ham", "spam"]
        outcomes.append("old" if model.read_bytes() == old else "new")
        for leftover in temporary_files(False):
            leftover.unlink()  # a SIGKILL can leave one; the next write does not need it gone
    assert outcomes[0] == "old" and outcomes[-1] == "new", outcomes


def test_a_model_is_never_written_over_a_fifo_or_device(tmp_path):
    """-o onto something that is not a regular file is refused before reading (as root,
    -o /dev/null replaced /dev/null with a model); a FIFO stands in for a device here."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = run("train", "-o", fifo, DEMO / "train" / "spam", DEMO / "train" / "ham")
    assert result.exit_code == 1 and "is not a regular file" in result.stderr and result.stderr.count("\n") == 1
    assert fifo.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]
    link = tmp_path / "link"
    link.symlink_to(fifo)
    assert run("train", "-o", link, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 1
    assert fifo.is_fifo()


def test_a_write_removes_the_temporary_files_of_killed_writers_only(tmp_path):
    """A SIGKILL mid-write leaves .nbtext-PID-*.tmp; the next write in that folder removes
    those of processes that are gone, never one of a writer still running."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".nbtext-{gone.stdout.strip()}-abc123.tmp"
    alive = tmp_path / f".nbtext-{os.getpid()}-def456.tmp"
    other = tmp_path / ".nbtext-notours.tmp"
    for path in (stale, alive, other):
        path.write_bytes(b"half a model")
    assert run("train", "-o", tmp_path / "m", DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    assert not stale.exists() and alive.exists() and other.exists()


def _handlers_installed(pid):
    """Whether the process catches SIGTERM: nbtext.cli.entry's first act (hold_signals) has run.
    (Python itself catches SIGINT alone.)"""
    try:
        with open(f"/proc/{pid}/status") as status:
            caught = next(line for line in status if line.startswith("SigCgt:")).split()[1]
    except (OSError, StopIteration):
        return False
    return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)


def _signalled_run(args, message, signum, wait_for_handlers, delay):
    process = subprocess.Popen(
        [NBTEXT, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_signals_as_by_default,
    )
    process.stdin.write(message)
    process.stdin.close()
    process.stdin = None  # (communicate then only reads)
    deadline = time.monotonic() + 30
    while wait_for_handlers and not _handlers_installed(process.pid) and process.poll() is None:
        assert time.monotonic() < deadline, "nbtext never installed its signal handlers"
        time.sleep(0.0002)
    time.sleep(delay)
    if process.poll() is None:
        process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    return process.returncode, stdout, stderr.decode(errors="replace")


@needs_executable
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc here to see when handlers are installed")
@pytest.mark.parametrize("command", ["filter", "predict"])
def test_a_signal_anywhere_in_start_up_is_no_traceback_and_filter_says_0_or_75(demo_model, command):
    """SIGINT, SIGTERM and SIGHUP at random delays across a one-message run (while it
    imports, loads the model, classifies, writes, exits): never a traceback; filter ends 0
    with the whole tagged message or 75 (the delivery agent keeps the original), predict
    with its label, or as Ctrl-C or that signal says. A SIGINT in its first imports was a
    KeyboardInterrupt traceback, a SIGTERM then or once the message was out 143. Sent from
    the moment nbtext's handlers are in (the process catches SIGTERM); SIGTERM and SIGHUP
    also from the start, where before them the process dies of it having written and said
    nothing, as README's status table says."""
    import random

    args = [command, "-m", str(demo_model)]
    message = b"Subject: free prize\nFrom: a@example.com\n\nclaim your free prize now\n"
    whole = subprocess.run([NBTEXT, *args], input=message, capture_output=True)
    assert whole.returncode == 0 and whole.stderr == b""
    started = time.monotonic()
    subprocess.run([NBTEXT, *args], input=message, capture_output=True)
    span = time.monotonic() - started  # one run, start to end, on this machine now
    rounds = random.Random(33)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        name = signal.Signals(signum).name
        for wait_for_handlers in (True,) if signum == signal.SIGINT else (True, False):
            for _ in range(6):
                status, out, err = _signalled_run(args, message, signum, wait_for_handlers, rounds.uniform(0, span))
                seen = (name, wait_for_handlers, status, out, err)
                assert "Traceback" not in err and "Exception" not in err, seen
                if status == 0:
                    assert out == whole.stdout and err == "", seen
                elif status == -signum and err == "" and not wait_for_handlers:  # before the handlers
                    assert out == b"", seen
                elif command == "filter":
                    assert status == 75 and err == f"Error: stopped by {name}: the message was not passed on\n", seen
                elif signum == signal.SIGINT:
                    assert status == 130 and err == "Aborted!\n", seen
                else:
                    assert status == -signum and err == f"nbtext: stopped by {name}\n", seen


@needs_executable
@needs_dev_full
@pytest.mark.parametrize(
    "command",
    [
        ["train", "-o", "{out}", DEMO / "train" / "spam", DEMO / "train" / "ham"],
        ["train", "-j", "1", "-o", "{out}", DEMO / "train" / "spam", DEMO / "train" / "ham"],
        ["train", "--update", "-m", "{out}", f"spam={DEMO / 'test' / 'spam'}"],  # the click-free learner
        ["train", "--update", "-j", "1", "-m", "{out}", f"spam={DEMO / 'test' / 'spam'}"],
        ["forget", "-m", "{out}", DEMO / "train" / "spam"],
        ["merge", "-o", "{out}", "{model}", "{model}"],
    ],
)
def test_a_model_written_is_status_0_though_stderr_is_full(tmp_path, demo_model, command):
    """`train 2>/dev/full` wrote its model and exited 1: the summary it could not print
    turned done work into a failure. Every command that writes a model and then says so:
    with stderr full, status 0 and the same file as with stderr open."""
    files = {}
    for stderr in ("/dev/full", tmp_path / "said"):
        out = tmp_path / f"{len(files)}.model"
        out.write_bytes(demo_model.read_bytes())
        args = [str(a).format(out=out, model=demo_model) for a in command]
        with open(stderr, "wb") as said:
            result = subprocess.run([NBTEXT, *args], stdout=subprocess.PIPE, stderr=said)
        assert result.returncode == 0 and result.stdout == b"", (stderr, args)
        files[stderr] = out.read_bytes()
    assert (tmp_path / "said").read_bytes() != b""  # there was something to say
    assert files["/dev/full"] == files[tmp_path / "said"]


@needs_executable
@needs_dev_full
def test_filter_passes_the_message_on_with_status_0_though_stderr_is_full(tmp_path):
    """A warning filter cannot write (a model with no class spam) does not change its
    status: the message is out whole, 0."""
    model = tmp_path / "m"
    assert run("train", "-o", model, f"junk={DEMO / 'train' / 'spam'}", f"ham={DEMO / 'train' / 'ham'}").exit_code == 0
    message = b"Subject: free prize\n\nclaim it\n"
    with open("/dev/full", "wb") as full:
        result = subprocess.run([NBTEXT, "filter", "-m", model], input=message, stdout=subprocess.PIPE, stderr=full)
    assert result.returncode == 0 and result.stdout.startswith(b"Subject: free prize\nX-Nbtext-Class: ")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_raised_where_python_cannot_pass_it_on_is_raised_again_where_the_program_goes(signum):
    """A signal whose exception the handler raised inside a __del__ or a weakref callback
    (importlib's module locks, while a lazy import runs: seen in a loaded run of the test
    above) was printed as "Exception ignored ... Traceback" and lost; it is sent again and
    raised where the program goes on, as any other."""
    script = f"""
import os, sys
from nbtext.errors import Terminated, end_on_signals

class Dying:
    def __del__(self):
        os.kill(os.getpid(), {int(signum)})
        for _ in range(1000):  # the handler runs here, inside __del__
            pass

end_on_signals()
try:
    Dying()
    for _ in range(100000):
        pass
    print("not raised")
except (KeyboardInterrupt, Terminated) as e:
    print("raised", type(e).__name__)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, preexec_fn=_signals_as_by_default
    )
    expected = "KeyboardInterrupt" if signum == signal.SIGINT else "Terminated"
    assert result.stdout == f"raised {expected}\n" and result.stderr == "", (result.stdout, result.stderr)


@pytest.mark.parametrize("signal_exception", [KeyboardInterrupt(), "Terminated"])
@pytest.mark.parametrize("where", ["load", "classify", "write"])
def test_a_signal_wrapped_by_an_import_is_ended_as_the_signal_not_said_as_a_fault(
    signal_exception, where, demo_model, monkeypatch
):
    """A signal that comes while a module is imported inside the delivery path (the model's
    loader imports numpy's and nbtext's modules lazily) reaches it as a RuntimeError (Python 3.11
    wraps what a __set_name__, cached_property's, raises): judging's broad `except Exception`
    took it for a fault, the message went out tagged error and filter exited 1 where a signal
    is 75 (seen once in 36 signalled runs of the start-up test). Every such handler lets it
    through (errors.unless_signal): here at the model's load, its classification and the
    verdict's header."""
    from nbtext.delivery import judging
    from nbtext.errors import Terminated

    signal = Terminated(15) if signal_exception == "Terminated" else signal_exception

    def interrupted(*args, **kwargs):
        try:
            raise signal
        except BaseException as e:
            raise RuntimeError("Error calling __set_name__ on 'cached_property' instance") from e

    model = judging.loaded(str(demo_model)) if where != "load" else None
    if where == "load":
        monkeypatch.setattr(judging, "OneMessageModel", interrupted)
        call = lambda: judging.loaded("m.model")  # noqa: E731
    elif where == "classify":
        monkeypatch.setattr(model, "pure", None, raising=False)
        monkeypatch.setattr(type(model), "model", property(interrupted))
        call = lambda: judging.verdict(model, b"Subject: x\n\nhello\n", None, False, 1 << 20)  # noqa: E731
    else:
        monkeypatch.setattr("nbtext.delivery.headers.with_headers", interrupted)
        call = lambda: judging.tagged(b"Subject: x\n\nhello\n", [])  # noqa: E731
    with pytest.raises(type(signal)):
        call()
