"""Spreading reading, parsing and tokenizing over worker processes, for -j N.

Workers are forked from the running process, so they start in milliseconds with the model
already loaded (joblib's loky workers are new interpreters that import numpy and scipy and
load the model again, which ate the whole gain on a test set of thousands of documents:
docs/performance.md, figures behind the code). At most 2 x N chunks are in flight, so
memory stays bounded, and results come back in input order. Workers send back compact
results that merge exactly: partial counts for training, probabilities for prediction;
never lists of tokens.
"""

import multiprocessing
from collections import deque
from functools import partial

from nbtext.classifier.settings import make_tokenizer
from nbtext.features.weighting import counts_presence
from nbtext.reading.documents import PAUSE, in_batches, report_errors, said_once
from nbtext.stats.counting import ColumnCounter, count_batch

# Documents a worker reads, parses and scores at a time: small enough that a test set of a
# thousand messages is shared by every worker, large enough that the per-chunk cost of
# shipping results back stays small (docs/performance.md, "Constants chosen by measurement").
CHUNK = 200
BATCH = 1000  # documents scored at a time in one process

MAX_AUTO_JOBS = 4  # train's default -j: the cores, up to this many
# predict's and eval's default -j: one process while the job is short (forking workers and
# sending them chunks would cost more than it saves), the cores' workers for what is left
# once scoring has run this long.
AUTO_SECONDS = 0.2
# ... and only for documents that take at least this long each (seconds, reading and scoring):
# lighter ones cost more to send to a worker and back than they take.
WORKER_WORTHY = 200e-6


def default_jobs():
    """The worker processes used by default: the cores this process may run on, at most
    MAX_AUTO_JOBS; 1 where processes cannot be forked (the workers are forks)."""
    import os

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(cores or 1, MAX_AUTO_JOBS)


_END = object()  # _ordered's chunks are all handed out


def _ordered(function, chunks, jobs):
    """function(chunk) for every chunk, computed by `jobs` forked workers, yielded in input
    order (an exception raised by function is raised here, in its turn).

    The workers inherit `function` (it is never sent: it may hold a model or a tokenized
    corpus) and each has its own pipe, so no lock is shared between processes: a worker
    that dies (killed, out of memory) is an error named here instead of a pool waiting for
    it forever, and ending the workers (done, an error, Ctrl-C, SIGTERM) is killing them.
    A worker holds one chunk at a time, and at most 2 x jobs chunks are between being
    handed out and being yielded, so memory stays bounded. A stream's PAUSE hands on every
    answer due first."""
    from multiprocessing.connection import wait

    workers = _forked(function, jobs)
    try:
        idle, busy = list(workers), {}  # busy: connection -> (worker, the chunk's number)
        done, handed, yielded = {}, 0, 0  # done: the chunk's number -> (ok, result)
        chunks, waiting = iter(chunks), None  # waiting: PAUSE, or _END
        while True:
            while idle and waiting is None and handed - yielded < 2 * jobs:
                chunk = next(chunks, _END)
                if chunk is _END or chunk is PAUSE:
                    waiting = chunk
                    break
                worker = idle.pop()
                worker.give(chunk)
                busy[worker.connection], handed = (worker, handed), handed + 1
            while yielded in done:
                ok, result, notices = done.pop(yielded)
                yielded += 1
                for notice in notices:  # the worker's warnings, said here, where the command line holds them
                    said_once(notice)
                if not ok:
                    raise result
                yield result
            if not busy:
                if waiting is _END:
                    return
                waiting = None  # after a PAUSE, every answer due was handed on
                continue
            for connection in wait(list(busy)):
                worker, number = busy.pop(connection)
                done[number] = worker.result()
                idle.append(worker)
    finally:
        for worker in workers:
            worker.stop()


class _Worker:
    """A forked worker process, and this process's end of its pipe."""

    def __init__(self, pid, connection):
        self.pid, self.connection, self.ended = pid, connection, None

    def give(self, chunk):
        try:
            self.connection.send(chunk)
        except OSError:  # a broken pipe: the worker is gone (not our stdout's reader)
            raise self._gone() from None

    def result(self):
        """(ok, what function returned or raised, the warnings it gave) for the chunk this
        worker held."""
        try:
            return self.connection.recv()
        except (EOFError, OSError):
            return False, self._gone(), ()

    def _gone(self):
        from nbtext.errors import NbtextError

        return NbtextError(f"a worker process ended unexpectedly ({self._ending()})")

    def _ending(self):
        """How the worker ended, once it has."""
        import os

        if self.ended is None:
            try:
                _, status = os.waitpid(self.pid, 0)
                code = os.waitstatus_to_exitcode(status)
                self.ended = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            except ChildProcessError:
                self.ended = "its status is unknown"
            self.pid = None
        return self.ended

    def stop(self):
        """End the worker: one waiting for a chunk would leave on its own once the pipe
        closes, one still at work is killed (its result is not wanted)."""
        import os
        import signal

        self.connection.close()
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.pid = None


def _forked(function, jobs):
    """`jobs` _Workers serving `function`, forked from this process."""
    import os
    from multiprocessing import Pipe

    pipes = [Pipe() for _ in range(jobs)]
    workers = []
    for ours, theirs in pipes:
        # (Python 3.12+ warns about forking a process with threads, a DeprecationWarning that
        # is ignored outside __main__: ours are BLAS's idle pool threads, which OpenBLAS makes
        # again after a fork. No catch_warnings here: leaving one forgets which warnings were
        # said, and --max-bytes's notice came again.)
        pid = os.fork()
        if pid == 0:  # the worker, which never returns: only its own end of its pipe stays open
            for other_ours, other_theirs in pipes:
                other_ours.close()
                if other_theirs is not theirs:
                    other_theirs.close()
            _serve(function, theirs)
        theirs.close()
        workers.append(_Worker(pid, ours))
    return workers


def _serve(function, connection):
    """A worker's life: (ok, function(chunk), the texts of the warnings it gave) for each
    chunk received, until this process's parent closes the pipe or goes away; then out,
    without running the parent's exit handlers or flushing its buffers (os._exit). Nothing
    of a worker's is printed: the parent reports (its warnings too, once each)."""
    import os
    import warnings

    from nbtext.errors import as_a_worker

    as_a_worker()
    notices = []
    warnings.showwarning = lambda message, *_, **__: notices.append(str(message))
    status = 0
    try:
        while True:
            try:
                chunk = connection.recv()
            except EOFError:
                break
            try:
                answer = True, function(chunk), notices[:]
            except Exception as e:  # raised in the parent, in this chunk's turn
                answer = False, _rebuilt(e), notices[:]
            notices.clear()
            try:
                connection.send(answer)
            except (BrokenPipeError, ConnectionResetError):
                break  # the parent is gone
            except Exception as e:  # an answer that cannot be pickled: its error, with its warnings
                connection.send((False, RuntimeError(f"{e.__class__.__name__}: {e}"), answer[2]))
    except BaseException:
        status = 1
    os._exit(status)


class _ChunkCounter:
    """What a training's worker does with each chunk it is given; each worker has its own
    copy, forked, whose token columns last from one chunk to the next (ColumnCounter)."""

    def __init__(self, settings):
        self.settings = settings
        self.counter = ColumnCounter(binary=counts_presence(settings))

    def __call__(self, chunk):
        """The partial counts of (documents, calibration rate or None): (this worker's
        pid, ColumnCounter's export, [(journal key, label)], [(name, error)], number of documents
        read as e-mail, the calibration candidates under the rate or None)."""
        import os

        docs, rate = chunk
        tokenize = make_tokenizer(self.settings["tokenizer"])
        errors = []
        exported, keys, found = count_batch(
            self.settings, tokenize, docs, lambda doc, message: errors.append((doc.name, message)), rate, self.counter
        )
        return os.getpid(), exported, keys, errors, tokenize.mail_documents, found


def count_in_workers(settings, chunks, jobs, candidates=None):
    """The partial counts of every chunk of labelled documents, in order, as
    nbtext.jobs.training.add_counted takes them (each named by the worker that counted it);
    with `candidates` (nbtext.jobs.calibration.Candidates) each chunk is given its bound,
    and its candidates come back with it."""
    rated = ((chunk, candidates.bound_after(len(chunk)) if candidates is not None else None) for chunk in chunks)
    rates = deque()  # the rate each chunk in flight was given, in order

    def remembered():
        for chunk, rate in rated:
            rates.append(rate)
            yield chunk, rate

    for worker, exported, keys, errors, mail_count, found in _ordered(_ChunkCounter(settings), remembered(), jobs):
        rate = rates.popleft()
        yield worker, exported, keys, errors, mail_count, (found, rate) if found is not None else None


def score_chunk(model, explain, docs):
    """A worker's predictions: (kept documents, log-probabilities, explanations, [(name, error)])."""
    errors = []
    kept, log_proba, explanations = model.score(docs, lambda doc, message: errors.append((doc.name, message)), explain)
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
    chunks = None  # the chunks still to score, once this process has scored the first
    if jobs is None:
        jobs = default_jobs()
        if jobs > 1:
            from itertools import chain
            from time import perf_counter

            # One batcher from start to end: a batch cut by bytes is yielded when the next
            # document does not fit, which the batcher then holds; a new batcher over `docs`
            # would never see it (a document lost without a word).
            chunks = in_batches(docs, CHUNK, pauses=True)
            spent, read = 0.0, 0  # seconds spent reading and scoring (not waiting for a stream's producer)
            for batch in chunks:
                if batch is PAUSE:
                    continue
                started = perf_counter()
                kept, log_proba, explanations = model.score(batch, on_error, explain)
                spent, read = spent + perf_counter() - started, read + len(batch)
                if kept:
                    yield kept, log_proba, explanations
                if spent > AUTO_SECONDS:
                    break
            chunks = _remaining(chunks)
            if chunks is None:
                return
            if spent < WORKER_WORTHY * read:
                jobs = 1
                docs = chain.from_iterable((PAUSE,) if batch is PAUSE else batch for batch in chunks)
    if jobs > 1:
        model.vocabulary.lookup  # noqa: B018 (derived once here, not once per worker)
        model.event.derive(model)
        chunks = in_batches(docs, CHUNK, pauses=True) if chunks is None else chunks
        for kept, log_proba, explanations, errors in _ordered(partial(score_chunk, model, explain), chunks, jobs):
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
        yield from _ordered(function, items, jobs)
        return
    for item in items:
        yield function(item)


def _rebuilt(error):
    """`error` as the parent can read it from the pipe: itself, or (one whose pickle does not
    make it again, an __init__ of other arguments than its args: the parent's recv raised)
    an error of its kind and message: an NbtextError stays one, a line and not a traceback."""
    import pickle

    from nbtext.errors import NbtextError

    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        if isinstance(error, NbtextError):
            return NbtextError(str(error))
        return RuntimeError(f"{error.__class__.__name__}: {error}")
    return error
