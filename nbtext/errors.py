"""The one exception the library raises for bad input (the CLI prints it as `Error: ...`),
and the exit statuses and clean-up the command line shares."""

import os
import sys

SIGINT = 2  # Ctrl-C's signal (its number on every POSIX system: no signal module imported for it)
INTERRUPTED = 128 + SIGINT  # the shell's status for a command ended by it
TEMPFAIL = 75  # sysexits.h EX_TEMPFAIL: a delivery agent keeps the message and retries


class NbtextError(Exception):
    """A problem the user can fix: a bad path, a corrupt model, an invalid setting."""


class ModelRefused(NbtextError):
    """The model file cannot be used (missing, unreadable, corrupt), found while one message
    was being judged: the file's fault, not the message's. `nbtext filter` then exits 1 as for
    a model it could not load (the message goes out tagged `error`), with the loader's line."""


class WriteFailed(NbtextError):
    """A file could not be written (a full disk, a file size limit, a folder not writable):
    nothing of it is in place. Its message is all a command then says (nbtext.cli.oneshot's
    said_once_written)."""


_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def one_line(text):
    """`text` (a line for stderr, which may quote a name from a folder or a server) as one
    line a terminal only shows: a tab and line ends as \\t, \\n, \\r, and every other character
    it would act on (C0, DEL, C1: ESC, an OSC sequence's BEL, CSI; any character not
    printable) as \\xNN or \\uNNNN; a byte that was not UTF-8 (a surrogate escape) as the \\xNN
    of that byte. The lines nbtext says on stderr (errors, warnings, documents skipped) go
    through here; a name is given tsv's escapes first (report.text.shown_name), so that a
    backslash in it is told apart."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(c):
    if c in _ESCAPES:
        return _ESCAPES[c]
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # (a byte that was not UTF-8, carried as a surrogate escape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


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


def signal_behind(error):
    """The KeyboardInterrupt or Terminated that `error` was raised from (Python 3.11 wraps an
    exception raised while a class is made, in a __set_name__ such as cached_property's, in a
    RuntimeError: a signal that came while a module was imported), else None."""
    cause = error.__cause__
    while cause is not None:
        if isinstance(cause, (KeyboardInterrupt, Terminated)):
            return cause
        cause = cause.__cause__
    return None


def unless_signal(error):
    """Raise the signal `error` wraps (signal_behind), if any: the first line of every `except
    Exception` that takes what it catches for a fault (of a file, of nbtext), so that a Ctrl-C or
    SIGTERM that came during an import is ended as the signal (filter: 75), never said as a
    fault (a message tagged error, exit 1)."""
    if (signal := signal_behind(error)) is not None:
        raise signal from None


_held = []  # the signals that arrived between hold_signals and end_on_signals


def _stopping_signals():
    """SIGINT, SIGTERM and SIGHUP, but those ignored when nbtext started (nohup's SIGHUP, a
    background job's SIGINT): they stay ignored. (_signal: the signal module's enums would
    cost every one-message start-up; docs/performance.md, figures behind the code.)"""
    import _signal

    return [n for n in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP) if _signal.getsignal(n) != _signal.SIG_IGN]


def hold_signals(held_before=()):
    """The executable's first act (launcher/nbtext, nbtext.cli.entry, before their imports):
    from now on SIGINT, SIGTERM and SIGHUP are held, not raised, so that no import is cut by
    one (a Ctrl-C there was a KeyboardInterrupt traceback, a SIGTERM a death before filter
    could say 75); end_on_signals raises the first of them where the command line handles
    it. `held_before`: the signals the launcher held before this module was imported."""
    import _signal

    _held.extend(held_before)

    for number in _stopping_signals():
        _signal.signal(number, lambda signum, frame: _held.append(signum))


def end_on_signals():
    """From now on SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP raise Terminated, the
    first held since hold_signals at once. Once: after the first, all three are ignored, so
    the clean-up it starts finishes."""
    import _signal

    _handled[:] = _stopping_signals()
    for number in _handled:
        _signal.signal(number, _raise_for)
    sys.unraisablehook = _signal_raised_where_lost
    if _held:
        _raise_for(_held[0], None)


def _raise_for(signum, frame):
    if not _ignoring:
        ignore_signals()
        raise KeyboardInterrupt() if signum == SIGINT else Terminated(signum)


def _signal_raised_where_lost(unraisable):
    """A signal's exception raised where Python cannot pass it on (a __del__, a weakref
    callback such as importlib's module locks, while a lazy import runs) is printed as
    "Exception ignored" with its traceback, and lost: it is raised again a millisecond later
    (SIGALRM), where the program goes on. Once the program is ending (its exit handlers run,
    or the interpreter is finalizing, which gives SIGALRM its default again: a timer then
    killed the process, its work done, by SIGALRM), it is dropped: the work is done. Anything
    else is reported as Python does."""
    exception = unraisable.exc_value
    if isinstance(exception, (KeyboardInterrupt, Terminated)) and _ignoring:
        import _signal
        import atexit

        if sys.is_finalizing():
            return
        _signal.signal(_signal.SIGALRM, lambda number, frame: _raise_again(exception))
        _signal.setitimer(_signal.ITIMER_REAL, 0.001)
        atexit.register(_signal.setitimer, _signal.ITIMER_REAL, 0)  # (the program ends first: no timer left)
        return
    sys.__unraisablehook__(unraisable)


def _raise_again(exception):
    import _signal

    _signal.signal(_signal.SIGALRM, _signal.SIG_IGN)
    raise type(exception)(*exception.args)


_handled = []  # the signals end_on_signals handles
_ignoring = []  # not empty once they are ignored


def ignore_signals():
    """The signals end_on_signals handles are ignored from now on, by the process too (the
    interpreter, ending, gives back their default action: a SIGTERM then ended a filter
    that had written its message as killed, 143): what is left to do must not be cut (the
    clean-up a signal started, the exit of a command whose work is done). A program that
    runs a command in itself, never through end_on_signals, keeps its own handling."""
    import _signal

    _ignoring.append(True)
    for number in _handled:
        _signal.signal(number, _signal.SIG_IGN)


def as_a_worker():
    """A forked worker's signals: Ctrl-C is the parent's to handle (it ends the workers), so
    SIGINT is ignored; SIGTERM and SIGHUP end the worker at once, whatever handlers the parent
    had set, but one ignored when nbtext started (nohup's SIGHUP) stays ignored, as the
    parent ignores it."""
    import _signal

    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    for number in (_signal.SIGTERM, _signal.SIGHUP):
        if number in _handled or _signal.getsignal(number) != _signal.SIG_IGN:
            _signal.signal(number, _signal.SIG_DFL)


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
