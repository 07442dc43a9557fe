import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
SHARED_CORPORA = Path(os.environ.get("SHARED", ROOT.parent / "shared")) / "corpora"


NBTEXT = Path(sys.executable).with_name("nbtext")
ANOTHER_USER = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]  # nobody, in no group


@pytest.fixture
def another_user(tmp_path, tmp_path_factory):
    """The command prefix that runs a program as user 65534 (nobody), for the tests of models that
    several users share. tmp_path and the folders pytest made above it are opened to that user, and
    nothing outside them is touched; skip, saying what is missing, where this run cannot do it: not
    root, no setpriv, or the installed nbtext or the temporary folder out of that user's reach (a
    checkout in root's 0700 home folder)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run nbtext as another user (uid 65534)")
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv (util-linux) to run nbtext as another user")
    base = tmp_path_factory.getbasetemp()
    # pytest's own folders: up to pytest-of-<user> (above the run's folder, and above each
    # xdist worker's), or to a --basetemp given
    top = next((f for f in (base, *base.parents) if f.name.startswith("pytest-of-")), base)
    for folder in (tmp_path, *tmp_path.parents):
        folder.chmod(folder.stat().st_mode | 0o005)
        if folder == top:
            break
    for what, command in (
        (f"cannot run {NBTEXT}", [NBTEXT, "--version"]),
        (f"cannot reach {tmp_path}", ["test", "-x", tmp_path]),
    ):
        if subprocess.run([*ANOTHER_USER, *map(str, command)], capture_output=True, timeout=60).returncode != 0:
            pytest.skip(f"uid 65534 {what}: a folder above it is closed to other users")
    return ANOTHER_USER


def real_corpus(name):
    """data/NAME, extracted by `make corpora`; skip only where ../shared has no such archive."""
    folder = DATA / name
    if (folder / ".extracted").exists():
        return folder
    if (SHARED_CORPORA / f"{name}.tar.gz").exists():
        pytest.fail(f"{SHARED_CORPORA}/{name}.tar.gz exists but is not extracted: run 'make corpora'")
    pytest.skip(f"no {name} corpus here ({SHARED_CORPORA} is absent)")


@pytest.fixture(scope="session")
def news20():
    return real_corpus("20news")


@pytest.fixture(scope="session")
def demo_corpus():
    return ROOT / "corpora" / "mail"


# the general defaults for classes spam and ham (which --preset auto gives the spam preset's): tests that
# are not about a spam filter's defaults give them
GENERAL = ["--preset", "general"]


# the demo corpus's training and test folders, in the order the tests give them: spam, then ham
MAIL_TRAIN = [ROOT / "corpora" / "mail" / "train" / "spam", ROOT / "corpora" / "mail" / "train" / "ham"]
MAIL_TEST = [ROOT / "corpora" / "mail" / "test" / "spam", ROOT / "corpora" / "mail" / "test" / "ham"]


def trained_on_mail(model, *options):
    """`nbtext train OPTIONS -o MODEL` on corpora/mail/train's spam and ham, in this process; its
    exit status 0 asserted (its stderr shown where it is not), its result returned."""
    result = run("train", *options, "-o", model, *MAIL_TRAIN)
    assert result.exit_code == 0, result.stderr
    return result


def evaluated_on_mail(model, *options):
    """The report (JSON, read) of `nbtext eval -m MODEL OPTIONS` on corpora/mail/test's spam and ham."""
    import json

    return json.loads(run("eval", "-m", model, *options, "--format", "json", *MAIL_TEST).stdout)


@pytest.fixture(scope="session")
def demo_model(tmp_path_factory):
    """A model trained by the command line on corpora/mail/train: by its defaults, the spam preset's."""
    path = tmp_path_factory.mktemp("model") / "demo.model"
    trained_on_mail(path)
    return path


@pytest.fixture(scope="session")
def general_demo_model(tmp_path_factory):
    """demo_model's training by the general defaults (--preset general: no unsure band)."""
    path = tmp_path_factory.mktemp("model") / "general.model"
    trained_on_mail(path, *GENERAL)
    return path


def run(*args, input=None, env=None):
    """The click command line, in this process: `nbtext ARGS...` (paths may be Path objects)."""
    from click.testing import CliRunner

    from nbtext.cli.commands import cli

    return CliRunner().invoke(cli, [str(a) for a in args], input=input, env=env)


SMALL_MODEL_EACH = 40  # messages of each class in small_spamassassin_model's model


def small_spamassassin_model(spamassassin, folder):
    """A model of the first SMALL_MODEL_EACH messages of each class of SpamAssassin's train split
    (copied into folder/spam and folder/ham), trained by the installed nbtext by the general
    defaults (learning on a move is then training on the final classes, byte for byte; the spam
    preset's TONE pass would learn only what it chose of them): folder/mail.model."""
    for label in ("spam", "ham"):
        (folder / label).mkdir()
        for f in sorted((spamassassin / "train" / label).iterdir())[:SMALL_MODEL_EACH]:
            shutil.copy(f, folder / label / f.name)
    model = folder / "mail.model"
    subprocess.run(
        [NBTEXT, "train", "-q", *GENERAL, "-o", model, f"spam={folder / 'spam'}", f"ham={folder / 'ham'}"], check=True
    )
    return model


def free_port():
    """A TCP port on 127.0.0.1 that no one listens on now (for a server the test starts)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stopped(process, wait=30):
    """A server the test started, stopped by its PID: SIGTERM, then SIGKILL after `wait`
    seconds (never left running); its exit status."""
    import signal

    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def cpu_ratios(work, small, large):
    """The CPU seconds of work(large) over work(small), each the best of three, after a warm-up:
    up to three such ratios, stopping at the first under 8. Linear work gives about 4 where
    large is four times small, quadratic 16 every time; a shared machine can slow one run, so a
    test of linearity asserts that the least is under 8 (tests/test_hostile.py's rule)."""
    import time

    def best(size):
        times = []
        for _ in range(3):
            started = time.process_time()
            work(size)
            times.append(time.process_time() - started)
        return max(min(times), 1e-4)

    best(small)  # (warm up: patterns compiled, codecs loaded)
    ratios = []
    while len(ratios) < 3 and (not ratios or ratios[-1] >= 8):
        ratios.append(best(large) / best(small))
    return ratios


def one_line_error(result, text):
    """The command failed with one line on stderr, `Error: ...` containing `text`."""
    assert result.exit_code != 0
    assert result.stderr.startswith("Error: ") and text in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def read_labelled(folder):
    """(texts as bytes, labels) for folder/<label>/<files>, in sorted order."""
    texts, labels = [], []
    for class_dir in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        for f in sorted(class_dir.iterdir()):
            texts.append(f.read_bytes())
            labels.append(class_dir.name)
    return texts, labels


REAL_CORPUS_FIXTURES = {"news20"}


def pytest_collection_modifyitems(items):
    """Mark `slow` every test that reads a real corpus (it calls real_corpus, directly or
    through a fixture), so that `make test-fast` (pytest -m "not slow") runs the rest."""
    import inspect

    for item in items:
        function = getattr(item, "function", None)
        try:
            source = inspect.getsource(function) if function is not None else ""
        except (OSError, TypeError):
            source = ""
        fixtures = set(getattr(item, "fixturenames", ()))
        if "real_corpus(" in source or fixtures & REAL_CORPUS_FIXTURES or fixtures & _real_corpus_fixtures(item):
            item.add_marker("slow")


def _real_corpus_fixtures(item):
    """The names of the fixtures of `item`'s module that call real_corpus."""
    import inspect

    found = set()
    for name, value in vars(getattr(item, "module", None) or object).items():
        function = getattr(value, "_get_wrapped_function", None)
        if function is not None:
            try:
                if "real_corpus(" in inspect.getsource(function()):
                    found.add(name)
            except (OSError, TypeError):
                pass
    return found
