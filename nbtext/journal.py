"""The journal: which documents a model has learned, by content hash, and under which label.

`train --update` uses it to count a message once and to move one learned under another
label. The model file stores it as two arrays (hashes, label indices).
"""

HASH_BYTES = 16


def content_hash(data):
    """16 bytes of BLAKE2b of a document's bytes (given without an mbox envelope line),
    trailing line ends left out."""
    # hashlib's own BLAKE2: hashlib would load OpenSSL first, a cost on a learner's start-up
    # (docs/performance.md, figures behind the code)
    try:
        from _blake2 import blake2b
    except ImportError:
        from hashlib import blake2b

    # (the line ends found in the tail, and the bytes before them hashed in place: rstrip
    # copies the whole message, always for a subclass of bytes, as message_as_sent's)
    tail = data[-64:]
    kept = tail.rstrip(b"\r\n")
    if not kept:  # (64 line ends or more at the end: rare)
        kept = data.rstrip(b"\r\n")
        return blake2b(kept, digest_size=HASH_BYTES).digest()
    return blake2b(memoryview(data)[: len(data) - len(tail) + len(kept)], digest_size=HASH_BYTES).digest()


def encode(journal, classes):
    """(hashes as one bytes blob, label index of each) of a {hash: label} journal, sorted by
    hash: the file does not depend on the order documents were read in, so a merge of
    models and one training on all their documents write the same bytes."""
    row = {label: k for k, label in enumerate(classes)}
    hashes = sorted(journal)
    return b"".join(hashes), [row[journal[h]] for h in hashes]


def decode(blob, label_indices, classes):
    """The {hash: label} journal of `encode`'s output."""
    return {blob[HASH_BYTES * i : HASH_BYTES * (i + 1)]: classes[k] for i, k in enumerate(label_indices)}
