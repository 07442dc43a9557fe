"""`nbtext eval --online`: the spam track's protocol. Each step's model is the one a
training of the documents learned so far would make (checked against nbtext.train), and
the report's figures are those of its own steps."""

import json
import random

import pytest

import nbtext
from nbtext.classifier.settings import make_tokenizer
from nbtext.choices import DEFAULT_TONE_MARGIN, SPAM_PRESET
from nbtext.jobs.online import OnlineMultinomial
from nbtext.jobs.online import run as online_run
from nbtext.stats.metrics import roc_auc

from conftest import MAIL_TEST, ROOT, run, trained_on_mail

MAIL = ROOT / "corpora" / "mail"

GENERAL = ["--preset", "general"]  # the general defaults (spam/ham folders would train the spam preset)


def labelled(split):
    return [(p.read_bytes(), label) for label in ("ham", "spam") for p in sorted((MAIL / split / label).iterdir())]


@pytest.mark.parametrize(
    "min_count, unknown, features",
    [
        (1, "unk", "counts"),
        (2, "unk", "counts"),
        (3, "ignore", "counts"),
        (1, "unk", "binary"),
        (3, "ignore", "binary"),
    ],
)
def test_each_step_is_the_model_of_the_documents_learned_so_far(min_count, unknown, features):
    """After any prefix of a shuffled corpus, the online counts score a query as the
    multinomial model trained on that prefix does (tokens crossing --min-count included),
    of token counts or of presence (each token once a document, UNK once)."""
    documents = labelled("train")
    random.Random(3).shuffle(documents)
    tokenize = make_tokenizer(nbtext.train(["a b", "c d"], ["x", "y"], min_count=1).settings["tokenizer"])
    online = OnlineMultinomial(["ham", "spam"], 0.1, min_count, unknown == "unk", presence=features == "binary")
    queries = [data for data, _ in labelled("test")[::4]]
    for n, (data, label) in enumerate(documents, 1):
        online.learn(tokenize(data), label)
        if n in (12, 40, len(documents)):
            texts, labels = zip(*documents[:n])
            model = nbtext.train(
                list(texts),
                list(labels),
                alpha=0.1,
                min_count=min_count,
                unknown=unknown,
                features=features,
                calibration="none",
                preset="general",
            )
            expected = model.predict_proba(queries)
            for query, row in zip(queries, expected):
                assert online.posterior(tokenize(query))[0] == pytest.approx(row.tolist(), rel=1e-9, abs=1e-12)


def test_before_any_feature_without_unk_the_prior_decides():
    """--unknown ignore: with no token kept yet, d = 0 and nothing enters the likelihood (as
    Multinomial.log_theta_of's d = 0); it was log(0), a traceback (math domain error)."""
    online = OnlineMultinomial(["ham", "spam"], 1.0, 3, False)
    online.learn(["free", "prize"], "spam")
    assert online.posterior(["free", "lunch"])[0] == pytest.approx([1 / 3, 2 / 3])  # (N_k + λ)/(N + 2λ)
    result = run("eval", "--online", "--unknown", "ignore", MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 0 and "errors" in result.stdout


@pytest.mark.parametrize(
    "options, rule, margin",
    [
        ([], "tone", SPAM_PRESET["tone_margin"]),  # the spam preset trains by a TONE pass: its online run learns so
        (["--learn", "tone", "--tone-margin", "7"], "tone", 7.0),
        (GENERAL, "errors", None),
        ([*GENERAL, "--features", "binary", "--min-count", "1", "--learn", "tone"], "tone", DEFAULT_TONE_MARGIN),
        (["--learn", "errors"], "errors", None),
    ],
)
def test_without_learn_an_online_run_learns_by_the_models_own_rule(options, rule, margin, tmp_path):
    """eval --online without --learn: the rule its settings' training learns by (a TONE pass:
    tone, at the settings' margin), else errors; from nothing and from -m MODEL alike."""
    folders = [MAIL / "test" / "spam", MAIL / "test" / "ham"]
    report = json.loads(run("eval", "--online", "--format", "json", *options, *folders).stdout)
    assert report["learn"] == rule and report.get("tone_margin") == margin
    if rule == "tone" and "--tone-margin" not in options:  # (a model trained so: its own rule and margin)
        model = tmp_path / "m"
        assert run("train", *options, "-o", model, *folders).exit_code == 0
        from_model = json.loads(run("eval", "--online", "--format", "json", "-m", model, *folders).stdout)
        assert from_model["learn"] == rule and from_model["tone_margin"] == margin


def test_the_command_line_reports_its_own_steps(tmp_path):
    args = [
        "eval",
        "--online",
        "--format",
        "json",
        "--unsure-below",
        "0.9",
        "--learn",
        "errors",
        MAIL / "test" / "spam",
        MAIL / "test" / "ham",
        MAIL / "train" / "spam",
        MAIL / "train" / "ham",
    ]
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    n = sum(1 for split in ("train", "test") for label in ("spam", "ham") for _ in (MAIL / split / label).iterdir())
    assert report["n"] == n and report["learn"] == "errors" and report["learned"] == report["errors"]
    assert (
        report["errors"] == sum(c["taken_for_another"] for c in report["classes"].values()) + report["unsure"]["errors"]
    )  # delivered wrong, or caught by the band
    assert report["cumulative_errors"][-1] == report["errors"] and len(report["cumulative_errors"]) == n
    assert all(b - a in (0, 1) for a, b in zip(report["cumulative_errors"], report["cumulative_errors"][1:]))
    assert 0 <= report["unsure"]["errors"] <= min(report["unsure"]["n"], report["errors"])
    assert report["positive"] == "spam" and 0 <= report["roca_percent"] < 50
    # as a mail user sees it (unsure to the inbox): the sure errors, and every unsure spam missed
    d, spam, ham = report["delivered"], report["classes"]["spam"], report["classes"]["ham"]
    assert d["flagged"] == ham["taken_for_another"] and d["missed"] - d["missed_unsure"] == spam["taken_for_another"]
    assert 0 <= d["missed_unsure"] <= report["unsure"]["n"] and d["errors"] == d["missed"] + d["flagged"]
    shown = run(*args[:2], *args[4:]).stdout
    assert f"as delivered      {d['errors']:,} errors, unsure to the inbox: spam missed {d['missed']:,}" in shown
    again = json.loads(run(*args).stdout)
    assert again == report  # the same order for the same seed: the same run
    other = json.loads(run(*args, "--seed", "1").stdout)
    assert other["cumulative_errors"] != report["cumulative_errors"]
    everything = json.loads(run(*args, "--learn", "all").stdout)
    assert everything["learned"] == n
    text = run(*[a for a in args if a not in ("--format", "json")]).stdout
    assert "ham flagged" in text and "spam missed" in text and "1-ROCA%" in text


def test_online_from_a_model_starts_with_its_counts(tmp_path, demo_model):
    """From -m MODEL the first message is scored by that model (uncalibrated: the demo
    model has too few documents to be calibrated)."""
    first, scratch = (
        run("eval", "--online", "--format", "json", *start, "--learn", "all", "--seed", "5", *MAIL_TEST)
        for start in (["-m", demo_model], [])
    )
    assert first.exit_code == 0 and scratch.exit_code == 0, first.stderr + scratch.stderr
    assert json.loads(first.stdout)["errors"] < json.loads(scratch.stdout)["errors"]  # it starts knowing something


def test_roca_is_the_area_above_the_roc_curve():
    scores, positives = [0.1, 0.4, 0.35, 0.8, 0.9, 0.2], [False, False, True, True, True, False]
    assert 100 * (1 - roc_auc(scores, positives)) == pytest.approx(100 * (1 - 8 / 9))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "bernoulli"], "multinomial model of counts"),
        (["--folds", "3"], "give one"),
        (["--max-features", "10"], "multinomial model of counts"),
        (["--calibration", "temperature"], "stays uncalibrated"),  # was accepted, and ignored
        (["--compare", "multinomial,bernoulli"], "--compare goes with --folds"),  # the same
    ],
)
def test_what_online_cannot_run_is_one_line(args, message):
    result = run("eval", "--online", *args, MAIL / "test" / "spam", MAIL / "test" / "ham")
    usage = args[0] in ("--compare", "--folds")  # options that do not go together: a usage error, as elsewhere
    assert result.exit_code == (2 if usage else 1) and message in result.stderr and result.stderr.count("\n") == 1


def test_the_picture(tmp_path):
    pytest.importorskip("matplotlib")
    picture = tmp_path / "online.png"
    result = run("eval", "--online", "--plot", picture, MAIL / "test" / "spam", MAIL / "test" / "ham")
    assert result.exit_code == 0 and picture.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("floor, presence", [(None, False), (1000, False), (None, True)])
def test_online_from_a_model_scores_as_its_filter_does(tmp_path, floor, presence):
    """From -m MODEL the probabilities are the model's, its calibration applied (so its
    unsure band is the filter's): the first message is scored as predict scores it (with
    a length floor too, past the length of every message here; and of presence features)."""
    model = tmp_path / "c.model"
    options = ["--features", "binary", "--min-count", "1"] if presence else []
    trained_on_mail(model, *GENERAL, "--calibration", "temperature", *options)
    loaded = nbtext.load(model)
    assert loaded.calibration is not None and loaded.calibration["temperature"] != 1.0
    if floor is not None:
        loaded.calibration = {**loaded.calibration, "length_exponent": 0.9, "length_floor": floor}
    online = OnlineMultinomial(
        loaded.classes,
        loaded.alpha,
        loaded.settings["min_count"],
        True,
        start={t: loaded.token_counts.dense[:, j].tolist() for j, t in enumerate(loaded.vocabulary.tokens)},
        calibration=loaded.calibration,
        presence=presence,
    )
    online.class_count = [float(n) for n in loaded.class_count]
    tokenize = make_tokenizer(loaded.settings["tokenizer"])
    for message in sorted((MAIL / "test" / "spam").iterdir())[:3] + sorted((MAIL / "test" / "ham").iterdir())[:3]:
        expected = loaded.predict_proba([message.read_bytes()])[0]
        assert online.posterior(tokenize(message.read_bytes()))[0] == pytest.approx(expected.tolist(), abs=1e-9)


def test_online_from_a_model_refuses_what_it_cannot_use(demo_model, tmp_path):
    result = run("eval", "--online", "-m", demo_model, "--min-count", "3", MAIL / "test" / "spam")
    assert result.exit_code == 2 and "goes with --online from nothing" in result.stderr
    table = tmp_path / "t.tsv"
    table.write_text("a\tfree prize\nb\tlunch notes\n")
    result = run("eval", "--online", "-m", demo_model, "--table", table, "--no-header")
    assert result.exit_code == 1 and "no document has a label the model knows" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.filterwarnings("default::UserWarning")  # the new class's warning, as the command line prints it
def test_online_from_a_model_says_which_classes_it_adds(demo_model):
    """A label the model does not have starts as a class of none, as train --update would add
    it: said, as train --update says it (silent, it looked like a class never predicted)."""
    result = run("eval", "--online", "-m", demo_model, f"junk={MAIL / 'test' / 'spam'}", MAIL / "test" / "ham")
    assert (
        result.exit_code == 0
        and "new class 'junk' (the model has ham, spam), each starting from no documents" in result.stderr
    )
    result = run("eval", "--online", "-m", demo_model, MAIL / "test" / "spam", MAIL / "test" / "ham")
    assert result.exit_code == 0 and "new class" not in result.stderr


def test_three_classes_line_up(tmp_path):
    table = tmp_path / "t.tsv"
    table.write_text(
        "spam\tfree prize now\nham\tmeeting at noon\neggs\tbacon and eggs\nspam\tclaim your prize\nham\tlunch meeting\n"
    )
    text = run("eval", "--online", "--table", table, "--no-header").stdout
    assert "  eggs taken for another class 0 (0.00% of 1)" in text


class Recorded(OnlineMultinomial):
    """An online model that notes each message's jll and which messages it learned."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.scored, self.learned = [], []

    def posterior(self, tokens):
        p, jll = super().posterior(tokens)
        self.scored.append((p, jll))
        return p, jll

    def learn(self, tokens, label):
        self.learned.append(len(self.scored) - 1)
        super().learn(tokens, label)


@pytest.mark.parametrize("presence", [False, True])
@pytest.mark.parametrize("rule, margin", [("errors", None), ("all", None), ("tone", 0.0), ("tone", 8.0)])
def test_each_rule_learns_the_messages_it_names(rule, margin, presence):
    """--learn errors learns the misclassified, all every message, tone (train on or near
    error) the misclassified, those whose |log-odds| were within the margin and the first of
    each class: checked against each message's own score before it was learned."""
    documents = labelled("train") + labelled("test")
    random.Random(7).shuffle(documents)
    tokenize = make_tokenizer(nbtext.train(["a b", "c d"], ["x", "y"], min_count=1).settings["tokenizer"])
    online = Recorded(["ham", "spam"], 1.0, 1, True, presence=presence)
    stream = [(str(i), tokenize(data), label) for i, (data, label) in enumerate(documents)]
    report = online_run(stream, online, rule, tone_margin=margin)
    expected, held = [], set()  # held: the classes learned so far
    for i, ((_, _, label), (p, jll)) in enumerate(zip(stream, online.scored)):
        wrong = ["ham", "spam"][p.index(max(p))] != label
        near = rule == "tone" and (abs(jll[1] - jll[0]) <= margin or label not in held)
        if rule == "all" or wrong or near:
            expected.append(i)
            held.add(label)
    assert online.learned == expected and report["learned"] == len(expected)
    assert (report["learned"] == len(stream)) == (rule == "all")  # the others leave some out
    if rule == "tone":
        assert report["tone_margin"] == margin
    if margin:  # the margin learns some message the errors rule would not
        assert report["learned"] > report["errors"]


def test_tone_on_the_command_line(tmp_path):
    """--learn tone says its margin (JSON and text); a margin as wide as any score learns every
    message, as --learn all does; --tone-margin where the run learns by another rule is refused
    in one line, and taken where it learns by tone without --learn (the spam preset's rule)."""
    folders = [MAIL / "test" / "spam", MAIL / "test" / "ham"]
    tone = json.loads(run("eval", "--online", *GENERAL, "--format", "json", "--learn", "tone", *folders).stdout)
    assert tone["learn"] == "tone" and tone["tone_margin"] == DEFAULT_TONE_MARGIN
    wide = run("eval", "--online", "--format", "json", "--learn", "tone", "--tone-margin", "1e9", *folders)
    everything = run("eval", "--online", "--format", "json", "--learn", "all", *folders)
    wide, everything = json.loads(wide.stdout), json.loads(everything.stdout)
    assert wide["learned"] == wide["n"] and {**wide, "learn": "all", "tone_margin": None} == {
        **everything,
        "tone_margin": None,
    }
    text = run("eval", "--online", "--learn", "tone", "--tone-margin", "3", *folders).stdout
    assert "the errors, those within 3 of even and the first of each class (TONE)" in text
    result = run("eval", "--tone-margin", "3", *folders)  # (a model's report learns nothing)
    assert result.exit_code == 2 and "--tone-margin goes with --online" in result.stderr
    for args in (["--learn", "all"], ["--learn", "errors"], GENERAL):  # (the general defaults learn errors)
        result = run("eval", "--online", *args, "--tone-margin", "3", *folders)
        assert result.exit_code == 1 and "--tone-margin does nothing here" in result.stderr, result.stderr
    # without --learn, a run that learns by tone (the spam preset's) takes the margin given
    preset = json.loads(run("eval", "--online", "--format", "json", "--tone-margin", "3", *folders).stdout)
    assert preset["learn"] == "tone" and preset["tone_margin"] == 3.0
    for margin in ("-1", "nan"):  # (nan was taken, and learned only the errors)
        result = run("eval", "--online", "--learn", "tone", "--tone-margin", margin, *folders)
        assert result.exit_code == 2 and "--tone-margin" in result.stderr


def test_presence_online_is_the_command_lines(tmp_path):
    """eval --online --features binary runs the presence multinomial (each token once a
    message): not the counts' run; with UNK it needs --min-count 1 (UNK's count, the
    documents holding a token not yet kept, changes as tokens are learned): one line."""
    folders = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    counts = json.loads(
        run("eval", "--online", *GENERAL, "--format", "json", "--min-count", "1", "--learn", "all", *folders).stdout
    )
    presence = run(
        "eval",
        "--online",
        *GENERAL,
        "--format",
        "json",
        "--features",
        "binary",
        "--min-count",
        "1",
        "--learn",
        "all",
        *folders,
    )
    assert presence.exit_code == 0, presence.stderr
    assert json.loads(presence.stdout)["cumulative_errors"] != counts["cumulative_errors"]
    result = run("eval", "--online", *GENERAL, "--features", "binary", *folders)  # (--min-count 2)
    assert result.exit_code == 1 and "--min-count 1 or --unknown ignore" in result.stderr
    assert result.stderr.count("\n") == 1
    result = run("eval", "--online", *GENERAL, "--features", "binary", "--unknown", "ignore", *folders)
    assert result.exit_code == 0, result.stderr


def test_as_delivered_an_unsure_spam_is_missed_and_an_unsure_ham_is_not_flagged():
    """eval --online's errors as a mail user sees them (unsure to the inbox), by hand: a spam
    is missed when taken for ham or left unsure, a ham flagged only when surely taken for spam."""
    from nbtext.jobs.online import report

    labels = ["spam", "spam", "spam", "spam", "ham", "ham", "ham"]
    guesses = [
        ("spam", False),
        ("spam", True),
        ("ham", True),
        ("ham", False),
        ("spam", False),
        ("spam", True),
        ("ham", True),
    ]
    scores = [3.0, 1.0, -1.0, -2.0, 2.0, 0.5, -0.5]
    result = report(["ham", "spam"], labels, guesses, scores, 0, "errors", unsure_below=0.9)
    assert result["delivered"] == {"errors": 4, "missed": 3, "missed_unsure": 2, "flagged": 1}
    assert result["errors"] == 4  # (eval's own count: the most probable class wrong, unsure or not)
    assert "delivered" not in report(["ham", "spam"], labels, guesses, scores, 0, "errors")  # (no band: the same)
