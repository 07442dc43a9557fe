"""A second learner beside the spam preset's online NB, measured on the train splits only: the
anchor of the online ranking issue, online logistic regression on binary hashed character
4-grams of each message's first 3,000 bytes (one pass, one weight per hash and a bias), run in
the same order as `eval --online --learn tone`, and the two summed (NB's log-odds plus the
regression's logit). Prints per corpus the mean over the orders of 1-ROCA% and the errors as
delivered (the preset's band of 0.999, unsure delivered, every unsure spam missed) for NB,
the regression alone (its own 0.5) and the sum (the band's line):

    .venv/bin/python bench/online_beside.py                  # after `make corpora`
    .venv/bin/python bench/online_beside.py --rates 0.002 0.02 --corpora sms

docs/performance.md says what it showed.
"""

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from online_cv import DATA, SPAM_CORPORA, online_run, ordered_tokens

from nbtext.choices import SPAM_PRESET
from nbtext.reading.sources import labelled_input
from nbtext.stats.metrics import roc_auc

HASH_BITS = 22
FIRST_BYTES = 3000


def hashed_grams(data):
    """The distinct hashes of the byte 4-grams of `data`'s first FIRST_BYTES (multiplicative hashing)."""
    b = np.frombuffer(data[:FIRST_BYTES], dtype=np.uint8).astype(np.uint64)
    if len(b) < 4:
        return np.zeros(0, np.int64)
    grams = b[:-3] | (b[1:-2] << 8) | (b[2:-1] << 16) | (b[3:] << 24)
    hashed = (grams * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    return np.unique((hashed >> np.uint64(32 - HASH_BITS)).astype(np.int64))


def regression_logits(features, is_spam, rate):
    """Each message's logit before it is learned; then w += rate (y − p) x for its binary x."""
    weights, bias, logits = np.zeros(1 << HASH_BITS), 0.0, []
    for hashes, spam in zip(features, is_spam):
        logit = weights[hashes].sum() + bias
        logits.append(logit)
        step = rate * (spam - 1 / (1 + math.exp(-min(max(logit, -30.0), 30.0))))
        weights[hashes] += step
        bias += step
    return np.array(logits)


def delivered(scores, is_spam, line):
    """Spam below `line` (missed or unsure, delivered) plus ham at or above it (flagged)."""
    sure = scores >= line
    return int((~sure & is_spam).sum() + (sure & ~is_spam).sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[11, 12, 13])
    parser.add_argument("--corpora", nargs="+", default=list(SPAM_CORPORA))
    parser.add_argument("--rates", type=float, nargs="+", default=[0.02], help="the regression's learning rates")
    args = parser.parse_args()
    band_line = math.log(SPAM_PRESET["unsure_below"] / (1 - SPAM_PRESET["unsure_below"]))
    print(f"{'corpus':13s} {'learner':16s} {'1-ROCA%':>8s} {'delivered':>9s}")
    for corpus in args.corpora:
        rows = {}
        for seed in args.seeds:
            stream = ordered_tokens(corpus, seed, preset="spam")
            report = online_run(stream, "preset", SPAM_PRESET["alpha"], "tone", SPAM_PRESET["tone_margin"])
            data = {doc.name: doc.data for doc in train_split_data(corpus)}
            features = [hashed_grams(data[name]) for name, _, _ in stream]
            is_spam = np.array([label == "spam" for _, _, label in stream])
            nb = np.array(report["scores"])
            runs = {"nb (tone)": (nb, band_line)}
            for rate in args.rates:
                logits = regression_logits(features, is_spam, rate)
                runs[f"lr {rate:g}"] = (logits, 0.0)
                runs[f"nb + lr {rate:g}"] = (nb + logits, band_line)
            for name, (scores, line) in runs.items():
                roca = 100 * (1 - roc_auc(list(scores), list(is_spam)))
                rows.setdefault(name, []).append((roca, delivered(scores, is_spam, line)))
        for name, figures in rows.items():
            roca, errors = (statistics.fmean(column) for column in zip(*figures))
            print(f"{corpus:13s} {name:16s} {roca:8.3f} {errors:9.1f}", flush=True)


def train_split_data(corpus):
    """The corpus's train split's documents, each with its bytes."""
    folders = [str(DATA / corpus / "train" / label) for label in ("spam", "ham")]
    for doc in labelled_input(class_dirs=folders)():
        data = doc.data if doc.data is not None else Path(doc.path).read_bytes()
        yield doc._replace(data=data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))


if __name__ == "__main__":
    main()
