"""The `nbtext` executable: one message through `predict` or `filter` starts without click
(nbtext.cli.oneshot); every other command line goes to nbtext.cli.commands."""

import sys

from nbtext.errors import (INTERRUPTED, Terminated, die_of_signal, die_of_sigpipe, end_on_signals, os_error,
                           quiet_stdout, signal_name)
from nbtext.report.output import ReaderGone, guard_descriptors


def main():
    guard_descriptors()  # before any file is opened: none may take a closed stdout's place
    # Names that are not UTF-8 (files, folders, hence labels) travel as surrogate escapes:
    # they go out as the bytes they came in as, never as an encoding error.
    try:
        sys.stdout.reconfigure(errors="surrogateescape")
    except (AttributeError, ValueError):
        pass
    import warnings  # already imported by Python itself: free

    warnings.showwarning = lambda message, *rest: print(f"nbtext: warning: {message}", file=sys.stderr)
    end_on_signals()
    stopped_by = None
    try:
        from nbtext.cli.oneshot import fast

        status = fast(sys.argv[1:])
        if status is None:
            from nbtext.cli.commands import main as full

            full()
    except KeyboardInterrupt:  # Ctrl-C on the click-free path
        print("Aborted!", file=sys.stderr)
        quiet_stdout()
        sys.exit(INTERRUPTED)
    except Terminated as e:  # SIGTERM or SIGHUP: let go of what it held, say so, end as killed by it
        stopped_by = e.signum
    except (ReaderGone, BrokenPipeError):  # the reader went away: a quiet SIGPIPE death, as GNU tools
        die_of_sigpipe()
    except OSError as e:  # writing stdout on the click-free path
        print(f"Error: {os_error(e)}", file=sys.stderr)
        quiet_stdout()
        sys.exit(1)
    if stopped_by is None:
        sys.exit(status)
    # Out of the except clause the traceback and its frames are gone: a generator that was
    # under way (forked workers, nbtext.jobs.parallel) is closed now, and its `finally` ends them.
    import gc

    gc.collect()
    print(f"nbtext: stopped by {signal_name(stopped_by)}", file=sys.stderr)
    die_of_signal(stopped_by)
