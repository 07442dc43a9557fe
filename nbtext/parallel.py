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

from nbtext.counting import CountTable
from nbtext.model import tokenized
from nbtext.settings import make_tokenizer, presence_table
from nbtext.training import content_hash

CHUNK = 1000

_state = {}  # what the forked workers inherit: the model or the settings


def _ordered(function, chunks, jobs):
    """function(chunk) for every chunk, computed by `jobs` processes, yielded in order."""
    context = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        # Python 3.12+ warns about forking a process with threads; ours are BLAS's idle
        # pool threads, which OpenBLAS re-creates after a fork.
        warnings.filterwarnings("ignore", message=".*multi-threaded.*fork", category=DeprecationWarning)
        pool = context.Pool(jobs)
    with pool:
        pending = deque()
        for chunk in chunks:
            pending.append(pool.apply_async(function, (chunk,)))
            if len(pending) >= 2 * jobs:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def count_chunk(docs):
    """A worker's partial counts: (exported CountTable, [(hash, label)], [(name, error)],
    number of documents read as e-mail)."""
    settings = _state["settings"]
    tokenize = make_tokenizer(settings["tokenizer"])
    errors = []
    kept, token_lists = tokenized(tokenize, docs, lambda doc, message: errors.append((doc.name, message)))
    table = CountTable(binary=presence_table(settings))
    table.add(token_lists, [doc.label for doc in kept])
    return table.export(), [(content_hash(d.data), d.label) for d in kept], errors, tokenize.mail_documents


def count_in_workers(settings, chunks, jobs):
    """count_chunk results for every chunk of labelled documents, in order."""
    _state["settings"] = settings
    return _ordered(count_chunk, chunks, jobs)


def score_chunk(docs):
    """A worker's predictions: (kept documents, log-probabilities, explanations, [(name, error)])."""
    errors = []
    kept, log_proba, explanations = _state["model"].score(
        docs, lambda doc, message: errors.append((doc.name, message)), _state["explain"]
    )
    return [doc._replace(data=None) for doc in kept], log_proba, explanations, errors


def score_in_workers(model, chunks, jobs, explain=0):
    """score_chunk results for every chunk of documents, in order."""
    model.lookup, model._weights  # derive once here, not once per worker
    _state["model"], _state["explain"] = model, explain
    return _ordered(score_chunk, chunks, jobs)
