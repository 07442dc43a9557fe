"""Pictures (`eval --plot`, `info --plot`; the plot extra, matplotlib).

eval: the confusion matrix, the reliability diagram of the probabilities (per bin of the
winning class's probability, the share of documents it got right, against the diagonal
of perfect calibration) and, for two classes, the ROC curve with its AUC. info: per class,
the tokens that most indicate it (log θ(token | class) − log θ(token | the other classes)).
The file type follows the name: .png, .svg or .pdf. matplotlib is imported only here.
"""

import io
import os

from nbtext.errors import NbtextError
from nbtext.metrics import reliability_bins, roc_curve
from nbtext.container import write_atomically

EXTRA = "pip install 'nbtext[plot]'"
FORMATS = (".png", ".svg", ".pdf")


def check_plot_path(path, folds=None):
    """Refuse a --plot file of another type, one that could not be written (a folder that
    does not exist or is not writable), or (eval) --plot with --folds, before any work."""
    from nbtext.container import check_writable

    if os.path.splitext(str(path))[1].lower() not in FORMATS:
        raise NbtextError(f"--plot writes a .png, .svg or .pdf file, not {path}")
    if folds is not None:
        raise NbtextError("--plot draws a model's report: it does not go with --folds")
    check_writable(path)


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise NbtextError(f"--plot needs the plot extra: {EXTRA}") from None
    matplotlib.use("Agg")  # files only, no screen
    matplotlib.rcParams["svg.fonttype"] = "none"  # an SVG keeps its text as text: searchable, selectable
    import matplotlib.pyplot as plt

    return plt


def _save(figure, path):
    check_plot_path(path)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=os.path.splitext(str(path))[1][1:].lower(), bbox_inches="tight")
    write_atomically(path, [buffer.getvalue()])


def eval_plot(report, curves, path):
    """The eval report as a picture: confusion matrix, reliability diagram, ROC (two classes)."""
    plt = _pyplot()
    classes = report["classes"]
    two = len(classes) == 2 and curves.get("log_odds")
    figure, axes = plt.subplots(1, 3 if two else 2, figsize=(15 if two else 10.5, 4.8), constrained_layout=True)
    _confusion(axes[0], report["confusion"], classes)
    _reliability(axes[1], curves["confidences"], curves["right"], report.get("ece"))
    if two:
        fpr, tpr = roc_curve(curves["log_odds"], curves["positives"])
        axes[2].plot(fpr, tpr, drawstyle="steps-post", label=f"AUC {report.get('roc_auc', float('nan')):.4f}")
        axes[2].plot([0, 1], [0, 1], linestyle=":", color="grey")
        axes[2].set(xlabel="false positive rate", ylabel=f"true positive rate ({classes[1]})", title="ROC curve",
                    xlim=(0, 1), ylim=(0, 1.01))
        axes[2].legend(loc="lower right")
    figure.suptitle(f"{report['n']:,} documents, accuracy {report['accuracy']:.4f}")
    _save(figure, path)
    plt.close(figure)


def online_plot(report, path):
    """An online run as a picture: the errors as the documents come (cumulative), and for two
    classes the ROC curve with a logarithmic false-positive axis (what mail users feel is
    the left end: the share of good mail flagged), the filter's cut (p = 0.5) marked."""
    plt = _pyplot()
    two = "roca_percent" in report
    figure, axes = plt.subplots(1, 2 if two else 1, figsize=(11 if two else 5.5, 4.5), constrained_layout=True,
                                squeeze=False)
    errors = axes[0][0]
    errors.plot(range(1, report["n"] + 1), report["cumulative_errors"])
    errors.set(xlabel="documents so far", ylabel="errors so far", title="errors as the documents come")
    if two:
        positives = [label == report["positive"] for label in report["labels"]]
        fpr, tpr = roc_curve(report["scores"], positives)
        roc = axes[0][1]
        floor = 1 / max(sum(1 for p in positives if not p), 1)
        roc.plot([max(f, floor / 2) for f in fpr], tpr, drawstyle="steps-post",
                 label=f"1-ROCA {report['roca_percent']:.3f}%")
        negatives = sum(1 for p in positives if not p) or 1
        # the filter's cut: p >= 0.5, log-odds >= 0 (as it decides)
        cut_fpr = sum(1 for s, p in zip(report["scores"], positives) if not p and s >= 0) / negatives
        cut_tpr = sum(1 for s, p in zip(report["scores"], positives) if p and s >= 0) / (len(positives) - negatives or 1)
        roc.plot([max(cut_fpr, floor / 2)], [cut_tpr], "o", label=f"p ≥ 0.5: {cut_fpr:.2%} {report['negative']} flagged")
        roc.set_xscale("log")
        roc.set(xlabel=f"share of {report['negative']} flagged (log scale)", ylabel=f"share of {report['positive']} caught",
                title="ROC curve", ylim=(0, 1.01))
        roc.legend(loc="lower right")
    figure.suptitle(f"online: {report['n']:,} documents, {report['errors']:,} errors, "
                    f"learning {'every document' if report['learn'] == 'all' else 'the errors'}")
    _save(figure, path)
    plt.close(figure)


def _confusion(axis, confusion, classes):
    image = axis.imshow(confusion, cmap="Blues")
    axis.figure.colorbar(image, ax=axis, fraction=0.046)
    ticks = range(len(classes))
    axis.set(xticks=ticks, yticks=ticks, xlabel="predicted", ylabel="true class", title="confusion matrix")
    axis.set_xticklabels(classes, rotation=90 if len(classes) > 4 else 0)
    axis.set_yticklabels(classes)
    if len(classes) <= 12:
        top = max(max(row) for row in confusion) or 1
        for i, row in enumerate(confusion):
            for j, n in enumerate(row):
                axis.text(j, i, str(n), ha="center", va="center", color="white" if n > top / 2 else "black")


def _reliability(axis, confidences, right, ece):
    bins = reliability_bins(confidences, right)
    centers = [(b + 0.5) / len(bins) for b in range(len(bins))]
    accuracy = [correct / n if n else 0.0 for n, _, correct in bins]
    axis.bar(centers, accuracy, width=1 / len(bins), edgecolor="black", alpha=0.7, label="share right")
    axis.plot([0, 1], [0, 1], linestyle=":", color="grey", label="perfect calibration")
    for center, (n, _, _) in zip(centers, bins):
        if n:
            axis.text(center, 0.02, f"{n:,}", ha="center", rotation=90, fontsize=7)
    title = "reliability" + (f" (ECE {ece:.4f})" if ece is not None else "")
    axis.set(xlabel="probability of the winning class", ylabel="share of documents right", title=title,
             xlim=(0, 1), ylim=(0, 1.01))
    axis.legend(loc="upper left")


def info_plot(summary, path):
    """The most indicative tokens of each class (from NaiveBayes.summary(top))."""
    plt = _pyplot()
    classes = list(summary["top"])
    columns = min(len(classes), 4)
    rows = -(-len(classes) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4 * columns, 0.3 * max(len(v) for v in summary["top"].values())
                                                        * rows + 1.5), squeeze=False)
    for axis, label in zip(axes.flat, classes):
        tokens = summary["top"][label][::-1]
        axis.barh([token for token, _ in tokens], [value for _, value in tokens])
        axis.set(title=label, xlabel="log θ(token | class) − log θ(token | others)")
    for axis in list(axes.flat)[len(classes):]:
        axis.set_visible(False)
    figure.tight_layout()
    _save(figure, path)
    plt.close(figure)
