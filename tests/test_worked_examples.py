"""Hand-worked examples: Manning, Raghavan & Schütze ch. 13, and the seeds' zero-count case."""

import math

import numpy as np
import pytest

import nbtext

TRAIN = ["Chinese Beijing Chinese", "Chinese Chinese Shanghai", "Chinese Macao", "Tokyo Japan Chinese"]
LABELS = ["c", "c", "c", "j"]
TEST = "Chinese Chinese Chinese Tokyo Japan"
EXACT = dict(unknown="ignore", min_count=1, prior="empirical")


def joint_probability(model_name):
    clf = nbtext.train(TRAIN, LABELS, model=model_name, **EXACT)
    return dict(zip(clf.classes, np.exp(clf.joint_log_likelihood([TEST])[0]))), clf


def test_multinomial_joint_probabilities():
    # P(c)·(6/14)^3·(1/14)·(1/14) and P(j)·(2/9)^3·(2/9)·(2/9), vocabulary of 6 tokens
    p, clf = joint_probability("multinomial")
    assert p["c"] == pytest.approx(3 / 4 * (6 / 14) ** 3 * (1 / 14) ** 2, rel=1e-12)
    assert p["j"] == pytest.approx(1 / 4 * (2 / 9) ** 5, rel=1e-12)
    assert round(p["c"], 4) == 0.0003 and round(p["j"], 4) == 0.0001
    assert clf.predict([TEST]) == ["c"]


def test_bernoulli_joint_probabilities():
    p, clf = joint_probability("bernoulli")
    # c: chinese 4/5, japan 1/5, tokyo 1/5, absent beijing, macao, shanghai (1 - 2/5) each
    assert p["c"] == pytest.approx(3 / 4 * 4 / 5 * 1 / 5 * 1 / 5 * (3 / 5) ** 3, rel=1e-12)
    # j: chinese, japan, tokyo 2/3 each, absent beijing, macao, shanghai (1 - 1/3) each
    assert p["j"] == pytest.approx(1 / 4 * (2 / 3) ** 3 * (2 / 3) ** 3, rel=1e-12)
    assert round(p["c"], 3) == 0.005 and round(p["j"], 3) == 0.022
    assert clf.predict([TEST]) == ["j"]


def test_bernoulli_zero_count_is_smoothed_to_one_tenth():
    # A token in none of a class's 8 documents: θ = (0 + 1) / (8 + 2) = 1/10, not 0.
    docs = ["apple"] * 8 + ["banana", "banana"]
    labels = ["a"] * 8 + ["b"] * 2
    clf = nbtext.train(docs, labels, model="bernoulli", **EXACT)
    a = clf.classes.index("a")
    banana = clf.feature_names.index("banana")
    assert math.exp(clf.feature_log_prob[a, banana]) == pytest.approx(1 / 10, rel=1e-12)
    # Without smoothing "banana" would rule class a out; with it, class a keeps a real chance.
    proba = clf.predict_proba(["apple banana"])[0]
    assert 0.0 < proba[a] < 1.0 and np.isfinite(np.log(proba[a]))
    # ... and the exact posterior, worked by hand: P(a)=8/10, P(b)=2/10,
    # θ_apple|a = 9/10, θ_banana|a = 1/10; θ_apple|b = 1/4, θ_banana|b = 3/4.
    joint_a = 8 / 10 * 9 / 10 * 1 / 10
    joint_b = 2 / 10 * 1 / 4 * 3 / 4
    assert proba[a] == pytest.approx(joint_a / (joint_a + joint_b), rel=1e-12)


@pytest.mark.parametrize(
    "prior, expected_c", [("smoothed", (3 + 1) / (4 + 2)), ("empirical", 3 / 4), ("uniform", 1 / 2)]
)
def test_priors(prior, expected_c):
    clf = nbtext.train(TRAIN, LABELS, prior=prior, min_count=1)
    assert math.exp(clf.class_log_prior[clf.classes.index("c")]) == pytest.approx(expected_c, rel=1e-12)


def test_multinomial_with_unk_uses_d_including_unk():
    # min_count 2 keeps only "chinese" (count 6 in c, 1 in j); everything else is UNK.
    clf = nbtext.train(TRAIN, LABELS, model="multinomial", min_count=2, alpha=0.5)
    assert clf.feature_names == ["chinese", "<UNK>"]
    c = clf.classes.index("c")
    # class c: 8 tokens, 5 chinese, 3 others -> UNK; d = 2 features
    assert np.exp(clf.feature_log_prob[c]) == pytest.approx([(5 + 0.5) / (8 + 1), (3 + 0.5) / (8 + 1)])
