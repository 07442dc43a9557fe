"""A cap on a document's evidence (train --max-evidence K): which of its features score it.

Naive Bayes adds every feature's term, so a long message whose words each lean a little one
way, and whose words come again as word pairs and header tokens, piles up more log-odds
than any single piece of it holds. The spam filters score a message on its most telling
tokens only (SpamBayes' 150 "discriminators", Graham's 15); this is that rule for a linear
model, one cap for each class, so that the evidence for one class cannot crowd out the
evidence for another.

Of a document's features j, with t_kj = x_j W_kj its term of jll_k, the lead of j for class
k is

    ℓ_kj = t_kj − max_{l≠k} t_lj

(≥ 0 where k is among the classes j favours most), and the document is scored on the
features that are among the K largest leads ≥ 0 of some class (equals in column order,
which is the vocabulary's token order):

    jll_k = log P(k) + Σ_{j used} t_kj

Of two classes (spam, ham): the K features that point to spam most and the K that point to
ham most (a feature of equal terms, pointing neither way, changes no probability: it is
used only where a side has fewer than K). Every feature leads some class, so a document of
at most K features is scored as without the cap. A part of one class (train --shard) is scored
on every feature: no feature favours it over another class.

Each rule has two forms, the same choice in both: in pure Python for one document (the
one-message path imports no numpy) and over numpy arrays for a batch (`used_cells_of`,
numpy imported in it). This module imports no numpy at module level. The choice is discrete,
so both forms must be given the same floats: the one-document form computes its terms with
nbtext.exactmath's log, as the numpy form does (event_models.Multinomial.weight), not libm's.
"""

import heapq

# cells (a document's feature, in a batch) whose class terms are held at once: a bound on
# the memory a batch of many classes takes, whatever its size (document_blocks)
_CELLS_AT_ONCE = 1 << 20


def used_features(key, terms, cap):
    """The positions (ascending) of the features that score a document under `cap`:
    `terms[i]` the i-th feature's term of each class's jll (at least two classes), `key(i)`
    what orders it among equal leads (the model's token order)."""
    if not terms:
        return []
    n_classes = len(terms[0])
    if n_classes < 2:  # (a part of one class, train --shard: no other class for a feature to favour it over)
        return list(range(len(terms)))
    if n_classes == 2:
        return used_of_two(key, [t[0] - t[1] for t in terms], cap)
    # max over l != k of t_lj: the best term, or the second where k is the best (as used_cells_of)
    leads: list[list[float]] = [[] for _ in range(n_classes)]
    for t in terms:
        first, second = sorted(range(n_classes), key=lambda k, t=t: -t[k])[:2]  # type: ignore[misc]
        for k in range(n_classes):
            leads[k].append(t[k] - t[second if first == k else first])
    used = set()
    for lead in leads:
        used.update(_most(lead, key, cap))
    return sorted(used)


def used_of_two(key, lead, cap):
    """used_features of two classes, of each feature's `lead` t_0 − t_1 (t_1 − t_0 is its
    negation, exactly)."""
    used = set(_most(lead, key, cap))
    used.update(_most([-v for v in lead], key, cap))
    return sorted(used)


def _most(lead, key, cap):
    """The positions of the `cap` largest leads >= 0, equals by `key`."""
    leading = [i for i, v in enumerate(lead) if v >= 0]
    if len(leading) <= cap:
        return leading
    last = heapq.nlargest(cap, [lead[i] for i in leading])[-1]  # the cap-th largest
    above = [i for i in leading if lead[i] > last]
    tied = sorted((i for i in leading if lead[i] == last), key=key)
    return above + tied[: cap - len(above)]


def token_key(token):
    """The order of a one-document feature among equals: its token's, UNK (None) last, as
    its column is."""
    return (token is None, token or "")


def document_blocks(document, n_classes):
    """(start, end) of runs of cells (`document` ascending) that hold whole documents, about
    _CELLS_AT_ONCE / n_classes cells each (a longer document alone): the (cells, classes)
    terms of a batch are made and chosen a run at a time."""
    import numpy as np

    step = max(1, _CELLS_AT_ONCE // n_classes)
    start = 0
    while start < len(document):
        end = min(start + step, len(document))
        if end < len(document) and document[end] == document[end - 1]:  # (a document across the cut)
            cut = int(np.searchsorted(document, document[end], side="left"))
            end = cut if cut > start else int(np.searchsorted(document, document[end], side="right"))
        yield start, end
        start = end


def used_cells_of(document, column, terms, cap):
    """The cells (`document` ascending, `column` ascending within each, `terms` their
    (cells, classes) terms) that score their documents under `cap`, as used_features
    chooses them: a boolean mask. Per class, one sort of the cells that lead for it by
    (document, −lead, column). The caller holds the terms of these cells at once: a batch's
    are made and chosen a run of whole documents at a time (document_blocks)."""
    import numpy as np

    if terms.shape[1] < 2:  # (of one class, every feature: as used_features)
        return np.ones(len(document), dtype=bool)
    n_classes = terms.shape[1]
    order_of_classes = np.argsort(-terms, axis=1, kind="stable")
    rows = np.arange(len(terms))
    best = terms[rows, order_of_classes[:, 0]]
    second = terms[rows, order_of_classes[:, 1]]
    used = np.zeros(len(document), dtype=bool)
    for k in range(n_classes):
        # max over the other classes: the best, or the second where k is the best
        others = np.where(order_of_classes[:, 0] == k, second, best)
        lead = terms[:, k] - others
        leading = np.flatnonzero(lead >= 0)
        order = leading[np.lexsort((column[leading], -lead[leading], document[leading]))]
        ranked = document[order]
        first = np.searchsorted(ranked, ranked, side="left")  # each cell's document's first place
        used[order[np.arange(len(order)) - first < cap]] = True
    return used
