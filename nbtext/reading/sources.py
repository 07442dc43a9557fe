"""Where documents come from: every kind of PATH, stdin streams, and labelled tables.

`documents(path)` is the one dispatcher for PATH arguments (train, predict and eval):

    -            stdin: one document, or an mbox's messages (-:1, -:2, ...); with --lines
                 one per line, with -0 one per NUL-separated record, named -:1, -:2, ...
    Maildir      a folder with cur/ and new/: every message in cur/ and new/, sorted
    folder       every file below it, recursively, in sorted order; hidden files and
                 folders (names starting with '.') are skipped; one document per file
    mbox file    a file starting with an envelope line (`From SENDER DATE`, the rule of
                 nbtext.reading.mbox): each message, named PATH:1, PATH:2, ...
    IMAP folder  imap://USER@HOST[:PORT]/FOLDER or imaps://...: every message, read-only,
                 named URL/;UID=N (nbtext.reading.imap)
    other file   one document (with --lines / -0: one per line / record, PATH:N)

Documents are yielded lazily, so memory stays bounded however many there are. A file that
cannot be read is yielded as a Document with `error` set, so a batch can report it by name
and go on.
"""

import os
from io import TextIOWrapper

from nbtext.choices import DEFAULT_MAX_BYTES
from nbtext.errors import NbtextError
from nbtext.labels import class_problem, label_problem
from nbtext.reading.documents import (
    MBOX_SNIFF,
    PAUSE,
    Document,
    cut,
    cut_text,
    file_documents,
    opened_documents,
    stdin_bytes,
    structural_lines,
)


def is_maildir(path):
    return os.path.isdir(os.path.join(path, "cur")) and os.path.isdir(os.path.join(path, "new"))


def is_mbox(path):
    """A file that starts with an mbox envelope line (nbtext.reading.mbox's rule)."""
    from nbtext.reading.mbox import starts_mbox

    try:
        with open(path, "rb") as f:
            return starts_mbox(f.read(MBOX_SNIFF))
    except OSError:
        return False


def is_imap(path):
    """Whether a PATH names an IMAP folder (imap:// or imaps://; nbtext.reading.imapurl reads
    its URL, nbtext.reading.imap the folder: both loaded only for such a PATH)."""
    return isinstance(path, str) and path[:8].lower().startswith(("imap://", "imaps://"))


def imap_folder(path):
    """The nbtext.reading.imapurl.Folder an IMAP PATH names (an NbtextError of one line for a
    URL that cannot be read or holds a password)."""
    from nbtext.reading.imapurl import parse

    return parse(path)


def check_path(path):
    """A PATH that names nothing is an error found before anything is read (an IMAP URL: one
    that cannot be read or holds a password; its server is asked when it is read)."""
    if is_imap(path):
        imap_folder(path)
    elif path != "-" and not os.path.exists(path):
        raise NbtextError(f"{path} does not exist")


def documents(path, separator=None, label=None, stdin=None, max_bytes=DEFAULT_MAX_BYTES, imap_access=None):
    """Every document PATH names (see the module docstring); `separator` b"\\n" or b"\\0";
    each read up to `max_bytes` (--max-bytes); an IMAP folder's server reached with
    `imap_access` (the command's nbtext.reading.imapurl.ImapAccess; None: nothing given)."""
    if path == "-":
        stdin = stdin if stdin is not None else stdin_bytes()
        if separator is None:
            yield from opened_documents(stdin, "-", label, max_bytes)
        else:
            n = 0  # records, not the pauses between them
            for record in stream_records(stdin, separator, max_bytes=max_bytes):
                if record is PAUSE:
                    yield PAUSE
                    continue
                n += 1
                yield Document(f"-:{n}", record, label)
        return
    check_path(path)
    if is_imap(path):
        if separator is not None:
            raise NbtextError(f"{path}: an IMAP folder's messages are read whole (--lines and -0 read files)")
        from nbtext.reading.imap import folder_documents  # (its client only when a folder is read)

        yield from folder_documents(path, label, max_bytes, imap_access)
    elif os.path.isdir(path):
        for file, kind in files_in(path):
            if kind is None:
                yield Document(file, None, label, path=file, max_bytes=max_bytes)
            else:  # reading a FIFO or a socket would wait forever: say so and go on
                yield Document(file, None, label, error=f"not a regular file (a {kind})")
    elif separator is not None:
        yield from file_records(path, separator, label, max_bytes)
    else:
        yield from file_documents(path, label, max_bytes=max_bytes)


def is_url(path):
    """Whether a PATH is a URL (s3://bucket/spam/, memory://...), which only `--scheduler`
    reads (through fsspec, on the workers)."""
    return "://" in str(path)


def files_in(folder):
    """(path, None) for each document file of a folder (a Maildir's messages, or every file
    below it), or (path, kind) for a FIFO, socket or device found among them."""
    return maildir_files(folder) if is_maildir(folder) else folder_files(folder)


def _special(entry):
    """None for a regular file (or a link to one); else what it is: 'FIFO', 'socket', ...
    (`entry` an os.DirEntry, or a path)."""
    import errno
    import stat

    try:
        if entry.is_file() if isinstance(entry, os.DirEntry) else os.path.isfile(entry):
            return None
        mode = entry.stat().st_mode if isinstance(entry, os.DirEntry) else os.stat(entry).st_mode
    except OSError as e:
        return "symbolic link that loops" if e.errno == errno.ELOOP else "file that cannot be read"
    return (
        "FIFO"
        if stat.S_ISFIFO(mode)
        else "socket"
        if stat.S_ISSOCK(mode)
        else "folder"
        if stat.S_ISDIR(mode)
        else "device"
    )


def _visible_files(folder):
    """(path, kind) of every visible file below `folder` (kind as _special), hidden files
    and folders skipped; a folder is listed once, with os.scandir (no stat per file)."""
    pending = [folder]
    while pending:
        below = pending.pop()
        try:
            with os.scandir(below) as listing:  # (closed even when the listing fails half-way)
                entries = list(listing)
        except OSError:  # a folder it may not read: named, as a file it may not read is
            if below != folder:
                yield below, "folder that cannot be read"
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                is_folder = entry.is_dir()
            except OSError:  # a link that loops, or one the user may not follow: _special names it
                is_folder = False
            if is_folder:
                if not entry.is_symlink():  # as os.walk: a link to a folder is not followed
                    pending.append(entry.path)
            else:
                yield entry.path, _special(entry)


def folder_files(folder):
    """Every file below `folder`, recursively, sorted; hidden files and folders skipped."""
    return sorted(_visible_files(folder))


def has_files(folder):
    """Whether `folder` holds a document, found without listing all of them."""
    if is_maildir(folder):  # (a part it may not read counts: maildir_files names it, to be skipped by name)
        return bool(maildir_files(folder))
    return next(_visible_files(folder), None) is not None


def maildir_files(maildir):
    """The messages of a Maildir: the files of cur/ and new/ (tmp/ holds unfinished ones)."""
    found = []
    for sub in ("cur", "new"):
        try:
            with os.scandir(os.path.join(maildir, sub)) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:  # named, as a file it may not read is
            found.append((os.path.join(maildir, sub), "folder that cannot be read"))
            continue
        found += [
            (entry.path, _special(entry))
            for entry in entries
            if not entry.name.startswith(".") and not _is_folder(entry)
        ]  # (a folder in cur/ or new/ is no message)
    return found


def _is_folder(entry):
    try:
        return entry.is_dir()
    except OSError:
        return False


class opened_input:
    """A file named on the command line (--table, --fasttext, --files-from, a --lines
    file), open for reading in a `with`: bytes, or with `text` UTF-8 text for csv (bad
    bytes replaced). `-` is stdin (left open after). A file that cannot be opened is an
    NbtextError that names it: "cannot read PATH: Is a directory", never an OSError.
    (A class, not contextlib's decorator: `predict` of one message imports this module,
    and contextlib would be one more import in its start-up.)"""

    def __init__(self, path, text=False):
        self.path, self.text, self.file = path, text, None

    def __enter__(self):
        if self.path == "-":
            stdin = stdin_bytes()
            self.file = TextIOWrapper(stdin, encoding="utf-8", errors="replace", newline="") if self.text else stdin
            return self.file
        try:
            self.file = (
                open(self.path, newline="", encoding="utf-8", errors="replace") if self.text else open(self.path, "rb")
            )
        except OSError as e:
            raise NbtextError(f"cannot read {self.path}: {e.strerror or e}") from None
        return self.file

    def __exit__(self, *exception):
        if self.path != "-":
            self.file.close()
        elif self.text:
            self.file.detach()  # closing the wrapper would close stdin


def file_records(path, separator, label=None, max_bytes=DEFAULT_MAX_BYTES):
    with opened_input(path) as f:
        for n, record in enumerate(stream_records(f, separator, pause=False, max_bytes=max_bytes), 1):
            yield Document(f"{path}:{n}", record, label)


def stream_records(stream, separator, pause=True, chunk_size=1 << 16, max_bytes=DEFAULT_MAX_BYTES):
    """Records of a byte stream split on `separator` (b"\\n" also drops a trailing \\r), each
    of at most `max_bytes` (the rest of a longer one is left out).

    Reads whatever is available (os.read on the descriptor where there is one), so a
    record is yielded as soon as its separator arrives; `PAUSE` is yielded when no more
    input is ready yet, so a consumer can flush its batch instead of waiting.
    """
    fd = _fileno(stream)
    pending = bytearray()  # the record so far, in one buffer (a list of a pipe's chunks, a byte each, took ~40 a byte)
    while True:
        if pause and fd is not None and not _ready(fd):
            yield PAUSE
        chunk = os.read(fd, chunk_size) if fd is not None else stream.read(chunk_size)
        if not chunk:
            break
        if separator not in chunk:
            if len(pending) <= max_bytes:  # past the limit, the rest of the record is left out
                pending += chunk
            continue
        pieces = chunk.split(separator)
        pieces[0] = bytes(pending) + pieces[0]
        pending = bytearray(pieces.pop())
        for piece in pieces:
            yield cut(_strip_cr(piece, separator), max_bytes)
    if pending:
        yield cut(_strip_cr(bytes(pending), separator), max_bytes)


def _strip_cr(record, separator):
    return record[:-1] if separator == b"\n" and record.endswith(b"\r") else record


def _fileno(stream):
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _ready(fd):
    import select

    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True


# --- labelled inputs ---------------------------------------------------------------------
def labelled_input(
    class_dirs=(),
    table=None,
    fasttext=None,
    label_col="1",
    text_col=None,
    header=None,
    columns=None,
    shard=None,
    twice=False,
    empty_ok=False,
    max_bytes=DEFAULT_MAX_BYTES,
    imap_access=None,
    classes_made=False,
):
    """A callable returning the labelled Documents of train's and eval's arguments (so the
    corpus can be read twice): CLASS_DIR... (or LABEL=PATH), --table or --fasttext, exactly
    one of them. With `columns` (a categorical model's features), the documents are the
    rows of --table. With `shard` (k, n), only the documents of shard k of n (see
    `in_shard`). Every path is checked now, before anything is read; with `twice` (the
    corpus will be read twice), stdin and pipes are refused, since they can be read once.
    With `empty_ok` (an update), a CLASS_DIR folder with no documents is left out, not an error.
    Each document is read up to `max_bytes`; an IMAP folder's server is reached with `imap_access`.
    With `classes_made` (train, eval --folds: CLASS_DIR labels become the classes of models made now), a
    label no such class may have is refused before anything is read (see class_sources)."""
    given = [bool(class_dirs), table is not None, fasttext is not None]
    if sum(given) != 1:
        raise NbtextError("give CLASS_DIR..., or --table FILE, or --fasttext FILE (one of them)")
    sources = class_sources(class_dirs, classes_made=classes_made) if class_dirs else []
    paths = [path for _, path in sources] if class_dirs else [table if fasttext is None else fasttext]
    for path in paths if twice else ():
        if not _rereadable(path):
            raise NbtextError(
                f"{'stdin' if path == '-' else path + ', a pipe,'} can be read only once, and this "
                "training reads its corpus twice (presence features with an UNK feature, or "
                "tf-idf): give a regular file"
            )
    if columns is not None:
        if table is None:
            raise NbtextError("a categorical model reads a table: give --table FILE --label-col NAME")
        _columns_by_name(text_col, header)
        check_path(table)
        return lambda: _sharded(_require_labels(table_rows(table, columns, label_col, max_bytes)), table, "", shard)
    if table is not None:
        check_path(table)
        return lambda: _sharded(
            _require_labels(table_documents(table, label_col, text_col, header, max_bytes)), table, "", shard
        )
    if fasttext is not None:
        check_path(fasttext)
        return lambda: _sharded(_require_labels(fasttext_documents(fasttext, max_bytes=max_bytes)), fasttext, "", shard)
    return lambda: labelled_documents(
        class_dirs, shard, empty_ok, max_bytes, imap_access
    )  # (class_sources has checked them above)


def _rereadable(path):
    """Whether reading `path` again gives its documents again: not stdin, a FIFO or a device."""
    return path != "-" and (is_url(path) or not os.path.exists(path) or os.path.isfile(path) or os.path.isdir(path))


# --- shards: a part of a corpus, chosen with no coordination --------------------------------
def parse_shard(spec):
    """(k, n) of a `K/N` shard (1 <= K <= N), as GNU split numbers its parts."""
    k, _, n = str(spec).partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise NbtextError(f"--shard must be K/N with 1 <= K <= N, such as 2/8 (not {spec!r})")
    return int(k), int(n)


def in_shard(key, shard):
    """Whether the document named `key` falls in shard (k, n): a stable hash of the name
    (BLAKE2b, not Python's salted hash()), so every machine and run agrees."""
    from hashlib import blake2b

    k, n = shard
    digest = blake2b(key.encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n == k - 1


def _sharded(docs, root, label, shard):
    """The documents of `docs` (all from the source `root`) in `shard`, or all of them. A
    document's key is its name relative to its source, with the label: `spam/0001.eml`,
    `spam/inbox.mbox:7`, `sms.tsv:12`, so where the corpus is mounted does not matter.
    Files of a folder are chosen before they are read; an mbox file is read whole by every
    shard, which keeps its own messages."""
    if shard is None:
        yield from docs
        return
    base, folder = os.path.basename(os.path.normpath(root)), os.path.isdir(root)
    for doc in docs:
        if folder:
            name = os.path.relpath(doc.name, root)
        else:  # a file: itself, or its messages and rows PATH:N
            name = base + doc.name[len(root) :] if doc.name.startswith(root) else doc.name
        if in_shard(f"{label}/{name}" if label else name, shard):
            yield doc


def _require_labels(docs):
    """Labelled documents: one whose label is empty is skipped by name, as any document
    that cannot be read (a row, a line: the rest of the batch goes on)."""
    for doc in docs:
        if not doc.label and doc.error is None:
            doc = doc._replace(data=None, error="its label is empty")
        yield doc


def predict_input(
    paths=(),
    separator=None,
    table=None,
    text_col=None,
    header=None,
    columns=None,
    files_from=None,
    fasttext=None,
    max_bytes=DEFAULT_MAX_BYTES,
    imap_access=None,
):
    """The documents `predict` classifies: those of PATH... (stdin if none), or the files
    listed in `files_from` (one a line, or NUL-separated when `separator` is NUL), or the
    rows of --table (their --text-col column, or with `columns`, a table model's columns),
    or the lines of a --fasttext file (their labels ignored); each read up to `max_bytes`, an
    IMAP folder's server reached with `imap_access`."""
    if sum([bool(paths), table is not None, files_from is not None, fasttext is not None]) > 1:
        raise NbtextError("give PATH..., --table FILE, --files-from FILE or --fasttext FILE (one of them)")
    if fasttext is not None:
        return (doc._replace(label=None) for doc in fasttext_documents(fasttext, False, max_bytes))
    if files_from is not None:
        check_path(files_from)
        return listed_documents(listed_paths(files_from, separator or b"\n"), max_bytes)
    if table is None:
        return path_documents(paths or ("-",), separator, max_bytes, missing_ok=True, imap_access=imap_access)
    if columns is not None:
        _columns_by_name(text_col, header)
        return table_rows(table, columns, max_bytes=max_bytes)
    return table_documents(table, None, text_col, header, max_bytes)


def _columns_by_name(text_col, header):
    """A model of table rows reads its feature columns by the names in the first row:
    --text-col and --[no-]header would do nothing, and are refused."""
    if text_col is not None or header is not None:
        given = "--text-col" if text_col is not None else "--header" if header else "--no-header"
        raise NbtextError(
            f"{given} does nothing for a categorical model: its features are the table's columns, "
            "found by the names in its first row"
        )


def listed_paths(path, separator=b"\n"):
    """The paths listed in a file (`-`: stdin), one a line or NUL-separated (`--files-from`,
    as tar and rsync read it): `find ... -print0 | nbtext predict -0 --files-from -`."""
    check_path(path)
    with opened_input(path) as stream:
        for record in stream_records(stream, separator, pause=False):
            if record:
                yield os.fsdecode(record)


def count_documents(paths):
    """How many documents PATHs hold, counted by listing (cheap next to reading them), or
    None where that is not known before reading: stdin, mbox files, line streams."""
    total = 0
    for path in paths:
        if path == "-" or not os.path.exists(path):
            return None
        if os.path.isdir(path):
            total += sum(1 for _ in files_in(path))
        elif is_mbox(path):
            return None
        else:
            total += 1
    return total


def listed_documents(paths, max_bytes=DEFAULT_MAX_BYTES):
    """The documents of listed paths, as the list is read (`find | nbtext predict
    --files-from -` starts before find ends). A listed path that is gone (a Maildir message
    renamed since it was listed) is a document that cannot be read, reported by name while
    the rest go on, as tar and rsync go on past one."""
    for path in paths:
        if not os.path.exists(path):
            yield Document(path, None, error="No such file or directory")
        elif not os.path.isdir(path) and (kind := _special(path)) is not None:  # a listed FIFO would hang
            yield Document(path, None, error=f"not a regular file (a {kind})")
        else:
            yield from documents(path, max_bytes=max_bytes)


def path_documents(paths, separator=None, max_bytes=DEFAULT_MAX_BYTES, missing_ok=False, imap_access=None):
    """The documents of every PATH in turn. A PATH that does not exist is an error found
    before anything is read, or with `missing_ok` (predict: as cat goes on past a missing
    file) a document that cannot be read, named in its turn."""
    if not missing_ok:
        for path in paths:
            check_path(path)
    for path in paths:
        if missing_ok and path != "-" and not is_imap(path) and not os.path.exists(path):
            yield Document(path, None, error="No such file or directory")
        else:
            yield from documents(path, separator, max_bytes=max_bytes, imap_access=imap_access)


def class_sources(specs, urls=False, classes_made=False):
    """[(label, path)] from CLASS_DIR arguments: `PATH` (labelled by its basename) or
    `LABEL=PATH`; with `urls`, a PATH may be a URL (not checked here: the workers read it).
    Each label is checked before anything is read: one no class may have (labels.label_problem),
    or with `classes_made` (the labels become the classes of models made now: train, on this
    machine or a cluster, and eval --folds) one no class of such a model may have
    (labels.class_problem)."""
    sources = []
    for spec in specs:
        label, path = _label_and_path(spec, urls)
        if is_url(path) and not urls and not is_imap(path):
            raise NbtextError(f"{path} is a URL: only --scheduler (a Dask cluster) reads URLs")
        if problem := (class_problem if classes_made else label_problem)(label):  # found before anything is read
            raise NbtextError(problem)
        if not is_url(path) or is_imap(path):
            check_path(path)
        sources.append((label, path))
    return sources


def _label_and_path(spec, urls):
    """(label, path) of one CLASS_DIR argument, as class_sources reads it (unchecked)."""
    if not os.path.exists(spec) and "=" in spec.split("://")[0]:
        label, path = spec.split("=", 1)
        if not label:
            raise NbtextError(f"empty label in {spec!r} (write LABEL=DIR)")
        return label, os.path.expanduser(path)  # bash expands ~ after =, dash (cron's sh) and zsh do not
    if is_imap(spec):
        return imap_folder(spec).label, spec
    if urls and is_url(spec):
        return spec.rstrip("/").rsplit("/", 1)[-1], spec
    label = os.path.basename(os.path.normpath(os.path.abspath(spec)))
    if label.endswith((".mbox", ".mbx")) and os.path.isfile(spec) and is_mbox(spec):
        label = label.rsplit(".", 1)[0]
    return label, spec


def class_names(specs, urls=False):
    """The labels CLASS_DIR arguments name, each once, before anything is read (train's and
    eval's settings are chosen by them: --preset auto); None without any, or where one is
    malformed (class_sources says how, when the documents are asked for)."""
    try:
        return tuple(dict.fromkeys(_label_and_path(spec, urls)[0] for spec in specs)) or None
    except NbtextError:
        return None


def cluster_urls(specs):
    """Whether CLASS_DIR arguments name a URL only a cluster reads (not an IMAP folder)."""
    try:
        paths = [_label_and_path(spec, True)[1] for spec in specs]
    except NbtextError:
        return False  # (class_sources says how it is malformed)
    return any(is_url(path) and not is_imap(path) for path in paths)


def labelled_sources(specs, urls=False, empty_ok=False, say_twice=True, classes_made=False):
    """[(label, path)] of CLASS_DIR arguments (class_sources's, checked as `classes_made`
    says), a folder or file given twice read once (with a warning, unless not `say_twice`).
    A class folder with no documents is an error, found before any is read, or with
    `empty_ok` (an update: nothing to learn there) left out."""
    sources, seen = [], {}
    for label, path in class_sources(specs, urls, classes_made):
        real = path if is_url(path) else os.path.realpath(path)
        if real in seen:  # the same folder or file twice: its documents count once
            if say_twice:
                import warnings

                warnings.warn(
                    f"{path} is given twice (as {seen[real]!r} and {label!r}): read once, as {seen[real]!r}",
                    stacklevel=2,
                )
            continue
        seen[real] = label
        sources.append((label, path))
    empty = [(label, path) for label, path in sources if os.path.isdir(path) and not has_files(path)]
    if empty and not empty_ok:
        label, path = empty[0]
        raise NbtextError(f"class {label!r} has no documents (is {path} empty?)")
    return [source for source in sources if source not in empty]


def nothing_to_learn(specs):
    """Whether every CLASS_DIR given is a folder with no documents (an update of nothing).
    (Its warnings are said when the documents are read: no catch_warnings, which would
    make the warnings module forget those it has said.)"""
    return bool(specs) and not labelled_sources(specs, empty_ok=True, say_twice=False)


def labelled_documents(specs, shard=None, empty_ok=False, max_bytes=DEFAULT_MAX_BYTES, imap_access=None):
    """Documents of every CLASS_DIR, labelled (see labelled_sources)."""
    for label, path in labelled_sources(specs, empty_ok=empty_ok):
        read = documents(path, label=label, max_bytes=max_bytes, imap_access=imap_access)
        yield from _sharded(read, path, label, shard)


def _column(spec, header, path):
    """0-based index of a column given by name or by 1-based number."""
    if isinstance(spec, int) or str(spec).isdigit():
        index = int(spec) - 1
        if index < 0:
            raise NbtextError(f"column numbers start at 1, not {spec}")
        return index
    if header is None:
        raise NbtextError(f"{path} has no header row to find column {spec!r} in (give a number)")
    names = [h.strip().lower() for h in header]
    if str(spec).lower() not in names:
        raise NbtextError(f"{path} has no column {spec!r} (its columns: {', '.join(header)})")
    return names.index(str(spec).lower())


def _table_reader(f, path, max_bytes=DEFAULT_MAX_BYTES):
    """A csv reader for a TSV file, or a CSV file when the name ends in .csv, whose fields
    hold at most `max_bytes` characters (see _checked_rows)."""
    import csv

    if path.lower().endswith(".csv"):
        return _checked_rows(csv.reader(f, strict=True), path, max_bytes)
    return _checked_rows(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE), path, max_bytes)


def _checked_rows(reader, path, max_bytes):
    """The rows of a csv reader; a quoted field never closed (which would swallow every row
    after it) is an error that names the line where its row starts. The csv module's field
    limit is one for the whole process: it is set to `max_bytes` before each row is read,
    so that readers with other limits, interleaved, each keep their own."""
    import csv

    start = 1
    try:
        while True:
            csv.field_size_limit(max_bytes)
            row = next(reader, None)
            if row is None:
                return
            yield row
            start = reader.line_num + 1
    except csv.Error as e:
        hint = " (a quote that is never closed?)" if "end of data" in str(e) else " (--max-bytes)"
        raise NbtextError(f"{path}:{start}: {e}{hint}") from None


def table_documents(path, label_col="1", text_col=None, header=None, max_bytes=DEFAULT_MAX_BYTES):
    """Documents from the rows of a table. `text_col` None is the second column; `header`
    None means: the first row is a header exactly when a column is given by name."""
    check_path(path)
    default_text, text_col = text_col is None, "2" if text_col is None else text_col
    if header is None:
        header = not all(str(col).isdigit() for col in (label_col, text_col) if col is not None)
    with opened_input(path, text=True) as f:
        rows = _table_reader(f, path, max_bytes)
        names = next(rows, None) if header else None
        label_index = None if label_col is None else _column(label_col, names, path)
        text_index = _column(text_col, names, path)
        if label_index == text_index:
            raise NbtextError(
                f"--label-col {label_col} is column 2 of {path}, the text column when no --text-col "
                "is given: name the text column with --text-col"
                if default_text
                else f"--label-col {label_col} and --text-col {text_col} are the same column of {path}: "
                "each document would be its own label"
            )
        needed = max(text_index, label_index or 0)
        for n, row in enumerate(rows, 2 if header else 1):
            if not row:
                continue
            if len(row) <= needed:  # one bad row is skipped by name, as any document that cannot be read
                yield Document(f"{path}:{n}", None, error=_short_row(row, needed))
                continue
            label = None if label_index is None else row[label_index].strip()
            yield Document(f"{path}:{n}", cut_text(row[text_index], max_bytes), label)


def table_columns(path, label_col, model):
    """The feature columns of a table with a header row: every column but the label (`model`
    names the event model that asked, for the message when there is no table)."""
    if path is None:
        raise NbtextError(f"--model {model} reads a table: give --table FILE --label-col NAME")
    check_path(path)
    if not _rereadable(path):  # (a folder passes: opened_input says it cannot be read)
        raise NbtextError(
            f"--model {model} reads its table twice (the header, then the rows): "
            f"give a regular file, not {'stdin' if path == '-' else 'a pipe'}"
        )
    with opened_input(path, text=True) as f:
        names = next(_table_reader(f, path), None)
    if not names:
        raise NbtextError(f"{path} is empty (a categorical table needs a header row)")
    label_index = _column(label_col, names, path)
    return [name.strip() for i, name in enumerate(names) if i != label_index]


def table_rows(path, columns, label_col=None, max_bytes=DEFAULT_MAX_BYTES):
    """Documents whose data are a row's cells, as a tuple in `columns` order (found by
    header name; other columns, and the label column when `label_col` is None, are ignored)."""
    check_path(path)
    with opened_input(path, text=True) as f:
        rows = _table_reader(f, path, max_bytes)
        names = next(rows, None)
        if not names:
            raise NbtextError(f"{path} is empty (a categorical table needs a header row)")
        indices = [_column(name, names, path) for name in columns]
        label_index = None if label_col is None else _column(label_col, names, path)
        needed = max(indices + [label_index or 0])
        for n, row in enumerate(rows, 2):
            if not row:
                continue
            if len(row) <= needed:
                yield Document(f"{path}:{n}", None, error=_short_row(row, needed))
                continue
            label = None if label_index is None else row[label_index].strip()
            yield Document(f"{path}:{n}", tuple(row[i].strip() for i in indices), label)


def _short_row(row, needed):
    return f"the row has {len(row)} column{'' if len(row) == 1 else 's'}, where {needed + 1} are needed"


def fasttext_documents(path, labelled=True, max_bytes=DEFAULT_MAX_BYTES):
    """Documents from fastText lines: `__label__spam some text` (the first label counts;
    without `labelled`, as `fasttext predict` reads them: a line without a label is a
    document too). A line's text (its words but the labels) is cut to `max_bytes`; its
    labels stay whole (found in the line's first max(max_bytes, 64 KiB) bytes)."""
    check_path(path)
    with opened_input(path) as f:
        n = 0
        for piece, starts in structural_lines(f, max_bytes):
            if not starts:
                continue  # the rest of a line too long to read whole: its words are cut anyway
            n += 1
            words = piece.decode("utf-8", errors="replace").split()
            labels = [w for w in words if w.startswith("__label__")]
            if not labels and labelled:
                if words:
                    yield Document(
                        f"{path}:{n}", None, error="the line has no __label__ (expected '__label__LABEL text')"
                    )
                continue
            text = cut_text(" ".join(w for w in words if not w.startswith("__label__")), max_bytes)
            yield Document(f"{path}:{n}", text, labels[0][len("__label__") :] if labels else None)
