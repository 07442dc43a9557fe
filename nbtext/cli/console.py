"""How the command line talks to the terminal: one-line errors, the documents skipped,
progress. nbtext.cli.commands's commands use these; with nbtext.cli.commands and nbtext.cli.options, the only
modules that import click.
"""

import os
import sys
from contextlib import contextmanager

import click

from nbtext.cli.oneshot import delivers_a_message, filter_stdin, not_passed_on
from nbtext.errors import INTERRUPTED, SIGINT, NbtextError, die_of_sigpipe, one_line, os_error, quiet_stdout
from nbtext.report.output import ReaderGone


class OneLineErrors(click.Group):
    """A click group whose every error is one line on stderr: `Error: ...`.

    Usage errors exit 2 and name the --help to read (3 under `predict --is`, whose 2
    means unsure; under `filter`, the message goes out tagged error, status 1, as for a
    model it cannot read); library errors exit 1; a reader that closes the pipe early
    (`nbtext predict ... | head -1`) ends the run quietly.
    """

    def main(self, args=None, prog_name=None, **extra):
        import warnings

        from nbtext.reading.documents import new_run

        new_run()
        warnings.showwarning = lambda message, *rest: click.echo(one_line(f"nbtext: warning: {message}"), err=True)
        extra.pop("standalone_mode", None)
        argv = list(sys.argv[1:] if args is None else args)
        if not argv and "_NBTEXT_COMPLETE" not in os.environ:  # `nbtext` alone: the help, no error
            with click.Context(self, info_name="nbtext") as ctx:
                click.echo(self.get_help(ctx))
            sys.exit(0)
        try:
            status = super().main(argv, "nbtext", standalone_mode=False, **extra)
        except click.UsageError as e:
            if "--is" in argv:  # bogofilter's convention: 3 for any error, said in one line
                click.echo(one_line(f"Error: {e.format_message()}"), err=True)
                sys.exit(3)
            hint = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
            if delivers_a_message(argv) and not (
                sys.stdin and sys.stdin.isatty()
            ):  # a delivery path: the message goes on
                sys.exit(filter_stdin(None, refusal=f"{e.format_message()}{hint}"))
            click.echo(one_line(f"Error: {e.format_message()}{hint}"), err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            click.echo(one_line(f"Error: {e.format_message()}"), err=True)
            sys.exit(e.exit_code)
        except (click.Abort, KeyboardInterrupt):  # Ctrl-C (click has closed the ^C line)
            if delivers_a_message(argv):  # before filter got to its message (after, it says so itself)
                sys.exit(not_passed_on(SIGINT))
            click.echo("Aborted!", err=True)
            sys.exit(INTERRUPTED)
        except (ReaderGone, BrokenPipeError):  # the reader went away (| head -1): as GNU tools, SIGPIPE
            die_of_sigpipe()
        except OSError as e:  # writing the output: a full disk, a closed or broken file
            click.echo(one_line(f"Error: {os_error(e)}"), err=True)
            quiet_stdout()
            sys.exit(1)
        sys.exit(status if isinstance(status, int) else 0)


@contextmanager
def user_errors():
    """Turn the library's errors into one-line `Error: ...` messages, never tracebacks."""
    try:
        yield
    except NbtextError as e:
        raise click.ClickException(str(e)) from None
    except MemoryError:
        raise click.ClickException("out of memory") from None


PROGRESS_AFTER = 0.5  # seconds: a job shorter than this draws no bar


def shows_progress(quiet=False):
    """Progress is drawn on a terminal only: never in a pipe, under CI, or with --quiet."""
    return not quiet and sys.stderr.isatty() and not os.environ.get("CI")


def with_progress(docs, label, paths=(), quiet=False, labelled=False):
    """`docs`, drawing a progress bar on stderr as they are consumed, once the job has run
    for a second: when `paths` (CLASS_DIR specs with `labelled`) say how many documents
    there are, the bar, the documents per second and the time left (as click's progressbar
    and fastText's Progress line show them); else a counter and the rate. Only where
    `shows_progress`, so a pipe never pays for the counting."""
    if not shows_progress(quiet):
        return docs
    return drawn(docs, label, _total(paths, labelled))


def pass_labels(first, later):
    """The labels of the bars of a job that reads its input more than once: `first`, then
    `later` for every other reading (two bars both called `training`, the second from 0%,
    looked like a restart)."""
    yield first
    while True:
        yield later


def progress_drawer(quiet=False):
    """`drawn` where progress is shown, else None (for library calls that take a drawer)."""
    return drawn if shows_progress(quiet) else None


def batch_progress(batches, label, paths=(), quiet=False):
    """with_progress for (documents, lines) batches (a cluster's predictions)."""
    if not shows_progress(quiet):
        return batches
    return drawn(batches, label, _total(paths, False), lambda batch: batch[0])


def drawn(items, label, total=None, size=None):
    """`items`, a progress bar advancing by size(item) documents each (1 by default)."""
    import time

    def counted():
        started, bar, done = time.monotonic(), None, 0

        def rate(_):
            per_second = f"{done / max(time.monotonic() - started, 1e-9):,.0f} documents/s"
            return per_second if known else f"{done:,} documents, {per_second}"

        known = total is not None
        try:
            for item in items:
                step = 1 if size is None else size(item)
                done += step
                if bar is None and time.monotonic() - started >= PROGRESS_AFTER:
                    known = known and total >= done
                    bar = click.progressbar(
                        length=total if known else 0,
                        label=label,
                        file=sys.stderr,
                        show_pos=known,
                        show_eta=known,
                        show_percent=known,
                        item_show_func=rate,
                        bar_template="%(label)s  [%(bar)s]  %(info)s" if known else "%(label)s  %(info)s",
                    )
                    bar.pos = done - step  # its first line shows what is done already, not 0 beside a rate
                    bar.__enter__()
                if bar is not None:
                    if bar.length < done:  # past the count: the rate alone from now on
                        bar.length = done
                    bar.update(step)
                yield item
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)

    return counted()


def _total(paths, labelled):
    """The number of documents of PATHs (or CLASS_DIR specs), by listing; None if unknown."""
    from nbtext.reading.sources import class_sources, count_documents

    if not paths:
        return None
    try:
        return count_documents([path for _, path in class_sources(paths)] if labelled else paths)
    except (NbtextError, OSError):
        return None  # a URL, or an error the job itself will report


def drawn_to(path, draw, *arguments):
    """draw(*arguments, path) (an --plot picture), an error as any command's, then one line
    saying where the picture went."""
    with user_errors():
        draw(*arguments, path)
    click.echo(f"nbtext: the picture is in {path}", err=True)


def online_bar(quiet=False):
    """eval --online's `online_steps`: for n documents, an on_step that draws a bar, or None."""
    if not shows_progress(quiet):
        return None

    def steps(n):
        bar = drawn(iter(range(n)), "online", n)
        return lambda i: next(bar, None)

    return steps


def fold_reporter(k, quiet=False):
    """cross_validate's on_fold: a line as each of the `k` folds finishes, with its accuracy, on
    stderr unless `quiet`, a terminal or not: the folds take minutes, and a job's log (cron,
    `2> log`, CI) that drew no bar said nothing all that time."""

    def done(name, fold, scores):
        if not quiet:
            click.echo(f"nbtext: fold {fold + 1}/{k} done: {name}, accuracy {scores['accuracy']:.4f}", err=True)

    return done


def announce(text, quiet=False):
    """A line on a terminal's stderr that says what a long job is doing now (a fold, a model)."""
    if shows_progress(quiet):
        click.echo(f"nbtext: {text}", err=True)
