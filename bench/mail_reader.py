"""nbtext's own mail reader against the standard library's, on the SpamAssassin corpus.

    .venv/bin/python bench/mail_reader.py        # after make corpora

Prints the seconds each takes to tokenize all 6,047 messages and how far their tokens
agree (the figures the README quotes).
"""

import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import mail_reference  # tests/mail_reference.py: email + html.parser

from nbtext.reading.mail import mail_tokens
from nbtext.reading.tokenize import DEFAULT_HEADERS, text_tokens


def main():
    files = sorted((ROOT / "data" / "spamassassin").glob("*/*/*"))
    if not files:
        sys.exit("mail_reader: data/spamassassin is missing; run 'make corpora' first")
    messages = [f.read_bytes() for f in files]
    readings = {}
    for name, read in (("nbtext.reading.mail", mail_tokens), ("email + html.parser", mail_reference.mail_tokens)):
        started = time.perf_counter()
        readings[name] = [Counter(read(m, DEFAULT_HEADERS, text_tokens)) for m in messages]
        print(f"{name:22s} {time.perf_counter() - started:6.2f} s for {len(messages):,} messages")
    ours, reference = readings.values()
    identical = sum(a == b for a, b in zip(ours, reference))
    similarity = sum(sum((a & b).values()) / max(sum((a | b).values()), 1) for a, b in zip(ours, reference)) / len(
        messages
    )
    print(
        f"identical token multisets: {identical:,} of {len(messages):,} ({identical / len(messages):.1%}); "
        f"mean Jaccard similarity {similarity:.4f}"
    )


if __name__ == "__main__":
    main()
