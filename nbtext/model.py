"""The Naive Bayes model: counts in, predictions out.

`train()` counts a labelled corpus in batches; `NaiveBayes` keeps only those counts and
derives everything else (vocabulary pruning, the UNK feature, smoothed log-probabilities,
the prior) when first needed, so a loaded model can be re-smoothed with another λ.
"""

import math
from functools import cached_property

import numpy as np

from nbtext.counting import CountTable
from nbtext.errors import NbtextError
from nbtext.event_models import (
    EVENT_MODELS,
    PRIORS,
    bernoulli_log_prob,
    class_log_prior,
    linear_weights,
    log_normalize,
    multinomial_log_prob,
)
from nbtext.features import DROPPED, FeatureLookup, count_vector, csr_from_ids, ids_and_indptr
from nbtext.tokenize import Tokenizer

UNKNOWN_MODES = ("unk", "ignore")
UNK = "<UNK>"  # the name shown for the unknown-token feature (it is no token: tokens are \w+)
DEFAULT_BATCH = 2000


def check_settings(event_model, alpha, prior, min_count, max_features, unknown, ngrams):
    """Refuse bad settings with a message that names the option to change."""
    if event_model not in EVENT_MODELS:
        raise NbtextError(f"unknown model {event_model!r} (choose from {', '.join(EVENT_MODELS)})")
    if prior not in PRIORS:
        raise NbtextError(f"unknown prior {prior!r} (choose from {', '.join(PRIORS)})")
    if unknown not in UNKNOWN_MODES:
        raise NbtextError(f"unknown --unknown mode {unknown!r} (choose from unk, ignore)")
    check_alpha(alpha)
    if not isinstance(min_count, int) or min_count < 1:
        raise NbtextError(f"--min-count must be a whole number >= 1, not {min_count!r}")
    if max_features is not None and (not isinstance(max_features, int) or max_features < 1):
        raise NbtextError(f"--max-features must be a whole number >= 1, not {max_features!r}")
    if not isinstance(ngrams, int) or ngrams < 1:
        raise NbtextError(f"--ngrams must be a whole number >= 1, not {ngrams!r}")


def check_alpha(alpha):
    if not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha <= 0:
        raise NbtextError(
            f"--alpha must be a number > 0, not {alpha!r} (1 is Laplace smoothing, below 1 Lidstone)"
        )


class NaiveBayes:
    """A trained Naive Bayes text classifier.

    Stored state (the sufficient statistics, never anything derived):
      classes        list of labels, sorted
      tokens         every token seen in training, sorted (pruned ones included)
      class_count    (n_classes,) documents per class
      feature_count  (n_classes, n_tokens) occurrences (multinomial) or documents
                     containing the token (bernoulli)
      unk_doc_count  (n_classes,) documents with at least one pruned token (bernoulli
                     with an UNK feature only: it cannot be derived from per-token counts)
    """

    def __init__(self, settings, classes, tokens, class_count, feature_count, unk_doc_count=None):
        self.settings = dict(settings)
        self.classes = list(classes)
        self.tokens = list(tokens)
        self.class_count = np.asarray(class_count, dtype=np.float64)
        self.feature_count = np.asarray(feature_count, dtype=np.float64)
        self.unk_doc_count = None if unk_doc_count is None else np.asarray(unk_doc_count, dtype=np.float64)
        self.tokenize = Tokenizer.from_settings(self.settings["tokenizer"])

    # --- settings -----------------------------------------------------------------
    @property
    def event_model(self):
        return self.settings["event_model"]

    @property
    def alpha(self):
        return self.settings["alpha"]

    @property
    def has_unk(self):
        return self.settings["unknown"] == "unk"

    def with_alpha(self, alpha):
        """The same counts smoothed with another λ (no retraining)."""
        check_alpha(alpha)
        return NaiveBayes(
            {**self.settings, "alpha": float(alpha)},
            self.classes, self.tokens, self.class_count, self.feature_count, self.unk_doc_count,
        )

    # --- derived once, on first use -----------------------------------------------
    @cached_property
    def kept_columns(self):
        """Indices into `tokens` of the features kept after --min-count and --max-features."""
        totals = self.feature_count.sum(axis=0)
        kept = np.flatnonzero(totals >= self.settings["min_count"])
        max_features = self.settings["max_features"]
        if max_features is not None and len(kept) > max_features:
            most_frequent = np.argsort(-totals[kept], kind="stable")[:max_features]
            kept = np.sort(kept[most_frequent])
        return kept

    @cached_property
    def vocabulary(self):
        """The feature names in column order: the kept tokens, then UNK if present."""
        names = [self.tokens[i] for i in self.kept_columns.tolist()]
        return names + [UNK] if self.has_unk else names

    @cached_property
    def lookup(self):
        """token -> feature column; pruned and unseen tokens -> the UNK column, or dropped."""
        n_kept = len(self.kept_columns)
        missing = n_kept if self.has_unk else DROPPED
        return FeatureLookup(zip(self.vocabulary[:n_kept], range(n_kept)), missing)

    @cached_property
    def counts(self):
        """The counts of the features, (n_classes, n_features), the UNK column included."""
        kept_counts = self.feature_count[:, self.kept_columns]
        if not self.has_unk:
            return kept_counts
        if self.event_model == "bernoulli":
            unk = self.unk_doc_count if self.unk_doc_count is not None else np.zeros(len(self.classes))
        else:
            unk = self.feature_count.sum(axis=1) - kept_counts.sum(axis=1)  # pruned tokens' counts
        return np.column_stack([kept_counts, unk])

    @cached_property
    def _weights(self):
        return linear_weights(self.event_model, self.counts, self.class_count, self.alpha)

    @cached_property
    def class_log_prior(self):
        """log P(k), shape (n_classes,)."""
        return class_log_prior(self.class_count, self.alpha, self.settings["prior"])

    @property
    def feature_log_prob(self):
        """log θ_kj, shape (n_classes, n_features)."""
        if self.event_model == "bernoulli":
            return bernoulli_log_prob(self.counts, self.class_count, self.alpha)[0]
        return multinomial_log_prob(self.counts, self.alpha)

    @property
    def binary(self):
        return self.event_model == "bernoulli"

    # --- prediction -----------------------------------------------------------------
    def joint_log_likelihood(self, documents):
        """log P(k) + log P(x | k) for each document, shape (n_documents, n_classes)."""
        weights, bias = self._weights
        ids, indptr = ids_and_indptr(map(self.tokenize, documents), self.lookup.__getitem__)
        n_features = weights.shape[1]
        if len(indptr) == 2:  # one document: numpy only, scipy is never imported
            x = count_vector(ids, n_features, self.binary)
            jll = (weights @ x)[None, :]
        else:
            jll = np.asarray(csr_from_ids(ids, indptr, n_features, self.binary) @ weights.T)
        return jll + bias + self.class_log_prior

    def predict_log_proba(self, documents):
        """log P(k | document), shape (n_documents, n_classes)."""
        return log_normalize(self.joint_log_likelihood(documents))

    def predict_proba(self, documents):
        """P(k | document), shape (n_documents, n_classes); rows sum to 1."""
        return np.exp(self.predict_log_proba(documents))

    def predict(self, documents):
        """The most probable label of each document."""
        jll = self.joint_log_likelihood(documents)
        return [self.classes[k] for k in jll.argmax(axis=1).tolist()]

    # --- files ------------------------------------------------------------------------
    def save(self, path):
        """Write the model atomically to `path` (see nbtext.modelfile for the format)."""
        from nbtext.modelfile import save

        save(self, path)


def train(
    documents,
    labels,
    *,
    model="multinomial",
    alpha=1.0,
    prior="smoothed",
    min_count=2,
    max_features=None,
    ngrams=1,
    unknown="unk",
):
    """Train from parallel sequences of documents (str or bytes) and labels.

    >>> clf = train(["cheap pills now", "lunch at noon"], ["spam", "ham"], min_count=1)
    >>> clf.predict(["cheap lunch pills"])
    ['spam']
    """
    documents = list(documents)
    labels = list(labels)
    if len(documents) != len(labels):
        raise NbtextError(f"{len(documents)} documents but {len(labels)} labels")
    return train_corpus(
        lambda: _batches(zip(labels, documents)),
        model=model, alpha=alpha, prior=prior, min_count=min_count,
        max_features=max_features, ngrams=ngrams, unknown=unknown,
    )


def _batches(pairs, size=DEFAULT_BATCH):
    """Group (label, document) pairs into lists of at most `size`."""
    batch = []
    for pair in pairs:
        batch.append(pair)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def train_corpus(
    batches,
    *,
    model="multinomial",
    alpha=1.0,
    prior="smoothed",
    min_count=2,
    max_features=None,
    ngrams=1,
    unknown="unk",
):
    """Train from `batches()`, a callable returning an iterator of [(label, document), ...].

    The corpus is read once; a Bernoulli model with an UNK feature reads it a second
    time, since which documents contain a pruned token is known only after counting.
    """
    check_settings(model, alpha, prior, min_count, max_features, unknown, ngrams)
    tokenizer = Tokenizer(ngrams)
    table = CountTable(binary=model == "bernoulli")
    for batch in batches():
        table.add([tokenizer(doc) for _, doc in batch], [label for label, _ in batch])
    classes, tokens, class_count, feature_count = table.sorted_view()
    if len(classes) < 2:
        raise NbtextError(
            f"need at least two classes to train, got {len(classes)}"
            + (f" ({classes[0]!r})" if classes else "")
        )
    settings = {
        "event_model": model,
        "alpha": float(alpha),
        "prior": prior,
        "min_count": min_count,
        "max_features": max_features,
        "unknown": unknown,
        "tokenizer": tokenizer.settings(),
    }
    nb = NaiveBayes(settings, classes, tokens, class_count, feature_count)
    if not len(nb.kept_columns) and not nb.has_unk:
        raise NbtextError(
            f"after pruning, no tokens remain (try a lower --min-count than {min_count})"
        )
    if nb.binary and nb.has_unk and len(nb.kept_columns) < len(tokens):
        unk_doc_count = _documents_with_unk(nb, batches())
        nb = NaiveBayes(settings, classes, tokens, class_count, feature_count, unk_doc_count)
    return nb


def _documents_with_unk(nb, batches):
    """Per class, how many documents contain at least one token outside the vocabulary."""
    unk_column = len(nb.kept_columns)
    row = {label: k for k, label in enumerate(nb.classes)}
    unk_doc_count = np.zeros(len(nb.classes))
    for batch in batches:
        ids, indptr = ids_and_indptr((nb.tokenize(doc) for _, doc in batch), nb.lookup.__getitem__)
        doc_of_id = np.repeat(np.arange(len(batch)), np.diff(indptr))
        has_unk = np.zeros(len(batch), dtype=bool)
        has_unk[doc_of_id[ids == unk_column]] = True
        rows = np.array([row[label] for label, _ in batch], dtype=np.intp)
        unk_doc_count += np.bincount(rows[has_unk], minlength=len(nb.classes))
    return unk_doc_count
