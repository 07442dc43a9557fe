"""Reading an mbox with the one envelope rule (nbtext/reading/mbox.py), on SpamAssassin.

    .venv/bin/python bench/mbox_reader.py        # after make corpora

Writes the 6,047 messages as one mbox with Python's mailbox module (mboxo: a body's
`From ` lines quoted), and again as mboxcl2 (nothing quoted, each body's Content-Length
given), reads each with nbtext's reader and prints the messages found and the CPU seconds
(best of 3): the figures docs/performance.md quotes.
"""

import mailbox
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def best_cpu_seconds(read, repeats=3):
    best, found = None, None
    for _ in range(repeats):
        started = time.process_time()
        found = read()
        seconds = time.process_time() - started
        best = seconds if best is None else min(best, seconds)
    return found, best


def mboxcl2(messages):
    """The messages as mboxcl2: an envelope line, the header block with a right
    Content-Length, the body unquoted, an empty line."""
    written = []
    for message in messages:
        message = message.split(b"\n", 1)[1] if message.startswith(b"From ") else message
        head, blank, body = message.partition(b"\n\n")
        body += b"" if body.endswith(b"\n") or not body else b"\n"  # (the empty line after it must be one)
        written.append(
            b"From bench@example.com Mon Jun 24 17:54:30 2002\n"
            + head
            + b"\nContent-Length: %d\n\n" % len(body)
            + body
            + b"\n"
        )
    return b"".join(written)


def main():
    from nbtext.reading.sources import documents

    files = sorted(p for p in (ROOT / "data" / "spamassassin").glob("*/*/*") if p.is_file())
    if not files:
        sys.exit("mbox_reader: data/spamassassin is missing; run 'make corpora' first")
    with tempfile.TemporaryDirectory() as folder:
        mboxo = Path(folder) / "mboxo"
        box = mailbox.mbox(mboxo)
        for path in files:
            box.add(mailbox.mboxMessage(path.read_bytes()))
        box.flush()
        box.close()
        cl2 = Path(folder) / "mboxcl2"
        cl2.write_bytes(mboxcl2(f.read_bytes() for f in files))
        for name, path in (("mboxo (mailbox module)", mboxo), ("mboxcl2 (Content-Length)", cl2)):
            found, seconds = best_cpu_seconds(lambda path=path: sum(1 for _ in documents(str(path))))
            print(f"{name:26} {path.stat().st_size / 1e6:5.1f} MB  {found:,} messages  {seconds:.2f} s CPU")


if __name__ == "__main__":
    main()
