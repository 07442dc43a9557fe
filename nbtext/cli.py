"""The command line: a thin click layer over the Python API (nbtext.training,
nbtext.evaluation, nbtext.crossval, nbtext.model, nbtext.sources): option parsing, output
formatting and error translation.

Only this module imports click. Library errors (NbtextError) become `Error: ...` on
stderr with exit status 1; usage errors exit 2. numpy and scipy are imported only by the
commands that need them, and scipy only for batches, so one message through
`nbtext predict` starts fast.
"""

import json
import os
import sys
import time
from contextlib import contextmanager

import click

from nbtext import choices
from nbtext.errors import NbtextError
from nbtext.oneshot import classify, filter_stdin, is_label_status, load_model
from nbtext.version import __version__


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
        try:
            status = super().main(argv, "nbtext", standalone_mode=False, **extra)
        except click.UsageError as e:
            if "--is" in argv:
                sys.exit(3)
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


# --- options shared by several commands -------------------------------------------------
model_option = click.option(
    "-m", "--model-file", "model_path", default=choices.DEFAULT_MODEL, envvar="NBTEXT_MODEL",
    show_default=True, help="Model file to read (or set $NBTEXT_MODEL).",
)
alpha_override = click.option(
    "--alpha", type=float, default=None,
    help="Re-smooth with this λ instead of the model's (no retraining needed).",
)
jobs_option = click.option(
    "-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
    help="Worker processes for reading, parsing and tokenizing.",
)
MAX_AUTO_JOBS = 4  # train's default -j: the cores, up to this many
unsure_option = click.option(
    "--unsure-below", type=click.FloatRange(0, 1), default=None,
    help="Label 'unsure' when the winning class's probability is below P.",
)


def table_options(labelled):
    """--table / --fasttext and their column options."""
    options = [
        click.option("--table", type=str, default=None,
                     help="Documents from a TSV file (CSV if it ends in .csv), one per row."),
        click.option("--text-col", default="2", show_default=True,
                     help="--table: the text column, by header name or 1-based number."),
        click.option("--header/--no-header", default=None,
                     help="--table: whether the first row names the columns "
                          "[default: when a column is given by name]."),
    ]
    if labelled:
        options += [
            click.option("--label-col", default="1", show_default=True,
                         help="--table: the label column, by header name or 1-based number."),
            click.option("--fasttext", type=str, default=None,
                         help="Documents from fastText lines: __label__spam some text."),
        ]
    return lambda f: apply(options, f)


def apply(options, f):
    for option in reversed(options):
        f = option(f)
    return f


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


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="nbtext")
def cli():
    """nbtext: a Naive Bayes text classifier for the shell.

    \b
      nbtext train spam/ ham/             # one folder per class -> ./nbtext.model
      nbtext predict < message.txt        # prints the label: spam
      nbtext predict ~/Maildir            # path<TAB>label<TAB>probability
      nbtext eval test/spam test/ham      # accuracy, precision, recall, F1
      nbtext filter < msg > tagged        # adds X-Nbtext-Class: spam

    Run 'nbtext COMMAND --help' for each command's options and examples.
    """


# --- train ---------------------------------------------------------------------------
TRAIN_OPTIONS = [
    click.option("--model", type=click.Choice(choices.EVENT_MODELS),
                 default=choices.TRAIN_DEFAULTS["model"], show_default=True,
                 help="Event model: token counts (multinomial), token presence (bernoulli), "
                      "complement NB (Rennie et al. 2003; tf-idf), gaussian (tf-idf), or the "
                      "columns of a --table (categorical)."),
    click.option("--alpha", type=float, default=None,
                 help="Smoothing λ > 0: 1 is Laplace, below 1 Lidstone "
                      "[default: 1; 0.1 when most training documents are e-mail]. "
                      "--model categorical also takes 0 (no smoothing: a value never seen "
                      "with a class then rules that class out)."),
    click.option("--prior", type=click.Choice(choices.PRIORS),
                 default=choices.TRAIN_DEFAULTS["prior"], show_default=True,
                 help="Class prior: (N_k+λ)/(N+cλ), N_k/N, or 1/c."),
    click.option("--min-count", type=click.IntRange(min=1), default=choices.TRAIN_DEFAULTS["min_count"],
                 show_default=True,
                 help="Tokens seen fewer times are pruned (counted as UNK)."),
    click.option("--max-features", type=click.IntRange(min=1), default=None,
                 help="Keep only the N most frequent tokens."),
    click.option("--ngrams", type=click.IntRange(min=1), default=choices.TRAIN_DEFAULTS["ngrams"],
                 show_default=True,
                 help="Add word n-grams up to N."),
    click.option("--unknown", type=click.Choice(choices.UNKNOWN_MODES), default=None,
                 help="Pruned and unseen tokens: count them as UNK, or drop them "
                      "[default: unk; ignore with --features tfidf]."),
    click.option("--features", type=click.Choice(choices.FEATURES), default=None,
                 help="Feature values: token counts, presence, or tf-idf [default: the model's: "
                      "counts (multinomial), binary (bernoulli), tfidf (complement, gaussian)]."),
    click.option("--tf", type=click.Choice(choices.TF_MODES), default=None,
                 help="tf-idf: the count itself, or log(1 + count) [default: log for complement, else raw]."),
    click.option("--idf/--no-idf", default=None, help="tf-idf: weight by inverse document frequency [default: on]."),
    click.option("--length-norm/--no-length-norm", default=None,
                 help="tf-idf: scale each document to unit L2 length [default: on]."),
    click.option("--weight-norm/--no-weight-norm", default=None,
                 help="complement: normalize each class's weights to unit L1 length [default: off]."),
    click.option("--input", type=click.Choice(choices.INPUT_MODES), default=choices.TRAIN_DEFAULTS["input"],
                 show_default=True, help="Parse documents as e-mail: when they look like it, always, never."),
    click.option("--headers", default=",".join(choices.DEFAULT_HEADERS), show_default=True,
                 help="Mail headers whose words become tagged tokens (subject:free)."),
]
TRAIN_SETTINGS = [name for name in choices.TRAIN_DEFAULTS if name != "columns"]


def train_options(f):
    return apply(TRAIN_OPTIONS, f)


def train_kwargs(params):
    """The keyword arguments of nbtext.training.train_corpus from the train options' values."""
    return {**{name: params[name] for name in TRAIN_SETTINGS},
            "headers": tuple(h.strip() for h in params["headers"].split(",") if h.strip())}


def explicit_options(names):
    """Those of `names` that the user typed on the command line."""
    ctx = click.get_current_context()
    return [n for n in names if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE]


def option_name(param):
    return "--" + param.replace("_", "-")


@cli.command()
@click.argument("class_dirs", nargs=-1, metavar="[CLASS_DIR...]")
@train_options
@click.option("-o", "--output", default=None,
              help="Model file to write [default: $NBTEXT_MODEL or nbtext.model; with --update, the -m file].")
@click.option("--update", is_flag=True,
              help="Add the documents to the model -m (same message twice counts once; "
                   "under another label it moves).")
@model_option
@table_options(labelled=True)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes for reading, parsing, tokenizing and counting "
                   f"[default: the machine's cores, at most {MAX_AUTO_JOBS}; -j 1: one process].")
def train(class_dirs, output, update, model_path, table, text_col, header, label_col, fasttext, jobs,
          **settings):
    """Train a model from folders of documents, one folder per class.

    Each CLASS_DIR is a class named by the folder (spam/ is class 'spam'), or
    LABEL=PATH to name it. A PATH is a folder (every file below it, one document each;
    hidden ones skipped), a Maildir, or an mbox file (every message). Bytes are read as
    UTF-8 (bad bytes become U+FFFD); messages are parsed as e-mail (see --input).

    \b
      nbtext train spam/ ham/
      nbtext train --model bernoulli --alpha 0.1 -o mail.model junk=spam.mbox good=~/Maildir
      nbtext train --table sms.tsv --label-col 1 --text-col 2 -o sms.model
      nbtext train --fasttext labelled.txt
      nbtext train --update -m mail.model spam=new-spam/   # learn more, no retraining
    """
    from nbtext.modelfile import check_writable
    from nbtext.settings import table_rows_model
    from nbtext.sources import in_batches, labelled_input, table_columns
    from nbtext.training import DEFAULT_BATCH as BATCH, train_corpus, update as update_model

    with user_errors():
        if output is None:
            output = model_path if update else os.environ.get("NBTEXT_MODEL", choices.DEFAULT_MODEL)
        check_writable(output)
        options = train_kwargs(settings)
        if table_rows_model(options["model"]):
            if table is None:
                raise NbtextError(f"--model {options['model']} reads a table: give --table FILE --label-col NAME")
            options["columns"] = table_columns(table, label_col)
        docs = labelled_input(class_dirs, table, fasttext, label_col, text_col, header, options.get("columns"))
        skipped = Skipped()
        started = time.perf_counter()
        if update:
            explicit = explicit_options(TRAIN_SETTINGS)
            if explicit:
                raise NbtextError(f"--update keeps the model's own settings; drop {option_name(explicit[0])}")
            model, stats = update_model(load_model(model_path), lambda: in_batches(docs(), BATCH), skipped)
        else:
            if jobs is None:
                jobs = min(os.cpu_count() or 1, MAX_AUTO_JOBS)
            model = train_corpus(lambda: in_batches(docs(), BATCH), on_error=skipped, jobs=jobs, **options)
        model.save(output)
        seconds = time.perf_counter() - started
    per_class = ", ".join(f"{label} {int(n):,}" for label, n in zip(model.classes, model.class_count))
    unk = " + UNK" if model.has_unk else ""
    learned = (f"added {stats['added']:,}, moved {stats['moved']:,}, already known {stats['duplicates']:,}; "
               if update else "")
    click.echo(
        f"{learned}{model.event_model} model (λ={model.alpha:g}) of {int(model.class_count.sum()):,} "
        f"documents ({per_class}); "
        f"vocabulary {model.vocabulary.n_kept:,} tokens{unk} of {model.vocabulary.n_tokens:,} seen; "
        f"{seconds:.2f} s -> {output}",
        err=True,
    )
    return skipped.summary(int(model.class_count.sum()))


# --- predict -------------------------------------------------------------------------
@cli.command()
@click.argument("paths", nargs=-1, metavar="[PATH...]")
@model_option
@alpha_override
@click.option("--format", "output_format", type=click.Choice(choices.PREDICT_FORMATS), default="tsv",
              show_default=True, help="tsv: name, label, probability; json: one object per line.")
@click.option("--proba", is_flag=True, help="Add every class's probability as TSV columns.")
@click.option("--lines", "separator", flag_value=b"\n", help="Each line is a document (-:N, PATH:N).")
@click.option("-0", "--null", "separator", flag_value=b"\0", help="NUL-separated documents.")
@table_options(labelled=False)
@unsure_option
@click.option("--is", "is_label", default=None, metavar="LABEL",
              help="Classify stdin; exit 0 if it is LABEL, 1 if not, 2 if unsure, 3 on error.")
@click.option("-v", "--verbose", is_flag=True, help="With --is: print the label and errors.")
@click.option("--explain", type=click.IntRange(min=1), default=None, metavar="N",
              help="Add the N tokens that pushed the winner over the runner-up most, "
                   "with their contribution in log-odds.")
@jobs_option
def predict(paths, model_path, alpha, output_format, proba, separator, table, text_col, header,
            unsure_below, is_label, verbose, explain, jobs):
    """Classify documents: stdin, files, folders, Maildirs, mbox files, line streams.

    With no PATH (or -), stdin is one document and the output is its label alone
    (a full line with --proba, --explain or --format json). Empty stdin is the empty
    document: it gets the label the prior favours. --table FILE classifies the rows of a
    table (the --text-col column; a categorical model's own columns, found by name) and
    prints one label per row.
    Otherwise one line per document, in input order (folders recursively, sorted):
    name<TAB>label<TAB>probability of that label. mbox messages are named PATH:N,
    records of --lines / -0 streams -:N. A document that cannot be read or parsed is
    reported on stderr and skipped (exit status 1 at the end).

    \b
      cat message.txt | nbtext predict
      nbtext predict -m mail.model ~/Maildir inbox.mbox note.txt
      nbtext predict --lines < tweets.txt | cut -f2 | sort | uniq -c
      if nbtext predict --is spam < msg; then mv msg junk/; fi
    """
    if is_label is not None:
        return is_label_status(model_path, is_label, alpha, unsure_below, verbose)
    with user_errors():
        model = load_model(model_path, alpha)
        if table is not None:
            if paths:
                raise NbtextError("give PATH... or --table FILE, not both")
            from nbtext.sources import table_documents, table_rows

            if model.event.default_features is None:  # a model of table rows
                docs = table_rows(table, model.settings["tokenizer"]["columns"])
            else:
                docs = table_documents(table, None, text_col, header)
            if not (proba or explain or output_format != "tsv"):
                return write_labels(model, docs, unsure_below, Skipped())
        elif (not paths or paths == ("-",)) and separator is None and not (
            proba or explain or output_format != "tsv"
        ):
            click.echo(classify(model, sys.stdin.buffer.read(), unsure_below))
            return 0
        else:
            from nbtext.sources import path_documents

            docs = path_documents(paths or ("-",), separator)
        skipped = Skipped()
        done = write_predictions(model, with_progress(docs, "classifying"),
                                 output_format, proba, unsure_below, jobs, skipped, explain)
    return skipped.summary(done)


def write_predictions(model, docs, output_format, proba, unsure_below, jobs, skipped, explain=0):
    import numpy as np

    from nbtext.parallel import scored_batches

    out = sys.stdout
    if proba and output_format == "tsv":
        out.write("#path\tlabel\tprobability\t" + "\t".join(model.classes)
                  + ("\texplanation" if explain else "") + "\n")
    done = 0
    for kept, log_proba, explanations in scored_batches(model, docs, jobs, skipped, explain):
        lines = []
        for i, (doc, row) in enumerate(zip(kept, np.exp(log_proba))):
            label, p = model.decide(row, unsure_below)
            if output_format == "json":
                record = {"path": doc.name, "label": label, "probabilities": dict(zip(model.classes, row.tolist()))}
                if explain:
                    record["explanation"] = [list(pair) for pair in explanations[i]]
                lines.append(json.dumps(record, ensure_ascii=False))
            else:
                columns = [doc.name, label, f"{p:.4f}"]
                if proba:
                    columns += [f"{q:.4f}" for q in row.tolist()]
                if explain:
                    columns.append(" ".join(f"{token}:{value:+.4g}" for token, value in explanations[i]))
                lines.append("\t".join(columns))
        out.write("\n".join(lines) + "\n")
        out.flush()
        done += len(kept)
    return done


def write_labels(model, docs, unsure_below, skipped):
    """One label per line, one line per row of a table (in the table's order)."""
    import numpy as np

    from nbtext.parallel import scored_batches

    done = 0
    for kept, log_proba, _ in scored_batches(model, docs, 1, skipped):
        sys.stdout.write("".join(model.decide(row, unsure_below)[0] + "\n" for row in np.exp(log_proba)))
        sys.stdout.flush()
        done += len(kept)
    return skipped.summary(done)


# --- eval ----------------------------------------------------------------------------
@cli.command(name="eval")
@click.argument("class_dirs", nargs=-1, metavar="[CLASS_DIR...]")
@model_option
@click.option("--format", "output_format", type=click.Choice(choices.EVAL_FORMATS), default="table",
              show_default=True, help="A readable table, or one JSON object.")
@table_options(labelled=True)
@unsure_option
@jobs_option
@click.option("--folds", type=click.IntRange(min=2), default=None, metavar="K",
              help="Stratified K-fold cross-validation of the train options (no model file).")
@click.option("--seed", type=int, default=0, show_default=True, help="--folds: the shuffle's seed.")
@click.option("--compare", default=None, metavar="MODELS",
              help="--folds: compare event models on the same folds, e.g. multinomial,bernoulli.")
@train_options
def evaluate(class_dirs, model_path, output_format, table, text_col, header, label_col,
             fasttext, unsure_below, jobs, folds, seed, compare, **settings):
    """Score a model on labelled documents (given as in train).

    Prints accuracy, log-loss (and ROC AUC for two classes, the second class being the
    positive one), per-class precision, recall, F1 and support, macro averages and the
    confusion matrix (rows: true class, columns: predicted). With --unsure-below,
    documents below the threshold are counted as unsure and scored apart (log-loss and
    ROC AUC are over all documents).

    With --folds K there is no model file: the train options are cross-validated
    (stratified K-fold, shuffled with --seed) on the labelled documents, and the mean and
    standard deviation of accuracy and macro-F1 are printed (every fold with --format
    json). --compare runs several event models on the same folds.

    \b
      nbtext eval -m nbtext.model test/spam test/ham
      nbtext eval --table sms-test.tsv --unsure-below 0.9
      nbtext eval --format json test/spam test/ham | jq .accuracy
      nbtext eval --folds 10 --alpha 0.1 spam/ ham/
      nbtext eval --folds 5 --compare multinomial,bernoulli news/*
    """
    from nbtext.evaluation import evaluate as score
    from nbtext.metrics import format_report, json_safe
    from nbtext.sources import labelled_input

    if folds is not None:
        return cross_validation(class_dirs, table, fasttext, label_col, text_col, header, folds,
                                seed, compare, output_format, settings)
    with user_errors():
        # every train option but --alpha (which re-smooths the model here) needs --folds
        misplaced = explicit_options([n for n in TRAIN_SETTINGS if n != "alpha"] + ["seed", "compare"])
        if misplaced:
            raise NbtextError(f"{option_name(misplaced[0])} goes with --folds (cross-validation)")
        model = load_model(model_path, settings["alpha"])
        columns = model.settings["tokenizer"]["columns"] if model.event.default_features is None else None
        docs = labelled_input(class_dirs, table, fasttext, label_col, text_col, header, columns)
        skipped = Skipped()
        report = score(model, docs(), unsure_below=unsure_below, jobs=jobs, on_error=skipped)
    if output_format == "json":
        click.echo(json.dumps(json_safe(report)))
    else:
        click.echo(format_report(report))
    return skipped.summary(report["n"] + report.get("unsure", 0))


def cross_validation(class_dirs, table, fasttext, label_col, text_col, header, folds, seed, compare,
                     output_format, settings):
    from nbtext.crossval import cross_validate
    from nbtext.metrics import json_safe
    from nbtext.sources import labelled_input

    with user_errors():
        docs = labelled_input(class_dirs, table, fasttext, label_col, text_col, header)
        models = [m.strip() for m in compare.split(",")] if compare else [settings["model"]]
        skipped = Skipped()
        results = cross_validate(docs(), folds, seed, models, skipped, **train_kwargs(settings))
    if output_format == "json":
        for r in results.values():
            del r["smooths"]
        click.echo(json.dumps(json_safe({"folds": folds, "seed": seed, "models": results})))
    else:
        click.echo(f"{folds}-fold stratified cross-validation (seed {seed}); mean ± standard deviation over folds")
        click.echo(f"{'model':14s}\t{'λ':>5s}\t{'accuracy':>17s}\t{'macro F1':>17s}")
        for name, r in results.items():
            alpha = f"{r['alpha']:g}" if r["smooths"] else "-"  # gaussian does not smooth
            click.echo(f"{name:14s}\t{alpha:>5s}\t{r['accuracy_mean']:.4f} ± {r['accuracy_std']:.4f}"
                       f"\t{r['macro_f1_mean']:.4f} ± {r['macro_f1_std']:.4f}")
    return skipped.summary(sum(f["n"] for f in next(iter(results.values()))["folds"]))


# --- info ----------------------------------------------------------------------------
FEW_DOCUMENTS = 20


@cli.command()
@model_option
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N",
              help="Show the N tokens that most indicate each class.")
@click.option("--format", "output_format", type=click.Choice(choices.INFO_FORMATS), default="text",
              show_default=True)
def info(model_path, top, output_format):
    """Describe a model: event model, settings, classes, vocabulary, UNK share.

    --top N lists, per class, the tokens with the largest log θ(token | class) −
    log θ(token | all other classes).

    \b
      nbtext info -m mail.model
      nbtext info --top 15 -m news.model
      nbtext info --format json | jq .classes
    """
    with user_errors():
        model = load_model(model_path)
        summary = model.summary(top or 0)
    if output_format == "json":
        click.echo(json.dumps(summary, ensure_ascii=False))
        return 0
    s = summary["settings"]
    unit = model.event.count_unit
    t = s["tokenizer"]
    lines = [
        f"model file     {model_path} (format {summary.get('format_version', '?')}, "
        f"nbtext {summary.get('nbtext_version', '?')})",
        f"event model    {summary['event_model']}, λ = {s['alpha']:g}, prior {s['prior']}",
        f"tokenizer      columns {', '.join(t['columns'])}" if t.get("kind") == "row" else
        f"tokenizer      input {t['input']}, n-grams up to {t['ngrams']}, mail headers {','.join(t['headers'])}",
        f"vocabulary     {summary['vocabulary']:,} tokens (min count {s['min_count']}"
        + (f", max features {s['max_features']}" if s["max_features"] else "")
        + f") of {summary['tokens_seen']:,} seen; unknown tokens: "
        + ("UNK" if summary["unk"] else "ignored"),
    ]
    if "unk_share" in summary:
        lines.append(f"UNK share      {summary['unk_share']:.2%} of training tokens")
    lines.append(f"documents      {summary['documents']:,}")
    lines.append("classes")
    for label, c in summary["classes"].items():
        lines.append(f"  {label}\t{c['documents']:,} documents\t{c['count']:,.0f} {unit}")
    click.echo("\n".join(lines))
    for label, c in summary["classes"].items():
        if c["documents"] < FEW_DOCUMENTS:
            click.echo(f"nbtext: warning: class {label!r} has only {c['documents']} training documents", err=True)
    for label, tokens in summary.get("top", {}).items():
        click.echo(f"top {label}: " + ", ".join(f"{t} ({v:+.2f})" for t, v in tokens))
    return 0


# --- filter --------------------------------------------------------------------------
@cli.command(name="filter")
@model_option
@alpha_override
@unsure_option
def filter_message(model_path, alpha, unsure_below):
    """Mail filter: a message on stdin, the same message on stdout with two headers added.

    X-Nbtext-Class and X-Nbtext-Probability go at the end of the header block, with
    the message's own line endings; every other byte passes through unchanged. A
    message that cannot be parsed gets X-Nbtext-Class: error; if the model cannot be
    loaded the message still passes through (with that header) and the exit status is 1.

    \b
      nbtext filter -m ~/.nbtext/mail.model < message > tagged
      # procmail:  :0 fw
      #            | nbtext filter -m $HOME/.nbtext/mail.model
    """
    return filter_stdin(model_path, alpha, unsure_below)


def main():
    cli()
