"""`nbtext check`: a mail user's setup checked once, as that user, said in one line (issue 49:
the README's install took a Python under root's 0700 home, and Dovecot logged only `execvp ...
Permission denied` and delivered every message unfiltered)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

import nbtext

from conftest import NBTEXT, ROOT, run

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run nbtext as another user (uid 65534)")
SYSTEM_PYTHON = Path("/usr/bin/python3")


def runs_as_nobody(program):
    """Whether uid 65534 can start `program` (as the check starts it: setpriv may keep root's
    capabilities until its exec, and so start what the user itself cannot)."""
    try:
        run_as = {"user": 65534, "group": 65534, "extra_groups": []}
        return (
            subprocess.run([program, "--version"], capture_output=True, timeout=60, cwd="/", **run_as).returncode == 0
        )
    except OSError:
        return False


def checked(program, *args):
    done = subprocess.run([program, "check", *map(str, args)], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def opened(tmp_path):
    """tmp_path and the folders above it opened to other users (pytest makes them 0700)."""
    for folder in (tmp_path, *tmp_path.parents):
        if folder == Path(tmp_path.anchor):
            break
        if folder.stat().st_uid == 0:
            folder.chmod(folder.stat().st_mode | 0o005)


def closed_model(tmp_path, demo_model):
    """A copy of the demo model in a folder only root may enter (tmp_path opened to others)."""
    opened(tmp_path)
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    shutil.copy(demo_model, closed / "mail.model")
    return closed / "mail.model"


def system_python_nbtext(tmp_path):
    """An `nbtext` started by the system's Python (/usr/bin/python3, the README's install), with
    this nbtext and its packages, or None where that Python is another version or uid 65534
    cannot reach them."""
    if not SYSTEM_PYTHON.exists():
        return None
    opened(tmp_path)
    version = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True)
    if version.stdout.decode().strip() != str(tuple(sys.version_info[:2])):
        return None
    paths = sorted({str(Path(nbtext.__file__).parent.parent), str(Path(numpy.__file__).parent.parent)})
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "nbtext"
    script.write_text(
        f"#!{SYSTEM_PYTHON}\nimport sys\nsys.path[:0] = {paths!r}\nfrom nbtext.cli.entry import main\nmain()\n"
    )
    script.chmod(0o755)
    return script if runs_as_nobody(script) else None


def test_your_own_setup_is_ok_with_the_verdict(demo_model):
    status, out, err = checked(NBTEXT, "-m", demo_model)
    assert status == 0 and err == "", err
    assert out.startswith("OK: user ") and f"with {demo_model} and may learn into it" in out
    assert "X-Nbtext-Class: " in out and out.count("\n") == 1


@needs_root
def test_a_python_the_mail_user_cannot_reach_is_named(tmp_path, demo_model):
    """The install of this test run, checked as uid 65534: where it lies below a folder closed to
    that user (a pyenv Python under /root), the check names that folder and the system's Python;
    else it goes on to the model in a folder closed to the user, and names that folder."""
    model = closed_model(tmp_path, demo_model)
    status, out, err = checked(NBTEXT, "--as-user", "65534", "-m", model)
    assert status == 1 and out == "" and err.count("\n") == 1 and err.startswith("Error: user nobody (uid 65534) ")
    if runs_as_nobody(NBTEXT):
        assert f"cannot read the model {model}: {model.parent} (drwx------ root:root) is closed to it" in err
    else:
        assert "cannot run " in err and "is closed to it" in err and "/usr/bin/python3 -m venv" in err


@needs_root
def test_the_model_its_folder_and_a_run_as_the_user_are_checked(tmp_path, demo_model):
    """With the system's Python (what the README installs with), as uid 65534: a model in a folder
    closed to it, then in a folder it may read but not write (learning writes there), then its
    own: each said in one line, the last OK with the test message's verdict."""
    program = system_python_nbtext(tmp_path)
    if program is None:
        pytest.skip("no /usr/bin/python3 of this Python's version, or uid 65534 cannot reach this nbtext")
    model = closed_model(tmp_path, demo_model)
    status, _, err = checked(program, "--as-user", "65534", "-m", model)
    assert status == 1 and f"cannot read the model {model}: {model.parent} (drwx------ root:root)" in err, err
    model.parent.chmod(0o755)
    status, _, err = checked(program, "--as-user", "nobody", "-m", model)  # (the model is written 0600)
    assert status == 1 and f"cannot read the model {model}: {model} (-rw------- root:root)" in err, err
    model.chmod(0o644)
    status, _, err = checked(program, "--as-user", "nobody", "-m", model)
    assert status == 1 and "X-Nbtext-Class: " in err and f"cannot write its folder {model.parent} (drwxr-xr-x" in err
    os.chown(model.parent, 65534, 65534)
    status, out, err = checked(program, "--as-user", "nobody", "-m", model)
    assert status == 0 and err == "" and out.startswith("OK: user nobody (uid 65534) runs ") and "X-Nbtext-Class" in out


@pytest.mark.skipif(os.geteuid() == 0, reason="root may check any user")
def test_only_root_checks_another_user(demo_model):
    result = run("check", "--as-user", "root", "-m", demo_model)
    assert result.exit_code == 1 and "only root may run nbtext as another user" in result.stderr


def test_a_user_that_does_not_exist_is_one_line(demo_model):
    result = run("check", "--as-user", "no-such-user-here", "-m", demo_model)
    assert result.exit_code == 1 and result.stderr == "Error: no user 'no-such-user-here' on this machine\n"


def test_the_readme_and_mail_page_say_to_run_it():
    for page in (ROOT / "README.md", ROOT / "docs" / "mail.md"):
        assert "nbtext check --as-user" in page.read_text(), page
