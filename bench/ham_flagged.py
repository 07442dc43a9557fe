"""Issue 24 §4, measured first: a spam cut-off chosen on training data to a budget of ham
flagged, and what it gives on the held-out test split.

For each mail corpus: train the default model on the train split; take the out-of-fold
probabilities of its calibration sample (the same folds its temperature was fitted on:
training data only); for each budget B, the cut-off t is the lowest probability of spam
at which at most B of the sample's ham would be flagged (never below 0.5, the plain
decision); messages the plain decision calls spam below t are "unsure". Then, with t
fixed, the test split: ham flagged, spam missed, unsure. Nothing here is tuned on the
test split; it is reported after the choice.

    .venv/bin/python bench/ham_flagged.py        (after make corpora)
"""

import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.calibration import FOLDS, out_of_fold_jll  # noqa: E402
from nbtext.documents import in_batches  # noqa: E402
from nbtext.exactmath import exp  # noqa: E402
from nbtext.sources import labelled_documents, loaded  # noqa: E402
from nbtext.training import train_corpus  # noqa: E402

DATA = ROOT / "data"
BUDGETS = [None, 0.01, 0.005, 0.002, 0.001, 0.0]  # None: the plain decision (p >= 0.5)


def cutoff(p_spam, is_ham, budget):
    """The lowest t >= 0.5 with at most `budget` of the ham at or above it."""
    if budget is None:
        return 0.5
    ham = np.sort(p_spam[is_ham])[::-1]
    allowed = math.floor(budget * len(ham))
    if allowed >= len(ham):
        return 0.5
    return max(0.5, float(np.nextafter(ham[allowed], 2.0)))  # just above the first ham not allowed


def decisions(p_spam, t):
    """'spam' at or above t, 'unsure' from 0.5 to t, 'ham' below 0.5."""
    return np.where(p_spam >= t, "spam", np.where(p_spam >= 0.5, "unsure", "ham"))


def figures(labels, decided):
    ham, spam = labels == "ham", labels == "spam"
    flagged, missed = int(np.sum(ham & (decided == "spam"))), int(np.sum(spam & (decided == "ham")))
    return {"ham": int(ham.sum()), "flagged": flagged, "missed": missed, "unsure": int(np.sum(decided == "unsure")),
            "unsure_ham": int(np.sum(ham & (decided == "unsure")))}


def main():
    for corpus in ("spamassassin", "sms"):
        if not (DATA / corpus / "train").is_dir():
            sys.exit(f"data/{corpus} is missing: run make corpora first")
        train = [f"{label}={DATA / corpus / 'train' / label}" for label in ("spam", "ham")]
        test = [f"{label}={DATA / corpus / 'test' / label}" for label in ("spam", "ham")]
        model = train_corpus(lambda: in_batches(labelled_documents(train), 1000), calibration="auto")
        token_lists, labels, hashes = model.calibration_sample
        jll, lengths = out_of_fold_jll(model, token_lists, labels, [h % FOLDS for h in hashes])
        spam = model.classes.index("spam")
        p_oof = exp(model.posterior(jll, lengths))[:, spam]
        oof_labels = np.array(labels)
        documents = [loaded(doc) for doc in labelled_documents(test)]
        p_test = model.predict_proba([doc.data for doc in documents])[:, spam]
        test_labels = np.array([doc.label for doc in documents])
        print(f"{corpus}: {len(labels):,} training documents out of fold (the calibration sample), "
              f"{len(documents):,} test documents")
        print(f"  {'budget':>8} {'cut-off':>9} | {'out of fold: flagged':>21} {'missed':>7} {'unsure':>7} | "
              f"{'test: flagged':>14} {'missed':>7} {'unsure':>7} {'errors':>7}")
        for budget in BUDGETS:
            t = cutoff(p_oof, oof_labels == "ham", budget)
            o, h = figures(oof_labels, decisions(p_oof, t)), figures(test_labels, decisions(p_test, t))
            name = "plain" if budget is None else f"{budget:.1%}"
            print(f"  {name:>8} {t:9.6f} | {o['flagged']:>9} ({o['flagged'] / o['ham']:6.2%}) {o['missed']:>7} "
                  f"{o['unsure']:>7} | {h['flagged']:>4} ({h['flagged'] / h['ham']:6.2%}) {h['missed']:>7} "
                  f"{h['unsure']:>7} {h['flagged'] + h['missed']:>7}")


if __name__ == "__main__":
    main()
