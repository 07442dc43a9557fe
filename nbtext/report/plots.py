"""Pictures (`eval --plot`, `info --plot`; the plot extra, matplotlib).

eval: the confusion matrix, the reliability diagram of the probabilities (per bin of the
winning class's probability, the share of documents it got right, against the diagonal
of perfect calibration, and how many documents each bin holds) and, for two classes, the
ROC curve with its AUC on a logarithmic false-positive axis. eval --online: the errors as
the documents come, and the ROC curve. info: per class, the tokens that most indicate it
(how many times more often they occur in it than in the other classes).
The file type follows the name: .png, .svg or .pdf. matplotlib is imported only here.
"""

import io
import os

from nbtext.errors import NbtextError
from nbtext.labels import positive_class
from nbtext.modelfile.container import write_atomically
from nbtext.stats.metrics import reliability_bins, roc_curve

EXTRA = "pip install 'nbtext[plot]'"
FORMATS = (".png", ".svg", ".pdf")


def check_plot_path(path):
    """Refuse a --plot file of another type, one that could not be written (a folder that
    does not exist or is not writable), or --plot without the plot extra, before any work."""
    from importlib.util import find_spec

    from nbtext.modelfile.container import check_writable

    if os.path.splitext(str(path))[1].lower() not in FORMATS:
        raise NbtextError(f"--plot writes a .png, .svg or .pdf file, not {path}")
    if find_spec("matplotlib") is None:
        raise NbtextError(f"--plot needs the plot extra: {EXTRA}")
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


def _save(figure, path, trimmed=True):
    """The figure written to `path`; `trimmed`: to the box of what is drawn (bbox_inches
    tight, which draws the whole figure once more to find it)."""
    check_plot_path(path)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=os.path.splitext(str(path))[1][1:].lower(), bbox_inches="tight" if trimmed else None)
    write_atomically(path, [buffer.getvalue()], private=False)  # a picture of figures, no mail's words


def eval_plot(report, curves, path):
    """The eval report as a picture: the confusion matrix (each row as shares of its true
    class), the reliability diagram with how many documents each bin holds beneath it,
    and for two classes the ROC curve on a logarithmic false-positive axis with the
    model's own decision marked. The matrix grows with the classes."""
    plt = _pyplot()
    classes = report["classes"]
    two = len(classes) == 2 and curves.get("log_odds")
    side = max(4.0, 0.42 * len(classes))  # the matrix's side: names and numbers stay legible at 20 classes
    figure = plt.figure(figsize=(side + 1.2 + 4.5 * (2 if two else 1), max(4.8, side)), constrained_layout=True)
    grid = figure.add_gridspec(
        2, 3 if two else 2, height_ratios=[3, 1], width_ratios=[side + 1.2, 4.5, 4.5] if two else [side + 1.2, 4.5]
    )
    _confusion(figure.add_subplot(grid[:, 0]), report["confusion"], classes)
    reliability = figure.add_subplot(grid[0, 1])
    _reliability(
        reliability,
        figure.add_subplot(grid[1, 1], sharex=reliability),
        curves["confidences"],
        curves["right"],
        report.get("ece"),
    )
    if two:
        positive = positive_class(classes)  # as evaluation took the log-odds
        negative = next(c for c in classes if c != positive)
        _roc(
            figure.add_subplot(grid[:, 2]),
            curves["log_odds"],
            curves["positives"],
            (negative, positive),
            report.get("roc_auc", float("nan")),
            tie_is_positive=classes.index(positive) == 0,
        )
    figure.suptitle(f"{report['n']:,} documents, accuracy {report['accuracy']:.4f}")
    _save(figure, path)
    plt.close(figure)


def _roc(axis, log_odds, positives, classes, auc, tie_is_positive=False):
    """The ROC curve with the false-positive rate on a log axis (the share of the other class
    flagged: what mail users feel is the left end), the decision at log-odds 0 marked.
    `classes` (negative, positive); `log_odds` the positive class's against the other's."""
    fpr, tpr = roc_curve(log_odds, positives)
    negatives = sum(1 for p in positives if not p) or 1
    floor = 0.5 / negatives  # a rate of 0 drawn at half the smallest one there can be
    axis.plot([max(f, floor) for f in fpr], tpr, drawstyle="steps-post", label=f"AUC {auc:.4f}")
    # a tie (0) goes to the class first in the model's order, as argmax gives it
    decided = [z > 0 or (z == 0 and tie_is_positive) for z in log_odds]
    flagged = sum(1 for d, p in zip(decided, positives) if not p and d) / negatives
    caught = sum(1 for d, p in zip(decided, positives) if p and d) / ((len(positives) - negatives) or 1)
    axis.plot(
        [max(flagged, floor)],
        [caught],
        "o",
        label=f"its decision: {flagged:.2%} of {classes[0]} taken,\n{caught:.2%} of {classes[1]} found",
    )
    axis.set_xscale("log")
    axis.set(
        xlabel=f"share of {classes[0]} taken for {classes[1]} (log scale)",
        ylabel=f"share of {classes[1]} found",
        title="ROC curve",
        ylim=(0, 1.01),
        xlim=(floor / 2, 1.05),
    )
    axis.legend(loc="lower right", fontsize=8)


def online_plot(report, path):
    """An online run as a picture: the errors as the documents come (cumulative), and for two
    classes the ROC curve with a logarithmic false-positive axis (what mail users feel is
    the left end: the share of good mail flagged), the filter's cut (p = 0.5) marked."""
    plt = _pyplot()
    two = "roca_percent" in report
    figure, axes = plt.subplots(
        1, 2 if two else 1, figsize=(11 if two else 5.5, 4.5), constrained_layout=True, squeeze=False
    )
    errors = axes[0][0]
    errors.plot(range(1, report["n"] + 1), report["cumulative_errors"])
    errors.set(xlabel="documents so far", ylabel="errors so far", title="errors as the documents come")
    if two:
        positives = [label == report["positive"] for label in report["labels"]]
        fpr, tpr = roc_curve(report["scores"], positives)
        roc = axes[0][1]
        floor = 1 / max(sum(1 for p in positives if not p), 1)
        roc.plot(
            [max(f, floor / 2) for f in fpr], tpr, drawstyle="steps-post", label=f"1-ROCA {report['roca_percent']:.3f}%"
        )
        negatives = sum(1 for p in positives if not p) or 1
        # the filter's cut: p >= 0.5, log-odds >= 0 (as it decides)
        # (a tie, log-odds 0, goes to the first class, as the run's argmax gives it)
        first_is_positive = report["positive"] == sorted([report["positive"], report["negative"]])[0]
        flagged = (lambda z: z >= 0) if first_is_positive else (lambda z: z > 0)
        cut_fpr = sum(1 for s, p in zip(report["scores"], positives) if not p and flagged(s)) / negatives
        cut_tpr = sum(1 for s, p in zip(report["scores"], positives) if p and flagged(s)) / (
            len(positives) - negatives or 1
        )
        roc.plot(
            [max(cut_fpr, floor / 2)], [cut_tpr], "o", label=f"p ≥ 0.5: {cut_fpr:.2%} {report['negative']} flagged"
        )
        roc.set_xscale("log")
        roc.set(
            xlabel=f"share of {report['negative']} flagged (log scale)",
            ylabel=f"share of {report['positive']} caught",
            title="ROC curve",
            ylim=(0, 1.01),
        )
        roc.legend(loc="lower right")
    figure.suptitle(
        f"online: {report['n']:,} documents, {report['errors']:,} errors, "
        f"learning {'every document' if report['learn'] == 'all' else 'the errors'}"
    )
    _save(figure, path)
    plt.close(figure)


def _confusion(axis, confusion, classes):
    """Rows coloured by the share of the true class each column took (so a small class's
    mistakes show as much as a large one's), each cell's share written in it (with the
    count, up to a dozen classes; at more, the shares of 1% and up)."""
    shares = [[n / (sum(row) or 1) for n in row] for row in confusion]
    image = axis.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    axis.figure.colorbar(image, ax=axis, fraction=0.046, label="share of the true class")
    ticks, many = range(len(classes)), len(classes) > 12
    axis.set(xticks=ticks, yticks=ticks, xlabel="predicted", ylabel="true class", title="confusion matrix")
    axis.set_xticklabels(classes, rotation=90 if len(classes) > 4 else 0, fontsize=7 if many else None)
    axis.set_yticklabels(classes, fontsize=7 if many else None)
    for i, (row, counts) in enumerate(zip(shares, confusion)):
        for j, (share, n) in enumerate(zip(row, counts)):
            if many and share < 0.01:
                continue
            text = f"{share:.0%}" if many else f"{n:,}\n{share:.1%}"
            axis.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=6 if many else 9,
                color="white" if share > 0.5 else "black",
            )


def _reliability(axis, counts_axis, confidences, right, ece):
    """The share right per bin of the winning class's probability, against the diagonal,
    and beneath it how many documents each bin holds (a log scale: the bins of a good model
    hold from a handful to thousands)."""
    bins = reliability_bins(confidences, right)
    width = 1 / len(bins)
    centers = [(b + 0.5) * width for b in range(len(bins))]
    held = [(c, correct / n) for c, (n, _, correct) in zip(centers, bins) if n]
    axis.bar([c for c, _ in held], [a for _, a in held], width=width, edgecolor="black", alpha=0.7, label="share right")
    axis.plot([0, 1], [0, 1], linestyle=":", color="grey", label="perfect calibration")
    title = "reliability" + (f" (ECE {ece:.4f})" if ece is not None else "")
    axis.set(ylabel="share of documents right", title=title, xlim=(0, 1), ylim=(0, 1.01))
    axis.tick_params(labelbottom=False)
    axis.legend(loc="upper left", fontsize=8)
    counts = [n for n, _, _ in bins]
    counts_axis.bar(centers, [n or float("nan") for n in counts], width=width, color="grey", edgecolor="black")
    for center, n in zip(centers, counts):
        if n:
            counts_axis.text(center, n, f"{n:,}", ha="center", va="bottom", fontsize=7)
    counts_axis.set_yscale("log")
    counts_axis.set(xlabel="probability of the winning class", ylabel="documents", ylim=(0.5, max(counts + [1]) * 8))


def info_plot(summary, path):
    """The most indicative tokens of each class (from NaiveBayes.summary(top)), on one scale
    for all: how many times more often the token occurs in the class than in the others
    (θ(token | class) / θ(token | others), the exp of summary's log ratio).

    Drawn in one pass over sizes known before drawing (a figure of 20 panels spent most of
    its time laying itself out): each column leaves room for the widest token, measured
    once; the tokens are plain texts beside their bars, not tick labels (a tick is five
    artists); the scale is set on each panel, not shared (sharex made each panel's layout
    ask all the others); decades alone are ticked (log minor ticks were thousands); and
    the figure is not trimmed on saving (bbox_inches tight draws it all once more)."""
    import math

    plt = _pyplot()
    from matplotlib.ticker import NullLocator

    top = summary["top"]
    classes = list(top)
    columns = min(len(classes), 4)
    rows = -(-len(classes) // columns)
    longest = max(len(tokens) for tokens in top.values())
    label = _text_inches([token for tokens in top.values() for token, _ in tokens], "ytick.labelsize") + 0.1
    panel_width, panel_height, title, margin, bottom = 2.6, max(0.3 * longest, 0.6), 0.45, 0.3, 0.8
    width = margin + label + columns * panel_width + (columns - 1) * (label + margin)
    height = title + rows * panel_height + (rows - 1) * title + bottom  # (bottom: the scale and its words)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(width, height),
        squeeze=False,
        gridspec_kw={
            "left": (margin + label) / width,
            "right": 1 - margin / width,
            "wspace": (label + margin) / panel_width,
            "top": 1 - title / height,
            "bottom": bottom / height,
            "hspace": title / panel_height,
        },
    )
    scale = (1, 1.5 * max([math.exp(value) for tokens in top.values() for _, value in tokens] + [10.0]))
    for i, (axis, name) in enumerate(zip(axes.flat, classes)):
        tokens = top[name][::-1]  # the most indicative at the top
        axis.barh(range(len(tokens)), [math.exp(value) - 1 for _, value in tokens], left=1)
        for y, (token, _) in enumerate(tokens):
            axis.text(
                -0.02,
                y,
                token,
                transform=axis.get_yaxis_transform(),
                ha="right",
                va="center",
                fontsize=plt.rcParams["ytick.labelsize"],
                parse_math=False,
            )  # ($5 $10: text, not TeX)
        axis.set(yticks=[], ylim=(-0.6, max(len(tokens), 1) - 0.4), xscale="log", xlim=scale)
        axis.set_title(name, y=1.0, parse_math=False)  # (placed, not searched for above the panel's ticks)
        axis.xaxis.set_minor_locator(NullLocator())
        axis.tick_params(axis="x", labelbottom=i + columns >= len(classes))  # numbers under the lowest panels
    for axis in list(axes.flat)[len(classes) :]:
        axis.set_visible(False)
    figure.supxlabel("times more often in this class than in the others")
    _save(figure, path, trimmed=False)
    plt.close(figure)


def _text_inches(texts, size_setting):
    """The width in inches of the widest of `texts` in the font of rcParams[size_setting]."""
    import matplotlib
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    measure = RendererAgg(1, 1, 72)  # at 72 dpi a pixel is a point
    font = FontProperties(size=matplotlib.rcParams[size_setting])
    return max((measure.get_text_width_height_descent(text, font, ismath=False)[0] for text in texts), default=0.0) / 72
