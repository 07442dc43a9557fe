"""How the command line talks to the terminal: one-line errors, the documents skipped,
progress. nbtext.cli's commands use these; with nbtext.cli and nbtext.options, the only
modules that import click.
"""

import os
import sys
from contextlib import contextmanager

import click

from nbtext.errors import INTERRUPTED, NbtextError, os_error, quiet_stdout


class OneLineErrors(click.Group):
    """A click group whose every error is one line on stderr: `Error: ...`.

    Usage errors exit 2 and name the --help to read (3 under `predict --is`, whose 2
    means unsure); library errors exit 1; a reader that closes the pipe early
    (`nbtext predict ... | head -1`) ends the run quietly.
    """

    def main(self, args=None, prog_name=None, **extra):
        import warnings

        warnings.showwarning = lambda message, *rest: click.echo(f"nbtext: warning: {message}", err=True)
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
                click.echo(f"Error: {e.format_message()}", err=True)
                sys.exit(3)
            hint = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
            click.echo(f"Error: {e.format_message()}{hint}", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            click.echo(f"Error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except (click.Abort, KeyboardInterrupt):  # Ctrl-C (click has closed the ^C line)
            click.echo("Aborted!", err=True)
            sys.exit(INTERRUPTED)
        except BrokenPipeError:
            quiet_stdout()
            sys.exit(1)
        except OSError as e:  # writing the output: a full disk, a closed or broken file
            click.echo(f"Error: {os_error(e)}", err=True)
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


class Skipped:
    """Reports each document that cannot be read or parsed, by name, and counts them."""

    def __init__(self):
        self.count = 0

    def __call__(self, doc, message):
        self.count += 1
        click.echo(f"nbtext: skipped {doc.name}: {message}", err=True)

    def summary(self, done):
        if self.count:
            click.echo(f"nbtext: {done:,} documents done, {self.count:,} skipped", err=True)
        return 1 if self.count else 0


def with_progress(docs, label):
    """A progress counter on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return docs

    def counted():
        with click.progressbar(length=0, label=label, file=sys.stderr, show_pos=True,
                               show_percent=False, show_eta=False) as bar:
            for doc in docs:
                bar.length += 1
                bar.update(1)
                yield doc

    return counted()


def write_batches(first_lines, line_batches):
    """Write `first_lines`, then each batch of (count, lines) as it comes, flushed (a
    pipeline sees every batch at once); returns the count summed."""
    if first_lines:
        sys.stdout.write("\n".join(first_lines) + "\n")
    done = 0
    for count, lines in line_batches:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
        done += count
    return done
