"""Out-of-fold joint log-likelihoods: each document of a sample scored by its model without
its fold's documents, what a calibrated temperature (nbtext.stats.fitting) and a spam cut-off
are chosen on. A Naive Bayes fold model needs no retraining: it is the model's statistics
minus those of the fold's documents (the event model's out_of_fold_jll: nbtext.stats.event_models).
"""

import numpy as np

FOLDS = 5


def out_of_fold_of(model, sample):
    """(jll, class rows, lengths) of a sample (each document its feature ids, labels, hashes)
    out of fold (fold: the hash modulo FOLDS), its documents in the order of their hashes
    (then labels): the same numbers whatever order the sample came in."""
    documents, labels, hashes = sample
    order = sorted(range(len(labels)), key=lambda i: (hashes[i], labels[i]))
    documents, labels, hashes = ([part[i] for i in order] for part in (documents, labels, hashes))
    ids = np.concatenate(documents) if documents else np.zeros(0, dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum([len(d) for d in documents])])
    jll, lengths = out_of_fold_jll_of_ids(model, ids, indptr, labels, [h % FOLDS for h in hashes])
    return jll, np.array([model.classes.index(label) for label in labels]), lengths


def out_of_fold_jll(model, token_lists, labels, folds):
    """(jll, n): the joint log-likelihood of each document under the model without its
    fold's documents, (n, classes), and each document's length n (its tokens that enter
    the likelihood, as NaiveBayes.jll_and_lengths counts them)."""
    return out_of_fold_jll_of_ids(model, *model.vocabulary.ids(token_lists), labels, folds)


def out_of_fold_jll_of_ids(model, ids, indptr, labels, folds):
    """out_of_fold_jll of documents given as their feature ids (flat, with a CSR row pointer)."""
    rows = np.array([model.classes.index(label) for label in labels], dtype=np.intp)
    return model.event.out_of_fold_jll(model, ids, indptr, rows, np.asarray(folds)), np.diff(indptr)
