"""nbtext.stats.metrics against independent computations: scikit-learn's metrics where the
definitions match (ROC AUC and its curve, log-loss, accuracy, per-class precision, recall, F1 and
the confusion matrix), and the formula written out in numpy for the calibration error."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as sk

from nbtext.stats import metrics

# Scores drawn from a few values, so that ties (which the ranks and the curve must take together) are common.
scored = st.lists(
    st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0]), st.booleans()), min_size=2, max_size=60
)


@settings(max_examples=150, deadline=None)
@given(scored)
def test_roc_auc_is_scikit_learns(pairs):
    scores, positives = map(list, zip(*pairs))
    if len(set(positives)) < 2:
        assert math.isnan(metrics.roc_auc(scores, positives))  # one class only: undefined, not 0 or 1
    else:
        assert metrics.roc_auc(scores, positives) == pytest.approx(sk.roc_auc_score(positives, scores), abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(scored)
def test_roc_curve_is_scikit_learns_with_every_threshold_kept(pairs):
    scores, positives = map(list, zip(*pairs))
    if len(set(positives)) < 2:
        return  # scikit-learn warns and divides by zero there
    fpr, tpr = metrics.roc_curve(scores, positives)
    expected_fpr, expected_tpr, _ = sk.roc_curve(positives, scores, drop_intermediate=False)
    assert fpr == pytest.approx(expected_fpr.tolist()) and tpr == pytest.approx(expected_tpr.tolist())
    area = sum((b - a) * (c + d) / 2 for a, b, c, d in zip(fpr, fpr[1:], tpr, tpr[1:]))  # the trapezoids under it
    assert area == pytest.approx(metrics.roc_auc(scores, positives), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-6, 1.0), st.booleans()), min_size=1, max_size=40))
def test_log_loss_is_scikit_learns(pairs):
    """nbtext takes log P(true class); scikit-learn the probability of class 1 and the truth."""
    p_true, truth = map(list, zip(*pairs))
    p_one = [p if t else 1 - p for p, t in zip(p_true, truth)]
    expected = sk.log_loss(truth, p_one, labels=[False, True])
    assert metrics.log_loss(math.log(p) for p in p_true) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert metrics.log_loss([]) != metrics.log_loss([])  # NaN for no documents


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), min_size=1, max_size=50), st.integers(1, 15))
def test_expected_calibration_error_is_its_formula(pairs, bins):
    """Σ_b (n_b / N) |accuracy_b − mean confidence_b|, bins [i/B, (i+1)/B) with 1.0 in the last."""
    confidence, correct = map(np.array, zip(*pairs))
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    expected = sum(
        abs(correct[which == b].mean() - confidence[which == b].mean()) * (which == b).sum()
        for b in range(bins)
        if (which == b).any()
    ) / len(pairs)
    assert metrics.expected_calibration_error(confidence.tolist(), correct.tolist(), bins) == pytest.approx(expected)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abcd")), min_size=1, max_size=40))
def test_the_report_is_scikit_learns(pairs):
    """Per class and macro over the classes present in the truth; a precision of a class never
    predicted is undefined (NaN), as scikit-learn's zero_division=nan says, never 0."""
    truth, guess = map(list, zip(*pairs))
    classes = ["a", "b", "c", "d"]
    report = metrics.labels_report(truth, guess, classes)
    assert report["n"] == len(pairs)
    assert report["accuracy"] == pytest.approx(sk.accuracy_score(truth, guess))
    assert report["confusion"] == sk.confusion_matrix(truth, guess, labels=classes).tolist()
    precision, recall, f1, support = sk.precision_recall_fscore_support(
        truth, guess, labels=classes, zero_division=np.nan
    )
    for k, label in enumerate(classes):
        ours = report["per_class"][label]
        assert ours["support"] == support[k]
        assert ours["precision"] == pytest.approx(precision[k], nan_ok=True)
        assert ours["recall"] == pytest.approx(recall[k], nan_ok=True)
        assert ours["f1"] == pytest.approx(f1[k], nan_ok=True)  # 2TP / (2TP + FP + FN), 0 where only TP is 0
    present = sorted(set(truth))
    for name, column in (("macro_precision", precision), ("macro_recall", recall)):
        values = [column[classes.index(c)] for c in present if not math.isnan(column[classes.index(c)])]
        assert report[name] == pytest.approx(np.mean(values) if values else math.nan, nan_ok=True)
