"""Finding tokens in a model file's vocabulary without decoding it.

The file keeps the vocabulary as the sorted tokens joined by NUL, plus a sorted array of
64-bit keys (CRC-32 and Adler-32 of each token's UTF-8 bytes, both from zlib) with the
token index of each key. Classifying one message then looks up its few hundred distinct
tokens with one vectorized binary search, instead of splitting the whole vocabulary and
building a dict of it: the start-up a mail pipeline pays per message. `find_one` does
the same for one token without numpy (nbtext.classifier.purescore): bisect over the keys, the token
confirmed by a binary search of the sorted vocabulary's bytes.
"""

import zlib
from bisect import bisect_left


def token_key(data):
    """The 64-bit key of a token's bytes: CRC-32 in the high half, Adler-32 in the low."""
    return (zlib.crc32(data) << 32) | zlib.adler32(data)


def encode(token):
    return token.encode("utf-8", "surrogatepass")


def build_keys(tokens):
    """(keys sorted, token index of each key), stored in the model file."""
    import numpy as np

    encoded = "\0".join(tokens).encode("utf-8", "surrogatepass").split(b"\0") if tokens else []
    if len(encoded) != len(tokens):  # modelfile refuses such a vocabulary before it asks for keys
        raise ValueError("a token contains a NUL character")
    # token_key of every token, with the per-token calls made by map at C level
    crc = np.fromiter(map(zlib.crc32, encoded), dtype=np.uint64, count=len(encoded))
    adler = np.fromiter(map(zlib.adler32, encoded), dtype=np.uint64, count=len(encoded))
    keys = (crc << np.uint64(32)) | adler
    order = np.argsort(keys, kind="stable")
    return keys[order], order.astype(np.int32)


class TokenIndex:
    """The vocabulary of a model file: NUL-joined UTF-8 `blob`, `keys` and `order` as above."""

    def __init__(self, blob, n_tokens, keys, order):
        self.blob = blob
        self.n_tokens = n_tokens
        self.keys = keys
        self.order = order

    def tokens(self):
        """Every token, decoded (what the rest of the model works with)."""
        return self.blob.decode("utf-8", "surrogatepass").split("\0") if self.n_tokens else []

    def _bounds(self):
        import numpy as np

        if not hasattr(self, "_starts"):
            separators = np.flatnonzero(np.frombuffer(self.blob, dtype=np.uint8) == 0)
            self._starts = np.concatenate([[0], separators + 1])
            self._ends = np.concatenate([separators, [len(self.blob)]])
        return self._starts, self._ends

    def find(self, tokens):
        """The token index of each token, or -1 for a token not in the vocabulary."""
        import numpy as np

        encoded = [encode(t) for t in tokens]
        wanted = np.fromiter(map(token_key, encoded), dtype=np.uint64, count=len(encoded))
        position = np.searchsorted(self.keys, wanted)
        starts, ends = self._bounds()
        found = np.full(len(encoded), -1, dtype=np.int64)
        for n, (data, key, p) in enumerate(zip(encoded, wanted.tolist(), position.tolist())):
            while p < len(self.keys) and int(self.keys[p]) == key:  # equal keys: compare the bytes
                i = int(self.order[p])
                if self.blob[starts[i] : ends[i]] == data:
                    found[n] = i
                    break
                p += 1
        return found


def find_one(data, keys, order, blob, starts=None):
    """The token index of the token whose UTF-8 bytes are `data`, -1 if the vocabulary has
    no such token, or None if two tokens of the vocabulary share its key (then ask
    TokenIndex.find). `keys` and `order` are sequences (memoryviews of the file's arrays);
    `starts` (token_starts), where a model is held for many documents, confirms the token
    by the bytes at its index instead of a binary search of the vocabulary's bytes."""
    key = token_key(data)
    p = bisect_left(keys, key)
    if p == len(keys) or keys[p] != key:
        return -1
    unique = p + 1 == len(keys) or keys[p + 1] != key
    if starts is not None and unique:
        index = order[p]  # the one token with this key: `data` is a token if it is that one
        if not 0 <= index < len(order):
            raise ValueError("a token index of the vocabulary is out of range")
        return index if blob[starts[index] : starts[index + 1] - 1] == data else -1
    if not in_sorted_blob(blob, data):
        return -1
    if not unique:
        return None
    index = order[p]  # the one token with this key, and `data` is a token: the same one
    if not 0 <= index < len(order):
        raise ValueError("a token index of the vocabulary is out of range")
    return index


def token_starts(blob, n_tokens):
    """Where each of the `n_tokens` tokens joined by NUL in `blob` starts, and one past the
    end (len(blob) + 1): token i is blob[starts[i] : starts[i + 1] − 1]. An array of n + 1
    offsets, made once for a model held for many documents (nbtext serve)."""
    from array import array

    if n_tokens == 0:
        return array("Q", [0])
    starts = array("Q", [0])
    at = blob.find(b"\0")
    while at >= 0:
        starts.append(at + 1)
        at = blob.find(b"\0", at + 1)
    starts.append(len(blob) + 1)
    if len(starts) != n_tokens + 1:
        raise ValueError("the vocabulary's tokens are not its count")
    return starts


def in_sorted_blob(blob, data):
    """Whether `data` is one of the sorted tokens joined by NUL in `blob` (bytes): a binary
    search over byte ranges [lo, hi) that always hold whole tokens. UTF-8 keeps the code
    point order of the sorted str tokens, so comparing bytes follows the same order."""
    lo, hi = 0, len(blob)
    while lo < hi:
        mid = (lo + hi) // 2
        start = max(blob.rfind(b"\0", lo, mid) + 1, lo)
        end = blob.find(b"\0", mid, hi)
        end = hi if end < 0 else end
        token = blob[start:end]
        if token == data:
            return True
        if token < data:
            lo = end + 1
        else:
            hi = start - 1
    return False
