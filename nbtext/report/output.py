"""The one writer of standard output: every command writes what it prints through `write`,
which writes every byte or raises (ReaderGone when the reader went away, OSError else).

What it closes: Python's buffered writer can return a short count without raising (a
reader that closes the pipe mid-write: `nbtext filter < big | head -c 10` lost the rest of
the message with exit status 0), and print() and click.echo() write nothing, silently,
when stdout is closed (`>&-`: Python starts with sys.stdout None). Here a closed stdout is
EBADF and a full disk ENOSPC, OSErrors the command turns into one line and its exit
status; a gone reader is ReaderGone.
"""

import errno
import io
import os
import sys


def guard_descriptors():
    """Run first thing: a standard descriptor closed when nbtext started (`>&-`) is held
    open on /dev/null, so that no file opened later (a model, a temporary file) gets it and
    receives the output or the errors. (`write` still refuses: Python left sys.stdout None.)"""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:  # closed: the lowest free descriptor, which os.open takes, is this one
            try:
                os.open(os.devnull, os.O_RDWR)
            except OSError:
                pass


class _Diagnostics(io.FileIO):
    """Standard error's file: what cannot be written to it (a full disk, `2>/dev/full`, a
    reader gone) is dropped, as if written."""

    def write(self, data):
        try:
            return super().write(data)
        except OSError:
            return len(data)


def forgiving_stderr():
    """Run first thing: from now on a message to stderr that cannot be written is dropped,
    never an error. stderr carries what a command says about its work (a summary, a
    warning, the line of an error): failing to say it must not turn done work into a
    failure (`train 2>/dev/full` wrote its model and exited 1), nor a failure into a
    traceback. The exit status still says what was done."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        raw = _Diagnostics(stream.fileno(), "w", closefd=False)
    except (AttributeError, ValueError, OSError):  # not a file (a test runner's capture)
        return
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors, line_buffering=True
    )


class ReaderGone(Exception):
    """The reader of stdout went away (EPIPE: `nbtext predict | head -1`). Not an OSError:
    click turns those into exit status 1, and a reader gone is no error (GNU tools die of
    SIGPIPE, nbtext.errors.die_of_sigpipe) unless output was owed to it (filter: 75)."""


def write(data):
    """Write `data` (str, encoded as stdout's text layer would, or bytes) to stdout, all of
    it, now; raise ReaderGone if the reader went away, OSError if any byte cannot be written."""
    stream = sys.stdout
    if stream is None or getattr(stream, "closed", False):
        raise OSError(errno.EBADF, "standard output is closed")
    if isinstance(data, str):
        data = data.encode(getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or "strict")
    stream.flush()  # anything a library printed before, in order
    try:
        descriptor = stream.fileno()
    except (AttributeError, ValueError, OSError):  # not a file (a test runner's capture)
        descriptor = None
    view = memoryview(data)
    try:
        while view:
            written = os.write(descriptor, view) if descriptor is not None else stream.buffer.write(view)
            if not written:
                raise OSError(errno.EIO, "nothing written to standard output")
            view = view[written:]
        if descriptor is None:
            stream.buffer.flush()
    except BrokenPipeError:
        raise ReaderGone() from None


def write_line(text):
    """`text` and a line end, written as `write` writes."""
    write(text + "\n")


def tsv_field(text):
    """A name as one TSV field on one line: a backslash, tab, line feed or carriage return in
    it written as \\\\, \\t, \\n, \\r (as PostgreSQL's text format and `cut`-friendly tools)."""
    if "\\" in text or "\t" in text or "\n" in text or "\r" in text:
        return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return text
