"""The Python reference for batch training: tokenize and count, in plain Python and one numpy
call, nothing else.

    python bench/reference.py CLASS_FOLDER...

Every file below each class folder is read, decoded (bad bytes replaced), lowercased and
split into tokens by nbtext's pattern; each token gets a column the first time it is seen
(a dict), each document's columns are appended to one `array` of ints, and one
`np.bincount` turns (class, column) pairs into the classes x vocabulary table of counts.
What nbtext's training does beyond this (mail parsing, pruning, the model file,
calibration) is its own overhead; `make bench` reports nbtext's time over this one's.
"""

import os
import re
import sys
from array import array

import numpy as np

TOKEN = re.compile(r"\w\w+")  # nbtext's token pattern


def main(folders):
    column = {}
    cells = array("q")  # class * (a bound on the vocabulary) + column, one a token
    classes = []
    for k, folder in enumerate(folders):
        classes.append(os.path.basename(os.path.normpath(folder)))
        for parent, _, files in os.walk(folder):
            for name in files:
                with open(os.path.join(parent, name), "rb") as f:
                    tokens = TOKEN.findall(f.read().decode("utf-8", "replace").lower())
                # a token's column: the dict's size when first seen (setdefault adds it)
                cells.extend([column.setdefault(t, len(column)) for t in tokens])
                cells.append(-1 - k)  # the document's class follows its tokens
    flat = np.frombuffer(cells, dtype=np.int64)
    ends = np.flatnonzero(flat < 0)
    token_class = np.repeat(-1 - flat[ends], np.diff(np.concatenate([[-1], ends])) - 1)
    table = np.bincount(token_class * len(column) + flat[flat >= 0], minlength=len(classes) * len(column))
    table = table.reshape(len(classes), len(column))
    print(f"{len(classes)} classes, {len(column)} tokens, {int(table.sum())} counted")


if __name__ == "__main__":
    main(sys.argv[1:])
