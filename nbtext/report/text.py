"""What the commands print: prediction lines, the eval report, the cross-validation
table, the model summary. Plain functions of plain values, so each is testable without
a command line (nbtext.cli.commands writes what they return).
"""

import json
import math
import sys
from collections import namedtuple

from nbtext.choices import learned_by_tone
from nbtext.cutoff import TOO_FEW, cutoff_of
from nbtext.errors import NbtextError, one_line
from nbtext.labels import positive_class
from nbtext.modelfile.pending import COMPACT_AFTER
from nbtext.report.output import tsv_field
from nbtext.stats.changes import OUTCOMES

FEW_DOCUMENTS = 20  # `nbtext info` warns about a class with fewer training documents
NO_DOCUMENTS = "no documents to classify: the input given holds none"  # predict's word for an empty input


def counted(n, noun):
    """`1 document`, `2 documents`, `1,185 documents`: a count and its noun, singular for one."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


NAME_SHOWN = 300  # characters of a name said on stderr: a listed "path" can be a line of megabytes


def shown_name(name):
    """A document's name as one short field of a line on stderr (tsv_field's escapes, then
    one_line's of what a terminal would act on; past NAME_SHOWN characters, its start and how
    long it is)."""
    if len(name) > NAME_SHOWN:
        name = f"{name[: NAME_SHOWN - 60]}... ({len(name):,} characters)"
    return one_line(tsv_field(name))


class Skipped:
    """Reports each document that cannot be read or parsed, by name, and counts them: a line
    on stderr, or through `say` (a command that writes a model holds its lines till then)."""

    def __init__(self, say=None):
        self.count, self.say = 0, say

    def __call__(self, doc, message):
        self.count += 1
        line = f"nbtext: skipped {shown_name(doc.name)}: {message}"  # one line, whatever the name
        if self.say is None:
            print(line, file=sys.stderr)
        else:
            self.say(line)

    def summary(self, done, if_none=None):
        """The run's closing line on stderr, and its exit status: 1 if documents were
        skipped. `if_none`: what to say when there were no documents at all (an empty folder)."""
        if self.count:
            print(f"nbtext: {counted(done, 'document')} done, {self.count:,} skipped", file=sys.stderr)
        elif not done and if_none:
            print(f"nbtext: {if_none}", file=sys.stderr)
        return 1 if self.count else 0


def learning_summary(output, seconds, model=None, stats=None, pending=None, merged=None):
    """The line train, train --update, forget and merge write to stderr, whichever way they
    ran: the `merged` number of models; what the documents given came to (`stats`,
    nbtext.stats.changes.outcome's counts, "unchanged" when the file was left as it was); the
    changes the model file's pending section holds (`pending`: the documents went there) or
    else the model (`model`; after forget, the documents that remain); the time and where
    the model went."""
    said = [f"merged {counted(merged, 'model')}: "] if merged is not None else []
    if stats is not None and "forgotten" in stats:
        said.append(f"forgot {stats['forgotten']:,}, not learned {stats['unknown']:,}; ")
    elif stats is not None:
        said.append(f"added {stats['added']:,}, moved {stats['moved']:,}, already known {stats['duplicates']:,}; ")
    if pending is not None:
        if pending:
            said.append(
                f"{counted(pending, 'change')} pending at the end of the model file (a change past "
                f"{COMPACT_AFTER} folds them into it, its calibration, if it has one, fitted again); "
            )
    elif stats is not None and "forgotten" in stats:
        said.append(f"{counted(int(model.class_count.sum()), 'document')} remain; ")
    else:
        said.append(_model_said(model))
    written = f"({output} unchanged)" if stats is not None and stats.get("unchanged") else f"-> {output}"
    return "".join(said) + f"{seconds:.2f} s {written}"


def _model_said(model):
    per_class = ", ".join(f"{label} {int(n):,}" for label, n in zip(model.classes, model.class_count))
    unk = " + UNK" if model.has_unk else ""
    cutoff = spam_cutoff_said(model.calibration, model.classes)  # train --max-ham-flagged's
    own = model.unsure_threshold()  # train --unsure-below's
    decision = "; ".join(([cutoff] if cutoff else []) + ([_unsure_said(own)] if own is not None else []))
    read = getattr(model, "pass_read", None)  # (a TONE pass learns what it chooses of what it read)
    learned = f" learned by a TONE pass of the {read:,} it read" if read is not None else ""
    return (
        f"{model.event_model} model (λ={model.alpha:g}) of "
        f"{counted(int(model.class_count.sum()), 'document')} ({per_class}){learned}; "
        f"vocabulary {model.vocabulary.n_kept:,} tokens{unk} of {model.vocabulary.n_tokens:,} seen; "
        + (f"calibrated (T = {temperature_formula(model.calibration)}); " if model.calibration is not None else "")
        + (f"decision: {decision}; " if decision else "")
    )


NOTHING_TO_LEARN = "nbtext: nothing to learn: every folder given is empty; model unchanged"


def documents_done(stats):
    """The documents a train --update or forget did (those given, learned or not: `stats`),
    for Skipped.summary's closing line."""
    return sum(n for name, n in stats.items() if name in OUTCOMES)


def not_learned(doc):
    """The line saying that `forget` does not know a document: left alone (no error, nothing
    for cron to mail)."""
    return f"nbtext: not learned, left alone: {shown_name(doc.name)}"


# How `predict` writes each document: format ("tsv", "json", "fasttext", or "labels", the
# label alone), proba (every class's probability), unsure_below, top (-k: the N most probable
# labels) and threshold (labels below it left out of those).
Output = namedtuple("Output", "format proba unsure_below top threshold", defaults=(False, None, None, None))


def proba_header(model, output, explain, header):
    """The #path line of `predict --proba --column-names` (TSV), as a list of no lines or one.
    (`--header` asks for it too where there is no --table, whose first row it names.)"""
    if not (header and output.proba and output.format == "tsv"):
        return []
    return ["#path\tlabel\tprobability\t" + "\t".join(model.classes) + ("\texplanation" if explain else "")]


def prediction_line_batches(model, scored, output):
    """(documents, lines) per batch of nbtext.jobs.parallel.scored_batches' output."""
    from nbtext.exactmath import exp

    for kept, log_proba, explanations in scored:
        yield len(kept), prediction_lines(model, kept, exp(log_proba), explanations, output)


def ranked(model, probabilities, output):
    """[(label, probability)] of -k / --threshold: the `top` most probable labels (1 when
    only --threshold is given) with a probability of at least `threshold`; None without
    either."""
    if output.top is None and output.threshold is None:
        return None
    order = sorted(range(len(model.classes)), key=lambda k: -probabilities[k])[: output.top or 1]
    return [
        (model.classes[k], float(probabilities[k]))
        for k in order
        if output.threshold is None or probabilities[k] >= output.threshold
    ]


def prediction_lines(model, kept, probabilities, explanations, output):
    """One line per document: `labels` (the label alone), `tsv` (name, label, probability,
    or with -k / --threshold name, label, then the top labels and theirs; with `proba`
    every class's, with explanations the top features), `json`, or `fasttext`
    (`__label__spam 0.9987`, as fastText's predict-prob; with -k, the ranking alone). The
    label is the decision: `unsure` in an --unsure-below band or below the model's spam
    cut-off."""
    if output.format == "fasttext" and (spaced := [c for c in model.classes if any(ch.isspace() for ch in c)]):
        raise NbtextError(
            f"the class {spaced[0]!r} holds a space, which fastText's labels cannot "
            "(__label__NAME ends at one): use --format tsv or json"
        )
    lines = []
    for i, (doc, row) in enumerate(zip(kept, probabilities)):
        label, p = model.decide(row, output.unsure_below)
        top = ranked(model, row, output)
        if output.format == "labels":
            lines.append(label)
        elif output.format == "fasttext":
            lines.append(" ".join(f"__label__{name} {q:.4f}" for name, q in (top if top is not None else [(label, p)])))
        elif output.format == "json":
            record = {"path": doc.name, "label": label, "probabilities": dict(zip(model.classes, row.tolist()))}
            if top is not None:
                record["top"] = [list(pair) for pair in top]
            if explanations is not None:
                record["explanation"] = [list(pair) for pair in explanations[i]]
            lines.append(json_line(record))
        else:
            name = tsv_field(doc.name)
            # column 2 is the decision whatever else is asked (unsure, or below a spam cut-off, included)
            columns = (
                [name, label, f"{p:.4f}"]
                if top is None
                else [name, label]
                + [f"{value:.4f}" if isinstance(value, float) else value for pair in top for value in pair]
            )
            if output.proba:
                columns += [f"{q:.4f}" for q in row]  # (a numpy row, or the one-message path's list)
            if explanations is not None:
                columns.append(" ".join(f"{token}:{value:+.2f}" for token, value in explanations[i]))
            lines.append("\t".join(columns))
    return lines


def json_line(record):
    """`record` as one line of JSON that is UTF-8 text: a name that is not UTF-8 (held as
    surrogate escapes) is written as \\udcXX escapes, not as the bytes JSON may not hold."""
    record = json_safe(record)
    text = json.dumps(record, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record, allow_nan=False)
    return text


def _fmt(value):
    return "-" if math.isnan(value) else f"{value:.4f}"


def format_report(report, terminal=False):
    """A readable, tab-separated table of the report; for a `terminal`, its columns padded
    to line up instead, and the confusion matrix's columns numbered when class names are
    long (20 Newsgroups' names made it a few screens wide)."""
    classes = report["classes"]
    width = 0  # (TSV: fields as they are; aligned() pads a terminal's columns)
    if "unsure" in report:  # the scores below are of the documents decided, not of the unsure ones
        lines = [
            f"documents\t{report['n'] + report['unsure']}",
            f"decided\t{report['n']}",
            f"accuracy\t{_fmt(report['accuracy'])}",
        ]
    else:
        lines = [f"documents\t{report['n']}", f"accuracy\t{_fmt(report['accuracy'])}"]
    positive = positive_class(classes) if len(classes) == 2 else None
    for key, name in (
        ("log_loss", "log-loss"),
        ("roc_auc", f"ROC AUC ({positive})"),
        ("ece", "ECE"),
        ("unsure", "unsure"),
    ):
        if key in report:
            value = report[key]
            lines.append(f"{name}\t{value if isinstance(value, int) else _fmt(value)}")
    if report.get("unsure_below") is not None:  # (the command's, or the model's own: train --unsure-below)
        lines.append(f"unsure below\t{threshold_said(report['unsure_below'])}")
    if "unsure_errors" in report:  # of every document's most probable class (unsure or not): how many are wrong,
        u = report["unsure_errors"]  # and how many of those the band or cut-off left unsure
        lines.append(f"most probable wrong\t{report['errors']} ({u} left unsure, {report['errors'] - u} decided)")
    lines.append("")
    lines.append(f"{'class':<{width}}\tprecision\trecall\tf1\tsupport")
    for label in classes:
        m = report["per_class"][label]
        lines.append(f"{label:<{width}}\t{_fmt(m['precision'])}\t{_fmt(m['recall'])}\t{_fmt(m['f1'])}\t{m['support']}")
    lines.append(
        f"{'macro avg':<{width}}\t{_fmt(report['macro_precision'])}\t{_fmt(report['macro_recall'])}"
        f"\t{_fmt(report['macro_f1'])}\t{report['n']}"
    )
    lines.append("")
    numbered = terminal and max(map(len, classes)) > 8
    lines.append("confusion (rows: true class, columns: predicted" + (", numbered as the rows)" if numbered else ")"))
    lines.append("\t".join([f"{'':<{width}}"] + ([str(k + 1) for k in range(len(classes))] if numbered else classes)))
    for k, (label, row) in enumerate(zip(classes, report["confusion"])):
        lines.append("\t".join([f"{k + 1} {label}" if numbered else f"{label:<{width}}"] + [str(v) for v in row]))
    return aligned(lines) if terminal else "\n".join(lines)


def aligned(lines):
    """Tab-separated lines with each run of table lines' columns padded to one width (text
    first, numbers to the right), two spaces apart."""
    out, block = [], []

    def flush():
        widths = {}
        for cells in block:
            for i, cell in enumerate(cells):
                widths[i] = max(widths.get(i, 0), len(cell))
        for cells in block:
            out.append(
                "  ".join(
                    cell.rjust(widths[i]) if i and _numeric(cell) else cell.ljust(widths[i])
                    for i, cell in enumerate(cells)
                ).rstrip()
            )
        block.clear()

    for line in lines:
        if "\t" in line:
            block.append(line.split("\t"))
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


def _numeric(cell):
    """Whether a table cell is a number (right-aligned): 0.93, -1, a count of thousands
    (1,234), or a count and, in brackets, how many of them (1,234 (56))."""
    count, bracket, of_them = cell.partition(" (")
    if bracket and not (of_them.endswith(")") and _numeric(of_them[:-1])):
        return False
    return count.replace(",", "").replace(".", "", 1).replace("-", "", 1).isdigit()


def evaluation_text(kind, result, output_format, terminal=False):
    """What `nbtext eval` prints of nbtext.jobs.eval_command.evaluation's result."""
    if output_format == "json":
        if kind == "crossval":
            models = {name: {k: v for k, v in r.items() if k != "smooths"} for name, r in result["models"].items()}
            return json_line({**result, "models": models})
        return json_line({k: v for k, v in result.items() if k not in ("scores", "labels")})
    if kind == "crossval":
        return crossval_table(result["folds"], result["seed"], result["models"], terminal)
    return online_table(result) if kind == "online" else format_report(result, terminal)


ONLINE_LEARNED = {  # what each online learning rule learns, said
    "all": "every document",
    "errors": "the errors",
    "tone": "the errors, those within {tone_margin:g} of even and the first of each class (TONE)",
}


def online_table(report):
    """The online run's report, for people."""
    n = report["n"]
    lines = [
        f"online, learning {ONLINE_LEARNED[report['learn']].format(**report)} "
        f"({counted(report['learned'], 'document')} learned), order of seed {report['seed']}, λ = {report['alpha']:g}",
        f"documents         {n:,}",
        f"errors            {report['errors']:,} ({report['error_rate']:.2%})",
    ]
    for label, c in report["classes"].items():
        taken = (
            " flagged"
            if label == report.get("negative")
            else " missed"
            if label == report.get("positive")
            else " taken for another class"
        ) + (" (unsure apart)" if "unsure" in report else "")
        share = f" ({c['taken_for_another'] / c['n']:.2%} of {c['n']:,})" if c["n"] else ""
        lines.append(f"  {label}{taken}".ljust(17) + f" {c['taken_for_another']:,}{share}")
    if "unsure" in report:
        u = report["unsure"]
        cutoff = cutoff_of(u)  # (its value None: no cut-off, --unsure-below alone)
        band = " or ".join(
            ([f"p < {threshold_said(u['threshold'])}"] if u.get("threshold") is not None else [])
            + (
                [cutoff.unsure_band(report.get("negative", "the other class"))]
                if cutoff is not None and cutoff.value is not None
                else []
            )
        )
        lines.append(
            f"unsure ({band})".ljust(17) + f" {counted(u['n'], 'document')}, {u['errors']:,} of the "
            f"{report['errors']:,} errors among them"
        )
    if "delivered" in report:  # (unsure to the inbox, as a mail user's recipe files it)
        d = report["delivered"]
        lines.append(
            "as delivered".ljust(17) + f" {d['errors']:,} errors, unsure to the inbox: {report['positive']} missed "
            f"{d['missed']:,} ({d['missed_unsure']:,} of them unsure), {report['negative']} flagged {d['flagged']:,}"
        )
    if "roca_percent" in report:
        lines.append(f"1-ROCA%           {_fmt(report['roca_percent'])} ({report['positive']} the positive class)")
    return "\n".join(lines)


def crossval_table(folds, seed, results, terminal=False):
    """The cross-validation table: mean ± standard deviation per model, and of two classes
    what each model decided, summed over the folds: the positive class's documents missed
    (those left unsure below its `unsure_below`, if it has one, among them), the other's
    flagged, and the errors they make (tab-separated; for a `terminal`, its columns padded to
    line up instead)."""
    lines = [
        f"{folds}-fold stratified cross-validation (seed {seed}); mean ± standard deviation over folds",
        "model\tdefaults\tλ\taccuracy\tmacro F1",
    ]
    for name, r in results.items():
        alpha = f"{r['alpha']:g}" if r["smooths"] else "-"  # gaussian does not smooth
        defaults = {"spam": "spam preset", "general": "general"}.get(r.get("preset"), "-")  # (--compare mixes them)
        lines.append(
            f"{name}\t{defaults}\t{alpha}\t{r['accuracy_mean']:.4f} ± {r['accuracy_std']:.4f}"
            f"\t{r['macro_f1_mean']:.4f} ± {r['macro_f1_std']:.4f}"
        )
    if len({r.get("preset") for r in results.values()}) > 1:
        lines.append(
            "(the spam preset is a multinomial's: --preset general trains every model by the general defaults)"
        )
    rendered = aligned if terminal else "\n".join
    table = rendered(lines)
    first = next(iter(results.values()))
    if "positive" not in first:
        return table
    positive, negative = first["positive"], first["negative"]
    thresholds = {r["unsure_below"] for r in results.values() if "unsure_below" in r}
    band = bool(thresholds)  # (then the missed left unsure, and all the documents left unsure)
    below = threshold_said(*thresholds) if len(thresholds) == 1 else "each model's own"
    some = "" if all("unsure_below" in r for r in results.values()) else " where a model has a band, - where none"
    unsure = f"; unsure below {below}{some}, counted as {negative}" if band else ""
    lines = [
        f"summed over the folds ({positive} the positive class{unsure})",
        f"model\t{positive} missed{' (unsure)' if band else ''}\t{negative} flagged\terrors"
        + ("\tunsure in all" if band else ""),
    ]
    for name, r in results.items():
        summed = {
            key: sum(fold.get(key, 0) for fold in r["folds"])
            for key in ("missed", "flagged", "missed_unsure", "unsure")
        }
        missed, flagged = summed["missed"], summed["flagged"]
        banded = "unsure_below" in r
        of_them = f" ({summed['missed_unsure']:,})" if banded else ""
        lines.append(
            f"{name}\t{missed:,}{of_them}\t{flagged:,}\t{missed + flagged:,}"
            + (f"\t{summed['unsure']:,}" if banded else "\t-" if band else "")
        )
    return table + "\n\n" + rendered(lines)


def threshold_said(p):
    """An --unsure-below `p` (a command's, or a model's own) as every report says it: the
    shortest digits that read back as it (0.9999999 is not 1, nor 0.9999999999999999), a whole
    number without '.0' (0 and 1, as given)."""
    return repr(float(p)).removesuffix(".0")


def _unsure_said(p):
    """A model's own --unsure-below `p` (train --unsure-below) in words: train's summary's."""
    return f"unsure when the winning class's probability is below {threshold_said(p)}"


def _unsure_below_words(p, n_classes):
    """info's words of a model's own --unsure-below `p` (train --unsure-below)."""
    words = _unsure_said(p)
    if n_classes == 2 and 0.5 < p < 1:  # P(winner) >= p: its log-odds at least ln(p / (1 − p))
        words += f", its log-odds below {math.log(p / (1 - p)):.2f}"
    return words + " (train --unsure-below; a command's own --unsure-below overrides it)"


def _evidence_words(cap):
    """train --max-evidence's rule, as info says it."""
    return f"a document is scored on the {cap:,} features that favour each class most (--max-evidence {cap})"


def model_summary(summary, model_path, event):
    """`nbtext info`'s text: (lines for stdout, warnings for stderr). `event` is the model's
    event model: what a class's count counts (`count_unit`), whether a class prior enters."""
    unit = event.flags.count_unit
    s = summary["settings"]
    t = s["tokenizer"]
    lines = [
        f"model file     {model_path} (format {summary.get('format_version', '?')}, "
        f"nbtext {summary.get('nbtext_version', '?')})",
        f"event model    {summary['event_model']}, λ = {s['alpha']:g}, "
        + (f"prior {s['prior']}" if event.flags.prior_in_jll else "no class prior"),
        f"tokenizer      columns {', '.join(t['columns'])}"
        if t.get("kind") == "row"
        else f"tokenizer      {'lexer ' + t['lexer'] + ', ' if 'lexer' in t else ''}input {t['input']}, "
        f"n-grams up to {t['ngrams']}, mail headers {','.join(t['headers'])}"
        + (f", character {t['char_ngrams']}-grams of the first {t['char_bytes']} bytes" if "char_ngrams" in t else ""),
        f"vocabulary     {summary['vocabulary']:,} tokens (min count {s['min_count']}"
        + (f", max features {s['max_features']}" if s["max_features"] else "")
        + f") of {summary['tokens_seen']:,} seen; unknown tokens: "
        + ("UNK" if summary["unk"] else "ignored"),
    ]
    if "unk_share" in summary:
        lines.append(f"UNK share      {summary['unk_share']:.2%} of training tokens")
    if "max_evidence" in s:
        lines.append(f"evidence       {_evidence_words(s['max_evidence'])}")
    pending, c = summary.get("pending"), summary.get("calibration")
    if c is not None:
        of_length = ", n the document's tokens" if c.get("length_exponent") else ""
        lines.append(
            f"calibration    temperature T = {temperature_formula(c)}{of_length}"
            f" (fitted on {counted(c['documents'], 'document')})"
        )
    if cutoff := _cutoff_words(c, list(summary["classes"])):
        lines.append(f"decision       {cutoff[0]}; {cutoff[1]}")
    if "unsure_below" in s:
        lines.append(f"decision       {_unsure_below_words(s['unsure_below'], len(summary['classes']))}")
    if "calibration_sample" in summary:
        lines.append(
            f"sample         {counted(summary['calibration_sample'], 'document')} kept to fit T again as a "
            "training would (--update, forget, merge)"
        )
    if pending:
        refit = summary.get("calibration_after_fold")
        then = f" (to T = {temperature_formula(refit)})" if refit and refit != c else ""
        refitted = f", the temperature then fitted again{then}" if c is not None else ""  # (uncalibrated: none)
        lines.append(
            f"pending        {counted(pending, 'change')} at the end of the file, counted by every reader; "
            f"a change past {summary['pending_fold']} of them folds them into it{refitted}"
        )
    lines.append(f"documents      {summary['documents']:,}")
    if learned_by_tone(s):
        lines.append(
            f"learned        --learn tone: the documents one pass in content order got wrong, within "
            f"{s['tone_margin']:g} nats of log-odds of it or first of their class, with those given to train "
            "--update and forget since"
        )
    lines.append("classes")
    for label, c in summary["classes"].items():
        lines.append(f"  {label}\t{counted(c['documents'], 'document')}\t{c['count']:,.0f} {unit}")
    warnings = [
        f"class {label!r} has only {counted(c['documents'], 'training document')}"
        for label, c in summary["classes"].items()
        if c["documents"] < FEW_DOCUMENTS
    ]
    lines += [
        f"top {label}: " + ", ".join(f"{t} ({v:+.2f})" for t, v in tokens)
        for label, tokens in summary.get("top", {}).items()
    ]
    return lines, warnings


def json_safe(value):
    """NaN and ±inf -> None (null), recursively: JSON has no such numbers (a log-loss of a
    certain mistake, a categorical feature's infinite evidence)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def spam_cutoff_said(calibration, classes):
    """The spam cut-off a calibration of a model of `classes` holds (train --max-ham-flagged;
    nbtext.cutoff), in words, or None: `spam when the probability of ham is below 2.6e-05 (at
    most 1.00% of ham flagged, an upper bound from the training data out of fold)`, or that no
    cut-off keeps to the budget."""
    words = _cutoff_words(calibration, classes)
    return words and words[0]


def _cutoff_words(calibration, classes):
    """(spam_cutoff_said's words, what the cut-off leaves unsure) or None."""
    cutoff = cutoff_of(calibration)
    if cutoff is None:
        return None
    other = next(c for c in classes if c != cutoff.positive)
    return cutoff.said(other, f"{calibration['max_ham_flagged']:.2%}", calibration.get(TOO_FEW))


def temperature_formula(calibration):
    """'3.2', or '3.2 · n^0.84' when the temperature grows with the document's length n, or
    '3.2 · max(n, 16)^0.84' with a length floor."""
    exponent = calibration.get("length_exponent", 0.0)
    floor = calibration.get("length_floor", 1)
    length = f"max(n, {floor})" if floor > 1 else "n"
    return f"{calibration['temperature']:.4g}" + (f" · {length}^{exponent:.2f}" if exponent else "")
