"""train --max-ham-flagged B (issue 24 §4): a spam cut-off chosen on the training data's
out-of-fold probabilities so that at most B of the ham would be flagged; what the plain
decision calls spam below it is 'unsure', on every path that decides."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbtext
from nbtext.exactmath import exp
from nbtext.jobs.calibration import FOLDS, out_of_fold_jll, sample_rate
from nbtext.stats.counting import under

from conftest import ROOT, run

NBTEXT = Path(sys.executable).with_name("nbtext")
MAIL = ROOT / "corpora" / "mail"


@pytest.fixture(scope="module")
def budget_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("budget") / "b.model"
    result = run("train", "--calibration", "temperature", "--max-ham-flagged", "5%", "-o", path,
                 MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 0, result.stderr
    return path


def out_of_fold(model):
    """(P(spam) out of fold, which are ham) of the documents the temperature was fitted on,
    as the model computes probabilities."""
    token_lists, labels, hashes = model.calibration_sample
    fit = sorted(under(sample_rate(model.class_count.sum()), hashes), key=lambda i: (hashes[i], labels[i]))
    jll, lengths = out_of_fold_jll(model, [token_lists[i] for i in fit], [labels[i] for i in fit],
                                   [hashes[i] % FOLDS for i in fit])
    return exp(model.posterior(jll, lengths))[:, model.classes.index("spam")], \
        np.array([labels[i] == "ham" for i in fit])


def test_the_cutoff_flags_at_most_the_budget_out_of_fold(budget_model):
    model = nbtext.load(str(budget_model), fold=True)
    c = model.calibration
    assert c["positive"] == "spam" and c["max_ham_flagged"] == 0.05 and 0.5 <= c["spam_cutoff"] <= 1.0 + 1e-15
    p_spam, ham = out_of_fold(model)
    assert np.sum(p_spam[ham] >= c["spam_cutoff"]) <= np.floor(0.05 * ham.sum())
    assert np.sum(p_spam[ham] >= np.nextafter(c["spam_cutoff"], 0.0)) > np.floor(0.05 * ham.sum()) \
        or c["spam_cutoff"] == 0.5  # the lowest such cut-off


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
def test_every_path_decides_by_it(budget_model, tmp_path):
    """The one-message path (predict of stdin, filter), the model loaded whole (predict of
    files) and eval give each message the same label, unsure ones included."""
    messages = []  # as mail, so that filter classifies them too
    for i, text in enumerate(p.read_bytes() for label in ("spam", "ham") for p in sorted((MAIL / "test" / label).iterdir())):
        messages.append(tmp_path / f"{i:03d}.eml")
        messages[-1].write_bytes(b"Subject: a message\n\n" + text)
    whole = subprocess.run([NBTEXT, "predict", "-j", "1", "-m", budget_model, *messages], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    labels = [line.split("\t")[1] for line in whole]
    assert "unsure" in labels or all(line.split("\t")[1] != "spam" or float(line.split("\t")[2]) >=
                                     nbtext.load(str(budget_model)).calibration["spam_cutoff"] for line in whole)
    for message, label in zip(messages, labels):
        one = subprocess.run([NBTEXT, "predict", "-m", budget_model], input=message.read_bytes(), capture_output=True,
                             check=True).stdout.decode().strip()
        tagged = subprocess.run([NBTEXT, "filter", "-m", budget_model], input=message.read_bytes(),
                                capture_output=True).stdout.decode(errors="replace")
        assert one == label and f"X-Nbtext-Class: {label}" in tagged, message
    spam, ham = tmp_path / "spam", tmp_path / "ham"
    for folder, part in ((spam, messages[:len(messages) // 2]), (ham, messages[len(messages) // 2:])):
        folder.mkdir()
        for message in part:
            (folder / message.name).write_bytes(message.read_bytes())
    report = json.loads(run("eval", "-m", budget_model, "--format", "json", spam, ham).stdout)
    assert report["unsure"] == labels.count("unsure")


def test_learning_refits_the_cutoff_to_the_same_budget(budget_model, tmp_path):
    updated = tmp_path / "u.model"
    result = run("train", "--update", "-m", budget_model, "-o", updated, MAIL / "test" / "spam")
    assert result.exit_code == 0, result.stderr
    c = nbtext.load(str(updated)).calibration
    assert c["max_ham_flagged"] == 0.05 and "spam_cutoff" in c


@pytest.mark.parametrize("args, message", [
    (["--calibration", "none", "--max-ham-flagged", "1%"], "not with --calibration none"),
    (["--max-ham-flagged", "60%"], "from 0 to 50%"),
    (["--max-ham-flagged", "lots"], "from 0 to 50%"),
    (["--max-ham-flagged", "1%"], "needs a calibrated model of two classes"),  # 78 documents: auto fits no T
])
def test_what_a_budget_cannot_do_is_one_line(tmp_path, args, message):
    result = run("train", *args, "-o", tmp_path / "m.model", MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 1 and message in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "m.model").exists()


def test_eval_online_from_a_budget_model_decides_as_its_filter(budget_model):
    """The unsure band of an online run from such a model is its cut-off's, and what it
    counts as ham flagged are hams decided spam, not the unsure ones."""
    report = json.loads(run("eval", "--online", "--format", "json", "-m", budget_model, "--learn", "all",
                            MAIL / "test" / "spam", MAIL / "test" / "ham").stdout)
    assert report["unsure"]["spam_cutoff"] == nbtext.load(str(budget_model)).calibration["spam_cutoff"]
    assert report["errors"] == sum(c["taken_for_another"] for c in report["classes"].values()) \
        + report["unsure"]["errors"]


def test_a_budget_of_nothing_flags_no_ham_out_of_fold(tmp_path):
    model = tmp_path / "z.model"
    assert run("train", "--calibration", "temperature", "--max-ham-flagged", "0", "-o", model, MAIL / "train" / "spam",
               MAIL / "train" / "ham").exit_code == 0
    loaded = nbtext.load(str(model), fold=True)
    p_spam, ham = out_of_fold(loaded)
    assert not np.any(p_spam[ham] >= loaded.calibration["spam_cutoff"])  # the decision's own probabilities


def test_the_same_budget_written_two_ways_is_the_same_cutoff():
    from nbtext.classifier.settings import ham_flagged_budget
    from nbtext.jobs.calibration import spam_cutoff

    rng = np.random.default_rng(0)
    jll = rng.normal(size=(1000, 2)) * 5
    rows = np.array([0] * 500 + [1] * 500)
    lengths = np.full(1000, 20)
    cuts = {spam_cutoff(["ham", "spam"], jll, rows, lengths, 1.0, 0.0, ham_flagged_budget(b))["spam_cutoff"]
            for b in ("1.4%", "0.014", " 1.4 %")}
    assert len(cuts) == 1


@pytest.mark.parametrize("args, message", [
    (["eval", "--folds", "3", "--max-ham-flagged", "1%"], "is train's"),
    (["eval", "--online", "--max-ham-flagged", "1%"], "is train's"),
    (["eval", "-m", "{model}", "--max-ham-flagged", "1%"], "is train's"),  # (it said: goes with --folds or --online)
])
def test_eval_does_not_take_a_budget(args, message, demo_model):
    result = run(*[a.format(model=demo_model) for a in args], MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 2 and message in result.stderr  # a usage error


def test_a_third_class_is_refused_not_the_budget_dropped(budget_model, tmp_path):
    result = run("train", "--update", "--new-classes", "-m", budget_model, "-o", tmp_path / "u.model",
                 f"other={MAIL / 'test' / 'ham'}")
    assert result.exit_code == 1 and "is for two classes" in result.stderr and result.stderr.count("Error") == 1


def test_the_spam_class_is_found_in_any_case(tmp_path):
    model = tmp_path / "c.model"
    assert run("train", "--calibration", "temperature", "--max-ham-flagged", "5%", "-o", model,
               f"Spam={MAIL / 'train' / 'spam'}", f"ham={MAIL / 'train' / 'ham'}").exit_code == 0
    assert nbtext.load(str(model)).calibration["positive"] == "Spam"


def test_a_budget_needs_the_names_to_say_which_class_is_spam(tmp_path):
    """The cut-off is on the spam class's probability: with names that do not say which it is
    (bulk and important), the budget is refused, not put on the class that sorts second
    (important, the good mail, as an attack found); beside a class named ham, the other is spam."""
    model = tmp_path / "c.model"
    result = run("train", "--calibration", "temperature", "--max-ham-flagged", "5%", "-o", model,
                 f"bulk={MAIL / 'train' / 'spam'}", f"important={MAIL / 'train' / 'ham'}")
    assert result.exit_code == 1 and "named spam or ham" in result.stderr and result.stderr.count("\n") == 1
    assert not model.exists()
    assert run("train", "--calibration", "temperature", "--max-ham-flagged", "5%", "-o", model,
               f"junk={MAIL / 'train' / 'spam'}", f"ham={MAIL / 'train' / 'ham'}").exit_code == 0
    assert nbtext.load(str(model)).calibration["positive"] == "junk"


def test_train_says_the_cutoff_it_chose_as_info_does(tmp_path):
    """The cut-off --max-ham-flagged chose was said by `info` alone: train's summary (and
    --update's, which refits it) says it in the same words."""
    model = tmp_path / "c.model"
    trained = run("train", "--calibration", "temperature", "--max-ham-flagged", "5%", "-o", model,
                  MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert trained.exit_code == 0, trained.stderr
    decision = next(line for line in run("info", "-m", model).stdout.splitlines() if line.startswith("decision"))
    said = decision.split(None, 1)[1].split("; ")[0]  # (info adds what happens below it)
    c = nbtext.load(str(model)).calibration
    assert f"{c['spam_cutoff']:.6f}" in said if c["spam_cutoff"] <= 1.0 else said.startswith("never spam")
    assert f"; decision: {said}; " in trained.stderr and "5.00%" in said
    updated = run("train", "--update", "-m", model, "-o", tmp_path / "u.model", f"spam={MAIL / 'test' / 'spam'}")
    assert updated.exit_code == 0 and "; decision: spam" in updated.stderr and "5.00%" in updated.stderr
    plain = run("train", "--calibration", "temperature", "-o", tmp_path / "p.model", MAIL / "train" / "spam",
                MAIL / "train" / "ham")
    assert "decision" not in plain.stderr  # no budget, no cut-off to say


@pytest.mark.parametrize("cutoff, words", [
    (0.973251, "spam from a probability of 0.973251 up (at most 1.00% of the other class flagged, out of fold)"),
    (1.0000000000000002, "never spam: the other class was certain of it out of fold, so no cut-off keeps to 1.00% "
                         "flagged"),
])
def test_the_cutoff_in_words(cutoff, words):
    from nbtext.report.text import spam_cutoff_said

    assert spam_cutoff_said({"positive": "spam", "spam_cutoff": cutoff, "max_ham_flagged": 0.01}) == words
    assert spam_cutoff_said({"temperature": 2.0}) is None and spam_cutoff_said(None) is None
