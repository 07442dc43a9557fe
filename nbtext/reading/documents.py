"""A document, how much of one is read, and reading one file (a message, or the messages
of an mbox file) and a batch of documents into tokens: what every reader of documents and
every job shares.

Kept apart from nbtext.reading.sources (every kind of PATH: folders, Maildirs, streams, tables) so
that the one-message path and the core (training, the model) need not import the readers.
"""

import os
import sys
from collections import namedtuple
from io import UnsupportedOperation
from stat import S_ISREG

from nbtext.choices import DEFAULT_MAX_BYTES
from nbtext.errors import NbtextError

MBOX_SNIFF = 2048  # bytes read to tell an mbox file from one message
LINE_PIECE = 1 << 16  # a line is read in pieces of at most this (or --max-bytes) where lines give structure
READ_CHUNK = 1 << 20  # a stream of unknown size is read in chunks of this, never a --max-bytes buffer at once
DEFAULT_BATCH = 1000  # documents tokenized and counted at a time, at most ...
# ... and at most this many bytes of them (their tokens, as Python strings, take several times
# more): the bound a batch of large messages meets first (docs/hostile-input.md, measured there)
BATCH_BYTES = 16 << 20

# The size policy (--max-bytes): a document's first max_bytes bytes are read, the rest left
# unread, so time and memory are bounded per document. Each reader takes the limit as an
# argument and gives it to the Documents it leaves to be read later (`loaded`). `_said`
# holds the notices this process has said (the limits it cuts at): each is said once a run (a
# command line starts a run: cli.console), not by the warnings module's own once-per-place
# memory, which any catch_warnings or filter change (numpy's import makes one) forgets.
_said = set()
# A cluster's worker (nbtext.jobs.cluster) hands its client the notices of a task, said or not
# in its own process (it serves many runs): the thread running the task -> its notices.
_collected = {}


def new_run():
    """A command line starts: its notices may be said again (tests run many in one process)."""
    _said.clear()


class notices_collected:
    """The list of the notices said_once is given in this thread while the block runs, each
    once, whether this process had said it or not: a task on a cluster's worker returns them
    to its client, which says them (a worker process serves many runs, and its stderr is a log
    no user reads). (A class, not contextlib's decorator: one message's start-up imports this
    module.)"""

    def __enter__(self):
        from _thread import get_ident

        self.thread, notices = get_ident(), []
        _collected[self.thread] = notices
        return notices

    def __exit__(self, *exception):
        del _collected[self.thread]


def said_once(notice):
    """Warn `notice` if this run has not said it yet (also one a forked worker said, which
    its parent says again: nbtext.jobs.parallel, or a cluster's worker collected:
    notices_collected)."""
    if _collected:
        from _thread import get_ident

        notices = _collected.get(get_ident())
        if notices is not None and notice not in notices:
            notices.append(notice)
    if notice not in _said:
        import warnings

        _said.add(notice)
        warnings.warn(notice, stacklevel=3)


def cut(data, max_bytes):
    """`data` (bytes) up to `max_bytes`. The first document cut says so, once a run (the text
    names the limit, not the document)."""
    if len(data) <= max_bytes:
        return data
    bytes_ = "byte" if max_bytes == 1 else "bytes"
    said_once(
        f"documents over {max_bytes:,} {bytes_} are cut: only the first {max_bytes:,} {bytes_} of each are read "
        "(--max-bytes)"
    )
    return data[:max_bytes]


def cut_text(text, max_bytes):
    """A document held as text (a table's cell, a fastText line's words) up to `max_bytes`
    bytes of its UTF-8, a character cut in two left out."""
    if len(text) * 4 <= max_bytes:  # (four bytes a character at most: nothing to cut)
        return text
    data = text.encode("utf-8", "surrogatepass")
    return text if len(data) <= max_bytes else cut(data, max_bytes).decode("utf-8", "ignore")


def read_cut(f, max_bytes, head=b""):
    """A document from the binary file `f` (`head`: its first bytes, already read): at most
    `max_bytes` bytes, the rest left unread."""
    return cut(head + read_at_most(f, max(max_bytes + 1 - len(head), 0)), max_bytes)


def structural_lines(f, max_bytes, head=b""):
    """(piece, whether it starts a line) for the lines of a binary file whose lines give
    structure (mbox envelopes, fastText labels): `head` (bytes already read) first, then
    the file, a line read in pieces of at most max(max_bytes, LINE_PIECE) + 1 bytes, so
    that where a line starts does not depend on --max-bytes (memory stays bounded)."""
    limit = max(max_bytes, LINE_PIECE)
    start = 0
    while (end := head.find(b"\n", start)) >= 0:  # (the head is shorter than a piece: its lines are whole)
        yield head[start : end + 1], True  # one at a time: a list of a megabyte's lines took 16 bytes a byte
        start = end + 1
    rest = head[start:]
    starts = True
    if rest:  # the head ends inside a line: read on to its end, as one piece
        rest += f.readline(max(limit + 1 - len(rest), 0))
        yield rest, True
        starts = rest.endswith(b"\n")
    for piece in iter(lambda: f.readline(limit + 1), b""):  # (one giant line never in memory whole)
        yield piece, starts
        starts = piece.endswith(b"\n")


PAUSE = object()  # yielded by a stdin stream when no more input is ready: flush what you have


# name: how output names it; data: bytes or str; label: its class (labelled inputs);
# error: why it could not be read; path: the file to read the data from when data is None
# (files are read where they are tokenized, so -j workers read their own), and max_bytes
# how much of it to read.
Document = namedtuple(
    "Document", "name data label error path max_bytes", defaults=(None, None, None, DEFAULT_MAX_BYTES)
)


def in_batches(docs, size=DEFAULT_BATCH, pauses=False, max_bytes=None, weigh=None):
    """Lists of Documents of at most `size` documents and at most `max_bytes` bytes
    (held_bytes; default BATCH_BYTES; a document larger than that is a batch alone): the one
    rule every batch of every command and worker is cut by, so what a batch holds, its bytes
    and their tokens (each token is made of its document's bytes), is bounded whatever the
    documents' sizes. A file of a folder still to be read that is
    larger than `max_bytes` (an mbox of many messages, read where its batch is tokenized)
    is read here, into its documents, each weighed as any other. A stream's PAUSE flushes
    what has arrived (and with `pauses` is passed on after it, for a consumer that holds
    batches back). `weigh(item)`: the bytes of an item that is no Document (documents read
    already, their data let go: the same cut, of what they held). A batch cut by its bytes
    ends when the next document does not fit, which is then held here: a consumer that stops
    early goes on with these batches, never with `docs` (nbtext.jobs.parallel.scored_batches)."""
    max_bytes = BATCH_BYTES if max_bytes is None else max_bytes
    batch, held = [], 0
    for doc in docs:
        if doc is PAUSE:
            if batch:
                yield batch
                batch, held = [], 0
            if pauses:
                yield PAUSE
            continue
        weight = held_bytes(doc) if weigh is None else weigh(doc)
        for one in read_now(doc) if weight > max_bytes and weigh is None and doc.data is None else (doc,):
            weight = held_bytes(one) if weigh is None and one.data is not None else weight
            if batch and held + weight > max_bytes:
                yield batch
                batch, held = [], 0
            batch.append(one)
            held += weight
            if len(batch) == size:
                yield batch
                batch, held = [], 0
    if batch:
        yield batch


def held_bytes(doc):
    """The bytes a Document holds once read: its data's, or for a file still to be read, the
    file's size (what reading it holds at most: one document up to its max_bytes, or an
    mbox's messages); 0 for one that cannot be read."""
    data = doc.data
    if data is not None:
        return sum(map(len, data)) if isinstance(data, tuple) else len(data)
    if doc.path is None or doc.error is not None:
        return 0
    try:
        return os.stat(doc.path).st_size
    except OSError:
        return 0


def stdin_bytes():
    """Standard input as a binary file: the one way every reader of `-` opens it. A process
    started with stdin closed (`<&-`) has none: an NbtextError that says so."""
    stdin = getattr(sys.stdin, "buffer", None)
    if stdin is None:
        raise NbtextError("stdin is closed: there is no input to read (give a PATH, or open stdin)")
    return stdin


def read_at_most(f, limit):
    """f.read(limit), without reserving `limit` bytes for a file that holds fewer: a buffered
    read(n) allocates n bytes up front, and at the default --max-bytes that made reading a
    corpus of small files several times slower (docs/performance.md, figures behind the
    code). A regular file is read to its size and one byte more; if that byte came (the
    file grew since), on up to `limit`. Streams whose size is unknown (pipes, file objects
    without a descriptor) are read in chunks (READ_CHUNK), so a huge `limit` reserves
    nothing."""
    try:
        status = os.fstat(f.fileno())
        left = status.st_size - f.tell() if S_ISREG(status.st_mode) else None
    except (OSError, AttributeError, ValueError, UnsupportedOperation):
        left = None
    if left is None:
        chunks, size = [], 0
        while size < limit:
            chunk = f.read(min(limit - size, READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    if left + 1 >= limit:
        return f.read(limit)
    want = max(left, 0) + 1
    data = f.read(want)
    return data + f.read(limit - want) if len(data) == want else data


# --- one file: one document, or the messages of an mbox file -------------------------------
def file_documents(path, label=None, opener=None, max_bytes=DEFAULT_MAX_BYTES):
    """The one document of a file, or every message of an mbox file (opened_documents).
    The file is opened and read once, so a pipe (`<(cat ...)`, /dev/fd/N) loses nothing
    to the sniffing. `opener(path)` opens it for binary reading (default: open;
    fsspec.open for URLs)."""
    try:
        with (opener or _open_binary)(path) as f:
            yield from opened_documents(f, path, label, max_bytes)
    except OSError as e:
        yield Document(path, None, label, error=e.strerror or str(e))


def opened_documents(f, name, label=None, max_bytes=DEFAULT_MAX_BYTES):
    """The documents of a binary file open for reading (a file, stdin), named `name`:
    each message of an mbox (nbtext.reading.mbox's rule: it starts with an envelope line),
    or else its one document. Every way in reads an mbox here, so a file, a folder's file,
    stdin, a --files-from list and a cluster's worker find the same messages."""
    head = f.read(MBOX_SNIFF)
    if head.startswith(b"From "):  # (the mbox module is imported only then: one message's start-up)
        from nbtext.reading.mbox import starts_mbox

        if starts_mbox(head):
            yield from mbox_messages(f, name, label, head, max_bytes)
            return
    yield Document(name, read_cut(f, max_bytes, head), label)


def _open_binary(path):
    return open(path, "rb")


ONE_MESSAGE_READ = 1 << 20  # what an mbox file's reader takes in at once to see whether it holds one message


def mbox_messages(f, path, label=None, head=b"", max_bytes=DEFAULT_MAX_BYTES):
    """Each message of an mbox file (`f` open, `head` its first bytes already read), found
    by nbtext.reading.mbox.messages, without its envelope line, named PATH:N; a file of one
    message is named PATH, as any file holding one document is."""
    from nbtext.reading.mbox import messages

    head += f.read(ONE_MESSAGE_READ)
    if len(head) < MBOX_SNIFF + ONE_MESSAGE_READ and b"\nFrom " not in head:  # the whole file, and no line
        # after the first can start a message (an envelope line starts `From ` after a line end):
        # the file's one message, as the splitter would find it, without a pass over its lines
        end = head.find(b"\n")
        yield Document(path, cut(b"" if end < 0 else head[end + 1 :], max_bytes), label)
        return
    n, previous = 0, None
    for message in messages(structural_lines(f, max_bytes, head), max_bytes):
        if previous is not None:  # there is a next message: names are numbered
            yield Document(f"{path}:{n}", cut(previous, max_bytes), label)
        n, previous = n + 1, message
    if previous is not None:
        yield Document(f"{path}:{n}" if n > 1 else path, cut(previous, max_bytes), label)


def read_file(path, label=None, max_bytes=DEFAULT_MAX_BYTES):
    try:
        with _open_binary(path) as f:
            return Document(path, read_cut(f, max_bytes), label)
    except OSError as e:
        return Document(path, None, label, error=e.strerror or str(e))


def tokenized(tokenize, batch, on_error=None):
    """(documents, token lists) of a batch, leaving out documents that cannot be read or
    parsed: each is passed to `on_error(document, message)`, or raises without one."""
    kept, token_lists, _ = tokenized_with(tokenize, batch, None, on_error)
    return kept, token_lists


def tokenized_with(tokenize, batch, of_data, on_error=None):
    """tokenized's (documents, token lists), and [`of_data(document, data)`] of the documents
    kept, `data` being what the document's tokens were read from (read_once): what its
    journal key and whether it reads as mail are made of (document_key(data),
    tokenize.reads_as_mail(data)), each without reading the message again."""
    kept, token_lists, made = [], [], []
    for doc in each_loaded(batch):
        try:
            if doc.error is not None:
                raise NbtextError(f"cannot read it ({doc.error})")
            if of_data is None:
                token_lists.append(tokenize(doc.data))
            else:
                data = read_once(doc.data)
                token_lists.append(tokenize(data))
                made.append(of_data(doc, data))
            kept.append(doc)
        except NbtextError as e:
            if on_error is None:
                raise NbtextError(f"{doc.name}: {e}") from None
            on_error(doc, str(e))
    return kept, token_lists, made


def read_once(data):
    """A document's data as its tokens, its journal key and whether it reads as mail are made of
    it, made once: bytes as the message as sent (nbtext.reading.mail.message_as_sent, which the
    Tokenizer, document_key and reads_as_mail take as it is), text or a table row as it is
    (each reads it its own way)."""
    if isinstance(data, bytes):
        from nbtext.reading.mail import message_as_sent

        return message_as_sent(data)
    return data


def report_errors(errors, on_error=None):
    """Pass the [(name, message)] a worker could not read or parse to `on_error(document,
    message)`, as `tokenized` does in one process; without `on_error`, the first is raised."""
    for name, message in errors:
        if on_error is None:
            raise NbtextError(f"{name}: {message}")
        on_error(Document(name, None), message)


def document_key(data):
    """The journal's key for a document's data: the content hash of the message as sent
    (nbtext.reading.mail.message_as_sent: its CR LFs as LF, without the fields a local
    delivery put on top or nbtext's verdict; its tokens are of those bytes), without its
    `>From ` quoting or trailing line ends (neither makes a token), so a message read from
    a folder, a Maildir, an mbox file, stdin or IMAP, stored or sent with either line end,
    filtered and stored by a delivery or not, is the same message. Every reader leaves an
    mbox envelope line out of the data itself."""
    from nbtext.reading.mail import message_as_sent

    return _key_of_bytes(message_as_sent(_key_bytes(data)))


def data_key(document, data):
    """The journal key of a document whose tokens were read from `data` (read_once's): of_data
    for tokenized_with, where a batch's keys are all a caller needs."""
    return document_key(data)


def journal_key(data, learned, key=None, tokenize=None):
    """The key a journal holds the document `data` under: its document_key (`key`, when the
    caller has it: of read_once's data), or the key of its bytes with their CR LFs as they
    were, which models written before CR LF was read as LF hold (`learned(key)`: whether the
    journal holds `key`), so such a model still forgets and moves a message learned with CR LF
    line ends (from the same bytes). A model whose tokenizer (`tokenize`) takes character
    n-grams came after and holds no such key: there the raw bytes' key is another message's,
    whose bytes as sent are these with a CR before each CR LF, and whose grams are not these
    (a CR is a space in them)."""
    key = document_key(data) if key is None else key
    if learned(key) or getattr(tokenize, "char_ngrams", None) is not None:
        return key
    data = _key_bytes(data)
    if b"\r\n" in data:
        raw = _key_of_bytes(data)
        if learned(raw):
            return raw
    return key


def _key_bytes(data):
    from nbtext.reading.mail import text_bytes

    if isinstance(data, tuple):  # a table row
        data = "\x1f".join(data)
    return text_bytes(data)


def _key_of_bytes(data):
    from nbtext.journal import content_hash
    from nbtext.reading.mail import unquoted_from

    return content_hash(unquoted_from(data))


def loaded(doc):
    """The document with its data read, if it was still to be read from its path."""
    if doc.data is None and doc.path is not None and doc.error is None:
        return read_file(doc.path, doc.label, max_bytes=doc.max_bytes)._replace(name=doc.name)
    return doc


def each_loaded(batch):
    """The documents of a batch with their data read; a file of a folder still to be read
    that is an mbox is its messages (PATH:N), as the same file named on the command line."""
    for doc in batch:
        yield from read_now(doc)


def read_now(doc):
    """The documents of one Document with its data read (each_loaded's)."""
    if doc.data is None and doc.path is not None and doc.error is None and doc.name == doc.path:
        return file_documents(doc.path, doc.label, max_bytes=doc.max_bytes)
    return (loaded(doc),)
