"""Scoring predictions: accuracy, per-class precision / recall / F1, confusion matrix.

An undefined metric (precision of a class never predicted, for example) is NaN, printed
as `-` and written as null in JSON, never silently 0.
"""

import math


def log_loss(true_log_probabilities):
    """−mean log P(true class | document), from log-probabilities (so never log 0). At
    least 0: a certain right answer has log P = 0 (+ 0.0 makes −0.0 print as 0)."""
    values = list(true_log_probabilities)
    return max(-sum(values) / len(values), 0.0) + 0.0 if values else math.nan


def reliability_bins(confidences, correct, bins=10):
    """[(documents, confidence summed, correct)] for `bins` equal-width bins of the winning
    class's probability (a document of confidence 1.0 is in the last bin)."""
    totals = [[0, 0.0, 0] for _ in range(bins)]
    for confidence, right in zip(confidences, correct):
        b = totals[min(int(confidence * bins), bins - 1)]
        b[0] += 1
        b[1] += confidence
        b[2] += bool(right)
    return [tuple(b) for b in totals]


def expected_calibration_error(confidences, correct, bins=10):
    """ECE: Σ_b (n_b / N) · |accuracy_b − mean confidence_b| over `bins` equal-width bins."""
    n = len(confidences)
    if not n:
        return math.nan
    totals = reliability_bins(confidences, correct, bins)
    return sum(abs(right / count - summed / count) * count / n for count, summed, right in totals if count)


def roc_curve(scores, positives):
    """(false positive rates, true positive rates) as the threshold falls through the
    scores, tied scores taken together; from (0, 0) to (1, 1)."""
    n_pos = sum(positives)
    n_neg = len(positives) - n_pos
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    fpr, tpr, tp, fp = [0.0], [0.0], 0, 0
    for rank, i in enumerate(order):
        tp += bool(positives[i])
        fp += not positives[i]
        if rank + 1 == len(order) or scores[order[rank + 1]] != scores[i]:
            fpr.append(fp / n_neg if n_neg else math.nan)
            tpr.append(tp / n_pos if n_pos else math.nan)
    return fpr, tpr


def roc_auc(scores, positives):
    """Area under the ROC curve: P(score of a random positive > that of a random negative),
    ties counting one half (the Mann-Whitney U statistic, from the ranks of the scores)."""
    order = sorted(range(len(scores)), key=scores.__getitem__)
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1  # tied scores share their average rank
        i = j + 1
    n_pos = sum(positives)
    n_neg = len(positives) - n_pos
    if not n_pos or not n_neg:
        return math.nan
    rank_sum = sum(r for r, p in zip(ranks, positives) if p)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def labels_report(true_labels, predicted_labels, classes):
    """The report as a plain dict (the `--format json` output)."""
    index = {label: k for k, label in enumerate(classes)}
    confusion = [[0] * len(classes) for _ in classes]
    for truth, guess in zip(true_labels, predicted_labels):
        confusion[index[truth]][index[guess]] += 1
    n = sum(map(sum, confusion))
    correct = sum(confusion[k][k] for k in range(len(classes)))
    per_class = {}
    for k, label in enumerate(classes):
        true_positive = confusion[k][k]
        support = sum(confusion[k])
        predicted = sum(row[k] for row in confusion)
        precision = _ratio(true_positive, predicted)
        recall = _ratio(true_positive, support)
        f1 = (
            2 * precision * recall / (precision + recall)
            if precision + recall > 0
            else (0.0 if support or predicted else math.nan)
        )
        per_class[label] = {"precision": precision, "recall": recall, "f1": f1, "support": support}
    present = [label for label in classes if per_class[label]["support"] > 0]
    return {
        "n": n,
        "accuracy": _ratio(correct, n),
        "classes": list(classes),
        "per_class": per_class,
        "macro_precision": _mean(per_class[c]["precision"] for c in present),
        "macro_recall": _mean(per_class[c]["recall"] for c in present),
        "macro_f1": _mean(per_class[c]["f1"] for c in present),
        "confusion": confusion,
    }


def _ratio(a, b):
    return a / b if b else math.nan


def _mean(values):
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan
