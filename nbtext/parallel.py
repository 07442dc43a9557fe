"""Spreading reading, parsing and tokenizing over worker processes, for -j N.

Workers are forked from the running process, so they start in milliseconds with the model
already loaded (joblib's loky workers are new interpreters that import numpy and scipy and
load the model again: about half a second, which ate the whole gain on a test set of
thousands of documents). At most 2 x N chunks are in flight, so memory stays bounded,
and results come back in input order. Workers send back compact results that merge
exactly: partial counts for training, probabilities for prediction; never lists of tokens.
"""

import multiprocessing
import warnings
from collections import deque

from nbtext.counting import count_batch
from nbtext.settings import make_tokenizer
from nbtext.documents import PAUSE, in_batches
from nbtext.sources import report_errors

# Documents a worker reads, parses and scores at a time. Small enough that a test set of a
# thousand messages is shared by every worker (with chunks of 1,000 one worker did 1,000 of
# SpamAssassin's 1,185 while the other did 185), large enough that the per-chunk cost of
# shipping results back stays small (measured: 100 and 200 alike, 1,000 slower by 10-20%).
CHUNK = 200
BATCH = 1000  # documents scored at a time in one process

MAX_AUTO_JOBS = 4  # train's default -j: the cores, up to this many
# predict's and eval's default -j: one process while the job is short (forking workers and
# sending them chunks would cost more than it saves), the cores' workers for what is left
# once scoring has run this long.
AUTO_SECONDS = 0.2  # measured: 0.5 left SpamAssassin's test split (1,185 messages) mostly to one process
# ... and only for documents that take at least this long each (seconds, reading and scoring):
# lighter ones cost more to send to a worker and back than they take. Measured (make bench,
# 2 cores): a million lines (14 µs each) took 24.0 s on workers against 18.8 s in one process,
# SMS's files (120 µs) about broke even, 20 Newsgroups' (530 µs) and SpamAssassin's (690 µs)
# gained a third and a fifth.
WORKER_WORTHY = 200e-6

_state = {}  # what the forked workers inherit: the settings, the model, or ordered_runs' function


def default_jobs():
    """The worker processes used by default: the cores this process may run on, at most
    MAX_AUTO_JOBS; 1 where processes cannot be forked (the workers are forks)."""
    import os

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(cores or 1, MAX_AUTO_JOBS)


def _ignore_interrupts():
    """In a worker: Ctrl-C is the main process's to handle (it ends the pool); a worker
    that took it too would print a traceback of its own."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _ordered(function, chunks, jobs):
    """function(chunk) for every chunk, computed by `jobs` processes, yielded in order."""
    context = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        # Python 3.12+ warns about forking a process with threads; ours are BLAS's idle
        # pool threads, which OpenBLAS re-creates after a fork.
        warnings.filterwarnings("ignore", message=".*multi-threaded.*fork", category=DeprecationWarning)
        pool = context.Pool(jobs, initializer=_ignore_interrupts)
    with pool:
        pending = deque()
        for chunk in chunks:
            if chunk is PAUSE:  # a stream waits for its producer: hand on every answer due so far
                while pending:
                    yield pending.popleft().get()
                continue
            pending.append(pool.apply_async(function, (chunk,)))
            if len(pending) >= 2 * jobs:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def count_chunk(chunk):
    """A worker's partial counts of (documents, calibration rate or None): (exported
    CountTable, [(journal key, label)], [(name, error)], number of documents read as
    e-mail, the calibration candidates under the rate or None)."""
    docs, rate = chunk
    settings = _state["settings"]
    tokenize = make_tokenizer(settings["tokenizer"])
    errors = []
    table, keys, candidates = count_batch(settings, tokenize, docs,
                                          lambda doc, message: errors.append((doc.name, message)), rate)
    return table.export(), keys, errors, tokenize.mail_documents, candidates


def count_in_workers(settings, chunks, jobs, candidates=None):
    """count_chunk results for every chunk of labelled documents, in order, as
    nbtext.training.add_counted takes them; with `candidates` (nbtext.calibration.Candidates)
    each chunk is given its bound, and its candidates come back with it."""
    _state["settings"] = settings
    rated = ((chunk, candidates.bound_after(len(chunk)) if candidates is not None else None) for chunk in chunks)
    rates = deque()  # the rate each chunk in flight was given, in order

    def remembered():
        for chunk, rate in rated:
            rates.append(rate)
            yield chunk, rate

    for exported, keys, errors, mail_count, found in _ordered(count_chunk, remembered(), jobs):
        rate = rates.popleft()
        yield exported, keys, errors, mail_count, (found, rate) if found is not None else None


def score_chunk(docs):
    """A worker's predictions: (kept documents, log-probabilities, explanations, [(name, error)])."""
    errors = []
    kept, log_proba, explanations = _state["model"].score(
        docs, lambda doc, message: errors.append((doc.name, message)), _state["explain"]
    )
    return [doc._replace(data=None) for doc in kept], log_proba, explanations, errors


def scored_batches(model, docs, jobs=1, on_error=None, explain=0):
    """(documents, log-probabilities, explanations or None) per batch, in input order, on
    `jobs` processes; documents that cannot be read or parsed go to `on_error`. `jobs`
    None: in this process until reading and scoring have taken AUTO_SECONDS, then, if
    documents remain and each took WORKER_WORTHY or more, on default_jobs() workers (the
    same results either way: every document is scored on its own). A stream's pause
    hands on every answer due, so a slow producer's lines are answered as they come on
    workers too. (ordered_runs is the same rule for whole runs; this one keeps BATCH-sized
    batches when it stays in one process, and passes `on_error` documents, not names.)"""
    if jobs is None:
        jobs, docs = default_jobs(), iter(docs)
        if jobs > 1:
            from time import perf_counter

            spent, read = 0.0, 0  # seconds spent reading and scoring (not waiting for a stream's producer)
            for batch in in_batches(docs, CHUNK):
                started = perf_counter()
                kept, log_proba, explanations = model.score(batch, on_error, explain)
                spent, read = spent + perf_counter() - started, read + len(batch)
                if kept:
                    yield kept, log_proba, explanations
                if spent > AUTO_SECONDS:
                    break
            docs = _remaining(docs)
            if docs is None:
                return
            if spent < WORKER_WORTHY * read:
                jobs = 1
    if jobs > 1:
        model.vocabulary.lookup, model.linear_form  # derive once here, not once per worker
        _state["model"], _state["explain"] = model, explain
        chunks = in_batches(docs, CHUNK, pauses=True)
        for kept, log_proba, explanations, errors in _ordered(score_chunk, chunks, jobs):
            report_errors(errors, on_error)
            if kept:
                yield kept, log_proba, explanations
        return
    for batch in in_batches(docs, BATCH):
        kept, log_proba, explanations = model.score(batch, on_error, explain)
        if kept:
            yield kept, log_proba, explanations


def _remaining(docs):
    """The iterator `docs` as it stands, or None when it has nothing left."""
    from itertools import chain

    first = next(docs, _remaining)
    return None if first is _remaining else chain([first], docs)


def ordered_runs(function, items, jobs=None):
    """function(item) for each item, in order, on `jobs` forked workers, which inherit
    `function` (it is never sent: it may hold a whole tokenized corpus). `jobs` None: in
    this process while the runs have taken under AUTO_SECONDS, then default_jobs() workers
    for the items left (cross-validation's folds: the same results either way)."""
    from time import perf_counter

    items = iter(items)
    if jobs is None:
        jobs, started = default_jobs(), perf_counter()
        for item in items:
            yield function(item)
            if jobs > 1 and perf_counter() - started > AUTO_SECONDS:
                break
        items = _remaining(items)
        if items is None:
            return
    if jobs > 1:
        _state["run"] = function
        yield from _ordered(_run, items, jobs)
        return
    for item in items:
        yield function(item)


def _run(item):
    return _state["run"](item)
