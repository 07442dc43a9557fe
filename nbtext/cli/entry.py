"""The `nbtext` executable: one message through `predict` or `filter` starts without click
(nbtext.cli.oneshot); every other command line goes to nbtext.cli.commands."""

from nbtext.errors import hold_signals  # (loaded with the package already: nothing more to import)

hold_signals()  # before anything else: a signal from here on is raised under main's handlers, never mid-import

import sys

from nbtext.cli.oneshot import delivers_a_message, fast, not_passed_on
from nbtext.errors import (
    INTERRUPTED,
    SIGINT,
    Terminated,
    die_of_signal,
    die_of_sigpipe,
    end_on_signals,
    ignore_signals,
    one_line,
    os_error,
    quiet_stdout,
    signal_behind,
    signal_name,
)
from nbtext.report.output import ReaderGone, forgiving_stderr, guard_descriptors


def main():
    delivering = delivers_a_message(sys.argv[1:])  # a signal before its message is out: 75, the MTA keeps it
    stopped_by = None
    try:
        guard_descriptors()  # before any file is opened: none may take a closed stdout's place
        forgiving_stderr()  # what cannot be said on stderr does not change the exit status
        # Names that are not UTF-8 (files, folders, hence labels) travel as surrogate escapes:
        # they go out as the bytes they came in as, never as an encoding error.
        try:
            sys.stdout.reconfigure(errors="surrogateescape")
        except (AttributeError, ValueError):
            pass
        import warnings  # already imported by Python itself: free

        warnings.showwarning = lambda message, *rest: print(one_line(f"nbtext: warning: {message}"), file=sys.stderr)
        end_on_signals()  # (raises a signal held since start-up)
        try:
            status = fast(sys.argv[1:])
            if status is None:
                from nbtext.cli.commands import main as full

                try:
                    full()
                except SystemExit as e:  # (click's way of ending): ended below, where signals are let go
                    status = e.code
        except RuntimeError as e:  # a signal's exception that Python wrapped: ended as the signal is
            behind = signal_behind(e)
            if behind is None:
                raise
            raise behind from None
    except KeyboardInterrupt:  # Ctrl-C on the click-free path
        if delivering:
            sys.exit(not_passed_on(SIGINT))
        print("Aborted!", file=sys.stderr)
        quiet_stdout()
        sys.exit(INTERRUPTED)
    except Terminated as e:  # SIGTERM or SIGHUP: let go of what it held, say so, end as killed by it
        if delivering:
            sys.exit(not_passed_on(e.signum))
        stopped_by = e.signum
    except (ReaderGone, BrokenPipeError):  # the reader went away: a quiet SIGPIPE death, as GNU tools
        die_of_sigpipe()
    except OSError as e:  # writing stdout on the click-free path
        print(one_line(f"Error: {os_error(e)}"), file=sys.stderr)
        quiet_stdout()
        sys.exit(1)
    if stopped_by is None:
        ignore_signals()  # the work is done: a signal now cannot change what its status says
        sys.exit(status)
    # Out of the except clause the traceback and its frames are gone: a generator that was
    # under way (forked workers, nbtext.jobs.parallel) is closed now, and its `finally` ends them.
    import gc

    gc.collect()
    print(f"nbtext: stopped by {signal_name(stopped_by)}", file=sys.stderr)
    die_of_signal(stopped_by)
