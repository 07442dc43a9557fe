"""Every train option either changes what the model computes or is refused in one line:
none is taken and ignored (classifier.options_read.unused_options, which make_settings and
cross-validation's comparison of models both go through)."""

import random
import re

import numpy as np
import pytest

import nbtext
from nbtext.errors import NbtextError
from nbtext.stats.event_models import EVENT_MODELS

from conftest import ROOT, one_line_error, run, trained_on_mail

MAIL = ROOT / "corpora" / "mail"
TEXT_MODELS = ("multinomial", "bernoulli", "complement", "gaussian")
# a value of each option that changes a text model that reads it, on the corpus below
OPTIONS = [
    ("alpha", 0.5),
    ("prior", "uniform"),
    ("prior", "empirical"),
    ("min_count", 3),
    ("max_features", 20),
    ("ngrams", 2),
    ("unknown", "ignore"),
    ("unknown", "unk"),
    ("input", "text"),
    ("headers", "subject"),
    ("features", "counts"),
    ("features", "binary"),
    ("features", "tfidf"),
    ("tf", "log"),
    ("tf", "raw"),
    ("idf", False),
    ("length_norm", False),
    ("weight_norm", True),
]
SPAM = "free prize money cash offer click now winner claim credit cheap pills deal".split()
HAM = "meeting notes lunch report project schedule review budget team agenda friday draft".split()


def _message(rng, words, sender):
    body = " ".join(rng.choice(words + SPAM[:3] + HAM[:3]) for _ in range(rng.randint(5, 30)))
    return (
        f"From: {sender}@{rng.choice(['example.org', 'mail.test'])}\nTo: someone@example.org\n"
        f"Subject: {' '.join(rng.sample(words, 3))}\n\n{body}\n"
    ).encode()


def _corpus(seed, n_spam, n_ham):
    rng = random.Random(seed)
    documents = [_message(rng, SPAM, rng.choice(["deals", "promo"])) for _ in range(n_spam)]
    documents += [_message(rng, HAM, rng.choice(["alice", "bob"])) for _ in range(n_ham)]
    return documents, ["spam"] * n_spam + ["ham"] * n_ham


TRAIN, TEST = _corpus(1, 25, 45), _corpus(2, 10, 10)  # unbalanced: every prior differs
GENERAL = {"preset": "general"}  # the general defaults (its spam/ham classes would choose a spam filter's)


def _log_proba(**options):
    return nbtext.train(*TRAIN, calibration="none", **GENERAL, **options).predict_log_proba(TEST[0])


def _default(event_model, option):
    """The value a text model takes for `option` when it is not given."""
    features = EVENT_MODELS[event_model].flags.default_features
    if option == "unknown":
        return "ignore" if features["features"] == "tfidf" else "unk"
    return features.get(option)


@pytest.mark.parametrize(
    "event_model, option, value",
    [  # (each model's own defaults left out)
        (model, option, value) for model in TEXT_MODELS for option, value in OPTIONS if value != _default(model, option)
    ],
)
def test_an_option_changes_the_model_or_is_refused(event_model, option, value):
    try:
        changed = _log_proba(model=event_model, **{option: value})
    except NbtextError as e:  # refused, in one line, and only where it does nothing or cannot be
        assert "\n" not in str(e) and (event_model, option, value) in REFUSED, str(e)
        return
    assert (event_model, option, value) not in REFUSED, "taken where it changes nothing"
    assert not np.array_equal(changed, _log_proba(model=event_model)), f"{option}={value!r} was ignored"


# what each model cannot take or would not read: refused (every other case must change the model)
REFUSED = {
    ("multinomial", "tf", "log"),
    ("multinomial", "idf", False),
    ("multinomial", "length_norm", False),
    ("multinomial", "weight_norm", True),
    ("bernoulli", "features", "counts"),
    ("bernoulli", "features", "tfidf"),
    ("bernoulli", "tf", "log"),
    ("bernoulli", "weight_norm", True),
    ("complement", "prior", "uniform"),
    ("complement", "prior", "empirical"),
    ("complement", "unknown", "unk"),
    ("gaussian", "unknown", "unk"),
    ("gaussian", "features", "counts"),
    ("gaussian", "features", "binary"),
    ("gaussian", "weight_norm", True),
}


def test_a_typed_default_that_does_nothing_is_refused_as_any_other_value(tmp_path):
    """The command line knows what was typed: --tf raw and --headers with their default
    values were refused where --min-count 2 was not (categorical), nor --input text with
    the default --headers spelled out."""
    folders = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    one_line_error(
        run("train", "-o", tmp_path / "m", "--input", "text", "--headers", "subject,from,to,content-type", *folders),
        "--headers does nothing here",
    )
    one_line_error(
        run("eval", "--folds", "2", "--model", "complement", "--prior", "smoothed", *folders),
        "--prior does nothing here",
    )
    assert run("train", "-o", tmp_path / "m", "--features", "counts", "--input", "auto", *folders).exit_code == 0


def test_an_option_that_does_nothing_is_refused_by_name():
    for options, said in [
        ({"input": "text", "headers": "subject"}, "--headers does nothing here: "),
        ({"tf": "log"}, "--tf does nothing here: it shapes tf-idf features, and these are counts"),
        ({"model": "bernoulli", "idf": False}, "--no-idf does nothing here"),
        ({"weight_norm": True}, "--weight-norm does nothing here: it normalizes complement NB's"),
        ({"model": "complement", "prior": "uniform"}, "--prior does nothing here"),
        ({"model": "gaussian", "prior": "uniform", "alpha": 0.5}, "--alpha does nothing here"),
    ]:
        with pytest.raises(NbtextError, match=said):
            _log_proba(**options)


@pytest.mark.parametrize(
    "args",
    [
        ["--ngrams", "2"],
        ["--min-count", "3"],
        ["--features", "binary"],
        ["--no-idf"],
        ["--unknown", "ignore"],
        ["--input", "text"],
        ["--headers", "subject"],
        ["--max-features", "5"],
        ["--min-count", "2"],
        ["--ngrams", "1"],
    ],
)  # (defaults too)
def test_a_table_model_refuses_the_text_options(tmp_path, args):
    table = tmp_path / "t.tsv"
    table.write_text("label\tcolor\tsize\nspam\tred\tbig\nham\tblue\tsmall\nspam\tred\tsmall\nham\tblue\tbig\n")
    for command in (["train", "-o", tmp_path / "m"], ["eval", "--folds", "2"]):
        result = run(*command, "--model", "categorical", "--table", table, "--label-col", "label", *args)
        one_line_error(result, f"{args[0]} does nothing here: --model categorical takes a table's columns whole")


def test_compared_models_each_take_the_options_they_read_and_none_is_read_by_no_one():
    folders = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    ok = run(
        "eval", "--folds", "3", "--compare", "multinomial,complement", "--weight-norm", "--prior", "uniform", *folders
    )
    assert ok.exit_code == 0, ok.output
    one_line_error(
        run("eval", "--folds", "3", "--compare", "multinomial,bernoulli", "--weight-norm", *folders),
        "--weight-norm does nothing here",
    )
    one_line_error(run("eval", "--online", "--tf", "log", *folders), "--tf does nothing here")
    for compare, option in (
        ("multinomial,bernoulli", ["--features", "tfidf"]),  # bernoulli keeps its presence
        ("bernoulli,gaussian", ["--features", "tfidf"]),
        ("multinomial,gaussian", ["--features", "counts"]),
        ("multinomial,complement", ["--unknown", "unk"]),
    ):  # complement's tf-idf has no UNK
        result = run("eval", "--folds", "3", "--compare", compare, *option, *folders)
        assert result.exit_code == 0, (compare, option, result.stderr)
    one_line_error(
        run("eval", "--folds", "3", "--compare", "bernoulli,gaussian", "--features", "counts", *folders),
        "--features does nothing here: --model bernoulli takes no --features counts",
    )
    for one_model, said in (
        (["--model", "bernoulli", "--features", "tfidf"], "models token presence"),
        (["--features", "tfidf", "--unknown", "unk"], "drops unknown tokens"),
    ):
        for command in (["eval", "--folds", "3"], ["train", "-o", MAIL / "never.model"]):  # one model: as train
            one_line_error(run(*command, *one_model, *folders), said)


def test_the_label_column_is_not_the_text_column(tmp_path):
    table = tmp_path / "t.tsv"
    table.write_text("label\ttext\nspam\tfree prize\nham\tlunch at noon\n")
    for label, text in (("2", "2"), ("text", "2"), ("label", "1")):
        for command in (["train", "-o", tmp_path / "m"], ["eval", "--folds", "2"]):
            result = run(*command, "--table", table, "--label-col", label, "--text-col", text)
            one_line_error(result, "are the same column")
    (tmp_path / "r.csv").write_text("review,stars\ngreat film,5\nbad film,1\n")  # (the label second, by name)
    one_line_error(
        run("train", "--table", tmp_path / "r.csv", "--label-col", "stars", "-o", tmp_path / "m"),
        "--label-col stars is column 2 of",
    )


@pytest.mark.parametrize(
    "args, said",
    [
        (["--is", "ham", "--fasttext", "{ft}"], "--fasttext does not go with --is"),
        (["--is", "ham", "--table", "{tsv}"], "--table does not go with --is"),
        (["--is", "ham", "--files-from", "{lines}"], "--files-from does not go with --is"),
        (["--is", "ham", "--lines", "{lines}"], "does not go with --is"),
        (["--is", "ham", "--threshold", "0.9"], "--threshold does not go with --is"),
        (["--is", "ham", "--format", "json"], "--format does not go with --is"),
        (["-v", "{lines}"], "--verbose goes with --is"),
        (["--column-names", "{lines}"], "--column-names goes with --proba"),
        (["--text-col", "3", "--lines", "{lines}"], "--text-col goes with --table"),
        (["--lines", "--files-from", "{lines}"], "does not go with --files-from"),
        (["--lines", "--fasttext", "{ft}"], "does not go with --fasttext or --table"),
        (["--explain", "2", "--format", "fasttext", "{lines}"], "--explain does not go with --format fasttext"),
        (["--proba", "--column-names", "--threshold", "0.5", "{lines}"], "--proba does not go with -k or --threshold"),
        (["--proba", "-k", "2", "{lines}"], "--proba does not go with -k or --threshold"),
        (["--no-header", "{lines}"], "--no-header goes with --table"),
        (["-0", "--fasttext", "{ft}"], "-0/--null does not go with --fasttext or --table"),
        (["--lines", "--table", "{tsv}"], "--lines does not go with --fasttext or --table"),
    ],
)
def test_predict_refuses_an_option_that_would_do_nothing(demo_model, tmp_path, args, said):
    """predict --is read stdin whatever input option was given (a wrong exit status on the
    wrong text); -v, --column-names, --text-col, --lines and --explain were ignored beside
    options they do not go with."""
    files = {"ft": tmp_path / "h.ft", "tsv": tmp_path / "t.tsv", "lines": tmp_path / "l.txt"}
    files["ft"].write_text("__label__ham meeting at noon\n")
    files["tsv"].write_text("spam\tfree prize\n")
    files["lines"].write_text("meeting at noon\nfree prize now\n")
    result = run("predict", "-m", demo_model, *[a.format(**files) for a in args], input="free prize cash now")
    one_line_error(result, said)
    assert result.exit_code == (3 if "--is" in args else 2) and result.stdout == ""


def test_predict_keeps_the_combinations_that_mean_something(demo_model, tmp_path):
    listed = tmp_path / "list"
    (tmp_path / "a.txt").write_text("free prize now")
    listed.write_bytes(str(tmp_path / "a.txt").encode() + b"\0")
    assert run("predict", "-m", demo_model, "-0", "--files-from", listed).exit_code == 0  # a NUL-separated list
    legacy = run("predict", "-m", demo_model, "--proba", "--header", tmp_path / "a.txt")  # --header: the #path line
    assert legacy.exit_code == 0 and legacy.stdout.startswith("#path\t")
    verdict = run("predict", "-m", demo_model, "--is", "spam", "-v", "--unsure-below", "0.5", input="free prize")
    assert verdict.exit_code == {"spam": 0, "ham": 1, "unsure": 2}[verdict.stdout.split("\t")[0]]


@pytest.mark.parametrize(
    "args, said",
    [
        (["train", "-m", "{tmp}/m", "{spam}", "{ham}"], "-m/--model-file goes with --update"),
        (["eval", "--folds", "3", "--learn", "errors", "{spam}", "{ham}"], "--learn errors goes with --online"),
        (["eval", "-m", "{model}", "--learn", "all", "{spam}", "{ham}"], "--learn goes with --online"),
        (["eval", "-m", "{model}", "--compare", "multinomial,bernoulli", "{spam}"], "--compare goes with --folds"),
        (["eval", "--online", "--compare", "multinomial,bernoulli", "{spam}", "{ham}"], "--compare goes with --folds"),
    ],
)
def test_train_and_eval_refuse_an_option_that_would_do_nothing(demo_model, tmp_path, monkeypatch, args, said):
    """train -m without --update wrote ./nbtext.model; eval --learn without --online was
    ignored; --compare named --online as its home, which refused it."""
    where = {"tmp": tmp_path, "model": demo_model, "spam": MAIL / "train" / "spam", "ham": MAIL / "train" / "ham"}
    monkeypatch.chdir(tmp_path)
    result = run(*[a.format(**where) for a in args])
    one_line_error(result, said)
    assert result.exit_code == 2 and sorted(p.name for p in tmp_path.iterdir()) == []  # ./nbtext.model neither


@pytest.mark.parametrize("extra", [["--text-col", "时间"], ["--no-header"], ["--header"]])
def test_a_table_model_reads_its_columns_by_name_and_refuses_text_col_and_header(tmp_path, extra):
    """--text-col and --[no-]header were accepted and ignored with a categorical model (its
    features are every column but the label, by the names in the first row)."""
    table = ROOT / "corpora" / "dating" / "train.tsv"
    model = tmp_path / "d.model"
    assert run("train", "--model", "categorical", "--table", table, "--label-col", "约会", "-o", model).exit_code == 0
    for args in (
        ["train", "--model", "categorical", "--label-col", "约会", "-o", tmp_path / "x"],
        ["eval", "--folds", "2", "--model", "categorical", "--label-col", "约会"],
        ["eval", "-m", model, "--label-col", "约会"],
        ["predict", "-m", model],
    ):
        one_line_error(run(*args, "--table", table, *extra), f"{extra[0]} does nothing for a categorical model")


def test_a_label_a_format_cannot_hold_is_refused(tmp_path):
    """A class named ' ' became a blank X-Nbtext-Class; 'my spam' wrote __label__my spam,
    which no fastText reader parses back."""
    spam, ham = MAIL / "train" / "spam", MAIL / "train" / "ham"
    one_line_error(run("train", "-o", tmp_path / "b", f" ={spam}", f"ham={ham}"), "a class label must be a name")
    for name in ("my spam", " spam "):
        assert run("train", "-o", tmp_path / "s", f"{name}={spam}", f"ham={ham}").exit_code == 0
        one_line_error(
            run("predict", "-m", tmp_path / "s", "-k", "2", "--format", "fasttext", input="free prize"),
            f"the class {name!r} holds a space, which fastText's labels cannot",
        )
    assert run("train", "-o", tmp_path / "s", f"my spam={spam}", f"ham={ham}").exit_code == 0
    assert run("predict", "-m", tmp_path / "s", "-k", "2", input="free prize").stdout.split("\t")[1] == "my spam"


def test_the_api_takes_headers_as_the_command_line_spells_them():
    """headers='subject,from' (train --headers' spelling) was taken letter by letter."""
    docs = ["Subject: free\nFrom: a@b.c\n\nprize now", "Subject: lunch\nFrom: d@e.f\n\nnotes"]
    for headers in ("subject,from", ["subject", "from"], ("subject", "from")):
        model = nbtext.train(docs, ["spam", "ham"], min_count=1, calibration="none", headers=headers)
        assert model.settings["tokenizer"]["headers"] == ["subject", "from"]
    from nbtext.choices import DEFAULT_HEADERS  # the default, however spelled, is no option given

    for headers in (",".join(DEFAULT_HEADERS), list(DEFAULT_HEADERS)):
        nbtext.train(docs, ["spam", "ham"], min_count=1, calibration="none", input="text", headers=headers)


def test_alpha_on_a_model_where_it_enters_nothing_is_refused(tmp_path):
    """predict, eval and filter -m a gaussian model of an empirical prior took --alpha and did
    nothing with it, where train refused the same; every re-smoothing goes through
    NaiveBayes.with_alpha, which now refuses it."""
    model = tmp_path / "g.model"
    trained_on_mail(model, "--model", "gaussian", "--prior", "empirical")
    for args in (
        ["predict", "-m", model, "--alpha", "0.5"],
        ["eval", "-m", model, "--alpha", "0.5", MAIL / "test" / "spam", MAIL / "test" / "ham"],
    ):
        one_line_error(run(*args, input="free prize"), "--alpha does nothing for this model")
    with pytest.raises(NbtextError, match="--alpha does nothing"):
        nbtext.load(model).with_alpha(0.5)
    assert run("predict", "-m", model, input="free prize").exit_code == 0


@pytest.mark.parametrize("value, says", [("nan", "nan"), ("inf", "inf is not"), ("-inf", "-inf is not")])
def test_every_float_option_of_every_command_refuses_nan_and_inf_in_one_line(value, says):
    """click's FloatRange and float let nan through (no comparison with a bound is true), and
    inf past a one-sided bound (train --tone-margin inf reached the settings; predict --alpha
    inf was taken): every float option is an options.Number, which refuses both before
    anything is read."""
    import click

    from nbtext.cli.commands import cli
    from nbtext.cli.options import Number

    floats = [
        (name, param.opts[-1])
        for name, command in cli.commands.items()
        for param in command.params
        if isinstance(param, click.Option) and isinstance(param.type, (click.types.FloatParamType, click.FloatRange))
    ]
    assert len(floats) >= 4  # --unsure-below, --threshold, --alpha of predict, --tone-margin
    for name, option in floats:
        command = cli.commands[name]
        assert isinstance(next(p for p in command.params if option in p.opts).type, Number), (name, option)
        one_line_error(run(name, option, value), says)


def test_no_help_line_says_none():
    """An option's help never shows a bound or a default of None (an unbounded Number showed
    [x<=None] under train's, predict's and filter's --alpha)."""
    from nbtext.cli.commands import cli

    for name in cli.commands:
        page = run(name, "--help")
        assert page.exit_code == 0
        assert "None" not in page.output, (name, [line for line in page.output.splitlines() if "None" in line])


@pytest.mark.parametrize(
    "args, says",
    [
        (["--update", "-m", "x.model", "--shard", "1/2"], "--shard trains a new part to merge"),
        (["--learn", "tone", "--shard", "1/2"], "--shard does not go with it"),
        (["--learn", "tone", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler does not go with it"),
        (["--shard", "1/2", "--max-ham-flagged", "1%", "--learn", "all"], "--max-ham-flagged does not go with --shard"),
        (["--shard", "1/2"], "--shard does not go with it"),  # (the spam preset's TONE pass)
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler does not go with it"),
    ],
)
def test_options_that_do_not_go_together_are_usage_errors_before_anything_is_read(tmp_path, args, says):
    """Train's "X does not go with Y" refusals are rows of cli.options.REFUSED: a usage error
    (exit 2) of one line before any document or model is read (these were exit 1, --shard's
    after the model file's settings were made, --learn tone's after the corpus was listed)."""
    result = run("train", "-o", tmp_path / "m", *args, MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 2 and says in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("command", ["train", "eval", "predict", "forget"])
@pytest.mark.parametrize(
    "option, value",
    [("--password-command", "echo secret"), ("--ca-file", __file__), ("--plaintext-login", "mail.example.org")],
)
def test_imap_access_without_an_imap_path_is_a_usage_error(tmp_path, command, option, value):
    """--password-command and --ca-file reach an IMAP server: typed with none named, they did
    nothing and the command ran; named as LABEL=imap://..., they are taken (the connection
    then fails in one line: nothing listens on port 9)."""
    spam, ham = str(MAIL / "train" / "spam"), str(MAIL / "train" / "ham")
    paths = {"train": [spam, ham], "eval": [spam, ham], "predict": [spam], "forget": [spam]}[command]
    model = ["-m", tmp_path / "none.model"] if command != "train" else ["-o", tmp_path / "m"]
    result = run(command, *model, option, value, *paths)
    assert result.exit_code == 2 and f"{option} goes with imap://" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1
    if command in ("train", "eval"):
        result = run(command, *model, option, value, "spam=imap://u@127.0.0.1:9/INBOX", ham)
        assert result.exit_code != 2 and "goes with" not in result.stderr, result.stderr


def test_each_refusal_names_options_its_commands_take():
    """Every row of cli.options.REFUSED (the options a way of running a command does not take)
    is of commands that exist and names options each of them has: a row of a misspelled
    command or option would never refuse anything."""
    from nbtext.cli.commands import cli
    from nbtext.cli.options import REFUSED

    for way, refusal in REFUSED.items():
        assert way.split()[0] in refusal.commands
        for command in refusal.commands:
            taken = {p.name for p in cli.commands[command].params}
            assert set(refusal.options) <= taken, (way, command, set(refusal.options) - taken)


@pytest.mark.parametrize(
    "headers, said",
    [
        ("x-spam-*", "a * stands alone"),
        ("subject,*-flag", "a * stands alone"),
        ("Subject:", "is no header line's name"),
        ("reply to", "is no header line's name"),
        ("sujet-é", "is no header line's name"),
    ],
)
def test_headers_that_name_no_header_line_are_refused(tmp_path, headers, said):
    """--headers 'x-spam-*' (a pattern, as * alone is) or 'Subject:' trained a model that read
    no such line, silently: train, eval and the API now refuse them in one line."""
    folders = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    one_line_error(run("train", "-o", tmp_path / "m", "--headers", headers, *folders), said)
    one_line_error(run("eval", "--folds", "2", "--headers", headers, *folders), said)
    with pytest.raises(NbtextError, match=re.escape(said)):
        nbtext.train(["Subject: free\n\nprize", "Subject: lunch\n\nnotes"], ["spam", "ham"], headers=headers)


def test_a_long_header_name_is_tagged_as_every_header_line_is(tmp_path):
    """train --headers NAME tagged NAME's tokens with the whole name, --headers '*' with it cut to
    MAX_TAG characters: a model of either now holds the same tokens of that line."""
    from nbtext.reading.mail import MAX_TAG

    name = "X-MS-Exchange-CrossTenant-OriginalArrivalTime"  # (a real one, 45 characters)
    for label, words in (("spam", "prize money"), ("ham", "lunch meeting")):
        (tmp_path / label).mkdir()
        for i in range(3):
            (tmp_path / label / f"{i}").write_text(f"From: a@b.c\n{name}: {words} w{i}\nSubject: s\n\nbody\n")
    tagged = {}
    for headers in (name, "*"):
        model = tmp_path / "m"
        trained = run(
            "train", "--min-count", "1", "--headers", headers, "-o", model, tmp_path / "spam", tmp_path / "ham"
        )
        assert trained.exit_code == 0, trained.stderr
        tagged[headers] = {t for t in nbtext.load(model).vocabulary.tokens if t.startswith(name.lower()[:MAX_TAG])}
    assert tagged[name] == tagged["*"] and f"{name.lower()[:MAX_TAG]}:prize" in tagged[name]


def test_a_header_named_twice_is_a_model_of_it_named_once(tmp_path):
    """--headers SUBJECT,subject read the line once (mail.read_headers) but the model file
    held both names: info said 'subject,subject', and a merge with a model of --headers subject
    was refused as another setting. The names are kept once, in any case, as they are read."""
    folders = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    for name, headers in (("twice", "SUBJECT,subject,from,Subject"), ("once", "subject,from")):
        assert run("train", "--headers", headers, "-o", tmp_path / name, *folders).exit_code == 0
    assert (tmp_path / "twice").read_bytes() == (tmp_path / "once").read_bytes()
