"""Finding tokens in a model file's vocabulary without decoding it.

The file keeps the vocabulary as the sorted tokens joined by NUL, plus a sorted array of
64-bit keys (CRC-32 and Adler-32 of each token's UTF-8 bytes, both from zlib) with the
token index of each key, and where each token starts in those bytes. Classifying one
message then looks up its few hundred distinct tokens with one vectorized binary search,
instead of splitting the whole vocabulary and building a dict of it: the start-up a mail
pipeline pays per message. `find_one` does the same for one token without numpy
(nbtext.classifier.purescore): bisect over the keys, the token confirmed by its bytes where
it starts (files without the starts: by a binary search of the sorted vocabulary's bytes);
`find_many` for a message's tokens at once.
"""

import zlib
from bisect import bisect_left, bisect_right
from itertools import repeat
from operator import lshift, or_


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


def token_starts(blob):
    """Where each token of a vocabulary's bytes (tokens joined by NUL) starts: 0, then one
    past each NUL."""
    import numpy as np

    separators = np.flatnonzero(np.frombuffer(blob, dtype=np.uint8) == 0)
    return np.concatenate([np.zeros(1, dtype=np.int64), separators + 1])


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

    def bounds(self):
        """(start, end) of each token in the vocabulary's bytes, as numpy arrays."""
        import numpy as np

        if not hasattr(self, "_starts"):
            self._starts = token_starts(self.blob) if self.n_tokens else np.zeros(0, dtype=np.int64)
            self._ends = np.concatenate([self._starts[1:] - 1, [len(self.blob)]])[: self.n_tokens]
        return self._starts, self._ends

    def find(self, tokens):
        """The token index of each token, or -1 for a token not in the vocabulary: each
        token's key found by one binary search over the keys, and its bytes compared with the
        bytes at the index found, all as whole arrays (one loop of Python calls a token
        costs a message of 100 KB more than the rest of its scoring). A token whose key two
        tokens of the vocabulary share is compared with each of them in turn."""
        import numpy as np

        encoded = [encode(t) for t in tokens]
        n = len(encoded)
        found = np.full(n, -1, dtype=np.int64)
        if n == 0 or len(self.keys) == 0:
            return found
        crc = np.fromiter(map(zlib.crc32, encoded), dtype=np.uint64, count=n)
        adler = np.fromiter(map(zlib.adler32, encoded), dtype=np.uint64, count=n)
        wanted = (crc << np.uint64(32)) | adler  # token_key of each
        position = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        keyed = self.keys[position] == wanted
        shared = keyed & (position + 1 < len(self.keys))
        shared[shared] = self.keys[position[shared] + 1] == wanted[shared]  # another token has the key too
        starts, ends = self.bounds()
        candidate = self.order[position].astype(np.int64)
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
        alike = keyed & ~shared & (ends[candidate] - starts[candidate] == lengths)
        if alike.any():  # the bytes of each candidate against the token's, byte by byte at once
            size = lengths[alike]
            token = np.repeat(np.arange(len(size)), size)
            within = np.arange(len(token)) - np.repeat(np.cumsum(size) - size, size)
            offset = (np.cumsum(lengths) - lengths)[alike]
            mine = np.frombuffer(b"".join(encoded), dtype=np.uint8)[offset[token] + within]
            theirs = np.frombuffer(self.blob, dtype=np.uint8)[starts[candidate[alike]][token] + within]
            differing = np.bincount(token[mine != theirs], minlength=len(size))
            found[np.flatnonzero(alike)[differing == 0]] = candidate[alike][differing == 0]
        for n in np.flatnonzero(shared).tolist():  # equal keys (rare): each candidate's bytes in turn
            p, key, data = int(position[n]), int(wanted[n]), encoded[n]
            while p < len(self.keys) and int(self.keys[p]) == key:
                i = int(self.order[p])
                if self.blob[starts[i] : ends[i]] == data:
                    found[n] = i
                    break
                p += 1
        return found


LONG = 64  # bytes: a token longer is checked once (find_one's `long_tokens`), a shorter one each time it is read


def find_one(data, keys, order, blob, starts=None, long_tokens=None):
    """The token index of the token whose UTF-8 bytes are `data`, -1 if the vocabulary has
    no such token, or None if two tokens of the vocabulary share its key (then ask
    TokenIndex.find). `keys`, `order` and `starts` (where each token starts in `blob`, bytes;
    None for a file without them) are sequences (memoryviews of the file's arrays). What it
    reads of them is checked as it is read, against what the loader checks whole (keys
    sorted, each index once and in range, each start where a token starts): a key greater
    than the next, an index out of range, a start that is not where a token starts, or a
    token of the vocabulary not found by its key are a ValueError (the file is then the
    loader's to judge).

    What a lookup costs is bounded by `data`, not by the vocabulary's tokens (a file may hold
    a token of megabytes): a token read is compared by its first len(data) + 1 bytes at most,
    and one longer than LONG is passed over whole (checked, or its bounds found) once for all
    the lookups given one dict `long_tokens` (the caller's, for one file), which keeps it;
    so the lookups of one message read each long token once at most, and past that, at
    each step of a binary search, the token looked up and a few more bytes than LONG twice."""
    if starts is not None:
        return find_many([data], keys, order, blob, starts, long_tokens)[0]
    if not in_sorted_blob(blob, data, long_tokens):
        return -1  # (a file without starts: its bytes decide first, whatever token its key may be)
    index = keyed_index(token_key(data), keys, order)
    if index is not None and index < 0:
        raise ValueError("a token of the vocabulary is not found by its key")
    return index  # (without starts: `data` is a token, and its key's: the same one)


def find_many(datas, keys, order, blob, starts, long_tokens=None):
    """find_one's answer for each of `datas` (distinct UTF-8 byte strings: one message's
    tokens) in a file with token starts, its checks alike, cheaper for many: each is first
    looked for by its key and its bytes compared where the key's token starts; then each
    whose key the keys lack is searched for in the vocabulary's bytes only between the two
    tokens of `datas` so found that hold it between them in byte order (their indices). Such
    a search ends, as the search over all the starts does, at two neighbouring tokens read
    and checked, one below `data` and one above it: -1, or a ValueError where `data` is a
    token (or its neighbours are not where tokens start). A message's tokens found lie a few
    hundred tokens apart in the vocabulary, so its absent ones take a few steps each, not one
    for each halving of the whole vocabulary."""
    answers: list[int | None] = []
    unkeyed: list[int] = []  # positions in `datas` of those whose key names no token: searched for in the bytes
    # token_key and the binary search of each, in C (map); then, for most, keyed_index's and token_span's
    # checks and the comparison as one: the NUL before, the token's bytes, the NUL after (`data` without NULs)
    wanted = list(map(or_, map(lshift, map(zlib.crc32, datas), repeat(32)), map(zlib.adler32, datas)))
    n_keys, n_order, n_starts, size, nul = len(keys), len(order), len(starts), len(blob), b"\0"
    plain = nul not in b"".join(datas)
    for data, key, p in zip(datas, wanted, map(bisect_left, repeat(keys), wanted)):
        if p == n_keys or keys[p] != key:
            unkeyed.append(len(answers))
            answers.append(-1)
            continue
        if p + 1 < n_keys and keys[p + 1] <= key:
            index = keyed_index(key, keys, order)  # (None: two keys alike; a ValueError: not sorted)
            answers.append(index)
            continue
        index = order[p]
        if plain and 0 < index < n_order and index + 1 < n_starts:
            start = starts[index]
            end = starts[index + 1] - 1
            if (
                0 < start
                and end - start == len(data) <= LONG
                and end < size
                and blob[start - 1 : end + 1] == nul + data + nul
            ):
                answers.append(index)
                continue
        if not 0 <= index < n_order:
            raise ValueError("a token index of the vocabulary is out of range")
        start, end = token_span(blob, starts, index, long_tokens)
        if end - start != len(data) or blob[start:end] != data:  # (its key another token's: rare)
            if in_started_blob(blob, starts, data, long_tokens):
                raise ValueError("a token of the vocabulary is not found by its key")
            index = -1
        answers.append(index)
    if unkeyed:
        # the tokens found in byte order (`datas` are distinct: sorted by their bytes alone)
        found = sorted(
            ((at, index) for at, index in enumerate(answers) if index is not None and index >= 0),
            key=lambda pair: datas[pair[0]],
        )
        found_bytes, found_indices = [datas[at] for at, _ in found], [index for _, index in found]
        for at in unkeyed:
            data = datas[at]
            j = bisect_left(found_bytes, data)  # found_bytes[j - 1] < data < found_bytes[j]
            lo = found_indices[j - 1] + 1 if j > 0 else 0
            hi = found_indices[j] if j < len(found) else len(starts)
            if lo > hi:  # (found tokens whose indices are not in their bytes' order: the file's to judge)
                lo, hi = 0, len(starts)
            if in_started_blob(blob, starts, data, long_tokens, lo, hi):
                raise ValueError("a token of the vocabulary is not found by its key")
    return answers


def keyed_index(key, keys, order):
    """The token index the key table (`keys` sorted, `order`) gives 64-bit `key`, -1 if no key
    is `key`, None if two are; what it reads checked as it is read (a key greater than the
    next, an index out of range: ValueError)."""
    p = bisect_left(keys, key)
    if p == len(keys) or keys[p] != key:
        return -1
    if p + 1 < len(keys) and keys[p + 1] <= key:
        if keys[p + 1] == key:
            return None
        raise ValueError("the token keys are not sorted")
    index = order[p]  # the one token with this key
    if not 0 <= index < len(order):
        raise ValueError("a token index of the vocabulary is out of range")
    return index


def token_span(blob, starts, i, long_tokens=None):
    """(start, end) of token i in `blob`, from where it starts to one before where the next
    one does, checked: a start that is not one past a NUL (or 0, for the first), an end not
    at a NUL (or the end), or bytes between that hold a NUL, are a ValueError. A token longer
    than LONG is checked for a NUL once, then kept in `long_tokens` (find_one's)."""
    start = starts[i]
    end = starts[i + 1] - 1 if i + 1 < len(starts) else len(blob)
    if i and 0 < start <= end < len(blob) and end - start <= LONG:  # (most: the same checks, on one short piece)
        piece = blob[start - 1 : end + 1]  # the token and the bytes around it, each a NUL
        if piece[0] == 0 == piece[-1] and piece.count(0) == 2:
            return start, end
        raise ValueError("a token start of the vocabulary is not where a token starts")
    if not (
        (start == 0 if i == 0 else 0 < start <= len(blob) and blob[start - 1] == 0)
        and start <= end <= len(blob)
        and (end == len(blob) or blob[end] == 0)
    ):
        raise ValueError("a token start of the vocabulary is not where a token starts")
    if end - start <= LONG or long_tokens is None or i not in long_tokens:
        if blob.find(b"\0", start, end) >= 0:
            raise ValueError("a token start of the vocabulary is not where a token starts")
        if end - start > LONG and long_tokens is not None:
            long_tokens[i] = start, end
    return start, end


def in_started_blob(blob, starts, data, long_tokens=None, lo=0, hi=None):
    """Whether `data` is one of the sorted tokens of `blob`, by a binary search over their
    starts, each token it reads checked by token_span: over all of them, or only over the
    tokens lo..hi − 1 where the caller read token lo − 1 below `data` and token hi above it.
    A token longer than LONG is compared by its first len(data) + 1 bytes at most: they order
    it against `data` as the whole token does, and equal `data` only where the token is `data`."""
    n_starts, size = len(starts), len(blob)
    if hi is None:
        hi = n_starts
    while lo < hi:
        mid = (lo + hi) // 2
        start = starts[mid]
        end = starts[mid + 1] - 1 if mid + 1 < n_starts else size
        if mid and 0 < start <= end < size and end - start <= LONG:  # token_span's short case, its checks inline
            piece = blob[start - 1 : end + 1]
            if piece[0] != 0 or piece[-1] != 0 or piece.count(0) != 2:
                raise ValueError("a token start of the vocabulary is not where a token starts")
            token = piece[1:-1]
        else:
            start, end = token_span(blob, starts, mid, long_tokens)
            token = blob[start:end] if end - start <= LONG else blob[start : min(end, start + len(data) + 1)]
        if token == data:
            return True
        if token < data:
            lo = mid + 1
        else:
            hi = mid
    return False


def in_sorted_blob(blob, data, long_tokens=None):
    """Whether `data` is one of the sorted tokens joined by NUL in `blob` (bytes): a binary
    search over byte ranges [lo, hi) that always hold whole tokens. UTF-8 keeps the code
    point order of the sorted str tokens, so comparing bytes follows the same order. The
    token around each range's middle is bounded by the NULs nearest it, looked for LONG bytes
    each way; one not bounded so is long: its bounds are found whole once and kept in
    `long_tokens` under the range (lo, hi) (the searches of one file take the same ranges,
    and a token met in a range is in no range below it, so each is passed over once), and
    it is compared by its first len(data) + 1 bytes (as in_started_blob)."""
    lo, hi = 0, len(blob)
    while lo < hi:
        mid = (lo + hi) // 2
        near = mid - LONG
        start = blob.rfind(b"\0", near if near > lo else lo, mid) + 1 or lo
        near = mid + LONG
        end = blob.find(b"\0", mid, near if near < hi else hi)
        if (start > lo or mid - LONG <= lo) and (end >= 0 or near >= hi):  # (both NULs near, or the range's ends)
            end = hi if end < 0 else end
            token = blob[start:end]
        else:  # (a long token)
            span = None if long_tokens is None else long_tokens.get((lo, hi))
            if span is None:
                end = blob.find(b"\0", mid, hi)
                span = max(blob.rfind(b"\0", lo, mid) + 1, lo), hi if end < 0 else end
                if long_tokens is not None:
                    long_tokens[lo, hi] = span
            start, end = span
            token = blob[start : min(end, start + len(data) + 1)]
        if token == data:
            return True
        if token < data:
            lo = end + 1
        else:
            hi = start - 1
    return False


# Bytes of the vocabulary between the tokens `indices_in_sorted_blob` takes as signposts: a query's
# window, searched in C (docs/performance.md, "The pending section's check")
SIGNPOST_EVERY = 1024


def indices_in_sorted_blob(blob, queries, every=SIGNPOST_EVERY):
    """{query: its token index} of those of `queries` (distinct UTF-8 byte strings) that are
    tokens of `blob` (the sorted tokens joined by NUL, as in_sorted_blob reads it), found
    without splitting it: the first token after every `every` bytes is a signpost
    (with the number of tokens before it), a query's window, from its signpost to the next,
    is found by bisect over them, and the query is searched for there, NUL to NUL, in C. A
    token's index is its place in the blob."""
    if not blob:
        return {}
    starts, signposts, counted = [], [], []  # each signpost's start in the blob, its token, the tokens before it
    at, index = 0, 0
    while True:
        end = blob.find(b"\0", at)
        starts.append(at)
        signposts.append(blob[at : end if end >= 0 else len(blob)])
        counted.append(index)
        following = blob.find(b"\0", max(end, at + every)) if end >= 0 else -1
        if following < 0:
            break
        index += blob.count(b"\0", at, following + 1)
        at = following + 1
    starts.append(len(blob) + 1)  # (the last window's end, as if a NUL followed the last token)
    found = {}
    for query in queries:
        j = bisect_right(signposts, query) - 1
        if j < 0:
            continue  # before the first token
        if signposts[j] == query:
            found[query] = counted[j]
            continue
        start, end = starts[j], starts[j + 1]
        at = blob.find(b"\0" + query + b"\0", start, end)  # (the NUL before the token, within the window)
        if at < 0 and end > len(blob) and blob.endswith(b"\0" + query):
            at = len(blob) - len(query) - 1  # the last token, no NUL after it
        if at >= 0:
            found[query] = counted[j] + blob.count(b"\0", start, at + 1)
    return found
