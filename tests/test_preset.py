"""The spam preset: a multinomial model of a spam filter's classes (two, one named spam or
ham) starts from the spam filter's settings (nbtext.choices.SPAM_PRESET), the README's
recipe; typed options override their own, and the preset's that what is typed leaves without
a use yield (nbtext.classifier.settings.preset_defaults). Other classes, and --preset general,
keep the general defaults (the golden files hold their models byte for byte)."""

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbtext
from nbtext.classifier.settings import make_settings
from nbtext.errors import NbtextError

from conftest import ROOT, one_line_error, run

MAIL = ROOT / "corpora" / "mail" / "train"
# the spam preset, spelled as docs/usage.md spells it (not read from SPAM_PRESET), as the README's recipe was
RECIPE = (
    "--features binary --learn tone --tone-margin 20 --min-count 1 --alpha 1 --ngrams 2 --char-ngrams 3 "
    "--headers subject,from,to,content-type,received,x-mailer,return-path,reply-to,message-id "
    "--max-evidence 40 --calibration none --unsure-below 0.999"
).split()


def trained(tmp_path, name, *args):
    path = tmp_path / f"{name}.model"
    result = run("train", "-o", path, *args)
    assert result.exit_code == 0, result.stderr
    return path.read_bytes(), result.stderr


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    """The train split's folders under other names: spam/ham in other cases and others."""
    root = tmp_path_factory.mktemp("classes")
    for name, source in (("Spam", "spam"), ("HAM", "ham"), ("junk", "spam"), ("good", "ham"), ("eggs", "ham")):
        shutil.copytree(MAIL / source, root / name)
    return root


def test_the_defaults_of_spam_and_ham_are_the_readmes_recipe(tmp_path):
    default, said = trained(tmp_path, "default", MAIL / "spam", MAIL / "ham")
    recipe, _ = trained(tmp_path, "recipe", *RECIPE, MAIL / "spam", MAIL / "ham")
    assert default == recipe
    assert "classes 'spam' and 'ham': a spam filter's defaults" in said and "--preset general" in said
    quiet, said = trained(tmp_path, "quiet", "-q", MAIL / "spam", MAIL / "ham")
    assert quiet == recipe and "a spam filter's defaults" not in said
    spam, said = trained(tmp_path, "spam", "--preset", "spam", MAIL / "spam", MAIL / "ham")
    assert spam == recipe and "a spam filter's defaults" not in said  # (typed: nothing to say)


def test_the_general_preset_is_the_general_defaults(tmp_path, classes):
    general, _ = trained(tmp_path, "general", "--preset", "general", MAIL / "spam", MAIL / "ham")
    other, said = trained(tmp_path, "other", f"a={MAIL / 'spam'}", f"b={MAIL / 'ham'}")
    assert general == (ROOT / "tests" / "golden" / "files" / "multinomial.model").read_bytes()
    assert nbtext.load(tmp_path / "general.model").settings == nbtext.load(tmp_path / "other.model").settings
    assert "a spam filter's defaults" not in said


@pytest.mark.parametrize(
    "specs, spam",
    [
        (["Spam", "HAM"], True),  # (any case)
        (["junk", "HAM"], True),  # (one of them named ham)
        (["Spam", "eggs"], True),  # (one of them named spam)
        (["junk", "good"], False),
        (["Spam", "HAM", "eggs"], False),  # (three classes)
    ],
)
def test_a_spam_filters_classes_are_two_one_named_spam_or_ham(tmp_path, classes, specs, spam):
    model, _ = trained(tmp_path, "m", *(classes / name for name in specs))
    settings = nbtext.load(tmp_path / "m.model").settings
    assert (settings.get("learn") == "tone" and settings["tokenizer"]["ngrams"] == 2) is spam
    assert ("unsure_below" in settings) is spam


def test_labels_name_the_classes_and_the_python_api_chooses_alike(tmp_path):
    texts = [p.read_bytes() for label in ("spam", "ham") for p in sorted((MAIL / label).iterdir())]
    labels = [label for label in ("spam", "ham") for _ in sorted((MAIL / label).iterdir())]
    trained(tmp_path, "named", f"spam={MAIL / 'spam'}", f"ham={MAIL / 'ham'}")
    assert nbtext.train(texts, labels).settings == nbtext.load(tmp_path / "named.model").settings
    general = nbtext.train(texts, labels, preset="general").settings
    assert "learn" not in general and general["tokenizer"]["ngrams"] == 1


def test_a_table_keeps_the_general_defaults_unless_told(tmp_path):
    table = tmp_path / "mail.tsv"
    rows = [
        f"{label}\t{' '.join(p.read_text().split())}" for label in ("spam", "ham") for p in (MAIL / label).iterdir()
    ]
    table.write_text("\n".join(rows) + "\n")
    trained(tmp_path, "table", "--table", table)
    assert "learn" not in nbtext.load(tmp_path / "table.model").settings
    trained(tmp_path, "told", "--preset", "spam", "--table", table)
    assert nbtext.load(tmp_path / "told.model").settings["learn"] == "tone"


def test_what_a_typed_option_leaves_without_a_use_yields(tmp_path):
    spam = {"classes": ("spam", "ham")}
    tfidf = make_settings(features="tfidf", **spam)
    assert "learn" not in tfidf and "max_evidence" not in tfidf and tfidf["unknown"] == "ignore"
    # (its decision is of its kind's own probabilities: presence learned by a TONE pass)
    assert tfidf.calibration == "auto" and "unsure_below" not in tfidf
    for other_kind in ({"features": "counts"}, {"learn": "all"}):
        made = make_settings(**other_kind, **spam)
        assert made.calibration == "auto" and "unsure_below" not in made and made["tokenizer"]["ngrams"] == 2
    assert tfidf["tokenizer"]["ngrams"] == 2 and tfidf["min_count"] == 1  # (the rest of the preset stays)
    text = make_settings(input="text", **spam)
    assert text.stored()["tokenizer"]["headers"] == make_settings(preset="general").stored()["tokenizer"]["headers"]
    budget = make_settings(max_ham_flagged="0.5%", **spam)
    assert budget.calibration == "auto" and budget.budget == 0.005 and "unsure_below" not in budget
    assert budget["learn"] == "tone"  # (calibrated on the documents its pass saw)
    calibrated = make_settings(calibration="temperature", **spam)
    assert "unsure_below" not in calibrated and calibrated.calibration == "temperature"
    uncalibrated = make_settings(calibration="none", **spam)
    assert uncalibrated["unsure_below"] == 0.999
    pruned = make_settings(min_count=3, **spam)
    assert pruned["unknown"] == "ignore" and pruned["features"] == "binary"  # (so it can still be updated)
    assert make_settings(min_count=3, unknown="unk", **spam)["unknown"] == "unk"  # (typed: kept)
    counts = make_settings(features="counts", min_count=3, **spam)
    assert counts["unknown"] == "unk"  # (counts: an UNK of pruned tokens is updated exactly)
    learn_all = make_settings(learn="all", **spam)
    assert "learn" not in learn_all and "tone_margin" not in learn_all
    assert make_settings(tone_margin=30, **spam)["tone_margin"] == 30.0  # (the preset's --learn tone reads it)
    for model in ("bernoulli", "complement", "fisher"):  # (the preset is a multinomial model's)
        assert make_settings(model=model, **spam) == make_settings(model=model, preset="general", **spam)


def test_options_that_cannot_go_with_the_preset_are_refused_in_one_line(tmp_path):
    result = run("train", "-o", tmp_path / "p.model", "--shard", "1/2", MAIL / "spam", MAIL / "ham")
    one_line_error(result, "train with --learn all")
    result = run("train", "-o", tmp_path / "p.model", "--scheduler", "tcp://127.0.0.1:9", MAIL / "spam", MAIL / "ham")
    one_line_error(result, "train with --learn all")
    result = run("train", "-o", tmp_path / "p.model", "--model", "bernoulli", "--preset", "spam", MAIL / "spam")
    one_line_error(result, "--preset does nothing here")
    result = run(
        "train", "-o", tmp_path / "p.model", "--tone-margin", "3", "--learn", "all", MAIL / "spam", MAIL / "ham"
    )
    one_line_error(result, "--tone-margin does nothing here")
    result = run("train", "-o", tmp_path / "p.model", "--tone-margin", "3", "--preset", "general", MAIL / "spam")
    one_line_error(result, "--tone-margin does nothing here")
    for parts in ("--learn all", "--preset general"):  # (then shards merge into one training's model)
        for k in (1, 2):
            trained(tmp_path, f"part{k}", "--shard", f"{k}/2", *parts.split(), MAIL / "spam", MAIL / "ham")
        assert (
            run("merge", "-o", tmp_path / "merged.model", tmp_path / "part1.model", tmp_path / "part2.model").exit_code
            == 0
        )
        whole, _ = trained(tmp_path, "whole", *parts.split(), MAIL / "spam", MAIL / "ham")
        assert (tmp_path / "merged.model").read_bytes() == whole


def test_eval_folds_decides_as_the_presets_model(tmp_path):
    """eval --folds of spam and ham decides by the preset's own --unsure-below, as its model
    does: the figures of `eval --folds` with the recipe typed (its --unsure-below eval's)."""
    default = run("eval", "--folds", "3", "--format", "json", MAIL / "spam", MAIL / "ham")
    typed = run(
        "eval",
        "--folds",
        "3",
        "--format",
        "json",
        *[a for a in RECIPE if a != "--unsure-below" and a != "0.999"],
        "--unsure-below",
        "0.999",
        MAIL / "spam",
        MAIL / "ham",
    )
    assert default.exit_code == 0 and typed.exit_code == 0, (default.stderr, typed.stderr)
    import json

    ours, theirs = json.loads(default.stdout), json.loads(typed.stdout)
    assert ours["models"]["multinomial"]["folds"] == theirs["models"]["multinomial"]["folds"]
    assert ours["models"]["multinomial"]["unsure_below"] == 0.999
    assert all("missed_unsure" in fold for fold in ours["models"]["multinomial"]["folds"])


OPTION_VALUES = {  # a pool of train options a user may type beside a spam filter's classes
    "features": ["counts", "binary", "tfidf"],
    "learn": ["all", "tone"],
    "tone_margin": [0, 12.5],
    "min_count": [1, 2, 5],
    "max_features": [50],
    "alpha": [0.1, 2.0],
    "ngrams": [1, 3],
    "input": ["auto", "text", "mail"],
    "calibration": ["auto", "none", "temperature"],
    "max_ham_flagged": ["0.5%"],
    "unsure_below": [0.9],
    "max_evidence": [20],
    "unknown": ["unk", "ignore"],
    "model": ["multinomial", "bernoulli", "fisher"],
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(sorted(OPTION_VALUES)), st.data(), max_size=5), st.data())
def test_a_typed_option_keeps_its_value_or_is_refused_in_words(typed, data):
    """Whatever a user types beside classes spam and ham, the settings keep every typed value
    as typed, or they are refused with an NbtextError (one line on the command line), never
    another exception: the preset fills in only what is not typed."""
    options = {name: data.draw(st.sampled_from(OPTION_VALUES[name]), label=name) for name in typed}
    try:
        made = make_settings(classes=("spam", "ham"), **options)
    except NbtextError as e:
        assert "\n" not in str(e)
        return
    stored = made.stored()
    for name, value in options.items():
        if name == "model":
            assert stored["event_model"] == value
        elif name in ("ngrams", "input"):
            assert stored["tokenizer"][name] == value
        elif name == "calibration":
            assert made.calibration in (value, "none")  # (auto: none for what cannot be calibrated)
        elif name == "max_ham_flagged":
            assert made.budget == 0.005
        elif name == "learn":
            assert stored.get("learn", "all") == value
        else:
            assert stored[name] == value, name


def test_the_one_message_path_decides_the_presets_model_as_numpy_does(tmp_path):
    """The spam preset's model (presence, word pairs, the cap, its own --unsure-below) on the
    one-message path: the probabilities numpy gives, and the label its own threshold decides."""
    import numpy as np

    from nbtext.classifier import purescore
    from nbtext.delivery.judging import RELATIVE_AGREEMENT

    trained(tmp_path, "preset", MAIL / "spam", MAIL / "ham")
    path = tmp_path / "preset.model"
    pure, model = purescore.of_file(path.read_bytes(), str(path)), nbtext.load(path)
    assert pure is not None and model.unsure_threshold() == 0.999
    test = [
        p.read_bytes()
        for label in ("spam", "ham")
        for p in sorted((ROOT / "corpora" / "mail" / "test" / label).iterdir())
    ]
    labels = set()
    for document, row in zip(test, model.predict_proba(test)):
        got = purescore.probabilities(pure, document)
        np.testing.assert_allclose(got, row, rtol=RELATIVE_AGREEMENT, atol=1e-12)
        label, _ = purescore.decide(pure.classes, got, purescore.unsure_threshold(None, model.settings))
        assert label == model.decide(row)[0]
        labels.add(label)
    assert labels == {"spam", "ham", "unsure"}  # (the band is used on this split)


def test_a_kept_spam_cut_off_refuses_a_third_class(tmp_path):
    """A TONE model keeps its temperature and cut-off through --update (it holds no sample to
    fit them again): a third class is refused, as the model that refits them refuses it,
    the whole file rewritten or a message through its pending section."""
    model = tmp_path / "budget.model"
    budget = "--calibration temperature --max-ham-flagged 5%".split()
    result = run("train", "-q", *budget, "-o", model, MAIL / "spam", MAIL / "ham")
    assert result.exit_code == 0, result.stderr
    before = model.read_bytes()
    ham = ROOT / "corpora" / "mail" / "test" / "ham"
    for args in (["-o", tmp_path / "other.model", f"other={ham}"], [f"other={sorted(ham.iterdir())[0]}"]):
        result = run("train", "--update", "--new-classes", "-m", model, *args)
        one_line_error(result, "--max-ham-flagged is for two classes, and the model has 3")
    assert model.read_bytes() == before and not (tmp_path / "other.model").exists()


def test_what_goes_with_the_preset_is_taken_where_it_is_read(tmp_path, monkeypatch):
    """The preset's settings are those the command line's checks judge by: eval --folds takes a
    --tone-margin for the preset's TONE pass (its folds' models learn by it, as train's does),
    an update (which keeps its model's settings) is not judged by the preset, and a cluster
    named by $DASK_SCHEDULER_ADDRESS leaves the preset's TONE training on this machine."""
    folds = run("eval", "--folds", "3", "--format", "json", "--tone-margin", "3", MAIL / "spam", MAIL / "ham")
    wide = run("eval", "--folds", "3", "--format", "json", MAIL / "spam", MAIL / "ham")
    assert folds.exit_code == 0 and wide.exit_code == 0, folds.stderr
    assert folds.stdout != wide.stdout  # (a margin of 3 learns fewer documents than the preset's 40)
    general, _ = trained(tmp_path, "general", "--preset", "general", MAIL / "spam", MAIL / "ham")
    update = run(
        "train", "--update", "-m", tmp_path / "general.model", "--scheduler", "tcp://127.0.0.1:9", MAIL / "spam"
    )
    assert update.exit_code == 0 and "tone" not in update.stderr.lower(), update.stderr
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9")  # (nothing listens there)
    local, _ = trained(tmp_path, "local", MAIL / "spam", MAIL / "ham")
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    assert local == trained(tmp_path, "here", MAIL / "spam", MAIL / "ham")[0]


def test_labels_that_are_not_names_are_refused_in_words():
    for labels in ([1, 0], [None, "ham"], [b"spam", "ham"]):
        with pytest.raises(NbtextError):
            nbtext.train(["cheap pills now", "lunch at noon"], labels, min_count=1)


def test_preset_models_of_parts_merge_into_the_model_of_their_passes(tmp_path):
    """Two models of the preset (each learned what its own TONE pass chose) merge into the
    model of those documents: the same file as `train --learn all` of the documents each
    pass learned, with the preset's other settings."""
    halves = [tmp_path / "a", tmp_path / "b"]
    for k, half in enumerate(halves):
        for label in ("spam", "ham"):
            (half / label).mkdir(parents=True)
            for f in sorted((MAIL / label).iterdir())[k::2]:
                shutil.copy(f, half / label / f.name)
    for half in halves:
        trained(tmp_path, half.name, half / "spam", half / "ham")
    merged = run("merge", "-o", tmp_path / "merged.model", tmp_path / "a.model", tmp_path / "b.model")
    assert merged.exit_code == 0, merged.stderr
    model = nbtext.load(tmp_path / "merged.model")
    parts = [nbtext.load(tmp_path / f"{half.name}.model") for half in halves]
    assert model.settings == parts[0].settings and model.settings["learn"] == "tone"
    assert (model.class_count == parts[0].class_count + parts[1].class_count).all()
    assert sorted(model.journal) == sorted([*parts[0].journal, *parts[1].journal])
