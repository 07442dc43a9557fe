"""The one exception the library raises for bad input (the CLI prints it as `Error: ...`),
and the exit statuses and clean-up the command line shares."""

import os
import sys

INTERRUPTED = 130  # the shell's status for a command ended by SIGINT (128 + 2): Ctrl-C
TEMPFAIL = 75  # sysexits.h EX_TEMPFAIL: a delivery agent keeps the message and retries


class NbtextError(Exception):
    """A problem the user can fix: a bad path, a corrupt model, an invalid setting."""


def os_error(e, action="cannot write output"):
    """One line for an OSError: what failed, why, and on which file."""
    where = f" ({e.filename})" if getattr(e, "filename", None) else ""
    return f"{action}: {e.strerror or e}{where}"


def die_of_sigpipe():
    """End as GNU tools do when the reader of their output goes away (`nbtext predict |
    head -1`): quietly, killed by SIGPIPE (status 141 in the shell), not exit 1."""
    import signal

    die_of_signal(signal.SIGPIPE)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived (`signum`): raised where the program was, so that what it
    holds is let go on the way out (a temporary model file removed, workers ended), as
    KeyboardInterrupt is for Ctrl-C. A BaseException: no `except Exception` stops it."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def end_on_signals():
    """From now on SIGTERM and SIGHUP raise Terminated (once: a second one while the first
    is being handled is ignored, so the clean-up finishes). (_signal: the signal module's
    enums cost every one-message start-up 0.4 ms.)"""
    import _signal

    def handler(signum, frame):
        for number in (_signal.SIGTERM, _signal.SIGHUP):
            _signal.signal(number, _signal.SIG_IGN)
        raise Terminated(signum)

    for number in (_signal.SIGTERM, _signal.SIGHUP):
        _signal.signal(number, handler)


def die_of_signal(signum):
    """End killed by `signum`, as a program without handlers would have (the shell's
    status 128 + signum), after the clean-up is done."""
    import signal

    quiet_stdout()
    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # where the signal did not end the process


def signal_name(signum):
    import signal

    return signal.Signals(signum).name


def quiet_stdout():
    """Point stdout at devnull, so the interpreter's last flush of it cannot fail again
    (after a closed pipe or a failed write)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno() if sys.stdout is not None else 1)
    except (OSError, ValueError, AttributeError):
        pass
