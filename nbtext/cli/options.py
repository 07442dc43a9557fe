"""The command line's options, declared once: the train settings (from nbtext.choices) and
the options several commands share. Only nbtext.cli.commands uses them; with it and nbtext.cli.console,
the only modules that import click."""

import math
from collections import namedtuple

import click

from nbtext import choices
from nbtext.classifier.options_read import unread_by_all
from nbtext.classifier.settings import FOLDS_UNSURE_REFUSED, TONE_SPLIT_REFUSED, header_names
from nbtext.errors import NbtextError
from nbtext.reading.imapurl import ImapAccess


class Number(click.FloatRange):
    """A float option's value within its bounds, and finite: click's FloatRange lets nan
    through (no comparison with a bound is true), and inf past a bound of one side only.
    -0 is 0: equal to it, it was said "-0" and written -0.0."""

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx) + 0.0  # (-0.0 + 0.0 is 0.0: checked and said as 0)
        if number != number:
            self.fail("nan is not a number", param, ctx)
        if number in (math.inf, -math.inf):
            self.fail(f"{value} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self):
        """The bounds for --help: none when there are none (click's says "x<=None")."""
        return "" if self.min is None and self.max is None else super()._describe_range()


def options(*decorators):
    """One decorator of several click options (in the order given)."""

    def apply(f):
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply


def preset_said(name):
    """A train setting's help, ending with the spam preset's value for it, if it has one
    (click says the general default after it)."""
    text = choices.TRAIN_HELP[name]
    if name not in choices.SPAM_PRESET:
        return text
    value = choices.SPAM_PRESET[name]
    said = ",".join(value) if isinstance(value, tuple) else f"{value:g}" if isinstance(value, float) else value
    return f"{text} --preset spam: {said}."


def train_option(name):
    """The click option of a train setting, from nbtext.choices (type, default and help)."""
    flag, default, text = "--" + name.replace("_", "-"), choices.TRAIN_DEFAULTS[name], preset_said(name)
    if name in choices.TRAIN_FLAGS:
        return click.option(f"{flag}/--no-{flag[2:]}", default=None, help=text)
    kind = (
        click.Choice(choices.TRAIN_CHOICES[name])
        if name in choices.TRAIN_CHOICES
        else click.IntRange(1, choices.TRAIN_COUNTS[name])
        if name in choices.TRAIN_COUNTS
        else Number()
        if name == "alpha"
        else str
    )
    return click.option(
        flag,
        type=kind,
        default=",".join(default) if name == "headers" else default,
        help=text,
        **({"metavar": "SHARE"} if name == "max_ham_flagged" else {}),
    )


TRAIN_SETTINGS = [
    n
    for n in choices.TRAIN_DEFAULTS
    if n not in ("columns", "classes") and n not in choices.LEARNING_SETTINGS and n not in choices.DECISION_SETTINGS
]
train_options = options(*map(train_option, TRAIN_SETTINGS))
tone_margin_option = click.option(  # (train --learn tone's and eval --online --learn tone's)
    "--tone-margin",
    type=Number(min=0),
    default=None,  # (the event model's own: nbtext.stats.event_models, its flags.tone_margin)
    metavar="NATS",
    help=preset_said("tone_margin"),
)
learning_options = options(train_option("learn"), tone_margin_option)  # train's: which documents it learns
stored_unsure_option = click.option(  # train's: the model's own --unsure-below (unsure_option: a command's)
    "--unsure-below",
    type=Number(0, 1),
    default=None,
    metavar="P",
    help=preset_said("unsure_below"),
)
PATH = click.Path()  # a path: the shell completes it (_NBTEXT_COMPLETE=bash_source nbtext)
model_option = click.option(
    "-m",
    "--model-file",
    "model_path",
    type=PATH,
    default=choices.DEFAULT_MODEL,
    envvar="NBTEXT_MODEL",
    help="Model file to read (or set $NBTEXT_MODEL).",
)
alpha_override = click.option(
    "--alpha", type=Number(), default=None, help="Re-smooth with this λ instead of the model's (no retraining needed)."
)
jobs_option = click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help=(
        "Worker processes for reading, parsing and scoring.  [default: one; "
        "the cores (at most 4) for what is left after 0.2 s of work, if each "
        "document took 0.2 ms or more]"
    ),
)
train_jobs_option = click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help=(
        "Worker processes for reading, parsing, tokenizing and counting "
        "[default: the machine's cores, at most 4; -j 1: one process]."
    ),
)
shard_option = click.option(
    "--shard",
    default=None,
    metavar="K/N",
    help=("Train on part K of N of the documents (by a stable hash of each name), to 'nbtext merge' later."),
)
max_bytes_option = click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=choices.DEFAULT_MAX_BYTES,
    metavar="N",
    callback=lambda ctx, param, value: min(value, choices.MAX_MAX_BYTES),  # past it: no limit, as it is
    help="Read at most the first N bytes of each document (said once on stderr); filter passes the whole message on.",
)
unsure_option = click.option(
    "--unsure-below",
    type=Number(0, 1),
    default=None,
    metavar="P",
    help=(
        "Label 'unsure' when the winning class's probability is below P (a calibrated model's "
        "P means what it says) [default: the model's own, if it was trained with --unsure-below, "
        "as the spam preset's models are]."
    ),
)
TABLE_HEADER = "--table: whether the first row names the columns [default: when a column is given by name]."
table_file_options = options(
    click.option(
        "--table", type=PATH, default=None, help="Documents from a TSV (or .csv) file (- for stdin), one per row."
    ),
    click.option(
        "--text-col", default=None, help="--table: the text column, by header name or 1-based number [default: 2]."
    ),
)
table_option = options(table_file_options, click.option("--header/--no-header", default=None, help=TABLE_HEADER))
predict_options = options(
    click.option(
        "--format",
        "output_format",
        type=click.Choice(choices.PREDICT_FORMATS),
        default="tsv",
        help="tsv: name, label, probability; json: one object per line; fasttext: __label__spam 0.9987.",
    ),
    click.option("--proba", is_flag=True, help="Add every class's probability as TSV columns."),
    click.option(
        "-k",
        "--top",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="The N most probable labels, each with its probability (as fasttext predict-prob).",
    ),
    click.option(
        "--threshold",
        type=Number(0, 1),
        default=None,
        metavar="P",
        help="Leave out labels below probability P (of -k's, or the one label).",
    ),
    click.option("--lines", "separator", flag_value=b"\n", help="Each line is a document (-:N, PATH:N)."),
    click.option(
        "-0",
        "--null",
        "separator",
        flag_value=b"\0",
        help="NUL-separated documents (with --files-from: NUL-separated paths).",
    ),
    click.option(
        "--files-from",
        type=PATH,
        default=None,
        metavar="FILE",
        help="Classify the files listed in FILE (- for stdin), one a line, as tar and rsync do.",
    ),
    click.option(
        "--fasttext",
        "fasttext_input",
        type=PATH,
        default=None,
        metavar="FILE",
        help="Classify fastText lines (- for stdin; their __label__ words ignored, as fasttext predict does).",
    ),
    table_file_options,
    click.option(
        "--header/--no-header",
        default=None,
        help=TABLE_HEADER[:-1] + " (without --table: as --column-names, as it used to mean).",
    ),
    click.option("--column-names", is_flag=True, help="With --proba: first a #path line naming the columns."),
)
# labelled_input's keyword arguments, as grouped hands them to train and eval
INPUTS = ("class_dirs", "table", "fasttext", "label_col", "text_col", "header", "max_bytes", "imap_access")
labelled_options = options(
    click.argument("class_dirs", nargs=-1, type=PATH, metavar="[CLASS_DIR...]"),
    table_option,
    click.option("--label-col", default="1", help="--table: the label column, by header name or 1-based number."),
    click.option(
        "--fasttext",
        type=PATH,
        default=None,
        help="Documents from fastText lines (- for stdin): __label__spam some text.",
    ),
)


def grouped(command):
    """`command` takes its labelled inputs as one named parameter, `inputs` (labelled_input's
    keyword arguments, --max-bytes among them), and its train settings as another, `settings`
    (nbtext.jobs.training's options, --headers split): click hands every option to this
    wrapper, which groups them. (Put it under the click decorators, above the function.)"""
    from functools import wraps

    @wraps(command)
    def with_groups(*args, **params):
        from nbtext.reading.sources import class_names

        inputs = {name: params.pop(name) for name in INPUTS}
        settings = {name: params.pop(name) for name in TRAIN_SETTINGS}
        # the preset's settings not typed are its to choose (make_settings): None, as the Python API's
        untyped = {name for name in choices.SPAM_PRESET if not typed_options([name])}
        settings = {k: None if k in untyped else v for k, v in settings.items()}
        trained = trained_settings(click.get_current_context().command.name, params)
        params.update({name: None for name in trained & untyped if name in params})  # (train's --learn)
        urls = params.get("scheduler") is not None
        settings["classes"] = class_names(inputs["class_dirs"], urls)  # (--preset auto chooses by them)
        try:
            if settings["headers"] is not None:
                settings["headers"] = header_names(settings["headers"])
        except NbtextError as e:  # (a name no header line has: one line, as the command's own errors)
            raise click.ClickException(str(e)) from None
        trains = "update" in params and not params["update"]  # (eval trains with --folds or --online)
        if trains or params.get("folds") is not None or params.get("online"):
            _refuse_typed_unused(settings, params.get("compare"))
        return command(*args, inputs=inputs, settings=settings, **params)

    return with_groups


def _refuse_typed_unused(settings, compare=None):
    """A train option typed where it changes nothing for the model (for every model
    --compare names), its default value too: one line (classifier.options_read.unread_by_all)."""
    from nbtext.classifier.settings import preset_defaults

    ctx = click.get_current_context()
    typed = {n for n in TRAIN_SETTINGS if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE}
    models = [m.strip() for m in compare.split(",")] if compare else [settings["model"]]
    given = {name: value for name, value in settings.items() if value is not None}
    if unread := unread_by_all({**preset_defaults(given), **given}, models, typed):  # (as it will be trained)
        raise click.UsageError(f"{unread[0]} does nothing here: {unread[1]}; drop it")


def typed_options(names):
    """The options of `names` (parameter names) that the user typed on the command line, as
    they are spelled there (--format for output_format; -m/--model-file for model_path;
    -0/--null for separator when it holds NUL)."""
    ctx = click.get_current_context()

    def spelled(name):
        value = ctx.params.get(name)
        said_no = value is False  # --no-header, not --header
        same = [p for p in ctx.command.params if p.name == name and p.opts]
        if len(same) > 1:  # options of one parameter (--lines, -0): the one whose value it holds
            same = [p for p in same if getattr(p, "flag_value", None) == value] or same
        flags = ["/".join(p.secondary_opts if said_no and getattr(p, "secondary_opts", None) else p.opts) for p in same]
        return "/".join(flags) or "--" + name.replace("_", "-")

    return [spelled(n) for n in names if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE]


_BUT_ALPHA = [n for n in TRAIN_SETTINGS if n != "alpha"]  # (eval --alpha re-smooths the model it scores)
ONE_MESSAGE = [  # predict's options that --is (one message, its verdict in the exit status) does not read
    "output_format",
    "proba",
    "top",
    "threshold",
    "separator",
    "files_from",
    "fasttext_input",
    "table",
    "text_col",
    "header",
    "column_names",
    "explain",
    "jobs",
    "scheduler",
]


def may_name_imap(params):
    """Whether a command's PATHs (CLASS_DIR as LABEL=PATH too) name an IMAP folder, or may
    (predict's --files-from list)."""
    from nbtext.reading.sources import is_imap

    paths = params.get("class_dirs") or params.get("paths") or ()
    return params.get("files_from") is not None or any(
        is_imap(path) or is_imap(path.partition("=")[2]) for path in paths
    )


Refusal = namedtuple("Refusal", "commands when options says")
# The options a way of running a command does not take: an option typed where it would do
# nothing is a usage error of one line. Each row: the commands it is of, when it applies
# (of the command's parameters and the set of those typed), the options it refuses
# (parameter names) and what it says ({}: the option as typed). Rows are checked in order
# (Checked, before the command runs); the first option typed of the first row that applies
# is said. Which train options a model reads is classifier.options_read.OPTIONS_READ's.
REFUSED = {
    "train --update": Refusal(
        ("train",),
        lambda p, typed: p["update"],
        TRAIN_SETTINGS + list(choices.LEARNING_SETTINGS) + list(choices.DECISION_SETTINGS),
        "--update keeps the model's own settings; drop {}",
    ),
    "train or eval without --table": Refusal(
        ("train", "eval"),
        lambda p, typed: p["table"] is None,
        ["label_col", "text_col", "header"],
        "{} goes with --table (it names a column of the table)",
    ),
    "train without --update": Refusal(
        ("train",),
        lambda p, typed: not p["update"],
        ["model_path"],
        "{} goes with --update (the model to add to); train writes -o FILE",
    ),
    "train without --update, new classes": Refusal(
        ("train",),
        lambda p, typed: not p["update"],
        ["new_classes"],
        "{} goes with --update (a training makes every class)",
    ),
    "train --update, a shard": Refusal(
        ("train",),
        lambda p, typed: p["update"],
        ["shard"],
        "{} trains a new part to merge; it does not go with --update",
    ),
    "train --learn tone, split": Refusal(
        ("train",),
        lambda p, typed: p["learn"] == "tone",
        ["shard", "scheduler"],
        TONE_SPLIT_REFUSED,
    ),
    "train --shard, a budget": Refusal(
        ("train",),
        lambda p, typed: p["shard"] is not None,
        ["max_ham_flagged"],
        "{} does not go with --shard (its cut-off is chosen on the out-of-fold probabilities of the whole corpus)",
    ),
    "train (eval, predict, forget) without an IMAP PATH": Refusal(
        ("train", "eval", "predict", "forget"),
        lambda p, typed: not may_name_imap(p),
        ["password_command", "ca_file", "plaintext_login"],
        "{} goes with imap:// or imaps:// PATHs (it reaches their server)",
    ),
    "eval without --online or --folds": Refusal(
        ("eval",),
        lambda p, typed: not p["online"] and p["folds"] is None,
        ["learn", "tone_margin"],
        "{} goes with --online (what the run learns) or --folds (what each fold's model learns)",
    ),
    "eval --folds, learning on error": Refusal(
        ("eval",),
        lambda p, typed: p["folds"] is not None and p["learn"] == "errors",
        ["learn"],
        "{} errors goes with --online: --folds trains each fold's model as train does (all, or tone)",
    ),
    "eval without --folds": Refusal(
        ("eval",),
        lambda p, typed: p["folds"] is None,
        ["compare"],
        "{} goes with --folds (the event models on the same folds)",
    ),
    "eval --folds, a plot": Refusal(
        ("eval",),
        lambda p, typed: p["folds"] is not None,
        ["plot"],
        "{} does not go with --folds (it draws a model's report)",
    ),
    "eval": Refusal(
        ("eval",),
        lambda p, typed: True,
        ["max_ham_flagged"],
        "{} is train's: train a model with it, then evaluate that (eval -m MODEL)",
    ),
    "eval -m": Refusal(
        ("eval",),
        lambda p, typed: p["folds"] is None and not p["online"],
        _BUT_ALPHA + ["seed"],
        "{} goes with --folds or --online",
    ),
    "eval --compare": Refusal(
        ("eval",), lambda p, typed: p["compare"], ["model"], "{} does not go with --compare: it names the event models"
    ),
    "eval --online -m": Refusal(
        ("eval",),
        lambda p, typed: p["online"] and "model_path" in typed,
        _BUT_ALPHA,
        "{} goes with --online from nothing, not with -m MODEL",
    ),
    "eval --folds --online": Refusal(
        ("eval",),
        lambda p, typed: p["folds"] is not None,
        ["online"],
        "{} and --folds are two ways to evaluate: give one",
    ),
    "eval --folds, calibrated": Refusal(
        ("eval",),
        lambda p, typed: p["folds"] is not None and p["calibration"] != "none",
        ["unsure_below"],
        FOLDS_UNSURE_REFUSED,
    ),
    "eval --folds, a model": Refusal(
        ("eval",),
        lambda p, typed: p["folds"] is not None,
        ["model_path"],
        "--folds cross-validates the train options and reads no model: {} goes with eval of a model "
        "(eval -m MODEL) or --online",
    ),
    "predict --is": Refusal(
        ("predict",),
        lambda p, typed: p["is_label"] is not None,
        ONE_MESSAGE,
        "{} does not go with --is (it classifies one message)",
    ),
    "predict without --is": Refusal(
        ("predict",), lambda p, typed: p["is_label"] is None, ["verbose"], "{} goes with --is"
    ),
    "predict without --proba": Refusal(
        ("predict",), lambda p, typed: not p["proba"], ["column_names"], "{} goes with --proba (it names its columns)"
    ),
    "predict without --table": Refusal(
        ("predict",),
        lambda p, typed: p["table"] is None,
        ["text_col"],
        "{} goes with --table (it names a column of the table)",
    ),
    "predict without --table or --proba": Refusal(
        ("predict",),
        lambda p, typed: p["table"] is None and not p["proba"],
        ["header"],
        "{} goes with --table (its first row names the columns), or with --proba (as --column-names)",
    ),
    "predict --files-from": Refusal(
        ("predict",),
        lambda p, typed: p["files_from"] is not None and p["separator"] == b"\n",
        ["separator"],
        "{} does not go with --files-from (its files are read whole; -0 reads a NUL-separated list)",
    ),
    "predict --fasttext or --table": Refusal(
        ("predict",),
        lambda p, typed: p["fasttext_input"] is not None or p["table"] is not None,
        ["separator"],
        "{} does not go with --fasttext or --table (they are read a line or a row a document)",
    ),
    "predict --format fasttext": Refusal(
        ("predict",),
        lambda p, typed: p["output_format"] == "fasttext",
        ["explain"],
        "{} does not go with --format fasttext (which has no place for it; tsv or json)",
    ),
    "predict -k or --threshold in TSV": Refusal(
        ("predict",),
        lambda p, typed: p["output_format"] == "tsv" and (p["top"] or p["threshold"] is not None),
        ["proba"],
        "{} does not go with -k or --threshold in TSV (their ranked labels vary in number: no fixed "
        "columns for every class's probability; --format json has both)",
    ),
}


def refuse_what_does_nothing(ctx):
    """A usage error (exit 2; 3 under predict --is), one line, for an option typed where a
    row of REFUSED says it does nothing in this command."""
    typed = {n for n in ctx.params if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE}
    params = _as_trained(ctx.command.name, ctx.params, typed)
    for refusal in REFUSED.values():
        if ctx.command.name in refusal.commands and refusal.when(params, typed):
            if said := typed_options(refusal.options):
                raise click.UsageError(refusal.says.format(said[0]))


def trained_settings(command, params):
    """The names of a command's parameters that are train settings: train's own (but with
    --update, which keeps the model's), and eval's when it trains (--folds: its --learn and
    --tone-margin too, what each fold's model learns; --online: the model's settings, its
    --learn being the run's rule)."""
    if command == "train" and not params.get("update"):
        return set(TRAIN_SETTINGS) | set(choices.LEARNING_SETTINGS) | set(choices.DECISION_SETTINGS)
    if command == "eval" and params.get("folds") is not None:
        return set(TRAIN_SETTINGS) | set(choices.LEARNING_SETTINGS)
    if command == "eval" and params.get("online"):
        return set(TRAIN_SETTINGS)
    return set()


def _as_trained(command, params, typed):
    """A command's `params` with its train settings not `typed` as its training takes them
    (REFUSED's rows read those): its preset's (classifier.settings.preset_defaults), where it
    gives one."""
    settings = trained_settings(command, params)
    if not settings - typed:
        return params
    from nbtext.classifier.settings import preset_defaults
    from nbtext.reading.sources import class_names

    given = {name: params[name] for name in settings & typed}
    urls = params.get("scheduler") is not None
    preset = preset_defaults({**given, "classes": class_names(params.get("class_dirs", ()), urls)})
    return {**params, **{name: value for name, value in preset.items() if name in settings - typed}}


class Checked(click.Command):
    """A command whose options are checked against REFUSED before it runs (every command of
    nbtext.cli.commands is one: its group's command_class)."""

    def invoke(self, ctx):
        refuse_what_does_nothing(ctx)
        return super().invoke(ctx)


online_options = options(
    click.option(
        "--online", is_flag=True, help="The spam track's protocol: classify in order, then learn (see above)."
    ),
    click.option(
        "--learn",
        type=click.Choice(choices.ONLINE_LEARNING),
        default=None,  # (the online run's errors, --folds' all: each its own)
        help=(
            "--online: learn each document when misclassified (errors), also when its log-odds "
            "are within --tone-margin of even or it is the first of its class (tone: train on or near error), "
            "or every one (all) [default: "
            "tone for a model trained by a TONE pass, as the spam preset's, else errors]. --folds: "
            "each fold's model learns as train --learn does (all, the default but for the spam preset's "
            "tone, or tone: what one TONE pass learns)."
        ),
    ),
    tone_margin_option,
)
scheduler_option = click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    envvar="DASK_SCHEDULER_ADDRESS",
    help=(
        "Run on the Dask cluster of this scheduler, e.g. tcp://host:8786 (or $DASK_SCHEDULER_ADDRESS); "
        "PATHs may then be URLs (s3://bucket/spam/). Needs pip install 'nbtext[dask]'."
    ),
)
quiet_option = click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help=(
        "No progress bar (one is drawn on a terminal for jobs of over half a second); "
        "train --update and forget say nothing when they succeed (for cron)."
    ),
)
plot_option = click.option(
    "--plot",
    type=PATH,
    default=None,
    metavar="FILE",
    help="Draw the pictures to FILE.png, FILE.svg or FILE.pdf (pip install 'nbtext[plot]').",
)


def imap_options(command):
    """--password-command, --ca-file and --plaintext-login, handed to `command` as one value, `imap_access`
    (nbtext.reading.imapurl.ImapAccess), which it passes down to the reader with its paths
    (train's and eval's among their `inputs`: put it above `grouped`; tests/test_structure.py checks it)."""
    from functools import wraps

    @wraps(command)
    def with_access(*args, password_command, ca_file, plaintext_login, **params):
        return command(*args, imap_access=ImapAccess(password_command, ca_file, plaintext_login), **params)

    return options(
        click.option(
            "--password-command",
            metavar="CMD",
            help=(
                "imap:// and imaps:// PATHs: the password is the first line CMD prints, e.g. 'pass show mail' "
                "[default: $NBTEXT_IMAP_PASSWORD, else ~/.netrc]."
            ),
        ),
        click.option(
            "--ca-file",
            type=click.Path(exists=True, dir_okay=False),
            help="imaps:// PATHs: trust the server certificates this PEM file's authorities sign (not the system's).",
        ),
        click.option(
            "--plaintext-login",
            metavar="HOST",
            multiple=True,
            help=(
                "imap:// PATHs: send the password to HOST even where it offers no STARTTLS (in clear text: only on "
                "a network of your own; loopback is allowed anyway) [default: $NBTEXT_IMAP_PLAINTEXT_LOGIN]."
            ),
        ),
    )(with_access)
