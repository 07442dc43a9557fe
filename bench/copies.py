"""Copies of one message in a training corpus: what counting each copy, or each message once,
does to accuracy (the question of docs/mail.md: `train --update` learns a copy once, a training
counts every file).

    python bench/copies.py [CORPUS]    (default: sms; after `make corpora`)

Cross-validation on the corpus's training split, 5 folds by content (every copy of a message in
one fold, so no fold tests on a message it trained on): one model counts every file, the other
each distinct message once; both scored on the held-out messages, each distinct one once and
every file.
"""

import os
import random
import sys
from collections import defaultdict
from pathlib import Path

import nbtext
from nbtext.reading.documents import document_key, file_documents

FOLDS = 5


def by_content(root):
    """{journal key: [(data, label)] of every file holding that message}."""
    groups = defaultdict(list)
    for label in sorted(os.listdir(root)):
        for parent, _, files in os.walk(os.path.join(root, label)):
            for name in sorted(files):
                for doc in file_documents(os.path.join(parent, name)):
                    groups[document_key(doc.data)].append((doc.data, label))
    return groups


def errors(model, documents):
    return sum(guess != label for guess, (_, label) in zip(model.predict([d for d, _ in documents]), documents))


def main(corpus):
    groups = by_content(Path(__file__).resolve().parent.parent / "data" / corpus / "train")
    keys = sorted(groups)
    random.Random(0).shuffle(keys)
    found = {"every copy": [0, 0], "each message once": [0, 0]}
    for fold in range(FOLDS):
        held_out = set(keys[fold::FOLDS])
        training = {
            "every copy": [d for key in keys if key not in held_out for d in groups[key]],
            "each message once": [groups[key][0] for key in keys if key not in held_out],
        }
        distinct = [groups[key][0] for key in keys if key in held_out]
        every_file = [d for key in keys if key in held_out for d in groups[key]]
        for name, documents in training.items():
            model = nbtext.train([d for d, _ in documents], [label for _, label in documents], calibration="none")
            found[name][0] += errors(model, distinct)
            found[name][1] += errors(model, every_file)
    print(
        f"{corpus}: {len(keys):,} distinct messages in {sum(map(len, groups.values())):,} files; "
        f"{FOLDS} folds by content"
    )
    for name, (distinct, every_file) in found.items():
        print(f"  counting {name:18s} {distinct} errors on the held-out messages, {every_file} on every held-out file")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sms")
