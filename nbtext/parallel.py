"""Spreading reading, parsing and tokenizing over worker processes (joblib), for -j N.

Workers send back compact results that merge exactly: partial counts for training,
probabilities for prediction; never lists of tokens. Results come back in input order.
"""

from nbtext.model import CountTable, Tokenizer, content_hash, tokenized

CHUNK = 2000


def _parallel(jobs):
    from joblib import Parallel

    return Parallel(n_jobs=jobs, return_as="generator", pre_dispatch="2*n_jobs")


def count_chunk(settings, docs):
    """A worker's partial counts: (exported CountTable, [(hash, label)], [(name, error)],
    number of documents read as e-mail)."""
    tokenize = Tokenizer.from_settings(settings["tokenizer"])
    errors = []
    kept, token_lists = tokenized(tokenize, docs, lambda doc, message: errors.append((doc.name, message)))
    table = CountTable(binary=settings["event_model"] == "bernoulli")
    table.add(token_lists, [doc.label for doc in kept])
    return table.export(), [(content_hash(d.data), d.label) for d in kept], errors, tokenize.mail_documents


def count_in_workers(settings, chunks, jobs):
    """Yield count_chunk results for every chunk of labelled documents, in order."""
    from joblib import delayed

    return _parallel(jobs)(delayed(count_chunk)(settings, chunk) for chunk in chunks)


_loaded = {}


def score_chunk(model_path, alpha, docs):
    """A worker's predictions: (kept names, probabilities, [(name, error)])."""
    key = (model_path, alpha)
    if key not in _loaded:
        from nbtext.modelfile import load

        model = load(model_path)
        _loaded[key] = model if alpha is None else model.with_alpha(alpha)
    model = _loaded[key]
    errors = []
    kept, token_lists = tokenized(model.tokenize, docs, lambda doc, message: errors.append((doc.name, message)))
    probabilities = model.proba_of_tokens(token_lists) if kept else None
    return kept, probabilities, errors


def score_in_workers(model_path, alpha, chunks, jobs):
    from joblib import delayed

    return _parallel(jobs)(delayed(score_chunk)(model_path, alpha, chunk) for chunk in chunks)
