"""`nbtext check`: whether a mail user can run this nbtext against a model, said in one line.

A delivery agent starts `nbtext filter` as the mail user (or the user of Dovecot's script
service): an interpreter below a folder closed to that user (a Python of pyenv's under root's
0700 home) makes Dovecot log only `execvp(...) failed: Permission denied` and deliver every
message unfiltered. The check runs, as that user (root may name any; another user checks
itself), the nbtext that runs it now with a test message through `filter -m MODEL`, and says
the first thing that stops it: a program (the nbtext script, its interpreter, a folder above
either) that user cannot reach, the model it cannot read, the model's folder it cannot write
(the learner: train --update, the learn-on-move recipe, writes the model there by rename,
beside its lock file), or OK with the test message's verdict. Permissions are read from the
mode bits (owner, group, others; ACLs are not read): the run as the user has the last word.
"""

import os
import stat
import subprocess
import sys

from nbtext.errors import NbtextError
from nbtext.modelfile.container import lock_path

TEST_MESSAGE = (
    b"From: nbtext check <check@example.org>\nSubject: a test message of nbtext check\n\n"
    b"The setup check's message: the filter's verdict on it says the model was read.\n"
)


NOT_STARTED = 126  # the shell's status of a program found but not run


class User:
    """The user a check runs as: name, uid, gid and every group (the primary one and those
    /etc/group gives)."""

    def __init__(self, spec):
        import grp
        import pwd

        try:
            entry = pwd.getpwuid(int(spec)) if spec.isdigit() else pwd.getpwnam(spec)
        except (KeyError, OverflowError):
            raise NbtextError(f"no user {spec!r} on this machine") from None
        self.name, self.uid, self.gid = entry.pw_name, entry.pw_uid, entry.pw_gid
        self.groups = {self.gid} | {g.gr_gid for g in grp.getgrall() if self.name in g.gr_mem}

    def may(self, path, want):
        """Whether the mode bits of `path` let this user `want` ("r", "w", "x": any of them
        together); root may all but run a file no one may run."""
        info = os.stat(path)
        bits = {"r": 4, "w": 2, "x": 1}
        needed = sum(bits[c] for c in want)
        if self.uid == 0:
            return "x" not in want or stat.S_ISDIR(info.st_mode) or bool(info.st_mode & 0o111)
        if info.st_uid == self.uid:
            have = (info.st_mode >> 6) & 7
        elif info.st_gid in self.groups:
            have = (info.st_mode >> 3) & 7
        else:
            have = info.st_mode & 7
        return have & needed == needed


def closed_above(user, path):
    """The first folder above `path` (symbolic links followed, each as the system follows it)
    `user` may not enter, or None."""
    seen, todo = set(), [os.path.abspath(path)]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        parts = current.split(os.sep)
        for k in range(1, len(parts)):
            folder = os.sep.join(parts[:k]) or os.sep
            if not user.may(folder, "x"):
                return folder
            here = os.sep.join(parts[: k + 1])
            if os.path.islink(here):  # the rest is looked up where the link leads
                todo.append(os.path.join(os.path.dirname(here), os.readlink(here)))
                break
    return None


def programs():
    """[(what, path)] a delivery agent starts to run this nbtext: its script (the `nbtext` that
    runs now) and the interpreter its first line names, the file that one resolves to too."""
    command = _command()
    found, interpreter = [], sys.executable
    if len(command) == 1:  # the nbtext script
        found.append(("nbtext", command[0]))
        try:
            with open(command[0], "rb") as f:
                first = f.readline(4096)
            if first.startswith(b"#!"):
                interpreter = first[2:].split()[0].decode("utf-8", "surrogateescape")
        except (OSError, IndexError):
            pass
    found.append(("its Python", interpreter))
    if os.path.realpath(interpreter) != interpreter:
        found.append(("its Python", os.path.realpath(interpreter)))
    return found


def check(user_spec, model_path):
    """(ok, the line that says it) of `nbtext check --as-user USER -m MODEL`: the filter run as
    the user first (what it does has the last word), then, where it failed, what the mode bits
    say stopped it."""
    user = User(user_spec) if user_spec is not None else User(str(os.getuid()))
    if os.getuid() not in (0, user.uid):
        raise NbtextError(f"only root may run nbtext as another user: run it as root, or as {user.name}")
    who = f"user {user.name} (uid {user.uid})"
    model = os.path.abspath(model_path)
    if not os.path.exists(model):
        raise NbtextError(f"model {model} does not exist (train one with 'nbtext train', or pass -m FILE)")
    status, out, said = _filtered_as(user, model)
    if status == NOT_STARTED:
        return False, _what_stopped(user, who, model, said)
    if status != 0:
        return False, _what_failed(user, who, model, status, said)
    verdict = "; ".join(line for line in out.decode("ascii", "replace").splitlines() if line.startswith("X-Nbtext-"))
    folder = os.path.dirname(model)
    if not user.may(folder, "wx"):
        return False, (
            f"{who} filters with {model} ({verdict}), but cannot write its folder {_mode_said(folder)}: "
            "learning (train --update, the learn-on-move recipe) writes the model there"
        )
    lock = lock_path(model)
    if os.path.exists(lock) and not user.may(lock, "r"):
        return False, f"{who} filters with {model}, but cannot open its lock file {_mode_said(lock)}: learning needs it"
    return True, f"OK: {who} runs {_command()[0]} with {model} and may learn into it; a test message: {verdict}"


def _what_stopped(user, who, model, said):
    """The line of a filter that could not be started as `user` (`said`: why): a program out of
    its reach, by the mode bits."""
    for what, path in programs():
        folder = closed_above(user, path)
        if folder is not None:
            return (
                f"{who} cannot run {path} ({what}): {_mode_said(folder)} is closed to it. Install nbtext "
                "with the system's Python (README: /usr/bin/python3 -m venv /opt/nbtext)"
            )
        if os.path.exists(path) and not user.may(path, "rx"):
            return f"{who} cannot run {path} ({what}): {_mode_said(path)}"
    return f"{who} cannot run {_command()[0]}: {said}"


def _what_failed(user, who, model, status, said):
    """The line of a filter that ran as `user` and failed (`status`, its stderr `said`): the
    model out of its reach, by the mode bits, else the filter's own last line."""
    folder = closed_above(user, model)
    if folder is not None:
        return f"{who} cannot read the model {model}: {_mode_said(folder)} is closed to it"
    if not user.may(model, "r"):
        return f"{who} cannot read the model {model}: {_mode_said(model)}"
    line = said.strip().splitlines()[-1] if said.strip() else f"exit status {status}"
    return f"{who} ran nbtext filter -m {model}, which failed: {line}"


def _filtered_as(user, model):
    """(exit status, stdout, stderr) of this nbtext's `filter -m MODEL` run as `user` on the
    test message; NOT_STARTED where it cannot be started at all."""
    own = os.getuid() == user.uid
    try:
        done = subprocess.run(
            [*_command(), "filter", "-m", model],
            input=TEST_MESSAGE,
            capture_output=True,
            timeout=120,
            cwd="/",
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},  # as a delivery agent's: nothing of this shell's
            **({} if own else {"user": user.uid, "group": user.gid, "extra_groups": sorted(user.groups)}),
        )
    except OSError as e:  # (the interpreter, or a folder above it, out of its reach: execve's EACCES)
        return NOT_STARTED, b"", e.strerror or str(e)
    except subprocess.TimeoutExpired:
        return 124, b"", "it ran for 2 minutes on one message"
    return done.returncode, done.stdout, done.stderr.decode("utf-8", "replace")


def _command():
    """How this nbtext is started: the `nbtext` script that runs now, else its Python's -m nbtext."""
    script = os.path.abspath(sys.argv[0])
    return [script] if os.path.basename(script) == "nbtext" else [sys.executable, "-m", "nbtext"]


def _mode_said(path):
    """`path (drwx------ root:root)`: what says who may use it."""
    import grp
    import pwd

    info = os.stat(path)
    try:
        owner = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        owner = str(info.st_uid)
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = str(info.st_gid)
    return f"{path} ({stat.filemode(info.st_mode)} {owner}:{group})"
