"""Training and prediction on a Dask cluster (`--scheduler ADDRESS`; the `dask` extra).

The client only lists the inputs: each partition is a list of entries (a file that is one
document, or a file that may be an mbox), about a local batch's worth. The workers read,
parse, tokenize and count their partitions themselves (local paths they can see, or fsspec
URLs such as s3://bucket/spam/, opened with fsspec's own configuration for credentials),
and the partial counts are added up on the workers, in a tree, in input order.
The client receives one table and writes the model, the same as a local training (the
counts are whole numbers, summed exactly in any order; the second pass of tf-idf or UNK
models sums per-partition results on the client, in input order, as a local training sums
its batches). A worker that dies has its tasks run again by Dask; the model is written
only once every partition has been counted, each exactly once.

Prediction scores partitions on the workers (the model file is sent to each worker once)
and writes their lines, in input order, as a local run does.
"""

import os
from collections import deque
from functools import partial

from nbtext.choices import DEFAULT_MAX_BYTES
from nbtext.errors import NbtextError
from nbtext.reading.documents import (
    Document,
    file_documents,
    in_batches,
    notices_collected,
    report_errors,
    said_once,
    tokenized,
)
from nbtext.reading.sources import files_in, is_imap, is_url, labelled_sources
from nbtext.version import __version__

EXTRA = "pip install 'nbtext[dask]'"
PARTITION = 1000  # entries (files) a task reads: a local batch, so tf-idf sums add up as locally
CONNECT_SECONDS = 10
FAN_IN = 16  # partial counts a worker adds up in one task


# --- the client ------------------------------------------------------------------------
def connect(address):
    """A distributed.Client of the scheduler at `address`, its workers checked to run this
    nbtext version."""
    try:
        from distributed import Client
    except ImportError:
        raise NbtextError(f"--scheduler needs the dask extra: {EXTRA}") from None
    from distributed.comm.addressing import parse_address, parse_host_port

    try:  # as Client reads it: a Client that fails on it waits 20 s at exit to close what it never opened
        scheme, location = parse_address(address, strict=False)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except ValueError as e:
        raise NbtextError(
            f"--scheduler {address!r} is not a scheduler's address ({e}): give one as tcp://HOST:PORT (or HOST:PORT)"
        ) from None
    try:
        client = Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise NbtextError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    try:
        versions = client.run(_worker_version)
    except Exception as e:  # noqa: BLE001 (a worker that cannot import nbtext, or none)
        client.close()
        raise NbtextError(
            f"the Dask workers at {address} cannot run nbtext ({e}); install nbtext {__version__} on them"
        ) from None
    others = sorted({v for v in versions.values() if v != __version__})
    if not versions or others:
        client.close()
        found = f"nbtext {', '.join(others)}" if others else "no workers"
        raise NbtextError(
            f"the Dask cluster at {address} has {found}, this client nbtext {__version__}: "
            "install the same version on both"
        )
    return client


def _worker_version():
    from nbtext.version import __version__ as version

    return version


def _opener(location, cwd=None):
    """How a worker opens an entry for binary reading: open (from `cwd` for a relative
    path), or fsspec for a URL."""
    if not is_url(location):
        return None if cwd is None else (lambda path: open(os.path.join(cwd, path), "rb"))
    import fsspec

    return lambda url: fsspec.open(url, "rb").open()


def source_entries(label, path):
    """The entries of one labelled source: (kind, location, label), kind 'file' (a file of a
    folder: one document), 'source' (a file given itself: one document, or an mbox's
    messages), or why it cannot be read (a FIFO found in a folder), as a local training
    reads them. URLs are listed with fsspec; an IMAP folder is refused (its reader runs here,
    with the user's password, never on a worker)."""
    if is_imap(path):
        raise NbtextError(f"{path}: an IMAP folder is read here, not by a cluster's workers: drop --scheduler")
    if not is_url(path):
        if os.path.isdir(path):
            return [
                ("file" if kind is None else f"not a regular file (a {kind})", file, label)
                for file, kind in files_in(path)
            ]
        return [("source", path, label)]
    try:
        import fsspec
    except ImportError:
        raise NbtextError(f"URLs need the dask extra (fsspec): {EXTRA}") from None
    fs, root = fsspec.core.url_to_fs(path)
    if not fs.exists(root):
        raise NbtextError(f"{path} does not exist")
    if not fs.isdir(root):
        return [("source", path, label)]
    base = root.rstrip("/")
    folders = [f"{base}/cur", f"{base}/new"] if fs.isdir(f"{base}/cur") and fs.isdir(f"{base}/new") else [base]
    entries = []
    for folder in folders:  # named as given: s3://bucket/spam/ + the path below it
        for found in sorted(fs.find(folder)):
            below = found[len(base) + 1 :]
            if not any(part.startswith(".") for part in found[len(folder) + 1 :].split("/")):
                entries.append(("file", f"{path.rstrip('/')}/{below}", label))
    if not entries:
        raise NbtextError(f"class {label!r} has no documents (is {path} empty?)")
    return entries


def labelled_entries(specs):
    """Every entry of train's CLASS_DIR arguments (local paths or URLs), in input order."""
    entries = []  # (each label checked as a trained model's class's before any worker lists or reads a folder)
    for label, path in labelled_sources(specs, urls=True, classes_made=True):
        entries += source_entries(label, path)
    return entries


def path_entries(paths):
    """Every entry of predict's PATH arguments (no labels); a local PATH that does not exist
    is an entry that cannot be read, named and skipped as a local predict does."""
    entries = []
    for path in paths:
        if path == "-":
            raise NbtextError("--scheduler reads PATHs the workers can open, not stdin")
        if not is_url(path) and not os.path.exists(path):
            entries.append(("No such file or directory", path, None))
            continue
        entries += source_entries(None, path)
    return entries


def partitions(entries, size=PARTITION):
    return [entries[i : i + size] for i in range(0, len(entries), size)]


def _tree_sum(client, futures, combine):
    """One future of combine(...) over `futures`, FAN_IN at a time and in order, on the
    workers (a combine costs a table of the vocabulary: few and wide beats many and small)."""
    while len(futures) > 1:
        futures = [client.submit(combine, *futures[i : i + FAN_IN], pure=False) for i in range(0, len(futures), FAN_IN)]
    return futures[0]


def train_on_scheduler(address, specs, settings, shard=None, on_error=None, progress=None, max_bytes=DEFAULT_MAX_BYTES):
    """`nbtext train --scheduler ADDRESS CLASS_DIR...`: the model, trained on that cluster."""
    if shard is not None or not specs:
        raise NbtextError("--scheduler trains from CLASS_DIR... (folders, mbox files, URLs), without --shard")
    _check_splittable(settings)  # (refused before connecting)
    with connect(address) as client:
        return train_on_cluster(client, specs, settings, on_error, progress, max_bytes)


def _check_splittable(settings):
    """Refused where a cluster's workers cannot split the training (a TONE pass takes every
    document in order)."""
    from nbtext.choices import learned_by_tone
    from nbtext.classifier.settings import TONE_SPLIT_REFUSED

    if learned_by_tone(settings):
        raise NbtextError(TONE_SPLIT_REFUSED.format("--scheduler"))


def train_on_cluster(client, specs, settings, on_error=None, progress=None, max_bytes=DEFAULT_MAX_BYTES):
    """The model of CLASS_DIR `specs` (paths or URLs), counted by the cluster's workers with
    `settings` (TrainSettings): equal to
    nbtext.jobs.training.train_corpus on the same documents. `progress(items, label,
    total, size)` (nbtext.cli.console.drawn) is shown the partitions as they are counted. The
    workers read each document up to `max_bytes`."""
    from nbtext.features.weighting import counts_presence
    from nbtext.jobs.calibration import Candidates, sample_rate
    from nbtext.jobs.training import add_counted, trained_model
    from nbtext.stats.changes import Ledger
    from nbtext.stats.counting import CountTable

    _check_splittable(settings)
    parts = partitions(labelled_entries(specs))
    # The calibration sample is gathered while counting, under a bound set from the listing:
    # SAMPLE over 80% of the entries, at least the final rate while 80% of them are counted
    # (else one more pass). Each candidate ships its token ids: a tighter bound ships fewer.
    bound = sample_rate(0.8 * sum(map(len, parts))) if settings.calibration != "none" else None
    counted = client.map(
        count_partition, parts, settings=settings, max_bytes=max_bytes, rate=bound, cwd=os.getcwd(), pure=False
    )
    root = _tree_sum(client, list(counted), combine_counts)
    if progress is not None:  # each partition's future is let go once counted, so it is freed once added
        from distributed import as_completed

        sizes = {future.key: len(part) for future, part in zip(counted, parts)}  # files, each a document
        files_only = all(kind == "file" for part in parts for kind, _, _ in part)
        done = as_completed(counted, loop=client.loop)  # the client is not Dask's default one
        for _ in progress(
            done,
            "counting on the cluster",
            sum(sizes.values()) if files_only else None,
            lambda future: sizes[future.key],
        ):
            pass
    del counted
    *total, found, notices = unpacked(root.result())
    for notice in notices:  # what the workers' reading said (documents cut), said here
        said_once(notice)
    table, learned = CountTable(binary=counts_presence(settings)), Ledger()
    # fewer than 80% of the entries counted: Candidates.covers says no, and the sample is one more pass
    candidates = Candidates(table, bound) if found is not None else None
    sampled = (found, bound) if found is not None else None
    add_counted(table, learned, [(None, *total, sampled)], on_error, candidates)
    over = partial(_over_partitions, client, parts, settings, max_bytes)
    return trained_model(settings, table, learned, over, candidates=candidates)


def _over_partitions(client, parts, settings, max_bytes, function):
    """function(token lists, labels) of each partition, computed on the workers, in order
    (nbtext.jobs.training.over_batches' counterpart), at most 2 per worker in flight."""
    shipped = client.scatter(function, broadcast=True)
    for results in _in_order(
        client, second_pass_partition, parts, settings=settings, max_bytes=max_bytes, function=shipped, cwd=os.getcwd()
    ):
        yield from results  # (a partition's batches: in_batches')


def _in_order(client, task, parts, **arguments):
    """task(part, **arguments) for each part, on the workers, yielded in order; at most two
    a worker in flight, so the client's memory stays bounded."""
    window = 2 * max(1, len(client.nthreads()))
    pending = deque()
    for part in parts:
        pending.append(client.submit(task, part, **arguments, pure=False))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def predict_on_scheduler(
    address,
    model_path,
    alpha,
    paths,
    files_from,
    separator,
    output,
    explain,
    on_error=None,
    max_bytes=DEFAULT_MAX_BYTES,
):
    """`nbtext predict --scheduler ADDRESS PATH...` (or --files-from FILE): line batches."""
    from nbtext.reading.sources import listed_paths

    paths = paths or tuple(listed_paths(files_from, separator or b"\n"))
    with connect(address) as client:
        yield from predict_on_cluster(client, model_path, alpha, paths, output, explain, on_error, max_bytes)


def predict_on_cluster(client, model_path, alpha, paths, output, explain, on_error=None, max_bytes=DEFAULT_MAX_BYTES):
    """(number of documents, lines) batches of `nbtext predict PATH...`, scored on the workers
    (with the model of `model_path`, re-smoothed with `alpha` unless None; each document read
    up to `max_bytes`), in input order."""
    from nbtext.jobs.loading import model_bytes, model_of_bytes

    data = model_bytes(model_path)  # through the one door: refused here, in one line, before any worker reads it
    model_of_bytes(data, model_path, alpha)
    arguments = dict(
        model_bytes=client.scatter(data, broadcast=True),
        model_path=str(model_path),
        alpha=alpha,
        max_bytes=max_bytes,
        output=tuple(output),
        explain=explain,
        cwd=os.getcwd(),
    )
    for n, lines, errors, notices in _in_order(client, score_partition, partitions(path_entries(paths)), **arguments):
        for notice in notices:  # what the worker's reading said (documents cut), said here
            said_once(notice)
        report_errors(errors, on_error)
        if n:
            yield n, lines.split("\0")


# --- on the workers ----------------------------------------------------------------------
def entry_documents(entries, max_bytes, cwd=None):
    """The Documents of a partition's entries, read where this runs (up to `max_bytes` each),
    named as given; a relative local path is opened from `cwd`, the client's folder (a
    worker runs in its own)."""
    for kind, location, label in entries:
        if kind in ("file", "source"):  # an mbox found in a folder is its messages, as locally
            yield from file_documents(location, label, _opener(location, cwd), max_bytes)
        else:  # a FIFO, socket or device found in a folder: said, not read
            yield Document(location, None, label, error=kind)


def count_partition(entries, settings, max_bytes, rate=None, cwd=None):
    """A worker's partial counts of a partition (as a -j worker's, nbtext.jobs.parallel), with the
    calibration candidates under `rate` (None: no calibration)."""
    from nbtext.classifier.settings import make_tokenizer
    from nbtext.features.weighting import counts_presence
    from nbtext.stats.counting import CountTable, count_batch

    tokenize = make_tokenizer(settings["tokenizer"])
    table = CountTable(binary=counts_presence(settings))  # the partition's counts, batch after batch
    errors, keys, found = [], [], []
    with notices_collected() as notices:  # (the --max-bytes notice: said by the client)
        for batch in in_batches(entry_documents(entries, max_bytes, cwd)):  # (bounded by bytes, as locally)
            _, batch_keys, batch_found = count_batch(
                settings, tokenize, batch, lambda doc, message: errors.append((doc.name, message)), rate, table
            )
            keys += batch_keys
            found.append(batch_found)
    found = _joined_samples(found) if rate is not None else None
    return packed((table.export(), keys, errors, tokenize.mail_documents, found, notices))


def _joined_samples(samples):
    """Batches' calibration candidates (packed_sample's, ids of one table's columns) as one."""
    from nbtext.stats.counting import packed_rows

    rows, labels, hashes = [], [], []
    for (ids, indptr), batch_labels, batch_hashes in samples:
        rows += [ids[a:b] for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())]
        labels += batch_labels
        hashes += batch_hashes
    return packed_rows(rows), labels, hashes


def combine_counts(*parts):
    """Partitions' partial counts as one (journals, errors and candidates in order)."""
    from nbtext.jobs.calibration import Candidates
    from nbtext.stats.changes import LearnedBatch, Ledger
    from nbtext.stats.counting import CountTable

    table = CountTable(binary=False)  # merge adds counts as they are: presence was applied already
    candidates = Candidates(table)
    learned, errors, notices, any_found = Ledger(), [], [], False  # each part a training's batch, in order
    for exported, part_keys, part_errors, part_mail, found, part_notices in map(unpacked, parts):
        notices += [notice for notice in part_notices if notice not in notices]
        columns = table.merge(exported)
        if found is not None:  # their ids become this table's columns
            candidates.add(found, 1.0, columns=columns)
            any_found = True
        learned.learn(LearnedBatch(part_keys, part_mail))
        errors += part_errors
    keys = list(learned.journal.items())
    return packed(
        (table.export(), keys, errors, learned.mail_documents, candidates.packed() if any_found else None, notices)
    )


def packed(counted):
    """Partial counts as a few large objects, cheap to send: Dask serializes a list of a
    hundred thousand small strings and hashes many times slower than one string of them
    (docs/performance.md, figures behind the code)."""
    (labels, tokens, class_count, rows, cols, data), keys, errors, mail_documents, found, notices = counted
    key_labels = sorted({label for _, label in keys})
    index = {label: k for k, label in enumerate(key_labels)}
    if found is not None:  # the candidates' hashes as one array
        import numpy as np

        found = (found[0], found[1], np.array(found[2], dtype=np.uint64))
    return (
        (labels, "\0".join(tokens), class_count, rows, cols, data),  # a token never holds NUL
        (b"".join(key for key, _ in keys), [index[label] for _, label in keys], key_labels),
        errors,
        mail_documents,
        found,
        notices,
    )


def unpacked(counted):
    (
        (labels, tokens, class_count, rows, cols, data),
        (hashes, label_indices, key_labels),
        errors,
        mail,
        found,
        notices,
    ) = counted
    from nbtext.journal import HASH_BYTES

    keys = [(hashes[HASH_BYTES * i : HASH_BYTES * (i + 1)], key_labels[k]) for i, k in enumerate(label_indices)]
    if found is not None:
        found = (found[0], found[1], found[2].tolist())
    tokens = tokens.split("\0") if tokens else []
    return (labels, tokens, class_count, rows, cols, data), keys, errors, mail, found, notices


def second_pass_partition(entries, settings, max_bytes, function, cwd=None):
    """[function(token lists, labels)] of each batch of a partition, in order."""
    from nbtext.classifier.settings import make_tokenizer

    tokenize, results = make_tokenizer(settings["tokenizer"]), []
    for batch in in_batches(entry_documents(entries, max_bytes, cwd)):
        kept, token_lists = tokenized(tokenize, batch, lambda doc, message: None)
        results.append(function(token_lists, [doc.label for doc in kept]))
    return results


_models = {}  # on a worker: the models it has loaded, by the hash of their file


def score_partition(entries, model_bytes, model_path, alpha, max_bytes, output, explain, cwd=None):
    """(documents scored, their output lines, [(name, error)]) of a partition, by the model of
    the file's bytes `model_bytes` loaded as every reader loads one (nbtext.jobs.loading: its
    pending section checked and folded in; `model_path` names it)."""
    from nbtext.jobs.loading import model_of_bytes
    from nbtext.exactmath import exp
    from nbtext.report.text import Output, prediction_lines

    key = (hash(model_bytes), alpha)
    if key not in _models:
        _models.clear()
        _models[key] = model_of_bytes(model_bytes, model_path, alpha)
    model = _models[key]
    errors, lines = [], []
    with notices_collected() as notices:  # (the --max-bytes notice: said by the client)
        for batch in in_batches(entry_documents(entries, max_bytes, cwd)):  # (bounded by bytes, as locally)
            kept, log_proba, explanations = model.score(
                batch, lambda doc, message: errors.append((doc.name, message)), explain
            )
            if kept:
                lines += prediction_lines(model, kept, exp(log_proba), explanations, Output(*output))
    return len(lines), "\0".join(lines), errors, notices  # one string ships far faster than many (see packed)
