"""How the command line talks to the terminal: one-line errors, the documents skipped,
progress. nbtext.cli.commands's commands use these; with nbtext.cli.commands and nbtext.cli.options, the only
modules that import click.
"""

import os
import sys
from contextlib import contextmanager

import click

from nbtext.cli.oneshot import delivers_a_message, filter_stdin, not_passed_on
from nbtext.errors import INTERRUPTED, SIGINT, NbtextError, die_of_sigpipe, os_error, quiet_stdout
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
            if delivers_a_message(argv) and not (
                sys.stdin and sys.stdin.isatty()
            ):  # a delivery path: the message goes on
                sys.exit(filter_stdin(None, refusal=f"{e.format_message()}{hint}"))
            click.echo(f"Error: {e.format_message()}{hint}", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            click.echo(f"Error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except (click.Abort, KeyboardInterrupt):  # Ctrl-C (click has closed the ^C line)
            if delivers_a_message(argv):  # before filter got to its message (after, it says so itself)
                sys.exit(not_passed_on(SIGINT))
            click.echo("Aborted!", err=True)
            sys.exit(INTERRUPTED)
        except (ReaderGone, BrokenPipeError):  # the reader went away (| head -1): as GNU tools, SIGPIPE
            die_of_sigpipe()
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


def evaluation(model_path, inputs, settings, unsure_below, jobs, folds, seed, compare, learn, skipped, quiet=False):
    """`nbtext eval`'s work: ("crossval", {folds, seed, models: results by event model},
    None, documents) with `folds`; ("online", the report, None, documents) with `learn` (an online run, from the
    model at `model_path` or, None, from nothing, learning by the rule and TONE margin of `learn`); else ("report", the report of the model
    at `model_path`, its curves, documents)."""
    from nbtext.cli.oneshot import load_model
    from nbtext.reading.sources import labelled_input

    if folds is not None and learn is not None:  # (usage errors, exit 2, as every option where it does nothing)
        raise click.UsageError("--online and --folds are two ways to evaluate: give one")
    if folds is not None and (model_path is not None or unsure_below is not None):
        given = "-m" if model_path is not None else "--unsure-below"
        raise click.UsageError(
            f"--folds cross-validates the train options and reads no model: {given} goes with "
            "eval of a model (eval -m MODEL) or --online"
        )
    if folds is not None:
        from nbtext.jobs.crossval import cross_validate

        from nbtext.classifier.settings import table_rows_model
        from nbtext.stats.event_models import EVENT_MODELS

        models = [m.strip() for m in compare.split(",")] if compare else [settings["model"]]
        rows = {table_rows_model(m) for m in models if m in EVENT_MODELS}
        if len(rows) > 1:
            raise NbtextError(
                "--compare: a model of a table's columns (categorical) and the text models read "
                "different documents; compare one kind at a time"
            )
        settings = with_table_columns({**settings, "model": models[0]}, inputs)  # (--model is refused with --compare)
        docs = with_progress(
            labelled_input(**inputs, columns=settings.get("columns"))(),
            "reading",
            inputs["class_dirs"],
            quiet,
            labelled=True,
        )
        results = cross_validate(docs, folds, seed, models, skipped, fold_reporter(folds, quiet), jobs, **settings)
        done = sum(f["n"] for f in next(iter(results.values()))["folds"])
        return "crossval", {"folds": folds, "seed": seed, "models": results}, None, done
    model = load_model(model_path, settings["alpha"]) if model_path is not None else None
    columns = model.settings["tokenizer"].get("columns") if model else None
    if learn is not None and columns is not None:  # (said before its table is asked for)
        raise NbtextError(f"eval --online runs a multinomial model of counts, and {model_path} is a categorical one")
    docs = labelled_input(**inputs, columns=columns)
    if learn is not None:
        from nbtext.jobs.online import evaluate_online

        documents = list(docs())
        bar = drawn(iter(range(len(documents))), "online", len(documents)) if shows_progress(quiet) else None
        rule, tone_margin = learn
        report = evaluate_online(
            documents,
            settings,
            model,
            rule,
            seed,
            unsure_below,
            jobs,
            skipped,
            (lambda i: next(bar, None)) if bar is not None else None,
            tone_margin,
        )
        return "online", report, None, report["n"]
    from nbtext.jobs.evaluation import evaluate as score

    docs, curves = with_progress(docs(), "evaluating", inputs["class_dirs"], quiet, labelled=True), {}
    report = score(model, docs, unsure_below=unsure_below, jobs=jobs, on_error=skipped, curves=curves)
    if not report["n"] + report.get("unsure", 0):  # a report of dashes says nothing
        raise NbtextError("no documents to evaluate: the input given holds none that could be read")
    return "report", report, curves, report["n"] + report.get("unsure", 0)


def with_table_columns(settings, inputs):
    """The train settings of a model of table rows (categorical) with its feature columns,
    the --table's columns but the label's, as train and eval --folds find them; others as given."""
    from nbtext.classifier.settings import table_rows_model
    from nbtext.reading.sources import table_columns

    if not table_rows_model(settings["model"]):
        return settings
    return dict(settings, columns=table_columns(inputs["table"], inputs["label_col"], settings["model"]))


def fold_reporter(k, quiet=False):
    """cross_validate's on_fold: a line as each of the `k` folds finishes, with its accuracy."""

    def done(name, fold, scores):
        announce(f"fold {fold + 1}/{k} done: {name}, accuracy {scores['accuracy']:.4f}", quiet)

    return done


def announce(text, quiet=False):
    """A line on a terminal's stderr that says what a long job is doing now (a fold, a model)."""
    if shows_progress(quiet):
        click.echo(f"nbtext: {text}", err=True)
