"""Each --lexer's tokenizing cost on SpamAssassin's train split (docs/performance.md).

    .venv/bin/python bench/lexers.py [--reps N]        # after make corpora

Reads the split's 4,862 messages into memory, then tokenizes all of them with the default
tokenizer of each lexer (input auto, the default headers), the lexers taking turns, N times
(3 unless told); prints each lexer's best CPU time (process time: the machine may be shared) and the ratio to words'.
"""

import argparse
import sys
import time
from pathlib import Path

from nbtext.reading.tokenize import LEXER_RULES, Tokenizer

ROOT = Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    reps = parser.parse_args().reps
    files = sorted((ROOT / "data" / "spamassassin" / "train").glob("*/*"))
    if not files:
        sys.exit("lexers: data/spamassassin is missing; run 'make corpora' first")
    messages = [f.read_bytes() for f in files]
    best = {}
    for _ in range(reps):
        for lexer in LEXER_RULES:
            tokenize, started = Tokenizer(lexer=lexer), time.process_time()
            tokens = sum(len(tokenize(m)) for m in messages)
            seconds = time.process_time() - started
            best[lexer] = min(best.get(lexer, (seconds, tokens)), (seconds, tokens))
    for lexer, (seconds, tokens) in best.items():
        ratio = seconds / best["words"][0]
        print(
            f"--lexer {lexer:6s} {seconds:5.2f} s ({ratio:.2f}x words) for {len(messages):,} messages, {tokens:,} tokens"
        )


if __name__ == "__main__":
    main()
