"""The Naive Bayes model: counts in, predictions out.

`NaiveBayes` keeps only the counts of training (nbtext.training) and derives everything
else (vocabulary pruning, the UNK feature, feature values, smoothed log-probabilities, the
prior) when first needed, so a loaded model can be re-smoothed with another λ.
"""

from functools import cached_property

import numpy as np

from nbtext.categorical import categorical_jll, categorical_log_prob, feature_index
from nbtext.errors import NbtextError
from nbtext.event_models import (
    bernoulli_log_prob,
    class_log_prior,
    gaussian_weights,
    linear_weights,
    log_normalize,
    multinomial_log_prob,
)
from nbtext.features import DROPPED, FeatureLookup, count_vector, csr_from_ids, ids_and_indptr
from nbtext.settings import check_alpha, make_tokenizer
from nbtext.sources import loaded
from nbtext.vocabindex import TokenIndex
from nbtext.weighting import idf_weights, transform

UNK = "<UNK>"  # the name shown for the unknown-token feature (it is no token: tokens are \w+)


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
      journal        {content hash: label} of the documents learned, so that `update`
                     counts a message once and can move it to another class
      weighted       (S1, S2): with --features tfidf, the class sums of the feature values
                     Yᵀ X and (gaussian) of their squares Yᵀ (X∘X), shape (n_classes,
                     n_features) each (S2 None otherwise); feature_count then holds the
                     document frequencies that prune the vocabulary and give the idf
    """

    def __init__(
        self, settings, classes, tokens, class_count, feature_count, unk_doc_count=None, journal=None,
        weighted=None,
    ):
        self._journal = journal if journal is not None else {}
        self.weighted = weighted
        self.settings = dict(settings)
        self.classes = list(classes)
        # From a file, the vocabulary comes as a TokenIndex and the counts as CSR rows
        # (data, indices, indptr, n_tokens): both are expanded only when needed.
        self._tokens = tokens if isinstance(tokens, TokenIndex) else list(tokens)
        self._csr = feature_count if isinstance(feature_count, tuple) else None
        if self._csr is None:
            self.feature_count = np.asarray(feature_count, dtype=np.float64)
        self.class_count = np.asarray(class_count, dtype=np.float64)
        self.unk_doc_count = None if unk_doc_count is None else np.asarray(unk_doc_count, dtype=np.float64)
        self.tokenize = make_tokenizer(self.settings["tokenizer"])

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
        check_alpha(alpha, zero_allowed=self.event_model == "categorical")
        return NaiveBayes(
            {**self.settings, "alpha": float(alpha)},
            self.classes, self._tokens, self.class_count, self._csr or self.feature_count,
            self.unk_doc_count, self._journal, self.weighted,
        )

    # --- derived once, on first use -----------------------------------------------
    @cached_property
    def tokens(self):
        """Every token seen in training, sorted."""
        return self._tokens.tokens() if isinstance(self._tokens, TokenIndex) else self._tokens

    @property
    def n_tokens(self):
        return self._tokens.n_tokens if isinstance(self._tokens, TokenIndex) else len(self._tokens)

    @cached_property
    def feature_count(self):
        """(n_classes, n_tokens) counts, expanded from the file's CSR rows."""
        data, indices, indptr, n_tokens = self._csr
        dense = np.zeros((len(self.classes), n_tokens))
        dense[self._csr_rows, indices] = data
        return dense

    @cached_property
    def _csr_rows(self):
        return np.repeat(np.arange(len(self.classes)), np.diff(self._csr[2]))

    def _sum_by(self, rows, weights, n):
        return np.bincount(rows, weights=weights, minlength=n).astype(np.float64)

    @cached_property
    def _token_totals(self):
        """Each token's count over all classes, shape (n_tokens,)."""
        if self._csr is None:
            return self.feature_count.sum(axis=0)
        data, indices, _, n_tokens = self._csr
        return self._sum_by(indices, data, n_tokens)

    @cached_property
    def _class_totals(self):
        """Each class's count over all tokens, shape (n_classes,)."""
        if self._csr is None:
            return self.feature_count.sum(axis=1)
        return self._sum_by(self._csr_rows, self._csr[0], len(self.classes))

    @cached_property
    def journal(self):
        """{content hash: label}; decoded from the file's arrays only when asked for."""
        if isinstance(self._journal, dict):
            return self._journal
        hashes, labels = self._journal  # (n, 16) bytes, (n,) class indices
        blob = hashes.tobytes()
        return {blob[16 * i : 16 * i + 16]: self.classes[k] for i, k in enumerate(labels.tolist())}

    @cached_property
    def kept_columns(self):
        """Indices into `tokens` of the features kept after --min-count and --max-features."""
        totals = self._token_totals
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

    @property
    def n_features(self):
        return len(self.kept_columns) + self.has_unk

    @cached_property
    def _kept_totals(self):
        """Σ over the kept tokens of each class's counts, shape (n_classes,)."""
        kept = np.zeros(self.n_tokens)
        kept[self.kept_columns] = 1.0
        if self._csr is None:
            return self.feature_count @ kept
        data, indices, _, _ = self._csr
        return self._sum_by(self._csr_rows, data * kept[indices], len(self.classes))

    @cached_property
    def _unk_count(self):
        """The UNK feature's count per class: the pruned tokens' counts added up, or (bernoulli)
        the documents holding a pruned token."""
        if self.event_model == "bernoulli":
            return self.unk_doc_count if self.unk_doc_count is not None else np.zeros(len(self.classes))
        return self._class_totals - self._kept_totals

    def feature_counts(self, columns):
        """Counts of the given feature columns (the UNK column included), (n_classes, len(columns))."""
        columns = np.asarray(columns)
        out = np.empty((len(self.classes), len(columns)))
        is_unk = columns == len(self.kept_columns)
        wanted = self.kept_columns[columns[~is_unk]]
        if self._csr is None or "feature_count" in self.__dict__:
            out[:, ~is_unk] = self.feature_count[:, wanted]
        else:  # a few columns from the CSR rows (sorted within a row), without expanding them
            data, indices, indptr, _ = self._csr
            for k, (start, end) in enumerate(zip(indptr[:-1], indptr[1:])):
                at = start + np.searchsorted(indices[start:end], wanted)
                hit = at < end
                hit[hit] = indices[at[hit]] == wanted[hit]
                values = np.zeros(len(wanted))
                values[hit] = data[at[hit]]
                out[k, ~is_unk] = values
        out[:, is_unk] = self._unk_count[:, None]
        return out

    @cached_property
    def _kept_position(self):
        """token index -> feature column: the kept tokens' columns, else UNK (or DROPPED)."""
        position = np.full(self.n_tokens + 1, len(self.kept_columns) if self.has_unk else DROPPED)
        position[self.kept_columns] = np.arange(len(self.kept_columns))
        return position  # the extra last entry serves tokens not in the vocabulary (index -1)

    def _ids_of_one_document(self, tokens):
        """Feature ids of one document's tokens: by the file's token index when the
        vocabulary dict has not been built (one message: no dict of the vocabulary)."""
        if not isinstance(self._tokens, TokenIndex) or "lookup" in self.__dict__:
            return ids_and_indptr([tokens], self.lookup.__getitem__)[0]
        if not tokens:
            return np.zeros(0, dtype=np.int64)
        unique, inverse = np.unique(np.array(tokens, dtype=object), return_inverse=True)
        ids = self._kept_position[self._tokens.find(list(unique))][inverse]  # not found: -1, the last entry
        return ids[ids != DROPPED]

    @cached_property
    def counts(self):
        """The counts of the features, (n_classes, n_features), the UNK column included
        (with tf-idf features, the class sums of the feature values)."""
        if self.weighted is not None:
            return self.weighted[0]
        return self.feature_counts(np.arange(self.n_features))

    @property
    def features(self):
        return self.settings.get("features", "counts")

    @cached_property
    def idf(self):
        """idf_j of the kept tokens, from their document frequencies (tf-idf features)."""
        return idf_weights(self._token_totals[self.kept_columns], self.class_count.sum())

    def feature_values(self, ids, indptr):
        """The documents' feature values (counts, presence or tf-idf) as a CSR matrix."""
        X = csr_from_ids(ids, indptr, self.n_features, self.binary)
        return transform(X, self.settings, self.idf) if self.features == "tfidf" else X

    @cached_property
    def _weights(self):
        """(W, b, W2): jll = X Wᵀ − ½ (X∘X) W2ᵀ + b (+ log prior); W2 is None but for gaussian."""
        if self.event_model == "gaussian":
            return gaussian_weights(self.class_count, *self.weighted)
        W, b = linear_weights(self.event_model, self.counts, self.class_count, self.alpha,
                              self.settings.get("weight_norm", False))
        return W, b, None

    @cached_property
    def _prior_term(self):
        """log P(k) in the joint log-likelihood; complement NB, as Rennie et al., has none."""
        return np.zeros(len(self.classes)) if self.event_model == "complement" else self.class_log_prior

    @cached_property
    def class_log_prior(self):
        """log P(k), shape (n_classes,)."""
        return class_log_prior(self.class_count, self.alpha, self.settings["prior"])

    @cached_property
    def _categorical(self):
        """(log P(value | class) per token, per-feature log-probability of an unseen value)."""
        columns = self.settings["tokenizer"]["columns"]
        return categorical_log_prob(
            self.counts, self.class_count, self.alpha, feature_index(self.vocabulary, columns), len(columns)
        )

    @property
    def feature_log_prob(self):
        """log θ_kj, shape (n_classes, n_features)."""
        if self.event_model == "categorical":
            return self._categorical[0]
        if self.event_model == "bernoulli":
            return bernoulli_log_prob(self.counts, self.class_count, self.alpha)[0]
        return multinomial_log_prob(self.counts, self.alpha)

    @property
    def binary(self):
        """Whether a document's features are token presence (0/1) rather than counts."""
        return self.event_model == "bernoulli" or self.features == "binary"

    # --- prediction -----------------------------------------------------------------
    def joint_log_likelihood(self, documents):
        """log P(k) + log P(x | k) for each document, shape (n_documents, n_classes)."""
        return self.joint_log_likelihood_of_tokens(map(self.tokenize, documents))

    def joint_log_likelihood_of_tokens(self, token_lists):
        """As joint_log_likelihood, for documents already tokenized by `self.tokenize`."""
        token_lists = list(token_lists)
        if self.event_model == "categorical":
            return self._categorical_jll(token_lists) + self.class_log_prior
        if len(token_lists) == 1 and self.event_model == "multinomial" and self.features == "counts":
            return self._one_multinomial_document(self._ids_of_one_document(token_lists[0]))[None, :] + self._prior_term
        ids, indptr = ids_and_indptr(token_lists, self.lookup.__getitem__)
        if len(indptr) == 2 and self.features != "tfidf" and self.event_model != "gaussian":
            weights, bias, _ = self._weights  # one document: numpy only, scipy is never imported
            jll = (weights @ count_vector(ids, weights.shape[1], self.binary) + bias)[None, :]
        else:
            weights, bias, squared = self._weights
            X = self.feature_values(ids, indptr)
            jll = np.asarray(X @ weights.T) + bias
            if squared is not None:
                jll -= 0.5 * np.asarray(X.multiply(X) @ squared.T)
        return jll + self._prior_term

    def _categorical_jll(self, rows):
        columns = self.settings["tokenizer"]["columns"]
        position = {name: j for j, name in enumerate(columns)}
        ids = [[self.lookup[t] for t in row if t in self.lookup] for row in rows]
        unseen = [[position[t.split("=", 1)[0]] for t in row if t not in self.lookup] for row in rows]
        if self.alpha == 0 and any(unseen):
            import warnings

            warnings.warn(
                "with --alpha 0, values never seen in training are skipped "
                f"({sum(map(len, unseen))} in {sum(1 for u in unseen if u)} rows)", stacklevel=2,
            )
        return categorical_jll(ids, unseen, *self._categorical)

    def _one_multinomial_document(self, ids):
        """Σ_j x_j log θ_kj over the document's own columns only: a pipeline that classifies
        one message never smooths the whole (n_classes, n_features) table."""
        columns, x = np.unique(ids, return_counts=True)
        totals = self._kept_totals + (self._unk_count if self.has_unk else 0.0)
        log_theta = multinomial_log_prob(self.feature_counts(columns), self.alpha, totals, self.n_features)
        return log_theta @ x

    def score(self, documents, on_error=None, explain=0):
        """(documents kept, log P(k | document) of each, explanations or None) for a batch
        of Documents; those that cannot be read or parsed go to `on_error` (see tokenized)."""
        kept, token_lists = tokenized(self.tokenize, documents, on_error)
        if not kept:
            return kept, np.zeros((0, len(self.classes))), None
        log_proba = log_normalize(self.joint_log_likelihood_of_tokens(token_lists))
        explanations = None
        if explain:
            explanations = [self.explain(t, row, explain) for t, row in zip(token_lists, log_proba)]
        return kept, log_proba, explanations

    def summary(self, top=0):
        """What `nbtext info` shows: settings, classes with their counts, vocabulary, and
        with `top`, the tokens that most indicate each class."""
        totals = self._class_totals
        info = {
            "event_model": self.event_model,
            "settings": self.settings,
            "classes": {
                label: {"documents": int(n), "count": float(t)}
                for label, n, t in zip(self.classes, self.class_count, totals)
            },
            "documents": int(self.class_count.sum()),
            "tokens_seen": len(self.tokens),
            "vocabulary": len(self.kept_columns),
            "unk": self.has_unk,
            **getattr(self, "file_info", {}),
        }
        if self.has_unk and self.event_model == "multinomial" and totals.sum():
            info["unk_share"] = float(self._unk_count.sum() / totals.sum())
        if top:
            info["top"] = self.indicative(top)
        return info

    def indicative(self, n):
        """{class: [(token, score)]}: the n tokens with the largest log θ_jk − log θ_j,¬k,
        θ_j,¬k being the token's probability in all the other classes pooled."""
        counts = self.counts[:, : len(self.kept_columns)]  # UNK is no token: left out
        own = self.feature_log_prob[:, : len(self.kept_columns)]
        result = {}
        for k, label in enumerate(self.classes):
            rest = np.delete(self.counts, k, axis=0).sum(axis=0, keepdims=True)
            rest_class_count = np.delete(self.class_count, k).sum(keepdims=True)
            if self.event_model == "bernoulli":
                others = bernoulli_log_prob(rest, rest_class_count, self.alpha)[0][0]
            elif self.event_model == "categorical":
                columns = self.settings["tokenizer"]["columns"]
                others = categorical_log_prob(rest, rest_class_count, self.alpha,
                                              feature_index(self.vocabulary, columns), len(columns))[0][0]
            else:
                others = multinomial_log_prob(rest, self.alpha)[0]
            with np.errstate(invalid="ignore"):  # λ = 0: −inf − −inf
                score = own[k] - others[: len(self.kept_columns)]
            score = np.where(np.isnan(score), -np.inf, score)
            best = np.argsort(-score, kind="stable")[:n]
            result[label] = [(self.vocabulary[j], float(score[j])) for j in best if counts[k, j] > 0]
        return result

    def explain(self, tokens, log_proba, n):
        """The n features of a document that pushed the winning class over the runner-up
        most: [(feature, x_j · (W_winner,j − W_runner-up,j))], largest first. For the
        multinomial model W = log θ, so this is count × the log-odds each token adds."""
        if len(self.classes) < 2:
            return []
        runner_up, winner = np.argsort(log_proba, kind="stable")[-2:]
        ids, indptr = ids_and_indptr([tokens], self.lookup.__getitem__)
        if self.event_model == "categorical":
            columns, x = np.unique(ids, return_counts=True)
            weights, squared = self.feature_log_prob, None
        else:
            X = self.feature_values(ids, indptr)
            X.sum_duplicates()
            columns, x = X.indices, X.data
            weights, _, squared = self._weights
        with np.errstate(invalid="ignore"):  # λ = 0 (categorical): −inf − −inf
            contribution = x * (weights[winner, columns] - weights[runner_up, columns])
            if squared is not None:  # gaussian: the quadratic term too
                contribution -= 0.5 * x**2 * (squared[winner, columns] - squared[runner_up, columns])
        top = np.argsort(-contribution, kind="stable")[:n]
        return [(self.vocabulary[columns[i]], float(contribution[i])) for i in top]

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


def tokenized(tokenize, batch, on_error=None):
    """(documents, token lists) of a batch, leaving out documents that cannot be read or
    parsed: each is passed to `on_error(document, message)`, or raises without one."""
    kept, token_lists = [], []
    for doc in map(loaded, batch):
        try:
            if doc.error is not None:
                raise NbtextError(f"cannot read it ({doc.error})")
            token_lists.append(tokenize(doc.data))
            kept.append(doc)
        except NbtextError as e:
            if on_error is None:
                raise NbtextError(f"{doc.name}: {e}") from None
            on_error(doc, str(e))
    return kept, token_lists
