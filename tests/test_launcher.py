"""The `nbtext` executable is nbtext's own launcher (launcher/nbtext, pyproject's script-files),
whose first statements hold SIGINT, SIGTERM and SIGHUP before anything is imported: the
launcher pip makes of a console_scripts entry imported `re` and the package first, and a
signal there was a KeyboardInterrupt traceback, or killed `filter` where 75 is promised.
What is left is the interpreter's own start-up (docs/mail.md; bench/startup_signals.py)."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

NBTEXT = Path(sys.executable).with_name("nbtext")
pytestmark = pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
MESSAGE = b"Subject: free prize\nFrom: a@example.com\n\nclaim your free prize now\n"

# Loaded by the interpreter before the executable runs (PYTHONPATH): from the moment the
# executable's own code starts (the audit event cpython.run_file), it writes down each module
# imported and each handler set, in order.
SITECUSTOMIZE = """
import json, os, sys, _signal
events, started = [], []
log = os.environ["NBTEXT_TEST_EVENTS"]
def hook(event, args):
    if event == "cpython.run_file":
        started.append(True)
    elif started and event == "import" and args[0] not in sys.modules:
        events.append(["import", args[0]])
sys.addaudithook(hook)
real_signal = _signal.signal
def signal(number, handler):
    if started:
        events.append(["hold", number])
    return real_signal(number, handler)
_signal.signal = signal
import atexit
atexit.register(lambda: open(log, "w").write(json.dumps(events)))
"""


def with_default_signals():
    """A child's SIGINT and SIGHUP at their default actions, whatever this process inherited
    (a suite run under nohup, or as a background job, starts with them ignored, and the
    launcher keeps an ignored signal ignored)."""
    for number in (signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def test_the_executable_holds_the_signals_before_it_imports_anything(tmp_path, demo_model):
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    events = tmp_path / "events.json"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NBTEXT_TEST_EVENTS=str(events))
    result = subprocess.run(
        [NBTEXT, "filter", "-m", demo_model],
        input=MESSAGE,
        capture_output=True,
        env=env,
        preexec_fn=with_default_signals,
    )
    assert result.returncode == 0, result.stderr
    order = json.loads(events.read_text())
    held = [n for what, n in order[:3] if what == "hold"]
    assert held == [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], order[:10]
    assert any(what == "import" and name.startswith("nbtext") for what, name in order), order[:10]


def test_the_executable_is_the_launcher_in_the_source():
    installed = NBTEXT.read_text().split("\n", 1)
    assert installed[0].startswith("#!") and "python" in installed[0]
    assert installed[1] == (ROOT / "launcher" / "nbtext").read_text().split("\n", 1)[1]


def test_python_m_nbtext_runs_as_the_executable(demo_model):
    by_name = subprocess.run([NBTEXT, "filter", "-m", demo_model], input=MESSAGE, capture_output=True)
    by_module = subprocess.run(
        [sys.executable, "-m", "nbtext", "filter", "-m", demo_model], input=MESSAGE, capture_output=True
    )
    assert by_name.returncode == by_module.returncode == 0
    assert by_name.stdout == by_module.stdout and by_name.stderr == by_module.stderr == b""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_python_wrapped_while_a_class_was_made_ends_as_the_signal(signum):
    """A signal that came while a module was imported raised its exception inside a class's
    __set_name__ (cached_property's), which Python 3.11 wraps in a RuntimeError: a traceback,
    where the signal's own ending was due (a test of start-up signals saw it once in four runs
    of the whole suite). The wrapped exception is found behind the RuntimeError."""
    code = (
        "import nbtext.cli.entry as entry, signal\n"
        "def fast_in_class(argv):\n"
        "    class Named:\n"
        "        def __set_name__(self, owner, name):\n"
        f"            signal.raise_signal({int(signum)})\n"
        "    class Made:\n"
        "        p = Named()\n"
        "    return 0\n"
        "entry.fast = fast_in_class\n"
        "entry.main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "predict"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=with_default_signals,
    )
    assert "Traceback" not in done.stderr and "RuntimeError" not in done.stderr, done.stderr
    if signum == signal.SIGINT:
        assert done.returncode == 130 and "Aborted!" in done.stderr, (done.returncode, done.stderr)
    else:
        assert done.returncode == -signum and "stopped by SIGTERM" in done.stderr, (done.returncode, done.stderr)
