"""Where the spam preset's online run draws its spam line: its fixed band (unsure below 0.999)
against bands an online filter could draw from what it has been told so far. Errors as
delivered (`eval --online`'s line of that name: the unsure go to the inbox, every unsure spam
missed), spam missed, ham flagged and the unsure spam apart.

    .venv/bin/python bench/online_band.py                          # train splits, seeds 11-13
    .venv/bin/python bench/online_band.py --full --seeds 1         # train+test, eval --online --seed 1's order

A band decides what is delivered, not what `--learn tone` learns, so each corpus and order is
run once (nbtext.jobs.online.run, the preset as `eval --online` runs it: λ 1, `--learn tone`,
margin 20) and its log-odds and labels kept (in --cache, if given); every band below is then
drawn over the same run, message by message, each line from the messages before it only (their
scores as they were judged, before they were learned, and their labels):

- fixed L: spam at log-odds of at least ln(L / (1 - L)) (the preset's, L = 0.999);
- ham share B, after k ham: the line above which at most a share B of the ham judged so far
  scored (the last W of them, if a window is given), the fixed band's line until k ham have
  been judged (--max-ham-flagged's budget, drawn online);
- fewest errors, cost c, after k ham: the line that would have made the fewest errors so far,
  a ham flagged counting c spam missed (the fixed band's until k ham);
- per evidence f: a line of f log-odds for each feature that can score the message (its tokens
  the model knows, at most 80: the preset's cap of 40 each way; a short message needs less);
- "at most 0.999's": either online line, never above the fixed band's (it may only lower it);
  "floor f": never below log-odds f (0: never spam what the model finds more likely ham).

Then, as bounds no online band can pass, lines drawn in hindsight over the whole run: the best
one that flags no more ham than the band of 0.999, the best two (one for each half of the run)
that together flag no more, and the best one at any ham flagged.

The test splits are never read without --full; the settings are chosen on the train splits.
"""

import argparse
import bisect
import json
import math
import random
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.choices import SPAM_PRESET
from nbtext.classifier.settings import make_settings, make_tokenizer
from nbtext.jobs.online import OnlineMultinomial, run
from nbtext.reading.documents import tokenized
from nbtext.reading.sources import labelled_input

DATA = ROOT / "data"
CORPORA = ("sms", "spamassassin", "enron1")
PRESET_LINE = math.log(0.999 / 0.001)  # the preset's band, on the log-odds


def recorded(corpus, seed, full, cache):
    """{scores, spam} of the preset's online run over the corpus's train split (or, `full`,
    train and test as `eval --online --seed` reads the four folders), in the order of `seed`:
    each message's log-odds of spam as judged, whether it is spam, how many of its distinct
    tokens the model knew (and its run's 1-ROCA% and errors as delivered at the preset's band)."""
    path = Path(cache) / f"{corpus}-{'full' if full else 'train'}-{seed}.json" if cache else None
    if path is not None and path.exists():
        return json.loads(path.read_text())
    splits = ("train", "test") if full else ("train",)
    folders = [str(DATA / corpus / split / label) for label in ("spam", "ham") for split in splits]
    documents = list(labelled_input(class_dirs=folders)())
    random.Random(seed).shuffle(documents)
    settings = make_settings(preset="spam", alpha=1.0)
    kept, token_lists = tokenized(make_tokenizer(settings["tokenizer"]), documents)
    stream = [(doc.name, tokens, doc.label) for doc, tokens in zip(kept, token_lists)]
    online = OnlineMultinomial.of_settings(["ham", "spam"], settings)
    known, scored = [], online.posterior

    def posterior(tokens):  # (its evidence: how many of its distinct tokens the model knows)
        known.append(sum(token in online.counts for token in set(tokens)))
        return scored(tokens)

    online.posterior = posterior
    report = run(iter(stream), online, "tone", settings["unsure_below"], tone_margin=settings["tone_margin"])
    kept_run = {
        "scores": report["scores"],
        "spam": [label == report["positive"] for label in report["labels"]],
        "known": known,
        "roca_percent": report["roca_percent"],
        "delivered": report["delivered"],
    }
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(kept_run))
    return kept_run


def fixed(band):
    line = math.log(band / (1 - band))
    return f"fixed {band:g}", lambda history, known: line


def ham_share(share, after, window=None, floor=-math.inf, ceiling=math.inf):
    """The line above which at most `share` of the ham judged so far (the last `window`) scored."""

    def line(history, known):
        hams = history.ham_scores if window is None else history.ham_scores[-window:]
        if len(history.ham_scores) < after:
            return PRESET_LINE
        ranked = sorted(hams) if window is not None else history.ham_sorted
        allowed = math.floor(share * len(ranked))  # ham that may lie at or above the line
        # just above the (allowed + 1)-th highest ham score
        return min(ceiling, max(floor, math.nextafter(ranked[-allowed - 1], math.inf)))

    said = f"ham share {share:g} after {after}" + (f" last {window}" if window else "")
    said += (f" floor {floor:g}" if floor > -math.inf else "") + (" at most 0.999's" if ceiling < math.inf else "")
    return said, line


def fewest_errors(cost, after, floor=-math.inf, ceiling=math.inf, window=None):
    """The line that would have made the fewest errors so far (over the last `window` messages,
    if given), a ham flagged costing `cost`, between `floor` and `ceiling`: of the lines at a
    spam's score or just above the highest ham's, the lowest of those that tie."""

    def line(history, known):
        if len(history.ham_scores) < after:
            return PRESET_LINE
        if window is None:
            spam, ham = np.array(history.spam_sorted), np.array(history.ham_sorted)
        else:
            recent = history.judged[-window:]
            spam = np.sort([s for s, is_spam in recent if is_spam])
            ham = np.sort([s for s, is_spam in recent if not is_spam])
            if not len(ham):
                return min(ceiling, PRESET_LINE)
        candidates = np.unique(np.append(spam, np.nextafter(ham[-1], math.inf)))  # (sorted: the lowest of ties)
        candidates = candidates[(candidates >= floor) & (candidates <= ceiling)]
        if not len(candidates):
            return min(ceiling, max(floor, PRESET_LINE))
        missed = np.searchsorted(spam, candidates, side="left")
        flagged = len(ham) - np.searchsorted(ham, candidates, side="left")
        return float(candidates[np.argmin(missed + cost * flagged)])

    said = f"fewest errors cost {cost:g} after {after}" + (f" last {window}" if window else "")
    said += (f" floor {floor:g}" if floor > -math.inf else "") + (" at most 0.999's" if ceiling < math.inf else "")
    return said, line


def per_evidence(per_feature):
    """The line `per_feature` times the features that can score the message: those of its tokens
    the model knows, at most twice the preset's cap (its cap is each way: which way each token
    points is not asked here)."""
    cap = 2 * SPAM_PRESET["max_evidence"]
    return f"per evidence {per_feature:g}", lambda history, known: per_feature * min(known, cap)


class History:
    """What an online filter has been told before a message: the scores it gave ham and spam."""

    def __init__(self):
        self.ham_scores, self.ham_sorted, self.spam_sorted, self.judged = [], [], [], []

    def add(self, score, is_spam):
        self.judged.append((score, is_spam))
        if is_spam:
            bisect.insort(self.spam_sorted, score)
        else:
            self.ham_scores.append(score)
            bisect.insort(self.ham_sorted, score)


def delivered(kept_run, rule):
    """(errors as delivered, spam missed, ham flagged, spam missed that the model called spam but
    left unsure) of a run had each message's line been `rule(history, known)` (`known`: how many
    of its distinct tokens the model knew)."""
    history, missed, flagged, unsure = History(), 0, 0, 0
    for score, is_spam, known in zip(kept_run["scores"], kept_run["spam"], kept_run["known"]):
        sure_spam = score >= rule(history, known)
        if is_spam and not sure_spam:
            missed += 1
            unsure += score > 0
        flagged += sure_spam and not is_spam
        history.add(score, is_spam)
    return missed + flagged, missed, flagged, unsure


def lines_of(scores, spam):
    """(spam missed, ham flagged) at every line worth drawing over `scores` (each score, and
    above them all)."""
    scores, spam = np.array(scores), np.array(spam, dtype=bool)
    lines = np.unique(np.append(scores, np.inf))
    missed = np.searchsorted(np.sort(scores[spam]), lines, side="left")
    flagged = (~spam).sum() - np.searchsorted(np.sort(scores[~spam]), lines, side="left")
    return missed, flagged


def hindsight(kept_run):
    """The errors as delivered (ham flagged) of lines no online filter can draw, each chosen
    knowing the whole run: the preset's band; the best line that flags no more ham than it;
    the best two lines, one for each half of the run, that together flag no more; the best line."""
    scores, spam = kept_run["scores"], kept_run["spam"]
    missed, flagged = lines_of(scores, spam)
    band = next(i for i, line in enumerate(np.unique(np.append(scores, np.inf))) if line >= PRESET_LINE)
    budget, errors = flagged[band], missed + flagged
    within = np.flatnonzero(flagged <= budget)
    one = within[np.argmin(errors[within])]
    half = len(scores) // 2
    (m1, f1), (m2, f2) = lines_of(scores[:half], spam[:half]), lines_of(scores[half:], spam[half:])
    pairs = np.where(
        f1[:, None] + f2[None, :] <= budget, (m1 + f1)[:, None] + (m2 + f2)[None, :], np.iinfo(np.int64).max
    )
    first, second = np.unravel_index(np.argmin(pairs), pairs.shape)
    best = np.argmin(errors)
    return [
        (errors[band], budget),
        (errors[one], flagged[one]),
        (pairs[first, second], f1[first] + f2[second]),
        (errors[best], flagged[best]),
    ]


def rules_measured(args):
    """[(what it is called, its line given the history)] of the families asked for."""
    top = PRESET_LINE
    families = {
        "fixed": lambda: [fixed(b) for b in args.bands],
        "share": lambda: [
            ham_share(share, after, window, ceiling=ceiling)
            for after in args.after
            for share in args.shares
            for window in [None, *args.windows]
            for ceiling in (math.inf, top)
        ],
        "evidence": lambda: [per_evidence(f) for f in args.per_feature],
        "fewest": lambda: [
            fewest_errors(cost, after, floor, ceiling, window)
            for floor in (-math.inf, *args.floors)
            for after in args.after
            for cost in args.costs
            for window in [None, *args.windows]
            for ceiling in (math.inf, top)
        ],
    }
    return [rule for family in args.families for rule in families[family]()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[11, 12, 13])
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA))
    parser.add_argument("--full", action="store_true", help="train and test splits (a check, never for choosing)")
    parser.add_argument("--cache", default=None, help="a folder to keep each run's scores in, and read them from")
    parser.add_argument("--bands", type=float, nargs="+", default=[0.999, 0.995, 0.99, 0.98, 0.95, 0.9])
    parser.add_argument("--shares", type=float, nargs="+", default=[0.002, 0.005, 0.01, 0.02])
    parser.add_argument("--after", type=int, nargs="+", default=[20, 100, 500])
    parser.add_argument("--windows", type=int, nargs="*", default=[])
    parser.add_argument(
        "--floors", type=float, nargs="*", default=[0.0], help="fewest: also never below these log-odds"
    )
    parser.add_argument("--per-feature", type=float, nargs="+", default=[0.02, 0.04, 0.06, 0.086, 0.12])
    parser.add_argument("--costs", type=float, nargs="+", default=[1, 2, 3, 5])
    parser.add_argument(
        "--families", nargs="+", default=["fixed", "share", "evidence", "fewest"], help="the rules' families"
    )
    parser.add_argument("--runs-only", action="store_true", help="only run (and keep, with --cache) the runs")
    args = parser.parse_args()
    runs = {c: [recorded(c, s, args.full, args.cache) for s in args.seeds] for c in args.corpora}
    if args.runs_only:
        return
    print("errors as delivered / spam missed / ham flagged / spam unsure though more likely spam; means over orders")
    print(f"{'rule':56s}" + "".join(f" {c:>26s}" for c in args.corpora) + f" {'summed':>26s}")
    for said, rule in rules_measured(args):
        cells, sums = [], [0.0] * 4
        for corpus in args.corpora:
            figures = [delivered(r, rule) for r in runs[corpus]]
            means = [statistics.fmean(f[i] for f in figures) for i in range(4)]
            sums = [a + b for a, b in zip(sums, means)]
            cells.append("{:7.1f} {:6.1f} {:5.1f} {:5.1f}".format(*means))
        print(f"{said:56s} " + " ".join(f"{c:>26s}" for c in cells) + " {:7.1f} {:6.1f} {:5.1f} {:5.1f}".format(*sums))
    print(
        "1-ROCA% (no band changes it): "
        + ", ".join(f"{c} {statistics.fmean(r['roca_percent'] for r in runs[c]):.3f}" for c in args.corpora)
    )
    print("\nin hindsight, errors as delivered / ham flagged, means over orders:")
    said = ("the band of 0.999", "best line, no more ham flagged", "best line per half, no more", "best line")
    for corpus in args.corpora:
        figures = [hindsight(r) for r in runs[corpus]]
        print(
            f"{corpus:13s} "
            + "; ".join(
                f"{what} {statistics.fmean(f[i][0] for f in figures):.1f} / {statistics.fmean(f[i][1] for f in figures):.1f}"
                for i, what in enumerate(said)
            )
        )


if __name__ == "__main__":
    main()
