"""A crafted model for `make bench`: MODEL's vocabulary with its middle token made SIZE bytes
longer (the token followed by \\x01s, so the order holds), written as nbtext writes a model
(its checksums right, as anyone who writes a file can make them); and a message of DISTINCT
random words (with the spam preset's bigrams about twice as many distinct tokens: under the
one-message path's bound), most of them no token of any model. What the one-message path
reads of a vocabulary must not grow with its tokens' length (docs/model-file.md).

    .venv/bin/python bench/long_token.py MODEL OUT.model OUT.eml [SIZE [DISTINCT]]
"""

import random
import sys

from nbtext.modelfile.container import read_bytes
from nbtext.modelfile.format import parse_state, save


def main(model, out_model, out_message, size=20_000_000, distinct=4_900):
    state = parse_state(read_bytes(model, sample=True), model)
    tokens = state.tokens.tokens() if hasattr(state.tokens, "tokens") else list(state.tokens)
    middle = len(tokens) // 2
    tokens[middle] += "\x01" * size  # (sorts after the token, before the next unless it extends it)
    if middle + 1 < len(tokens) and tokens[middle] >= tokens[middle + 1]:
        sys.exit("the middle token's next starts with it: choose another model")
    state.tokens = tokens
    save(state, out_model)
    rng = random.Random(7)
    words = {
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 9))) for _ in range(distinct)
    }
    with open(out_message, "w") as f:
        f.write("From: a@b.example\nTo: c@d.example\nSubject: hello there\n\n" + " ".join(sorted(words)) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:]))
