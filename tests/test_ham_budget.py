"""train --max-ham-flagged B (issue 24 §4, issue 34): a spam cut-off chosen on the training
data's out-of-fold probabilities so that, with confidence, at most B of the ham would be
flagged (an upper bound on the share, nbtext.stats.bounds); what the plain decision calls
spam below it is 'unsure', on every path that decides."""

import json
import random
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import beta

import nbtext
from nbtext.cutoff import OTHER_CEILING, SPAM_FLOOR, TOO_FEW
from nbtext.exactmath import exp
import nbtext.jobs.calibration as calibration
from nbtext.jobs.calibration import BUDGET_RISK
from nbtext.stats.out_of_fold import FOLDS, out_of_fold_jll
from nbtext.stats.bounds import most_within, upper_share

from conftest import ROOT, run, trained_on_mail

NBTEXT = Path(sys.executable).with_name("nbtext")
MAIL = ROOT / "corpora" / "mail"
# the general defaults: a spam filter's (spam/ham classes) learns by a TONE pass, whose model keeps no calibration
# sample for these tests to score out of fold
GENERAL = ["--preset", "general"]
# a temperature fitted, and a cut-off for the budget that follows
BUDGET_OPTIONS = ["--calibration", "temperature", "--max-ham-flagged"]


# the event models a budget is checked with: the default, and the spam filters' Fisher combining
MODELS = pytest.mark.parametrize("options", [(), ("--model", "fisher")], ids=["multinomial", "fisher"])


@pytest.fixture(scope="module", params=[(), ("--model", "fisher")], ids=["multinomial", "fisher"])
def budget_model(tmp_path_factory, request):
    path = tmp_path_factory.mktemp("budget") / "b.model"
    trained_on_mail(path, *GENERAL, *request.param, *BUDGET_OPTIONS, "5%")
    return path


def named(spam, ham):
    """corpora/mail/train's spam and ham as classes of the names given."""
    return f"{spam}={MAIL / 'train' / 'spam'}", f"{ham}={MAIL / 'train' / 'ham'}"


def out_of_fold(model):
    """(P(ham) out of fold, which are ham) of the documents the cut-off was chosen on (the
    whole calibration sample kept), as the model computes probabilities."""
    token_lists, labels, hashes = model.calibration_sample
    every = sorted(range(len(hashes)), key=lambda i: (hashes[i], labels[i]))
    jll, lengths = out_of_fold_jll(
        model, [token_lists[i] for i in every], [labels[i] for i in every], [hashes[i] % FOLDS for i in every]
    )
    return exp(model.posterior(jll, lengths))[:, model.classes.index("ham")], np.array(
        [labels[i] == "ham" for i in every]
    )


def flagged_out_of_fold(model):
    """(the ham out of fold under the model's ceiling on P(ham), those a ceiling just past the
    next one up would add, n ham)."""
    ceiling = model.calibration[OTHER_CEILING]
    p_ham, ham = out_of_fold(model)
    next_up = np.min(p_ham[ham][p_ham[ham] >= ceiling], initial=np.inf)
    return int(np.sum(p_ham[ham] < ceiling)), int(np.sum(p_ham[ham] <= next_up)), int(ham.sum())


@pytest.mark.filterwarnings("default::UserWarning")  # the command line prints it as one line
@pytest.mark.parametrize("budget, share", [("5%", 0.05), ("30%", 0.30)])
@MODELS
def test_the_cutoff_keeps_the_upper_bound_of_the_ham_flagged_within_the_budget(
    tmp_path, monkeypatch, budget, share, options
):
    """Not the share of out-of-fold ham at or above the cut-off, k/n, but its one-sided
    Clopper-Pearson upper bound at confidence 1 − BUDGET_RISK, is at most the budget; and the
    cut-off is the lowest that does so (one more ham would break the bound), or passes every
    ham when even none flagged is not bound tightly enough. Out of fold over the whole
    sample the model keeps, more documents than T is fitted on (a sample of 30 documents at
    most, kept: 30 over 64 of the 78)."""
    monkeypatch.setattr(calibration, "SAMPLE", 30)
    path = tmp_path / "b.model"
    trained = trained_on_mail(path, *GENERAL, *options, *BUDGET_OPTIONS, budget)
    model = nbtext.load(str(path), fold=True)
    c = model.calibration
    assert c["positive"] == "spam" and c["max_ham_flagged"] == share and 0.0 <= c[OTHER_CEILING] <= 0.5
    flagged, just_past, n = flagged_out_of_fold(model)
    # (the summary says 'at most B ..., an upper bound': where no cut-off can show that, a warning says so)
    too_few = upper_share(0, n, BUDGET_RISK) > share
    assert ("too few to bound the share flagged" in trained.stderr) == too_few
    # ... and then neither the file, the summary nor info claims the bound it could not give
    assert c.get(TOO_FEW) == (n if too_few else None)
    shown = trained.stdout + trained.stderr + run("info", "-m", path).stdout
    claimed = f"at most {share:.2%} of ham flagged, an upper bound from the training data out of fold"
    assert (claimed in shown) == (not too_few), shown
    assert (f"under every one of the {n:,} ham documents out of fold" in shown) == too_few, shown
    assert len(model.calibration_sample[2]) > c["documents"]  # (the whole sample kept, not the fit's)
    assert flagged == 0 or upper_share(flagged, n, BUDGET_RISK) <= share
    assert (
        c[OTHER_CEILING] == 0.5
        or just_past > flagged
        and (upper_share(just_past, n, BUDGET_RISK) > share or flagged == 0)
    )


def decided_on_every_path(model, texts, folder):
    """The label each of `texts` (given as mail, so that filter classifies them too) gets from
    predict of files (the model loaded whole), checked to be the one-message path's (predict of
    stdin, filter) and, for the unsure ones, eval's count; and each one's probabilities by the
    model loaded whole."""
    messages = []
    for i, text in enumerate(texts):
        messages.append(folder / f"{i:03d}.eml")
        messages[-1].write_bytes(b"Subject: a message\n\n" + text)
    whole = subprocess.run(
        [NBTEXT, "predict", "-j", "1", "-m", model, *messages], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    labels = [line.split("\t")[1] for line in whole]
    for message, label in zip(messages, labels):
        one = (
            subprocess.run(
                [NBTEXT, "predict", "-m", model], input=message.read_bytes(), capture_output=True, check=True
            )
            .stdout.decode()
            .strip()
        )
        tagged = subprocess.run(
            [NBTEXT, "filter", "-m", model], input=message.read_bytes(), capture_output=True
        ).stdout.decode(errors="replace")
        assert one == label and f"X-Nbtext-Class: {label}" in tagged, message
    spam, ham = folder / "spam", folder / "ham"
    for part, names in ((spam, messages[: len(messages) // 2]), (ham, messages[len(messages) // 2 :])):
        part.mkdir()
        for message in names:
            (part / message.name).write_bytes(message.read_bytes())
    report = json.loads(run("eval", "-m", model, "--format", "json", spam, ham).stdout)
    assert report["unsure"] == labels.count("unsure")
    return labels, nbtext.load(str(model)).predict_proba([m.read_bytes() for m in messages])


def by_the_ceiling(model, probabilities):
    """The labels the ceiling's rule gives (written here apart from purescore.decide): the most
    probable class, but spam only while P(ham) is under the ceiling, and unsure from it up."""
    ceiling, spam = model.calibration[OTHER_CEILING], model.classes.index("spam")
    return ["ham" if p.argmax() != spam else "spam" if p[1 - spam] < ceiling else "unsure" for p in probabilities]


MAIL_TEST = [p.read_bytes() for label in ("spam", "ham") for p in sorted((MAIL / "test" / label).iterdir())]


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
def test_every_path_decides_by_it(budget_model, tmp_path):
    """The one-message path (predict of stdin, filter), the model loaded whole (predict of
    files) and eval give each message the same label, unsure ones included: the ceiling's."""
    labels, probabilities = decided_on_every_path(budget_model, MAIL_TEST, tmp_path)
    assert labels == by_the_ceiling(nbtext.load(str(budget_model)), probabilities)


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
def test_an_older_builds_cutoff_decides_as_it_did(budget_model, tmp_path):
    """Files of older builds hold a floor on P(spam) (spam from it up), not the ceiling on
    P(ham): they load, and every path decides by their floor as those builds did (here a floor
    half-way among the spam's probabilities, so that it leaves some unsure and not others)."""
    from test_hostile_models import assemble, parts

    header, payload = parts(Path(budget_model).read_bytes())
    calibration = {k: v for k, v in header["calibration"].items() if k != OTHER_CEILING}
    calibration["temperature"] *= 1000  # (probabilities short of 1, to put a floor among)
    older = tmp_path / "older.model"
    older.write_bytes(assemble({**header, "calibration": {**calibration, SPAM_FLOOR: 0.5}}, payload))
    p_spam = nbtext.load(str(older)).predict_proba([b"Subject: a message\n\n" + text for text in MAIL_TEST])[:, 1]
    floor = float(np.median(p_spam[p_spam > 0.5]))
    older.write_bytes(assemble({**header, "calibration": {**calibration, SPAM_FLOOR: floor}}, payload))
    labels, probabilities = decided_on_every_path(older, MAIL_TEST, tmp_path)
    assert labels == ["ham" if p[1] < p[0] else "spam" if p[1] >= floor else "unsure" for p in probabilities]
    assert "spam" in labels and "unsure" in labels
    assert f"spam from a probability of {floor:.6f} up" in run("info", "-m", older).stdout


SPAM_WORDS, HAM_WORDS, COMMON_WORDS = ([a + b + c for b in "aeiou" for c in "klmnprst"] for a in ("z", "q", "w"))


def saturating_corpus(root, seed):
    """spam/ and ham/ of a corpus on which a calibrated multinomial is sure past float64's
    1.0: 300 spam of 100 to 400 words, from 20% to all of them spam words (the rest common
    ones), 500 ham of 20 to 200 words, 80% of them ham words, and 4 ham of 80 words that read
    as spam (70% spam words): the fit divides the log-odds by the length (γ = 1), and those 4
    out of fold, and the spam surer than them, get P(spam) = 1.0."""
    rng = random.Random(seed)

    def text(n, words, share):
        return " ".join(rng.choice(words) if rng.random() < share else rng.choice(COMMON_WORDS) for _ in range(n))

    for label in ("spam", "ham"):
        (root / label).mkdir(parents=True)
    for i in range(300):
        (root / "spam" / f"{i:03d}.txt").write_text(text(rng.randint(100, 400), SPAM_WORDS, rng.uniform(0.2, 1.0)))
    for i in range(500):
        (root / "ham" / f"{i:03d}.txt").write_text(text(rng.randint(20, 200), HAM_WORDS, 0.8))
    for i in range(4):
        (root / "ham" / f"x{i}.txt").write_text(text(80, SPAM_WORDS, 0.7))
    return root / "spam", root / "ham"


def test_a_budget_still_flags_spam_when_the_ham_out_of_fold_is_sure_past_one(tmp_path):
    """The cut-off was a floor on P(spam): where some ham out of fold had P(spam) = 1.0 in
    float64 (log-odds past about 37), the floor passed 1 and nothing was ever spam (here every
    one of 300 spam on new mail was unsure). The ceiling on P(ham) tells those ham from the
    spam surer than them: it flags spam, and on new mail no more ham than the ham that read as
    spam."""
    model = tmp_path / "s.model"
    trained = run("train", *GENERAL, "--max-ham-flagged", "1%", "-o", model, *saturating_corpus(tmp_path / "train", 0))
    assert trained.exit_code == 0, trained.stderr
    loaded = nbtext.load(str(model), fold=True)
    p_ham, ham = out_of_fold(loaded)
    assert np.any(1.0 - p_ham[ham] == 1.0)  # the saturation: a ham as sure as spam can be of P(spam)
    assert loaded.calibration[OTHER_CEILING] > 0.0 and "never" not in run("info", "-m", model).stdout
    report = json.loads(run("eval", "-m", model, "--format", "json", *saturating_corpus(tmp_path / "new", 7)).stdout)
    (ham_kept, ham_flagged), (spam_passed, spam_caught) = report["confusion"]
    assert spam_caught >= 50 and ham_flagged <= 4


def test_spam_surer_than_a_saturated_ham_is_flagged():
    """spam_cutoff on out-of-fold log-odds: 500 ham, 497 of them far from spam and 3 at
    log-odds 40, 45 and 50 (P(spam) = 1.0 in float64), and 500 spam from log-odds 20 to 100.
    The floor on P(spam) could only pass 1 (never spam); the ceiling on P(ham) flags the spam
    surer than the ham it excludes, and no more ham than the bound allows."""
    from nbtext.classifier.purescore import decide
    from nbtext.jobs.calibration import spam_cutoff

    rng = np.random.default_rng(0)
    log_odds = np.concatenate([rng.normal(-10, 3, 497), [40.0, 45.0, 50.0], np.linspace(20, 100, 500)])
    jll = np.stack([np.zeros(1000), log_odds], axis=1)  # classes ham, spam
    rows = np.array([0] * 500 + [1] * 500)
    calibration = {"temperature": 1.0, "length_exponent": 0.0}
    assert np.all(exp(log_odds[497:500] - np.logaddexp(0, log_odds[497:500])) == 1.0)  # (what the floor read)
    record = spam_cutoff(["ham", "spam"], jll, rows, np.full(1000, 20), calibration, 0.01)
    allowed = most_within(500, 0.01, BUDGET_RISK)
    assert 0 < allowed < 3
    p = exp(jll - np.logaddexp(jll[:, :1], jll[:, 1:]))
    labels = [decide(["ham", "spam"], row, None, record)[0] for row in p]
    assert labels[:500].count("spam") == allowed  # the surest ham, within the bound
    surer = log_odds[500:] > np.sort(log_odds[:500])[::-1][allowed]  # than the surest ham excluded
    assert all((label == "spam") == sure for label, sure in zip(labels[500:], surer))
    assert surer.sum() > 300


def test_learning_refits_the_cutoff_to_the_same_budget(budget_model, tmp_path):
    updated = tmp_path / "u.model"
    result = run("train", "--update", "-m", budget_model, "-o", updated, MAIL / "test" / "spam")
    assert result.exit_code == 0, result.stderr
    c = nbtext.load(str(updated)).calibration
    assert c["max_ham_flagged"] == 0.05 and OTHER_CEILING in c


@pytest.mark.parametrize(
    "args, message",
    [
        (["--calibration", "none", "--max-ham-flagged", "1%"], "not with --calibration none"),
        (["--max-ham-flagged", "60%"], "from 0 to 50%"),
        (["--max-ham-flagged", "lots"], "from 0 to 50%"),
        (["--max-ham-flagged", "1%"], "needs a calibrated model of two classes"),  # 78 documents: auto fits no T
    ],
)
def test_what_a_budget_cannot_do_is_one_line(tmp_path, args, message):
    result = run("train", *args, "-o", tmp_path / "m.model", MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 1 and message in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "m.model").exists()


def test_eval_online_from_a_budget_model_decides_as_its_filter(budget_model):
    """The unsure band of an online run from such a model is its cut-off's, and what it
    counts as ham flagged are hams decided spam, not the unsure ones."""
    report = json.loads(
        run(
            "eval",
            "--online",
            "--format",
            "json",
            "-m",
            budget_model,
            "--learn",
            "all",
            MAIL / "test" / "spam",
            MAIL / "test" / "ham",
        ).stdout
    )
    assert report["unsure"][OTHER_CEILING] == nbtext.load(str(budget_model)).calibration[OTHER_CEILING]
    assert (
        report["errors"] == sum(c["taken_for_another"] for c in report["classes"].values()) + report["unsure"]["errors"]
    )


@pytest.mark.filterwarnings("default::UserWarning")  # the command line prints it as one line
def test_a_budget_of_nothing_flags_no_ham_out_of_fold(tmp_path):
    """No sample bounds a share of 0: the cut-off passes every ham out of fold, and train says
    the budget is not bounded (its summary's words, 'at most 0.00% ..., an upper bound', alone
    said it was)."""
    model = tmp_path / "z.model"
    trained = trained_on_mail(model, *GENERAL, *BUDGET_OPTIONS, "0")
    assert "nbtext: warning: --max-ham-flagged 0.00%: 39 ham documents out of fold are too few" in trained.stderr
    loaded = nbtext.load(str(model), fold=True)
    p_ham, ham = out_of_fold(loaded)
    assert not np.any(p_ham[ham] < loaded.calibration[OTHER_CEILING])  # the decision's own probabilities


def test_the_same_budget_written_two_ways_is_the_same_cutoff():
    from nbtext.classifier.settings import ham_flagged_budget
    from nbtext.jobs.calibration import spam_cutoff

    rng = np.random.default_rng(0)
    jll = rng.normal(size=(1000, 2)) * 5
    rows = np.array([0] * 500 + [1] * 500)
    lengths = np.full(1000, 20)
    calibration = {"temperature": 1.0, "length_exponent": 0.0}
    cuts = {
        spam_cutoff(["ham", "spam"], jll, rows, lengths, calibration, ham_flagged_budget(b))[OTHER_CEILING]
        for b in ("1.4%", "0.014", " 1.4 %")
    }
    assert len(cuts) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval", "--folds", "3", "--max-ham-flagged", "1%"], "is train's"),
        (["eval", "--online", "--max-ham-flagged", "1%"], "is train's"),
        (
            ["eval", "-m", "{model}", "--max-ham-flagged", "1%"],
            "is train's",
        ),  # (it said: goes with --folds or --online)
    ],
)
def test_eval_does_not_take_a_budget(args, message, demo_model):
    result = run(*[a.format(model=demo_model) for a in args], MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 2 and message in result.stderr  # a usage error


def test_a_third_class_is_refused_not_the_budget_dropped(budget_model, tmp_path):
    result = run(
        "train",
        "--update",
        "--new-classes",
        "-m",
        budget_model,
        "-o",
        tmp_path / "u.model",
        f"other={MAIL / 'test' / 'ham'}",
    )
    refusal = "takes 2 classes at most" if nbtext.load(budget_model).event.flags.max_classes else "is for two classes"
    assert result.exit_code == 1 and refusal in result.stderr and result.stderr.count("Error") == 1


def test_the_spam_class_is_found_in_any_case(tmp_path):
    model = tmp_path / "c.model"
    assert run("train", *BUDGET_OPTIONS, "5%", "-o", model, *named("Spam", "ham")).exit_code == 0
    assert nbtext.load(str(model)).calibration["positive"] == "Spam"


def test_a_budget_needs_the_names_to_say_which_class_is_spam(tmp_path):
    """The cut-off is on the spam class's probability: with names that do not say which it is
    (bulk and important), the budget is refused, not put on the class that sorts second
    (important, the good mail, as an attack found); beside a class named ham, the other is spam."""
    model = tmp_path / "c.model"
    result = run("train", *BUDGET_OPTIONS, "5%", "-o", model, *named("bulk", "important"))
    assert result.exit_code == 1 and "named spam or ham" in result.stderr and result.stderr.count("\n") == 1
    assert not model.exists()
    assert run("train", *BUDGET_OPTIONS, "5%", "-o", model, *named("junk", "ham")).exit_code == 0
    assert nbtext.load(str(model)).calibration["positive"] == "junk"


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(-50, 700), min_size=20, max_size=300),
    st.lists(st.floats(-50, 700), min_size=1, max_size=100),
    st.sampled_from([0.01, 0.05, 0.2]),
)
def test_the_ceiling_ranks_as_the_log_odds_do_however_sure(ham, spam, budget):
    """Whatever the out-of-fold log-odds of spam (up to 700; P(spam) is 1.0 in float64 past
    about 37), the cut-off flags no more ham than the bound allows, and every spam surer than
    the surest ham it leaves out: a threshold on the log-odds, as in exact arithmetic."""
    from nbtext.classifier.purescore import decide
    from nbtext.jobs.calibration import spam_cutoff

    log_odds = np.array(ham + spam)
    jll = np.stack([np.zeros(len(log_odds)), log_odds], axis=1)  # classes ham, spam
    rows = np.array([0] * len(ham) + [1] * len(spam))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (too few ham to bound the budget: said, and none flagged)
        record = spam_cutoff(["ham", "spam"], jll, rows, np.full(len(rows), 20), {"temperature": 1.0}, budget)
    allowed = most_within(len(ham), budget, BUDGET_RISK) or 0
    p = exp(jll - np.logaddexp(jll[:, :1], jll[:, 1:]))
    labels = [decide(["ham", "spam"], row, None, record)[0] for row in p]
    assert labels[: len(ham)].count("spam") <= allowed
    left_out = sorted(ham, reverse=True)[allowed] if allowed < len(ham) else -np.inf
    surer = [label for label, odds in zip(labels[len(ham) :], spam) if odds > max(left_out, 0.0) + 1e-6]
    assert surer.count("spam") == len(surer)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), st.integers(0, 3000), st.sampled_from([0.01, 0.05, 0.2, 0.5, 0.9]))
def test_the_upper_bound_is_the_beta_quantile_of_clopper_pearson(n, k, risk):
    """upper_share(k, n, δ) is the (1 − δ) quantile of Beta(k + 1, n − k), as scipy computes it."""
    k = min(k, n)
    expected = 1.0 if k == n else float(beta.ppf(1 - risk, k + 1, n - k))
    assert upper_share(k, n, risk) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4000), st.floats(0.0005, 0.45), st.sampled_from([0.05, 0.2, 0.5]))
def test_most_within_is_the_largest_count_whose_bound_keeps_to_the_share(n, share, risk):
    k = most_within(n, share, risk)
    if k is None:
        assert beta.ppf(1 - risk, 1, n) > share
    else:
        assert beta.ppf(1 - risk, k + 1, n - k) <= share * (1 + 1e-9) if k < n else True
        assert k == n or beta.ppf(1 - risk, k + 2, n - k - 1) >= share * (1 - 1e-9)


@pytest.mark.parametrize("budget", [0.002, 0.01, 0.05, 0.2])
def test_the_cutoff_flags_the_most_ham_the_bound_allows_fewer_than_the_share(budget):
    """On 500 ham out of fold, of distinct probabilities: the cut-off flags exactly
    most_within(500, B, BUDGET_RISK) of them (none for a budget too small to bound), fewer
    than B · 500 (which the empirical share allowed, and which mail never seen overran)."""
    from nbtext.jobs.calibration import spam_cutoff

    rng = np.random.default_rng(1)
    jll = rng.normal(size=(1000, 2)) * 5
    rows = np.array([0] * 500 + [1] * 500)
    calibration = {"temperature": 1.0, "length_exponent": 0.0}
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ceiling = spam_cutoff(["ham", "spam"], jll, rows, np.full(1000, 20), calibration, budget)[OTHER_CEILING]
    assert bool(said) == (most_within(500, budget, BUDGET_RISK) is None)  # not bounded: said
    p_ham = exp(jll[:, 0] - np.logaddexp(jll[:, 0], jll[:, 1]))
    flagged = int(np.sum(p_ham[:500] < ceiling))
    assert flagged == (most_within(500, budget, BUDGET_RISK) or 0) < np.floor(budget * 500)


def test_an_update_chooses_the_cutoff_of_one_training(tmp_path, monkeypatch):
    """The cut-off is chosen on the whole calibration sample kept (here more documents than
    T is fitted on: a sample of 30 at most), and that sample is the one one training keeps:
    train A then --update with B writes the file of train A+B, byte for byte."""
    monkeypatch.setattr(calibration, "SAMPLE", 30)
    budget = [*GENERAL, *BUDGET_OPTIONS, "20%"]
    a = [f"spam={MAIL / 'train' / 'spam'}", f"ham={MAIL / 'train' / 'ham'}"]
    b = [f"spam={MAIL / 'test' / 'spam'}", f"ham={MAIL / 'test' / 'ham'}"]
    assert run("train", *budget, "-o", tmp_path / "whole.model", *a, *b).exit_code == 0
    whole = (tmp_path / "whole.model").read_bytes()
    model = nbtext.load(str(tmp_path / "whole.model"))
    assert len(model.calibration_sample[2]) > model.calibration["documents"] and OTHER_CEILING in model.calibration
    assert run("train", *budget, "-o", tmp_path / "a.model", *a).exit_code == 0
    assert run("train", "--update", "-m", tmp_path / "a.model", "-o", tmp_path / "u.model", *b).exit_code == 0
    assert (tmp_path / "u.model").read_bytes() == whole


def test_train_says_the_cutoff_it_chose_as_info_does(tmp_path):
    """The cut-off --max-ham-flagged chose was said by `info` alone: train's summary (and
    --update's, which refits it) says it in the same words."""
    model = tmp_path / "c.model"
    trained = trained_on_mail(model, *BUDGET_OPTIONS, "5%")
    decision = next(line for line in run("info", "-m", model).stdout.splitlines() if line.startswith("decision"))
    said = decision.split(None, 1)[1].split("; ")[0]  # (info adds what happens below it)
    c = nbtext.load(str(model)).calibration
    assert f"below {c[OTHER_CEILING]:.3g} (" in said if c[OTHER_CEILING] > 0 else said.startswith("never spam")
    assert f"; decision: {said}; " in trained.stderr and "5.00%" in said
    updated = run("train", "--update", "-m", model, "-o", tmp_path / "u.model", f"spam={MAIL / 'test' / 'spam'}")
    assert updated.exit_code == 0 and "; decision: spam" in updated.stderr and "5.00%" in updated.stderr
    plain = trained_on_mail(tmp_path / "p.model", "--calibration", "temperature")
    assert "decision" not in plain.stderr  # no budget, no cut-off to say


@pytest.mark.parametrize(
    "key, cutoff, words",
    [
        (
            OTHER_CEILING,
            2.6e-05,
            "spam when the probability of ham is below 2.6e-05 (at most 1.00% of ham flagged, an upper bound "
            "from the training data out of fold)",
        ),
        (
            OTHER_CEILING,
            0.0,
            "never spam: the other class was certain of it out of fold, so no cut-off keeps to 1.00% flagged",
        ),
        (  # older builds' files
            SPAM_FLOOR,
            0.973251,
            "spam from a probability of 0.973251 up (at most 1.00% of the other class flagged, an upper bound "
            "from the training data out of fold)",
        ),
        (
            SPAM_FLOOR,
            1.0000000000000002,
            "never spam: the other class was certain of it out of fold, so no cut-off keeps to 1.00% flagged",
        ),
    ],
)
def test_the_cutoff_in_words(key, cutoff, words):
    from nbtext.report.text import spam_cutoff_said

    classes = ["ham", "spam"]
    assert spam_cutoff_said({"positive": "spam", key: cutoff, "max_ham_flagged": 0.01}, classes) == words
    assert spam_cutoff_said({"temperature": 2.0}, classes) is None and spam_cutoff_said(None, classes) is None


@pytest.mark.parametrize("key", [OTHER_CEILING, SPAM_FLOOR])
def test_a_cutoff_at_one_half_says_it_leaves_nothing_unsure(budget_model, tmp_path, key):
    """q = 0.5 (SpamAssassin's at 1%: no ham near spam out of fold) or an older build's floor
    of 0.5 is the plain decision: info said "at or above it, up to 0.5: unsure", a band of
    nothing, as if some spam were held back."""
    from test_hostile_models import assemble, parts

    header, payload = parts(Path(budget_model).read_bytes())
    calibration = {k: v for k, v in header["calibration"].items() if k != OTHER_CEILING}
    model = tmp_path / "half.model"
    model.write_bytes(assemble({**header, "calibration": {**calibration, key: 0.5}}, payload))
    decision = next(line for line in run("info", "-m", model).stdout.splitlines() if line.startswith("decision"))
    assert decision.endswith("; it leaves nothing unsure: it is the plain decision"), decision
