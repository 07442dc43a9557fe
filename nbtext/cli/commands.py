"""The command line: a thin click layer over the Python API (training, evaluation,
crossval, merging, cluster, model, sources): option parsing (the options are
nbtext.cli.options'), error translation, and writing what nbtext.report.text formats.

Library errors (NbtextError) become `Error: ...` on stderr with exit status 1
(nbtext.cli.console); usage errors exit 2. numpy and scipy are imported only by the commands
that need them, so one message through `nbtext predict` starts fast.
"""

import os
import time

import click

from nbtext import choices
from nbtext.cli.console import (
    OneLineErrors,
    announce,
    batch_progress,
    drawn_to,
    fold_reporter,
    online_bar,
    pass_labels,
    progress_drawer,
    user_errors,
    with_progress,
)
from nbtext.cli.oneshot import (
    filter_stdin,
    is_label_status,
    predict_stdin_figures,
    predict_stdin_labels,
    learning_said,
    said_once_written,
    write_batches,
    write_predictions,
)
from nbtext.cli.options import (
    PATH,
    Checked,
    Number,
    alpha_override,
    grouped,
    imap_options,
    jobs_option,
    labelled_options,
    learning_options,
    max_bytes_option,
    model_option,
    online_options,
    plot_option,
    predict_options,
    quiet_option,
    scheduler_option,
    shard_option,
    stored_unsure_option,
    train_jobs_option,
    train_options,
    typed_options,
    unsure_option,
)
from nbtext.jobs.learning import changed_model, nothing_to_update
from nbtext.jobs.loading import load_model, load_to_change
from nbtext.modelfile.container import locked
from nbtext.reading.documents import DEFAULT_BATCH, in_batches
from nbtext.report.output import write_line
from nbtext.report.text import (
    NO_DOCUMENTS,
    NOTHING_TO_LEARN,
    Output,
    Skipped,
    counted,
    evaluation_text,
    json_line,
    learning_summary,
    not_learned,
    proba_header,
)
from nbtext.version import __version__


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(__version__, "-V", "--version", prog_name="nbtext")
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


cli.command_class = Checked  # every command's options checked against cli.options.REFUSED before it runs


# --- train ---------------------------------------------------------------------------
@cli.command()
@labelled_options
@train_options
@click.option(
    "-o",
    "--output",
    type=PATH,
    default=None,
    help="Model file to write [default: $NBTEXT_MODEL or nbtext.model; with --update, the -m file].",
)
@click.option(
    "--update",
    is_flag=True,
    help="Add the documents to the model -m (same message twice counts once; under another label it moves).",
)
@click.option(
    "--new-classes",
    is_flag=True,
    help="--update: a label the model lacks becomes a new class (without it: an error, nothing written).",
)
@learning_options
@stored_unsure_option
@model_option
@max_bytes_option
@train_jobs_option
@shard_option
@scheduler_option
@imap_options
@quiet_option
@grouped
def train(
    output,
    update,
    new_classes,
    learn,
    tone_margin,
    unsure_below,
    model_path,
    jobs,
    shard,
    scheduler,
    quiet,
    inputs,
    settings,
):
    """Train a model from folders of documents, one folder per class.

    Each CLASS_DIR is a class named by the folder (spam/ is class 'spam'), or
    LABEL=PATH to name it. A PATH is a folder (every file below it, one document each;
    hidden ones skipped), a Maildir, or an mbox file (every message). Bytes are read as
    UTF-8 (bad bytes become U+FFFD); messages are parsed as e-mail (see --input).
    Two classes, one named spam or ham, start from a spam filter's defaults (see
    --preset).

    \b
      nbtext train spam/ ham/
      nbtext train --model bernoulli --alpha 0.1 -o mail.model junk=spam.mbox good=~/Maildir
      nbtext train --table sms.tsv --label-col 1 --text-col 2 -o sms.model
      nbtext train --fasttext labelled.txt
      nbtext train --features binary --learn tone news/*   # only what it gets wrong or nearly
      nbtext train --update -m mail.model spam=new-spam/   # learn more, no retraining
      nbtext train --update --new-classes -m mail.model eggs=recipes/   # a third class
      nbtext train --preset general spam/ ham/   # not the spam filter's defaults
      nbtext train --shard 3/8 --learn all -o part3.model spam/ ham/   # then: nbtext merge part*.model
      nbtext train --scheduler tcp://10.0.0.5:8786 --learn all spam=s3://mail/spam/ ham=s3://mail/ham/
    """
    from nbtext.classifier.settings import TONE_SPLIT_REFUSED, make_settings, preset_defaults, shard_of
    from nbtext.jobs.parallel import default_jobs
    from nbtext.jobs.training import reads_twice, train_corpus, with_table_columns
    from nbtext.modelfile.container import check_writable
    from nbtext.errors import NbtextError
    from nbtext.reading.sources import cluster_urls, labelled_input

    with user_errors(), said_once_written() as say:
        output = output or (model_path if update else os.environ.get("NBTEXT_MODEL", choices.DEFAULT_MODEL))
        check_writable(output)
        given = {**settings, "learn": learn, "tone_margin": tone_margin, "unsure_below": unsure_below}
        options = with_table_columns(given, inputs)
        settings = make_settings(**options)  # the one value this training is given
        shard = shard_of(shard, settings, update)
        skipped, started, learned = Skipped(say), time.perf_counter(), None
        # ($DASK_SCHEDULER_ADDRESS leaves what a cluster cannot do to this machine: a TONE pass too, but
        # URLs only a cluster reads)
        tone = choices.learned_by_tone(settings)
        if scheduler and tone and cluster_urls(inputs["class_dirs"]):
            raise NbtextError(TONE_SPLIT_REFUSED.format("a cluster ($DASK_SCHEDULER_ADDRESS reads these URLs)"))
        on_cluster = inputs["class_dirs"] and shard is None and not tone
        if scheduler and not update and (typed_options(["scheduler"]) or on_cluster):
            from nbtext.jobs.cluster import train_on_scheduler

            progress = progress_drawer(quiet)
            model = train_on_scheduler(
                scheduler, inputs["class_dirs"], settings, shard, skipped, progress, inputs["max_bytes"]
            )
            model.save(output)
        else:
            docs = labelled_input(
                **inputs,
                columns=options.get("columns"),
                shard=shard,
                twice=reads_twice(settings),
                empty_ok=update,
                classes_made=not update,  # (an update's new classes: labels.new_classes_refused)
            )
            passes = pass_labels("training", "second pass (what the counts decide: idf, UNK documents)")
            batched = lambda documents: in_batches(
                with_progress(  # noqa: E731
                    documents, next(passes), inputs["class_dirs"], quiet or shard is not None, labelled=True
                ),
                DEFAULT_BATCH,
            )
            if update:  # (its train settings were refused where the options are grouped)
                if nothing_to_update(model_path, inputs["class_dirs"], new_classes) and os.path.realpath(
                    output
                ) == os.path.realpath(model_path):  # learn-on-error folders: often empty (the labels checked first)
                    if not quiet:
                        click.echo(NOTHING_TO_LEARN, err=True)
                    return 0  # (another -o is written all the same: the model with nothing added)
                learned = changed_model(model_path, output, docs(), batched, skipped, new_classes=new_classes)
            else:
                model = train_corpus(
                    lambda: batched(docs()),
                    settings,
                    skipped,
                    jobs or default_jobs(),
                    shard is not None,
                    lambda stage: announce(stage, quiet),
                )
                model.save(output)
    if learned is not None:
        return learning_said(learned, output, time.perf_counter() - started, skipped, quiet, echo_to_stderr)
    given = {name: value for name, value in options.items() if value is not None}
    if not (quiet or typed_options(["preset"])) and preset_defaults(given):  # (said once it is made)
        click.echo(PRESET_CHOSEN.format(" and ".join(map(repr, options["classes"]))), err=True)
    click.echo(learning_summary(output, time.perf_counter() - started, model), err=True)
    return skipped.summary(int(model.class_count.sum()))


PRESET_CHOSEN = (
    "classes {}: a spam filter's defaults for the options not given (--preset spam; --preset general "
    "for the general ones)"
)


# --- predict -------------------------------------------------------------------------
@cli.command()
@click.argument("paths", nargs=-1, type=PATH, metavar="[PATH...]")
@model_option
@alpha_override
@predict_options
@unsure_option
@max_bytes_option
@click.option(
    "--is",
    "is_label",
    default=None,
    metavar="LABEL",
    help="Classify stdin; exit 0 if it is LABEL, 1 if not, 2 if unsure, 3 on error.",
)
@click.option("-v", "--verbose", is_flag=True, help="With --is: print the label and errors.")
@click.option(
    "--explain",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help=(
        "Add the N tokens that pushed the winner over the runner-up most, "
        "with their share of the printed probabilities' log-odds."
    ),
)
@jobs_option
@scheduler_option
@imap_options
@quiet_option
def predict(
    paths,
    model_path,
    alpha,
    output_format,
    proba,
    top,
    threshold,
    separator,
    files_from,
    fasttext_input,
    table,
    text_col,
    header,
    column_names,
    unsure_below,
    max_bytes,
    is_label,
    verbose,
    explain,
    jobs,
    scheduler,
    quiet,
    imap_access,
):
    """Classify documents: stdin, files, folders, Maildirs, mbox files, line streams.

    With no PATH (or -), stdin is one document and the output is its label alone (a full
    line with --proba, -k, --explain or --format json); an mbox on stdin is its messages,
    named -:1, -:2, ... as a file's. Empty stdin is the empty document. --table FILE classifies the rows of a
    table (the --text-col column; a categorical model's own columns, found by name) and
    prints one label per row.
    Otherwise one line per document, in input order (folders recursively, sorted):
    name<TAB>label<TAB>probability of that label. mbox messages are named PATH:N,
    records of --lines / -0 streams -:N. A document that cannot be read or parsed is
    reported on stderr and skipped (exit status 1 at the end). With --scheduler, PATHs
    (and --files-from) are scored on the cluster's workers; stdin streams stay here.

    \b
      cat message.txt | nbtext predict
      nbtext predict -m mail.model ~/Maildir inbox.mbox note.txt
      nbtext predict --lines < tweets.txt | cut -f2 | sort | uniq -c
      find ~/Mail -name '*.eml' -print0 | nbtext predict -0 --files-from -
      nbtext predict -k 3 --threshold 0.1 --format fasttext --fasttext test.txt
      if nbtext predict --is spam < msg; then mv msg junk/; fi
    """
    if is_label is not None:
        return is_label_status(model_path, is_label, alpha, unsure_below, verbose, paths, max_bytes)
    from nbtext.reading.sources import predict_input

    output = Output(output_format, proba, unsure_below, top, threshold)
    labels_only = output == Output("tsv", False, unsure_below) and not explain
    with user_errors():
        from_stdin = table is None and files_from is None and fasttext_input is None and paths in ((), ("-",))
        if from_stdin and separator is None and labels_only:  # one message (-v, --unsure-below ...)
            return predict_stdin_labels(model_path, alpha, unsure_below, max_bytes)
        if from_stdin and separator is None and not explain:  # stdin's document (or an mbox's), with its figures
            return predict_stdin_figures(model_path, alpha, output, column_names or header, max_bytes)
        model = load_model(model_path, alpha)
        docs = predict_input(
            paths,
            separator,
            table,
            text_col,
            header,
            model.settings["tokenizer"].get("columns"),
            files_from,
            fasttext_input,
            max_bytes,
            imap_access,
        )
        if table is not None and labels_only:
            output, jobs = output._replace(format="labels"), 1  # one label per row, in the table's order
        skipped, head = Skipped(), proba_header(model, output, explain, column_names or (header and table is None))
        if (
            scheduler is not None
            and not from_stdin
            and table is None
            and fasttext_input is None
            and (separator is None or files_from is not None)
        ):
            from nbtext.jobs.cluster import predict_on_scheduler

            return skipped.summary(
                write_batches(
                    head,
                    batch_progress(
                        predict_on_scheduler(
                            scheduler,
                            model_path,
                            alpha,
                            paths,
                            files_from,
                            separator,
                            output,
                            explain or 0,
                            skipped,
                            max_bytes,
                        ),
                        "classifying on the cluster",
                        paths,
                        quiet,
                    ),
                )
            )
        docs = with_progress(docs, "classifying", () if separator or files_from else paths, quiet)  # known: a total
        done = write_predictions(model, docs, output, jobs, skipped, explain, head)
    return skipped.summary(done, NO_DOCUMENTS)


# --- eval ----------------------------------------------------------------------------
@cli.command(name="eval")
@labelled_options
@model_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(choices.EVAL_FORMATS),
    default="table",
    help="A readable table, or one JSON object.",
)
@unsure_option
@jobs_option
@max_bytes_option
@click.option(
    "--folds",
    type=click.IntRange(min=2),
    default=None,
    metavar="K",
    help="Stratified K-fold cross-validation of the train options (no model file).",
)
@click.option("--seed", type=int, default=0, help="--folds, --online: the shuffle's seed.")
@click.option(
    "--compare",
    default=None,
    metavar="MODELS",
    help="--folds: compare event models on the same folds, e.g. multinomial,bernoulli.",
)
@online_options
@train_options
@imap_options
@quiet_option
@plot_option
@grouped
def evaluate(
    model_path,
    output_format,
    unsure_below,
    jobs,
    folds,
    seed,
    compare,
    online,
    learn,
    tone_margin,
    quiet,
    plot,
    inputs,
    settings,
):
    """Score a model on labelled documents (given as in train).

    Prints accuracy, log-loss (and ROC AUC for two classes, the positive one being the
    class named spam, or the one beside ham, else the second), per-class precision, recall, F1 and support, macro averages and the
    confusion matrix (rows: true class, columns: predicted). With --unsure-below (or a
    model's own, train --unsure-below), documents below the threshold are counted as
    unsure and scored apart (log-loss and ROC AUC are over all documents).

    With --folds K there is no model file: the train options are cross-validated
    (stratified K-fold, shuffled with --seed) on the labelled documents, and the mean and
    standard deviation of accuracy and macro-F1 are printed (every fold with --format
    json). Each fold's model learns the other folds as train would (--learn tone: what one
    TONE pass over them learns). Of two classes it adds, summed over the folds, the positive
    class's documents missed and the other's flagged (with --calibration none and
    --unsure-below, those left unsure). --compare runs several event models on the same folds.

    With --online, the spam track's protocol (TREC): the documents, shuffled with --seed,
    are classified one at a time by the model (multinomial, or fisher) of those learned before, each
    then learned if it was misclassified (--learn errors), also if its log-odds were within
    --tone-margin of even (--learn tone: train on or near error), or always (--learn all),
    starting from -m MODEL if given, else from nothing with the train options (without
    --learn: tone for a model trained by a TONE pass, as the spam preset's, else errors). Prints the
    errors, how many of each class were taken for another (ham flagged, spam missed), the
    --unsure-below band's catch and 1-ROCA% (the area above the ROC curve, in percent).

    \b
      nbtext eval -m nbtext.model test/spam test/ham
      nbtext eval --table sms-test.tsv --unsure-below 0.9
      nbtext eval --format json test/spam test/ham | jq .accuracy
      nbtext eval --plot report.png test/spam test/ham
      nbtext eval --folds 10 --alpha 0.1 spam/ ham/
      nbtext eval --folds 5 --compare multinomial,bernoulli news/*
      nbtext eval --folds 5 --learn tone --features binary --min-count 1 spam/ ham/
      nbtext eval --online --learn errors spam/ ham/
      nbtext eval --online --learn tone --features binary --min-count 1 spam/ ham/
    """
    from nbtext.report.plots import check_plot_path, eval_plot, online_plot

    skipped = Skipped()
    with user_errors():
        if plot:
            check_plot_path(plot)
        # (what does nothing beside what, --folds with -m, --online with -m's train options: cli.options.REFUSED)
        start = model_path if not (folds or online) or typed_options(["model_path"]) else None
        if folds is not None:  # (train's --learn and --tone-margin: what each fold's model learns)
            settings = {**settings, "learn": learn, "tone_margin": tone_margin}
        from nbtext.jobs.eval_command import evaluation

        kind, result, curves, done = evaluation(
            load_model(start, settings["alpha"]) if start is not None else None,
            start,
            inputs,
            settings,
            unsure_below,
            jobs,
            folds,
            seed,
            compare,
            (learn, tone_margin) if online else None,  # (learn None: the model's own rule)
            skipped,
            lambda documents, label, paths, labelled: with_progress(documents, label, paths, quiet, labelled),
            fold_reporter(folds, quiet) if folds is not None else None,
            online_bar(quiet),
        )
    write_line(evaluation_text(kind, result, output_format, os.isatty(1)))
    if plot:  # after the report: a picture that cannot be drawn loses no figures
        drawn_to(plot, *((eval_plot, result, curves) if kind == "report" else (online_plot, result)))
    return skipped.summary(done)


# --- forget --------------------------------------------------------------------------
@cli.command()
@click.argument("paths", nargs=-1, required=True, type=PATH, metavar="PATH...")
@model_option
@max_bytes_option
@imap_options
@quiet_option
def forget(model_path, paths, max_bytes, quiet, imap_access):
    """Unlearn documents: each document the model's journal knows (by content) leaves the
    class it was learned under; one it does not know is named on stderr and left alone.
    Learning, forgetting and learning again gives back the same model.

    \b
      nbtext forget -m mail.model ~/Maildir/.Spam/cur/1700000000.M1.host:2,S
      nbtext forget -m mail.model wrongly-learned.mbox
    """
    from nbtext.reading.sources import path_documents

    started = time.perf_counter()
    with user_errors(), said_once_written() as say:
        skipped = Skipped(say)
        learned = changed_model(
            model_path,
            model_path,
            path_documents(paths, max_bytes=max_bytes, imap_access=imap_access),
            lambda documents: in_batches(documents, DEFAULT_BATCH),
            skipped,
            True,
            None if quiet else lambda doc: say(not_learned(doc)),
        )
    return learning_said(learned, model_path, time.perf_counter() - started, skipped, quiet, echo_to_stderr)


# --- merge ---------------------------------------------------------------------------
@cli.command()
@click.argument("models", nargs=-1, required=True, type=PATH, metavar="MODEL...")
@click.option("-o", "--output", type=PATH, default=None, help="File to write [default: $NBTEXT_MODEL or nbtext.model].")
@click.option(
    "--new-classes", is_flag=True, help="When -o is one of the MODELs: let the others add classes it does not have."
)
def merge(models, output, new_classes):
    """Merge models trained on parts of a corpus (train --shard, or folders trained apart)
    into one: the same file, byte for byte, as one training on all their documents. The
    models must have the same settings (calibrated ones are calibrated again, on their
    samples together); tf-idf models, and presence models with an UNK feature once tokens
    are pruned, are refused. Into one of its models (-o), new classes need --new-classes.

    \b
      nbtext merge -o mail.model part1.model part2.model part3.model
      nbtext merge -o all.model old.model this-month.model
      nbtext merge --new-classes -o mail.model mail.model recipes.model
    """
    from nbtext.jobs.merging import merge as merge_models
    from nbtext.modelfile.container import check_writable

    started = time.perf_counter()
    with user_errors(), said_once_written():
        output = output or os.environ.get("NBTEXT_MODEL", choices.DEFAULT_MODEL)
        check_writable(output)
        with locked(output):  # the output may be one of the models, and a learner may be at it
            into = [i for i, path in enumerate(models) if os.path.realpath(path) == os.path.realpath(output)]
            model = merge_models([load_to_change(p) for p in models], models, (into or [None])[0], new_classes)
            model.save(output)
    seconds = time.perf_counter() - started
    click.echo(learning_summary(output, seconds, model, merged=len(models)), err=True)
    return 0


# --- info ----------------------------------------------------------------------------
@cli.command()
@model_option
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Show the N tokens that most indicate each class.",
)
@click.option("--format", "output_format", type=click.Choice(choices.INFO_FORMATS), default="text")
@plot_option
def info(model_path, top, output_format, plot):
    """Describe a model: event model, settings, classes, vocabulary, UNK share.

    --top N lists, per class, the tokens with the largest log θ(token | class) −
    log θ(token | all other classes).

    \b
      nbtext info -m mail.model
      nbtext info --top 15 -m news.model
      nbtext info --format json | jq .classes
      nbtext info --plot tokens.png --top 20
    """
    from nbtext.report.plots import check_plot_path, info_plot
    from nbtext.report.text import model_summary

    with user_errors():
        if plot:
            check_plot_path(plot)
        model = load_to_change(model_path)
        summary = model.summary(top or (15 if plot else 0))
    if plot:  # (where it went said on stderr, as eval --plot says it)
        drawn_to(plot, info_plot, summary)
    if output_format == "json":
        write_line(json_line(summary))
        return 0
    lines, warnings = model_summary(summary, model_path, model.event)
    write_line("\n".join(lines))
    for warning in warnings:
        click.echo(f"nbtext: warning: {warning}", err=True)
    return 0


# --- filter --------------------------------------------------------------------------
@cli.command(name="filter")
@model_option
@alpha_override
@unsure_option
@max_bytes_option
@click.option(
    "--explain",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Add X-Nbtext-Evidence: the N tokens that decided, with their share of the log-odds.",
)
def filter_message(model_path, alpha, unsure_below, max_bytes, explain):
    """Mail filter: a message on stdin, the same message on stdout with two headers added.

    X-Nbtext-Class (the verdict) and X-Nbtext-Probability (of spam, whatever the verdict,
    for a model with a class spam), and X-Nbtext-Score (spam's log-odds / the model's
    cut-off, to sort and threshold by) go at the end of the header block; every other byte
    passes through unchanged, earlier X-Nbtext-* fields replaced. Exit status 0: tagged
    (X-Nbtext-Class: error if it cannot be classified); 1: the model is missing or not a
    valid model file (tagged error); 75: the message could not be written out whole, or a
    signal stopped the filter before it was. Any status but 0: procmail and Dovecot deliver
    the message as it came, untagged; maildrop keeps it queued (README: the exit status).

    \b
      nbtext filter -m ~/.nbtext/mail.model < message > tagged
      nbtext filter --unsure-below 0.9 < message | grep '^X-Nbtext'
      # procmail:  :0 fw
      #            | nbtext filter -m $HOME/.nbtext/mail.model
    """
    return filter_stdin(model_path, alpha, unsure_below, explain, max_bytes)


# --- serve ---------------------------------------------------------------------------
@cli.command(name="serve")
@model_option
@click.option(
    "--listen",
    "addresses",
    multiple=True,
    metavar="ADDRESS",
    help="Answer spamd's protocol (spamc) on HOST:PORT, [IPV6]:PORT or unix:PATH; again for more "
    f"[default: 127.0.0.1:{choices.SERVE_PORT}].",
)
@click.option(
    "--milter",
    "milter_addresses",
    multiple=True,
    metavar="ADDRESS",
    help="Answer the milter protocol (Postfix's smtpd_milters, Sendmail) on HOST:PORT, [IPV6]:PORT or "
    "unix:PATH; again for more. With --milter alone, no spamd listener is opened unless --listen is given.",
)
@click.option(
    "--milter-action",
    type=click.Choice(choices.MILTER_ACTIONS),
    default=choices.MILTER_ACTIONS[0],
    show_default=True,
    help="What the milter does with spam: tag it (the verdict's header lines, as filter), also put it on hold "
    "(quarantine), or refuse it with a 550 (reject).",
)
@click.option("--socket-mode", default=None, metavar="MODE", help="A unix:PATH socket's mode, in octal (e.g. 660).")
@click.option(
    "--allowed-ips",
    default=None,
    metavar="CIDR[,CIDR]",
    help="The clients answered over TCP, as spamd's -A; any other is closed and logged [default: loopback].",
)
@click.option(
    "--workers",
    type=click.IntRange(1, choices.SERVE_MAX_WORKERS),
    default=choices.SERVE_WORKERS,
    help="Worker processes (they share the model).",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=choices.SERVE_MAX_CONNECTIONS,
    metavar="N",
    help="Connections answered at once.",
)
@click.option(
    "--timeout",
    type=Number(0, 86400),
    default=choices.SERVE_TIMEOUT,
    metavar="SECONDS",
    help="A client that sends (or reads) nothing for this long is dropped (0: never, as spamd's).",
)
@click.option(
    "--max-size",
    type=click.IntRange(min=1),
    default=choices.SERVE_MAX_SIZE,
    metavar="BYTES",
    help="A larger message is passed on unjudged, as spamc does (its -s).",
)
@click.option("--allow-tell", is_flag=True, help="Let clients learn and forget (spamc -L / TELL), into MODEL.")
@alpha_override
@unsure_option
@max_bytes_option
def serve_command(
    model_path,
    addresses,
    milter_addresses,
    milter_action,
    socket_mode,
    allowed_ips,
    workers,
    max_connections,
    timeout,
    max_size,
    allow_tell,
    alpha,
    unsure_below,
    max_bytes,
):
    """Hold the model in memory and answer spamc (SpamAssassin's spamd protocol) and, with
    --milter, Postfix or Sendmail (the milter protocol): one resident process per model instead
    of one process per message.

    PROCESS (spamc) answers exactly what `nbtext filter` prints; CHECK (spamc -c) says Spam:
    True when the verdict is spam (unsure is not), with X-Nbtext-Score's pair as SCORE /
    THRESHOLD. The model file is checked (a stat) before each request: one replaced or grown by
    train --update is used at once; a new file that cannot be loaded leaves the old one serving.
    One log line per request on stderr. SIGTERM or SIGINT: requests in flight finish, exit
    status 0; SIGHUP: the model is loaded anew. docs/mail.md: nbtext serve.

    \b
      nbtext serve -m ~/.nbtext/mail.model
      nbtext serve -m mail.model --listen unix:/run/nbtext/spamd.sock --socket-mode 660
      nbtext serve -m mail.model --listen 0.0.0.0:7830 --allowed-ips 192.168.1.0/24 --workers 4
      spamc -p 7830 < message > tagged       # what nbtext filter prints
      spamc -c -p 7830 < message             # 12.3/3.5 and exit status 1: spam
      nbtext serve -m mail.model --milter 127.0.0.1:7831 --milter-action quarantine
    """
    from nbtext.delivery.server import DEFAULT_ADDRESS, serve

    with user_errors():
        mode = None
        if socket_mode is not None:
            try:
                mode = int(socket_mode, 8)
            except ValueError:
                mode = -1
            if not 0 <= mode <= 0o777:
                raise click.BadParameter(
                    f"{socket_mode!r} is not a mode in octal (e.g. 660)", param_hint="--socket-mode"
                )
        spamd = addresses or (() if milter_addresses else (DEFAULT_ADDRESS,))
        return serve(
            model_path,
            [(address, "spamd") for address in spamd] + [(address, "milter") for address in milter_addresses],
            milter_action=milter_action,
            socket_mode=mode,
            allowed_ips=allowed_ips,
            workers=workers,
            max_connections=max_connections,
            timeout=timeout,
            alpha=alpha,
            unsure_below=unsure_below,
            max_bytes=max_size,
            cut=max_bytes,
            allow_tell=allow_tell,
        )


# --- imap-scan -----------------------------------------------------------------------
@cli.command(name="imap-scan")
@click.argument("url", metavar="imap[s]://USER@HOST[:PORT]/FOLDER")
@model_option
@click.option("--move-to", default=None, metavar="FOLDER", help="Move spam to this folder of the server (e.g. Junk).")
@click.option("--keyword", default=None, metavar="WORD", help="Give spam this keyword (e.g. $Junk), moved or not.")
@click.option(
    "--state",
    "state_path",
    type=PATH,
    default=None,
    metavar="FILE",
    help="Where what was scanned is remembered, per folder  [default: ~/.nbtext/imap-scan.state].",
)
@click.option("--dry-run", is_flag=True, help="Say what would be done: nothing moved, flagged or remembered.")
@click.option(
    "--time-limit",
    type=Number(0, 86400, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop after SECONDS (the batches done remembered; the rest next run)  [default: no limit].",
)
@unsure_option
@max_bytes_option
@imap_options
@quiet_option
def imap_scan(
    url, model_path, move_to, keyword, state_path, dry_run, time_limit, unsure_below, max_bytes, quiet, imap_access
):
    """Classify the new messages of an IMAP folder and move spam away (as isbg does),
    for a mailbox on a server where no filter runs at delivery.

    The messages that arrived since the last scan (the state file remembers the folder's
    UIDVALIDITY and the highest UID scanned) are read without a \\Seen flag and
    classified; those called spam are moved to --move-to (MOVE, or COPY + \\Deleted +
    UID EXPUNGE) and/or given --keyword. Unsure ones (--unsure-below, or the model's
    own) stay. A move the server refuses leaves the message where it was, to be tried
    again next run; each message moved is first given the keyword $NbtextMoved, so that
    a retry never copies it twice and the Dovecot recipe does not learn it (docs/mail.md).
    A message the server would not send is tried again by the next runs, and given up in
    a warning line after 3. One line per message on stdout (name, label, probability, what was
    done), a summary on stderr; -q: nothing but errors (for cron). The password: as for
    any imap:// PATH (--password-command, $NBTEXT_IMAP_PASSWORD or ~/.netrc).

    \b
      nbtext imap-scan --dry-run -m mail.model --move-to Junk imaps://me@mail.example.org/INBOX
      nbtext imap-scan -q -m mail.model --move-to Junk imaps://me@mail.example.org/INBOX
      nbtext imap-scan --keyword '$Junk' --password-command 'pass show mail' imaps://me@mail.example.org/INBOX
      # crontab:  */5 * * * *  nbtext imap-scan -q --time-limit 240 -m ~/.nbtext/mail.model --move-to Junk imaps://me@HOST/INBOX
    """
    from nbtext.jobs.loading import model_bytes
    from nbtext.jobs.imapscan import default_state_path, scan
    from nbtext.modelfile.container import split
    from nbtext.report.output import tsv_field

    skipped = Skipped()

    def said(name, label, probability, action):
        if not quiet:  # (a move begun finished unjudged: no label, no probability, "-" for each)
            shown = ("-", "-") if label is None else (label, f"{probability:.4f}")
            write_line(f"{tsv_field(name)}\t{shown[0]}\t{shown[1]}\t{action}")

    with user_errors():
        # The model file is checked on every run, new mail or not (a wrong -m is never silent), and
        # loaded whole only for new mail.
        classes = split(model_bytes(model_path), model_path)[0].get("classes")
        if not (isinstance(classes, list) and all(isinstance(c, str) for c in classes)):
            classes = load_model(model_path).classes  # (says what is wrong with it)
        counts = scan(
            url,
            classes,
            lambda: load_model(model_path),
            move_to,
            keyword,
            state_path,
            unsure_below,
            dry_run,
            max_bytes,
            skipped,
            said,
            imap_access,
            time_limit,
        )
    if not quiet:
        done = "would be " if dry_run else ""
        what = " and ".join(([f"flagged {keyword}"] if keyword else []) + ([f"moved to {move_to}"] if move_to else []))
        click.echo(
            f"nbtext: {counted(counts['scanned'], 'new message')} in {url}: {counts['spam']:,} spam {done}{what}"
            + (
                f", {counted(counts['finished'], 'move')} an earlier run began {done}finished"
                if counts["finished"]
                else ""
            )
            + ("" if dry_run else f"; remembered in {state_path or default_state_path()}"),
            err=True,
        )
    return skipped.summary(counts["scanned"])


# --- check ---------------------------------------------------------------------------
@cli.command(name="check")
@model_option
@click.option(
    "--as-user",
    "as_user",
    metavar="USER",
    default=None,
    help="The user the mail system runs nbtext as (a name or uid; root may name any) [default: you].",
)
def check_setup(model_path, as_user):
    """Check once that a mail user can run this nbtext against a model: run as that user, it
    filters a test message with -m MODEL and says in one line the first thing that stops it
    (nbtext or its Python below a folder closed to the user, the model unreadable, the model's
    folder not writable for learning), or OK with the verdict. Exit status 0 OK, 1 not.

    \b
      sudo nbtext check --as-user vmail -m /home/alice/.nbtext/mail.model
      nbtext check -m ~/.nbtext/mail.model     # procmail, maildrop or cron running as you
    """
    from nbtext.errors import NbtextError
    from nbtext.jobs.setupcheck import check

    with user_errors():
        ok, line = check(as_user, model_path)
        if not ok:
            raise NbtextError(line)
    click.echo(line)
    return 0


def main():
    cli()


def echo_to_stderr(line):
    click.echo(line, err=True)
