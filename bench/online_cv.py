"""Choose eval --online's learning setting on the train splits only: the online protocol over
each spam corpus's train split, in a few orders, for every combination of features, λ and
learning rule (errors, or TONE with a margin); the test splits are never read.

    .venv/bin/python bench/online_cv.py                 # the grid, its means over the orders
    .venv/bin/python bench/online_cv.py --features binary --alphas 1 --margins 20 40
    .venv/bin/python bench/online_cv.py --corpora spamassassin --features binary --alphas 0.1 --margins 40 60 80 \
        --headers subject,from,to,content-type,received,x-mailer,return-path,reply-to,message-id

With --spam-preset, each setting is the spam preset's (its presence features, word pairs,
nine headers and evidence cap; λ from --alphas) under each rule, and each run also counts
its errors as delivered (`eval --online`'s line of that name: its band of 0.97, or
--unsure-below's, the unsure to the inbox, every unsure spam missed) and the ham among them
flagged. The band decides what is delivered, not what a rule learns, so only those two change
with it:

    .venv/bin/python bench/online_cv.py --spam-preset --alphas 1 0.1 --margins 20 40 80
    .venv/bin/python bench/online_cv.py --spam-preset --alphas 1 --rules tone --margins 20 --unsure-below 0.999

Each run is that of `nbtext eval --online` (nbtext.jobs.online.run, the documents shuffled
by the seed as the command shuffles them); the documents are read and tokenized once per
corpus and order. Prints per corpus and setting the mean 1-ROCA% and errors over the
orders, then each setting's worst ratio to the best 1-ROCA of its corpus: the setting that
is closest to the best on every corpus is the one kept (docs/performance.md).
"""

import argparse
import math
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.classifier.settings import make_settings, make_tokenizer
from nbtext.jobs.online import OnlineMultinomial, run
from nbtext.reading.documents import tokenized
from nbtext.reading.sources import labelled_input
from nbtext.reading.tokenize import CHAR_GRAM_MARKS

DATA = ROOT / "data"
SPAM_CORPORA = ("spamassassin", "sms", "enron1")
MARGINS = (10.0, 20.0, 40.0, 80.0, 160.0)


def ordered_tokens(corpus, seed, input_mode="auto", headers=None, preset=None, char_ngrams=None, chars_only=False):
    """(tokens, label) of the corpus's train split in the order `eval --online --seed` runs them
    (`chars_only`: only the character n-grams of --char-ngrams, without the words)."""
    folders = [str(DATA / corpus / "train" / label) for label in ("spam", "ham")]
    documents = list(labelled_input(class_dirs=folders)())
    random.Random(seed).shuffle(documents)
    settings = make_settings(min_count=1, input=input_mode, headers=headers, preset=preset, char_ngrams=char_ngrams)
    tokenize = make_tokenizer(settings["tokenizer"])
    kept, token_lists = tokenized(tokenize, documents)
    if chars_only:
        token_lists = [[t for t in tokens if t.startswith(CHAR_GRAM_MARKS[0])] for tokens in token_lists]
    return [(doc.name, tokens, doc.label) for doc, tokens in zip(kept, token_lists)]


def online_run(stream, features, alpha, rule, margin, max_evidence=None, unsure_below=None):
    if features == "preset":  # the spam preset's settings, at λ `alpha` (and `max_evidence`), deciding by its band
        settings = make_settings(preset="spam", alpha=alpha, max_evidence=max_evidence, unsure_below=unsure_below)
        online = OnlineMultinomial.of_settings(["ham", "spam"], settings)
        return run(iter(stream), online, rule, settings["unsure_below"], tone_margin=margin)
    online = OnlineMultinomial(["ham", "spam"], alpha, 1, True, presence=features == "binary")
    return run(iter(stream), online, rule, tone_margin=margin)


def delivered_at(report, band):
    """The delivered errors and ham flagged of an online run's `report` had its band been
    `band`: sure spam at log-odds of at least ln(band / (1 − band)), the rest delivered."""
    line = math.log(band / (1 - band))
    sure = [score >= line for score in report["scores"]]
    flagged = sum(s and label != report["positive"] for s, label in zip(sure, report["labels"]))
    missed = sum(not s and label == report["positive"] for s, label in zip(sure, report["labels"]))
    return {"errors": missed + flagged, "flagged": flagged}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[11, 12, 13])
    parser.add_argument("--corpora", nargs="+", default=list(SPAM_CORPORA))
    parser.add_argument("--features", nargs="+", default=["binary", "counts"])
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--margins", type=float, nargs="+", default=list(MARGINS))
    parser.add_argument("--rules", nargs="+", default=["errors", "tone", "all"], help="the learning rules run")
    parser.add_argument("--input", default="auto", help="how documents are read (train --input)")
    parser.add_argument("--headers", default=None, help="the mail headers tokenized (train --headers)")
    parser.add_argument("--spam-preset", action="store_true", help="the spam preset's settings (see above)")
    parser.add_argument("--char-ngrams", type=int, default=None, help="character n-grams beside the words (train's)")
    parser.add_argument("--chars-only", action="store_true", help="--char-ngrams without the words")
    parser.add_argument(
        "--max-evidence", type=int, nargs="+", default=None, help="--spam-preset: evidence caps instead of its own"
    )
    parser.add_argument(
        "--unsure-below", type=float, default=None, help="--spam-preset: the band delivered by instead of its own"
    )
    parser.add_argument(
        "--bands", type=float, nargs="+", default=[], help="--spam-preset: also the delivered errors at these bands"
    )
    args = parser.parse_args()
    if args.spam_preset:
        args.features = ["preset"]
    rules = [("errors", None)] + [("tone", margin) for margin in args.margins] + [("all", None)]
    rules = [(rule, margin) for rule, margin in rules if rule in args.rules]
    caps = args.max_evidence or [None]
    settings = [(f, a, r, m, cap) for f in args.features for a in args.alphas for r, m in rules for cap in caps]
    roca = {}  # (corpus, setting) -> mean 1-ROCA%
    print(
        f"{'corpus':13s} {'features':8s} {'λ':>4s} {'rule':12s} {'1-ROCA%':>8s} {'errors':>7s} {'learned':>8s}"
        f"{' delivered flagged' if args.spam_preset else ''}"
    )
    for corpus in args.corpora:
        streams = [
            ordered_tokens(
                corpus,
                seed,
                args.input,
                args.headers,
                "spam" if args.spam_preset else None,
                args.char_ngrams,
                args.chars_only,
            )
            for seed in args.seeds
        ]
        for setting in settings:
            reports = [online_run(stream, *setting, unsure_below=args.unsure_below) for stream in streams]
            roca[corpus, setting] = statistics.fmean(r["roca_percent"] for r in reports)
            errors = statistics.fmean(r["errors"] for r in reports)
            learned = statistics.fmean(r["learned"] for r in reports)
            delivered = (
                f" {statistics.fmean(r['delivered']['errors'] for r in reports):9.1f}"
                f" {statistics.fmean(r['delivered']['flagged'] for r in reports):7.1f}"
                if args.spam_preset
                else ""
            )
            for band in args.bands:  # what the same run delivers at another band: only the band's line moves
                at_band = [delivered_at(r, band) for r in reports]
                delivered += f" | {band:g}: " + " ".join(
                    f"{statistics.fmean(d[key] for d in at_band):.1f}" for key in ("errors", "flagged")
                )
            features, alpha, rule, margin, cap = setting
            features += "" if cap is None else f"/{cap}"
            said = rule if margin is None else f"tone {margin:g}"
            print(
                f"{corpus:13s} {features:8s} {alpha:4g} {said:12s} {roca[corpus, setting]:8.3f} "
                f"{errors:7.1f} {learned:8.1f}{delivered}",
                flush=True,
            )
    print("\nworst ratio of a setting's 1-ROCA to its corpus's best, over the corpora (1 = best everywhere)")
    best = {c: min(roca[c, s] for s in settings) for c in args.corpora}
    worst = {s: max(roca[c, s] / best[c] for c in args.corpora) for s in settings}
    for setting in sorted(settings, key=worst.get):
        features, alpha, rule, margin, cap = setting
        features += "" if cap is None else f"/{cap}"
        print(f"{features:8s} {alpha:4g} {rule if margin is None else f'tone {margin:g}':12s} {worst[setting]:6.2f}")


if __name__ == "__main__":
    main()
