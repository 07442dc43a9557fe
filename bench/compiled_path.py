"""What a compiled tokenize-and-count (polars) could take off a default training (issue 27 §2).

    python bench/compiled_path.py [CORPUS_TRAIN_FOLDER]    (default: data/20news/train; needs polars)

On the same texts (read, decoded with replacement, lowercased, as `--input text` reads
them), it times each step a default training does per token in Python: the regex
(`findall`), the look-up of each token's column, and hashing each document's tokens (the
calibration sample is chosen by a hash of every document's tokens, so the default job
needs them as Python strings); then polars doing the regex and the counting, with and
without handing the token lists back to Python. polars' `\\w` is not Python's (an exact
path would spell Python's `\\w` as code-point ranges): the times are for orientation.
"""

import os
import re
import sys
import time
from array import array
from collections import defaultdict
from hashlib import blake2b
from pathlib import Path

TOKEN = re.compile(r"\w\w+")


def texts_of(root):
    texts, labels = [], []
    for k, folder in enumerate(sorted(os.listdir(root))):
        for parent, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                with open(os.path.join(parent, name), "rb") as f:
                    texts.append(f.read().decode("utf-8", "replace").lower())
                labels.append(k)
    return texts, labels


def timed(function, *args):
    started = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - started, result


def python_steps(texts):
    regex, token_lists = timed(lambda: [TOKEN.findall(text) for text in texts])

    def look_up():
        columns = defaultdict()
        columns.default_factory = columns.__len__
        ids, lookup = array("q"), columns.__getitem__
        for tokens in token_lists:
            ids.extend(map(lookup, tokens))
        return ids

    lookups, ids = timed(look_up)
    hashes, _ = timed(
        lambda: [
            blake2b("\x1f".join(tokens).encode("utf-8", "surrogatepass"), digest_size=8).digest()
            for tokens in token_lists
        ]
    )
    return regex, lookups, hashes, len(ids)


def polars_steps(texts, labels):
    import polars as pl

    frame = pl.DataFrame({"text": texts, "label": labels})
    tokenized = frame.lazy().with_columns(pl.col("text").str.extract_all(r"\w\w+").alias("tokens"))
    count, counts = timed(
        lambda: (
            tokenized.select("label", "tokens")
            .explode("tokens")
            .drop_nulls()
            .group_by("label", "tokens")
            .len()
            .collect()
        )
    )
    column = tokenized.select("tokens").collect()["tokens"]  # (the regex once more, not timed)
    back, _ = timed(column.to_list)  # the token lists handed back to Python alone
    return count, back, int(counts["len"].sum())


def main(root):
    try:
        import_time, _ = timed(lambda: __import__("polars"))
    except ImportError:
        sys.exit("bench/compiled_path.py needs polars (pip install polars), which nbtext does not install")
    texts, labels = texts_of(root)
    regex, lookups, hashes, n_tokens = min((python_steps(texts) for _ in range(3)), key=lambda run: sum(run[:3]))
    count, back, n_counted = min((polars_steps(texts, labels) for _ in range(3)), key=lambda run: run[0])
    print(f"{root}: {len(texts):,} documents, {n_tokens:,} tokens (polars: {n_counted:,})")
    print(f"  Python: regex {regex:.3f} s, column look-ups {lookups:.3f} s, token hashes {hashes:.3f} s")
    print(
        f"  polars: import {import_time:.3f} s, regex and counts {count:.3f} s, "
        f"the token lists handed back to Python {back:.3f} s"
    )


if __name__ == "__main__":
    main(
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "data" / "20news" / "train"
    )
