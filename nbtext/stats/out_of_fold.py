"""Out-of-fold joint log-likelihoods: each document of a sample scored by its model without
its fold's documents, what a calibrated temperature (nbtext.stats.fitting) and a spam cut-off
are chosen on. A Naive Bayes fold model needs no retraining: it is the model's statistics
minus those of the fold's documents (the event model's out_of_fold_jll: nbtext.stats.event_models).
"""

import numpy as np

FOLDS = 5


def out_of_fold_of(model, sample, learned=None):
    """(jll, class rows, lengths) of a sample (each document its feature ids, labels, hashes)
    out of fold (fold: the hash modulo FOLDS), its documents in the order of their hashes
    (then labels): the same numbers whatever order the sample came in. With `learned` (for
    each document, whether the model learned it: a --learn tone model's sample holds
    documents its pass left), one the model did not learn is scored by the model itself."""
    documents, labels, hashes = sample
    learned = [True] * len(labels) if learned is None else learned
    order = sorted(range(len(labels)), key=lambda i: (hashes[i], labels[i]))
    documents, labels, hashes, learned = ([part[i] for i in order] for part in (documents, labels, hashes, learned))
    jll = np.zeros((len(labels), len(model.classes)))
    inside = [i for i, was in enumerate(learned) if was]
    outside = [i for i, was in enumerate(learned) if not was]
    ids, indptr = _flat([documents[i] for i in inside])
    jll[inside] = out_of_fold_jll_of_ids(
        model, ids, indptr, [labels[i] for i in inside], [hashes[i] % FOLDS for i in inside]
    )[0]
    if outside:
        jll[outside] = model.event.jll_of_ids(model, *_flat([documents[i] for i in outside]))
    return jll, np.array([model.classes.index(label) for label in labels]), np.array([len(d) for d in documents])


def _flat(documents):
    """(ids, indptr): documents of feature ids as one flat array and a CSR row pointer."""
    ids = np.concatenate(documents) if documents else np.zeros(0, dtype=np.int64)
    return ids, np.concatenate([[0], np.cumsum([len(d) for d in documents])])


def out_of_fold_jll(model, token_lists, labels, folds):
    """(jll, n): the joint log-likelihood of each document under the model without its
    fold's documents, (n, classes), and each document's length n (its tokens that enter
    the likelihood, as NaiveBayes.jll_and_lengths counts them)."""
    ids, indptr = model.vocabulary.ids(token_lists)
    return out_of_fold_jll_of_ids(model, ids, indptr, labels, folds)


def out_of_fold_jll_of_ids(model, ids, indptr, labels, folds):
    """out_of_fold_jll of documents given as their feature ids (flat, with a CSR row pointer)."""
    rows = np.array([model.classes.index(label) for label in labels], dtype=np.intp)
    return model.event.out_of_fold_jll(model, ids, indptr, rows, np.asarray(folds)), np.diff(indptr)
