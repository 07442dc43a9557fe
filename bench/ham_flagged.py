"""Issue 24 §4: `train --max-ham-flagged B`, measured. For each mail corpus and budget, the
default model is trained on the train split with the budget (its spam cut-off chosen on
the out-of-fold probabilities of the documents its temperature is fitted on: training
data only); then the test split is scored with it: ham flagged, spam missed, unsure.
Nothing here is tuned on the test split; it is reported after the choice.

    .venv/bin/python bench/ham_flagged.py        (after make corpora)
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.jobs.training import train_corpus  # noqa: E402
from nbtext.reading.documents import in_batches, loaded  # noqa: E402
from nbtext.reading.sources import labelled_documents  # noqa: E402

DATA = ROOT / "data"
BUDGETS = [None, "1%", "0.5%", "0.2%", "0.1%"]  # None: the plain decision (the most probable class)


def main():
    for corpus in ("spamassassin", "sms"):
        if not (DATA / corpus / "train").is_dir():
            sys.exit(f"data/{corpus} is missing: run make corpora first")
        train = [f"{label}={DATA / corpus / 'train' / label}" for label in ("spam", "ham")]
        test = [loaded(doc) for doc in labelled_documents([f"{label}={DATA / corpus / 'test' / label}"
                                                           for label in ("spam", "ham")])]
        print(f"{corpus}: {len(test):,} test messages")
        print(f"  {'budget':>7} {'cut-off':>9} {'ham flagged':>15} {'spam missed':>12} {'unsure':>7} {'errors':>7}")
        for budget in BUDGETS:
            model = train_corpus(lambda: in_batches(labelled_documents(train), 1000), max_ham_flagged=budget)
            decided = [model.decide(row)[0] for row in model.predict_proba([doc.data for doc in test])]
            ham = sum(doc.label == "ham" for doc in test)
            flagged = sum(doc.label == "ham" and label == "spam" for doc, label in zip(test, decided))
            missed = sum(doc.label == "spam" and label == "ham" for doc, label in zip(test, decided))
            unsure = decided.count("unsure")
            cut = (model.calibration or {}).get("spam_cutoff", 0.5)
            print(f"  {budget or 'plain':>7} {cut:9.6f} {flagged:>5} ({flagged / ham:6.2%}) {missed:>12} {unsure:>7} "
                  f"{flagged + missed:>7}")


if __name__ == "__main__":
    main()
