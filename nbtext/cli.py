"""The command line: a thin click layer over the Python API (nbtext.model, nbtext.modelfile).

Only this module imports click. Library errors (NbtextError) become `Error: ...` on
stderr with exit status 1; usage errors exit 2. numpy and scipy are imported only by the
commands that need them, so `nbtext --help` and start-up stay fast.
"""

import json
import os
import sys
import time
from contextlib import contextmanager

import click

from nbtext import __version__
from nbtext.errors import NbtextError

DEFAULT_MODEL = "nbtext.model"
BATCH = 1000

model_option = click.option(
    "-m", "--model-file", "model_path", default=DEFAULT_MODEL, envvar="NBTEXT_MODEL",
    show_default=True, help="Model file to read (or set $NBTEXT_MODEL).",
)
alpha_override = click.option(
    "--alpha", type=float, default=None,
    help="Re-smooth with this λ instead of the model's (no retraining needed).",
)


@contextmanager
def user_errors():
    """Turn the library's errors into one-line `Error: ...` messages, never tracebacks."""
    try:
        yield
    except NbtextError as e:
        raise click.ClickException(str(e)) from None
    except MemoryError:
        raise click.ClickException("out of memory") from None


class OneLineErrors(click.Group):
    """A click group whose every error is one line on stderr: `Error: ...`.

    Usage errors exit 2 and name the --help to read; library errors exit 1; a reader
    that closes the pipe early (`nbtext predict ... | head -1`) ends the run quietly.
    """

    def main(self, args=None, prog_name=None, **extra):
        extra.pop("standalone_mode", None)
        try:
            status = super().main(args, "nbtext", standalone_mode=False, **extra)
        except click.UsageError as e:
            hint = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
            click.echo(f"Error: {e.format_message()}{hint}", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            click.echo(f"Error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except BrokenPipeError:
            # Point stdout at devnull so the interpreter's final flush cannot fail again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        sys.exit(status if isinstance(status, int) else 0)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="nbtext")
def cli():
    """nbtext: a Naive Bayes text classifier for the shell.

    \b
      nbtext train spam/ ham/             # one folder per class -> ./nbtext.model
      nbtext predict < message.txt        # prints the label: spam
      nbtext predict inbox/               # path<TAB>label<TAB>probability
      nbtext eval test/spam test/ham      # accuracy, precision, recall, F1
    """


# --- train ---------------------------------------------------------------------------
@cli.command()
@click.argument("class_dirs", nargs=-1, required=True, metavar="CLASS_DIR...")
@click.option("--model", "event_model", type=click.Choice(["multinomial", "bernoulli"]),
              default="multinomial", show_default=True,
              help="Event model: token counts (multinomial) or token presence (bernoulli).")
@click.option("--alpha", type=float, default=1.0, show_default=True,
              help="Smoothing λ > 0: 1 is Laplace, below 1 Lidstone.")
@click.option("--prior", type=click.Choice(["smoothed", "empirical", "uniform"]),
              default="smoothed", show_default=True,
              help="Class prior: (N_k+λ)/(N+cλ), N_k/N, or 1/c.")
@click.option("--min-count", type=click.IntRange(min=1), default=2, show_default=True,
              help="Tokens seen fewer times are pruned (counted as UNK).")
@click.option("--max-features", type=click.IntRange(min=1), default=None,
              help="Keep only the N most frequent tokens.")
@click.option("--ngrams", type=click.IntRange(min=1), default=1, show_default=True,
              help="Add word n-grams up to N.")
@click.option("--unknown", type=click.Choice(["unk", "ignore"]), default="unk", show_default=True,
              help="Pruned and unseen tokens: count them as UNK, or drop them.")
@click.option("-o", "--output", default=DEFAULT_MODEL, envvar="NBTEXT_MODEL", show_default=True,
              help="Model file to write (or set $NBTEXT_MODEL).")
def train(class_dirs, event_model, alpha, prior, min_count, max_features, ngrams, unknown, output):
    """Train a model from folders of documents, one folder per class.

    Each CLASS_DIR is a class named by the folder (spam/ is class 'spam'), or
    LABEL=DIR to name it. Files are found recursively; hidden ones are skipped;
    bytes are read as UTF-8 (bad bytes become U+FFFD).

    \b
      nbtext train spam/ ham/
      nbtext train --model bernoulli --alpha 0.1 -o mail.model junk=spam/ good=ham/
    """
    from nbtext.corpus import labelled_files, read_batches
    from nbtext.model import train_corpus

    with user_errors():
        check_writable(output)
        files = labelled_files(class_dirs)
        started = time.perf_counter()
        model = train_corpus(
            lambda: read_batches(files, BATCH),
            model=event_model, alpha=alpha, prior=prior, min_count=min_count,
            max_features=max_features, ngrams=ngrams, unknown=unknown,
        )
        model.save(output)
        seconds = time.perf_counter() - started
    per_class = ", ".join(f"{label} {int(n):,}" for label, n in zip(model.classes, model.class_count))
    unk = " + UNK" if model.has_unk else ""
    click.echo(
        f"trained {model.event_model} on {int(model.class_count.sum()):,} documents ({per_class}); "
        f"vocabulary {len(model.kept_columns):,} tokens{unk} of {len(model.tokens):,} seen; "
        f"{seconds:.2f} s -> {output}",
        err=True,
    )


def check_writable(path):
    """Fail before reading any corpus if the model file could not be written."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise NbtextError(f"{path} is a folder; give a file name with -o")
    if not os.path.isdir(folder):
        raise NbtextError(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise NbtextError(f"cannot write {path}: folder {folder} is not writable")


def load_model(path, alpha=None):
    from nbtext.modelfile import load

    if not os.path.exists(path):
        raise NbtextError(f"model {path} does not exist (train one with 'nbtext train', or pass -m FILE)")
    model = load(path)
    return model if alpha is None else model.with_alpha(alpha)


# --- predict -------------------------------------------------------------------------
@cli.command()
@click.argument("paths", nargs=-1, metavar="[PATH...]")
@model_option
@alpha_override
@click.option("--format", "output_format", type=click.Choice(["tsv", "json"]), default="tsv",
              show_default=True, help="tsv: path, label, probability; json: one object per line.")
@click.option("--proba", is_flag=True, help="Add every class's probability as TSV columns.")
def predict(paths, model_path, alpha, output_format, proba):
    """Classify documents: stdin, files, or folders of files.

    With no PATH (or -), stdin is one document and the output is its label alone.
    Empty stdin is the empty document: it gets the label the prior favours.
    With paths, one line per document, in input order (folders recursively, sorted):
    path<TAB>label<TAB>probability of that label.

    \b
      cat message.txt | nbtext predict
      nbtext predict -m mail.model inbox/ note.txt
      nbtext predict --format json inbox/ | head
    """
    with user_errors():
        model = load_model(model_path, alpha)
        if not paths or paths == ("-",):
            document = sys.stdin.buffer.read()
            click.echo(model.predict([document])[0])
            return
        write_predictions(model, document_stream(paths), output_format, proba)


def document_stream(paths):
    """(name, bytes) for every document the PATH arguments name, in order."""
    from nbtext.corpus import document_files, read_document

    files = [path if path == "-" else document_files(path) for path in paths]  # check all first
    for found in files:
        if found == "-":
            yield "-", sys.stdin.buffer.read()
        else:
            for path in found:
                yield path, read_document(path)


def write_predictions(model, documents, output_format, proba):
    out = sys.stdout
    if proba and output_format == "tsv":
        out.write("#path\tlabel\tprobability\t" + "\t".join(model.classes) + "\n")
    batch = []
    for item in documents:
        batch.append(item)
        if len(batch) == BATCH:
            _write_batch(model, batch, output_format, proba, out)
            batch = []
    if batch:
        _write_batch(model, batch, output_format, proba, out)


def _write_batch(model, batch, output_format, proba, out):
    probabilities = model.predict_proba([doc for _, doc in batch])
    winners = probabilities.argmax(axis=1)
    lines = []
    for (name, _), row, k in zip(batch, probabilities.tolist(), winners.tolist()):
        if output_format == "json":
            lines.append(json.dumps({
                "path": name, "label": model.classes[k],
                "probabilities": dict(zip(model.classes, row)),
            }, ensure_ascii=False))
        else:
            columns = [name, model.classes[k], f"{row[k]:.4f}"]
            if proba:
                columns += [f"{p:.4f}" for p in row]
            lines.append("\t".join(columns))
    out.write("\n".join(lines) + "\n")
    out.flush()


# --- eval ----------------------------------------------------------------------------
@cli.command(name="eval")
@click.argument("class_dirs", nargs=-1, required=True, metavar="CLASS_DIR...")
@model_option
@alpha_override
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="A readable table, or one JSON object.")
def evaluate(class_dirs, model_path, alpha, output_format):
    """Score a model on labelled folders (named as in train).

    Prints accuracy, per-class precision, recall, F1 and support, macro averages and
    the confusion matrix (rows: true class, columns: predicted).

    \b
      nbtext eval -m nbtext.model test/spam test/ham
      nbtext eval --format json test/spam test/ham | jq .accuracy
    """
    from nbtext.corpus import labelled_files, read_batches
    from nbtext.metrics import evaluate as score, format_report, json_safe

    with user_errors():
        model = load_model(model_path, alpha)
        files = labelled_files(class_dirs)
        unknown = sorted({label for label, _ in files} - set(model.classes))
        if unknown:
            raise NbtextError(
                f"label {unknown[0]!r} is not a class of the model (its classes: {', '.join(model.classes)})"
            )
        truth, guesses = [], []
        for batch in read_batches(files, BATCH):
            truth.extend(label for label, _ in batch)
            guesses.extend(model.predict([doc for _, doc in batch]))
        report = score(truth, guesses, model.classes)
    if output_format == "json":
        click.echo(json.dumps(json_safe(report)))
    else:
        click.echo(format_report(report))


def main():
    cli()
