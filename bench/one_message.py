"""The one-message path's cost per message, in one process: each model file given is read as
`filter` reads it (nbtext.classifier.purescore.as_read), then every 10th message of
SpamAssassin's test split is scored by it (its tokens found and looked up, the posterior),
best of five passes; and how many distinct tokens those messages hold (past
purescore.MAX_DISTINCT_TOKENS a message goes to the numpy path).

    .venv/bin/python bench/one_message.py MODEL...    # after `make corpora`

The models to give: `nbtext train -o M data/spamassassin/train/spam data/spamassassin/train/ham`
with the options to compare (a file of an older format scores as such a file does).
"""

import sys
import time
from pathlib import Path

from nbtext.classifier import purescore

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = sorted((ROOT / "data" / "spamassassin" / "test").glob("*/*"))[::10]


def per_message(path, documents):
    """(CPU seconds per message, best of five passes; the distinct tokens of each message)."""
    model = purescore.as_read(Path(path).read_bytes(), str(path))
    if model is None:
        sys.exit(f"{path}: not a model the one-message path serves")
    tokens = [model.tokenize(document) for document in documents]
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for document_tokens in tokens:
            features, length = model.features(document_tokens)
            model.joint_log_likelihood(features)
        best = min(best, time.process_time() - start)
    return best / len(documents), sorted(len(set(t)) for t in tokens)


def main(paths):
    purescore.MAX_DISTINCT_TOKENS = purescore.MAX_LOOKUPS = 1 << 30  # (every message scored here)
    documents = [path.read_bytes() for path in MESSAGES]
    print(f"{len(documents)} messages of data/spamassassin/test; CPU of scoring each (tokens found, looked up, jll)")
    for path in paths:
        seconds, distinct = per_message(path, documents)
        median, most = distinct[len(distinct) // 2], distinct[-1]
        print(
            f"{path}: {seconds * 1e3:.2f} ms a message, {seconds / sum(distinct) * len(distinct) * 1e6:.1f} µs a "
            f"distinct token; distinct tokens median {median}, most {most}"
        )


if __name__ == "__main__":
    main(sys.argv[1:] or sys.exit(__doc__))
