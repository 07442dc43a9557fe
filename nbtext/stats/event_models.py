"""Event models: each one object that owns its math.

One class per event model, in one registry (EVENT_MODELS); nothing outside this module
compares event-model names. Each says:

- what it declares, in one record (`flags`, a Flags: what it accepts, its defaults, what it
  leaves out), which every other module reads as `EVENT_MODELS[name].flags.<flag>`;
- the statistics it reads (nbtext.stats.sufficient.Statistics: N_k, B_kj, their squares when
  its flags say `needs_squares`, UNK's count of documents when `unk_from_documents`);
- its formulas in numpy (log θ, its weights: static methods, of arrays) and its joint
  log-likelihood over a batch of documents (`jll_and_lengths`);
- its out-of-fold joint log-likelihoods, which calibration fits a temperature on
  (`out_of_fold_jll`; flags' `calibrates` False: it is never calibrated);
- its explanation terms (`explanation_terms`, what --explain lists);
- its form for one document in pure Python (`one_document`: its own class, whose of_record
  makes one of the model file's one_document record, nbtext.classifier.purescore; its
  joint_log_likelihood and explanation), or None: the numpy path scores it;
- the form the online protocol scores with (`online`: its own class, whose of_counts makes one
  of the counts so far, nbtext.jobs.online), or None: no online run;
- its one_document record after a document is learned or forgotten in place (`record_after`,
  when its flags say `follows_changes`: nbtext.jobs.learnone).

The batch hooks take the model (nbtext.classifier.model.NaiveBayes) for its statistics, its
vocabulary and what it derives once from them (the linear form, the prior term); its
formulas (static methods) take arrays alone. The forms of one document are instances of the
model's class holding their parameters (of_record, of_counts), read as lists, without numpy.
The text models are linear (LinearModel):

    jll(x, k) = log P(k) + Σ_j x_j W_kj + b_k          (gaussian adds −½ Σ_j x_j² W2_kj)

so prediction is a single sparse product; categorical NB (table rows) gathers its own.
This module imports no numpy at module level (each numpy hook imports it): a model file's
header is checked, and one message scored, without it.

Adding an event model: its class here (its flags, its formulas, its forms), its line in the
registry below and in nbtext.choices.EVENT_MODELS (the command line's choices), and its tests
(tests/test_structure.py checks that its forms are its own).
"""

from __future__ import annotations

import math
from functools import cached_property, lru_cache

from nbtext import choices
from nbtext.errors import NbtextError
from nbtext.exactmath import scalar_log
from nbtext.labels import positive_class
from nbtext.stats import changes

TYPE_CHECKING = False  # (typing is not imported on the one-message path; the type checker reads the block)
if TYPE_CHECKING:
    from typing import Any

# exactmath's log of one number, remembered: a document's counts repeat (most are small
# whole numbers), and each costs some 20 Python float operations
_exact_log = lru_cache(maxsize=1 << 14)(scalar_log)


def feature_defaults(features, tf="raw", idf=True, length_norm=True, weight_norm=False):
    """An event model's default feature values (nbtext.features.weighting; the settings' key order)."""
    return {"features": features, "tf": tf, "idf": idf, "length_norm": length_norm, "weight_norm": weight_norm}


_COUNTS = feature_defaults("counts")


class Flags:
    """What an event model declares, in one record (its `flags`): what it accepts, its
    defaults, the statistics it reads and what it leaves out. Every module reads an event
    model's flags here, as `EVENT_MODELS[name].flags.<flag>`; a model gives only those that
    differ from the defaults below."""

    __slots__ = (
        "default_features",
        "feature_kinds",
        "feature_kind_error",
        "zero_alpha",
        "prior_in_jll",
        "mail_alpha",
        "smooths",
        "normalizes_weights",
        "min_classes",
        "max_classes",
        "reads_unk",
        "count_unit",
        "reports_unk_share",
        "unk_from_documents",
        "needs_squares",
        "calibrates",
        "tone_margin",
        "caps_evidence",
        "presence",
        "follows_changes",
        "record_values",
    )

    def __init__(
        self,
        *,
        default_features=_COUNTS,
        feature_kinds=choices.FEATURES,
        feature_kind_error=None,
        zero_alpha=False,
        prior_in_jll=True,
        mail_alpha=False,
        smooths=True,
        normalizes_weights=False,
        min_classes=2,
        max_classes=None,
        reads_unk=True,
        count_unit="tokens",
        reports_unk_share=False,
        unk_from_documents=False,
        needs_squares=False,
        calibrates=True,
        tone_margin=choices.DEFAULT_TONE_MARGIN,
        caps_evidence=False,
        presence=False,
        follows_changes=False,
        record_values=None,
    ):
        # The default feature values (nbtext.features.weighting), or None for a model of table rows.
        self.default_features: dict[str, Any] | None = default_features
        self.feature_kinds: tuple[str, ...] = feature_kinds  # the --features it accepts
        self.feature_kind_error: str | None = feature_kind_error  # the message when another is asked for
        self.zero_alpha = zero_alpha  # whether λ = 0 is allowed
        self.prior_in_jll = prior_in_jll  # whether log P(k) enters the joint log-likelihood
        self.mail_alpha = mail_alpha  # whether λ defaults to 0.1 when most training documents are e-mail
        self.smooths = smooths  # whether λ enters at all
        self.normalizes_weights = normalizes_weights  # whether it reads --weight-norm
        self.min_classes: int = min_classes
        self.max_classes: int | None = max_classes  # the most classes it models (None: any number)
        # whether an UNK feature enters its jll (else pruned and unseen tokens are left out)
        self.reads_unk = reads_unk
        self.count_unit: str = count_unit  # what `nbtext info` says a class's count is of
        self.reports_unk_share = reports_unk_share  # `nbtext info` gives UNK's share of the training tokens
        # Its statistics: UNK's count is the documents with a pruned token (else the pruned
        # tokens' counts); feature_squares held (training sums the squares of the values).
        self.unk_from_documents = unk_from_documents
        self.needs_squares = needs_squares
        self.calibrates = calibrates  # whether a temperature is fitted to it (out_of_fold_jll)
        self.tone_margin: float = tone_margin  # --learn tone's margin by default, on its jll's scale
        self.caps_evidence = caps_evidence  # whether it scores under train --max-evidence (nbtext.stats.evidence)
        # Its form of one document (when it has one): x_j = 1 for a feature the document
        # holds (its features are presence); whether its record follows learned and forgotten
        # documents (pending records); what record_of adds to the model file's one_document
        # record, {key: "counts" (a value per class, >= 0) or "log" (<= 0)}: what the model
        # file's schema checks (nbtext.modelfile.schema.check_one_document).
        self.presence = presence
        self.follows_changes = follows_changes
        self.record_values: dict[str, str] = record_values or {}

    @property
    def of_table_rows(self):
        """Whether it models table rows (categorical NB), not text: it has no feature values."""
        return self.default_features is None


class _ItsOwnClass:
    """A class attribute that reads as the class it is read from: an event model whose form
    (of one document, online) is its own class says so with ITS_OWN_CLASS."""

    def __get__(self, instance, owner):
        return owner


ITS_OWN_CLASS = _ItsOwnClass()


# --- the event models -------------------------------------------------------------------------
class EventModel:
    """What every event model says (see the module's docstring)."""

    name: str = None  # type: ignore[assignment]  # (each event model's own)
    flags = Flags()  # what it declares (each event model's own record)
    # Its form of one document in pure Python (ITS_OWN_CLASS: the model's class itself, whose
    # of_record makes one of a model file's record), or None: the numpy path scores it.
    one_document: Any = None
    online: Any = None  # the form the online protocol scores with (ITS_OWN_CLASS: of_counts), or None

    def log_theta(self, stats):
        """log θ_kj, shape (n_classes, n_features): what `nbtext info --top` weighs."""
        raise NotImplementedError

    def prior_term(self, stats):
        """log P(k) as it enters the joint log-likelihood (0 for a model without one)."""
        import numpy as np

        from nbtext.stats.prior import class_log_prior

        if not self.flags.prior_in_jll:
            return np.zeros(stats.n_classes)
        return np.array(class_log_prior(stats.class_count.tolist(), stats.alpha, stats.settings["prior"]))

    def check_classes(self, classes):
        """Refuse more classes than it models, in one line (training, eval --online)."""
        if self.flags.max_classes is not None and len(classes) > self.flags.max_classes:
            raise NbtextError(
                f"--model {self.name} takes {self.flags.max_classes} classes at most, got {len(classes)}: "
                f"{', '.join(map(repr, classes))}"
            )

    def derive(self, model):
        """Derive now what its batch hooks derive once from the model (before workers fork)."""

    def jll_and_lengths(self, model, token_lists):
        """(joint log-likelihoods (n_documents, n_classes), lengths) of tokenized documents: a
        document's length is the number of its tokens that enter its likelihood (what a
        calibrated temperature grows with), or None for a model never calibrated."""
        raise NotImplementedError

    def jll_of_ids(self, model, ids, indptr):
        """The joint log-likelihoods (n_documents, n_classes) of documents given as their
        feature ids (flat, with a CSR row pointer), under the model itself."""
        raise NotImplementedError

    def explanation_terms(self, model, ids, indptr, winner, runner_up):
        """(columns, their terms of jll_winner − jll_runner-up) of one document's feature ids."""
        raise NotImplementedError

    def out_of_fold_jll(self, model, ids, indptr, rows, folds):
        """The jll of each document (feature ids, CSR row pointer; its class row) under the
        model without its fold's documents (a fold view: the statistics minus theirs)."""
        raise NotImplementedError(f"a {self.name} model is not calibrated")

    # --- one document in pure Python (nbtext.classifier.purescore, nbtext.jobs.online) ---------
    # An instance made by of_record or of_counts holds the parameters its form reads, as lists;
    # the registry's holds none (its numpy hooks above take the model). `features` are
    # [(token, x_j, the feature's counts per class)]: x_j the document's count of feature j,
    # or 1 with presence features (flags.presence: the model's own are); UNK's token is None.

    @classmethod
    def _of(cls, **parameters):
        """An instance of this event model holding `parameters`: its form of one document."""
        form = cls()
        form.__dict__.update(parameters)
        return form

    @classmethod
    def of_record(cls, record, class_count, alpha, classes):
        """Its form of one document of a model file's one_document record (KeyError: not this
        model's record), the class counts, λ and the classes."""
        raise NotImplementedError

    @classmethod
    def of_counts(cls, totals, n_features, alpha, class_count, classes):
        """Its form of counts as the online protocol keeps them (nbtext.jobs.online)."""
        raise NotImplementedError

    @staticmethod
    def record_of(model):
        """Its part of the one_document record a model file holds (numpy side, from the model)."""
        raise NotImplementedError

    def joint_log_likelihood(self, log_prior, features, max_evidence=None):
        """jll_k for each class of one document's features (log_prior: log P(k) of each class)."""
        raise NotImplementedError

    @staticmethod
    def record_after(record, deltas, counts_before, min_count):
        """Its one_document record after tokens' counts change by `deltas` ({token: what is
        added to its count in each class}: documents learned or forgotten), `counts_before(token)`
        giving a token's counts before them: of a model whose flags say `follows_changes`."""
        raise NotImplementedError

    def explanation(self, features, winner, runner_up, max_evidence=None):
        """[(token, its term of jll_winner − jll_runner-up)] of one document's features that
        score it (UNK left out)."""
        raise NotImplementedError


class LinearModel(EventModel):
    """An event model whose jll is the linear form (W, b, W2) of its statistics; the base is
    the multinomial's log θ."""

    def log_theta(self, stats):
        return Multinomial.log_theta_of(stats.feature_sums, stats.alpha)

    def derive(self, model):
        model.linear_form  # noqa: B018

    def linear_form(self, stats):
        """(W, b, W2) with jll = X Wᵀ − ½ (X∘X) W2ᵀ + b (+ log prior); W2 None but for gaussian."""
        import numpy as np

        return self.log_theta(stats), np.zeros(stats.n_classes), None

    def jll_and_lengths(self, model, token_lists):
        import numpy as np

        from nbtext.features.matrix import scores_of_counts
        from nbtext.features.weighting import is_tfidf
        from nbtext.stats.sufficient import linear_scores

        ids, indptr = model.vocabulary.ids(token_lists)
        weights, bias, squared = model.linear_form
        if squared is None and not model.binary and not is_tfidf(model.settings):
            jll = scores_of_counts(ids, indptr, weights) + bias  # counts: numpy only, one document or many
        elif len(indptr) == 2 and squared is None and not is_tfidf(model.settings):
            # one document of presence: numpy only (scipy is never imported), its columns added
            # as the CSR product of a batch adds them (not a BLAS product: its order varies with the CPU)
            columns = np.unique(ids)
            jll = scores_of_counts(columns, np.array([0, len(columns)]), weights) + bias
        else:
            jll = linear_scores(model.feature_values(ids, indptr), model.linear_form)
        return jll + model.prior_term, np.diff(indptr)

    def jll_of_ids(self, model, ids, indptr):
        from nbtext.stats.sufficient import linear_scores

        return linear_scores(model.feature_values(ids, indptr), model.linear_form) + model.prior_term

    def explanation_terms(self, model, ids, indptr, winner, runner_up):
        import numpy as np

        X = model.feature_values(ids, indptr)
        X.sum_duplicates()
        columns, x = X.indices, X.data
        weights, _, squared = model.linear_form
        with np.errstate(invalid="ignore"):
            contribution = x * (weights[winner, columns] - weights[runner_up, columns])
            if squared is not None:  # gaussian: the quadratic term too
                contribution -= 0.5 * x**2 * (squared[winner, columns] - squared[runner_up, columns])
        return columns, contribution

    def out_of_fold_jll(self, model, ids, indptr, rows, folds):
        import numpy as np

        from nbtext.features.matrix import one_hot
        from nbtext.stats.sufficient import linear_scores

        jll = np.zeros((len(rows), len(model.classes)))
        X = model.feature_values(ids, indptr)
        X.sum_duplicates()  # canonical rows: the sums do not depend on the order of a document's tokens
        for f in np.unique(folds):
            held_out = np.flatnonzero(folds == f)
            fold = model.statistics.without(one_hot(rows[held_out], len(model.classes)), X[held_out])
            jll[held_out] = linear_scores(X[held_out], self.linear_form(fold)) + self.prior_term(fold)
        return jll

    # --- its form of one document in pure Python: jll_k = log P(k) + Σ_j x_j W_kj (+ absent_k) ----
    absent: list[float] | None = None  # a constant per class, or None

    def weight(self, k, count):
        """W_kj of a feature with `count` in class k: x_j W_kj is its term of jll_k. A form whose
        event model scores under train --max-evidence gives it the bits its numpy form gives it
        (nbtext.exactmath's log): the features a cap chooses by their terms are a discrete
        choice, which the one-message path and the model loaded whole make alike only from the
        same bits (libm's log differs from exactmath's in the last one)."""
        raise NotImplementedError

    def joint_log_likelihood(self, log_prior, features, max_evidence=None):
        """jll_k for each class, each class's terms summed exactly (of the features that
        score it: `scoring`)."""
        columns = self.scoring(features, max_evidence)[1]
        terms = [[p, *column] for p, column in zip(log_prior, columns)] if columns else [[p] for p in log_prior]
        if self.absent is not None:
            for k, absent in enumerate(self.absent):
                terms[k].append(absent)
        return [math.fsum(t) for t in terms]

    def scoring(self, features, max_evidence):
        """(the features that score the document, each class's terms x_j W_kj of them): all of
        them, or under train --max-evidence those nbtext.stats.evidence chooses by their terms."""
        if not features:
            return features, []
        columns = [self._terms(k, features) for k in range(len(features[0][2]))]
        if max_evidence is None:
            return features, columns
        from nbtext.stats.evidence import token_key, used_features, used_of_two

        def key(i):
            return token_key(features[i][0])

        if len(columns) == 2:  # (the leads t_0 − t_1, once)
            used = used_of_two(key, [t0 - t1 for t0, t1 in zip(*columns)], max_evidence)
        else:
            used = used_features(key, list(zip(*columns)), max_evidence)
        return [features[i] for i in used], [[column[i] for i in used] for column in columns]

    def _terms(self, k, features):
        """x_j W_kj of each feature for class k: W_kj a function of the feature's count in k
        alone, each count's worked out once by this form (many features share a count)."""
        weights = self.weights(k)
        return [x * weights[counts[k]] for _, x, counts in features]

    def weights(self, k):
        """{count: W_kj} of class k, each count's worked out on its first look-up and kept by this form."""
        weights = self._weights.get(k)
        if weights is None:
            weights = self._weights[k] = _Memo(self.weight_of(k))
        return weights

    @cached_property
    def _weights(self):
        """{k: {count: W_kj}} of the counts this form has weighed."""
        return {}

    def weight_of(self, k):
        """W_kj of class k as a function of the feature's count in k alone."""
        return lambda count: self.weight(k, count)

    def explanation(self, features, winner, runner_up, max_evidence=None):
        """x_j (W_winner,j − W_runner-up,j) of each feature that scores the document."""
        weight = self.weight
        return [
            (token, x * (weight(winner, counts[winner]) - weight(runner_up, counts[runner_up])))
            for token, x, counts in self.scoring(features, max_evidence)[0]
            if token is not None
        ]


class _Memo(dict):
    """f(key), each key's computed once (on its first look-up) and kept."""

    def __init__(self, f):
        self.f = f

    def __missing__(self, key):
        value = self[key] = self.f(key)
        return value


class Multinomial(LinearModel):
    """A class's tokens drawn from θ_k: log θ_kj = log(B_kj + λ) − log(T_k + d·λ). Scored on
    a document's own columns alone (one document; the out-of-fold views), never smoothing the
    whole (n_classes, n_features) table."""

    name = "multinomial"
    flags = Flags(
        mail_alpha=True,
        reports_unk_share=True,
        caps_evidence=True,
        follows_changes=True,  # its record (d, UNK, T_k) is what a pending record derives
        record_values={"totals": "counts"},
    )
    one_document = online = ITS_OWN_CLASS

    # its form of one document: W_kj = log(B_kj + λ) − log(T_k + d·λ), B_kj the class's count
    # of feature j, T_k its total (UNK's included), d the number of features; the online
    # protocol's the same sums, of the counts so far
    totals: list[float]  # T_k
    n_features: int  # d
    alpha: float  # λ

    @classmethod
    def of_record(cls, record, class_count, alpha, classes):
        return cls._of(totals=record["totals"], n_features=record["features"], alpha=alpha)

    @classmethod
    def of_counts(cls, totals, n_features, alpha, class_count, classes):
        return cls._of(totals=totals, n_features=n_features, alpha=alpha)

    @staticmethod
    def record_of(model):
        return {"totals": model.feature_totals.tolist()}

    # its record (d, UNK_k, T_k) is the counts' one-document record: the change core follows it
    # after any change (nbtext.stats.changes.record_after, the one rule every learner goes through)
    record_after = staticmethod(changes.record_after)

    def weight(self, k, count):
        return self.weight_of(k)(count)

    def weight_of(self, k):
        alpha, denominator = self.alpha, self.denominators[k]
        return lambda count: _exact_log(count + alpha) - denominator

    @cached_property
    def denominators(self):
        """log(T_k + d·λ) per class, once, by nbtext.exactmath's log, as log_denominator.
        Asked of a feature: a model of no feature (d = 0) has none to weigh, and a record that
        says so of a document's features is refused (ValueError: the numpy path then judges it)."""
        if not self.n_features:
            raise ValueError("a feature's weight asked of a model of no features")
        return [_exact_log(t + self.n_features * self.alpha) for t in self.totals]

    # --- its formulas, in numpy
    @staticmethod
    def log_theta_of(feature_sums, alpha, totals=None, d=None):
        """log θ_kj, θ_kj = (B_kj + λ) / (Σ_j B_kj + d·λ), d = number of features, of
        `feature_sums` (n_classes, n_features): per class the sum of the documents' feature
        values.

        `feature_sums` may hold only some columns when `totals` (Σ_j B_kj over all d
        features, per class) and `d` are given.
        """
        import numpy as np

        from nbtext.exactmath import log

        if totals is None:
            d, totals = feature_sums.shape[1], feature_sums.sum(axis=1)
        if d == 0:  # no features at all (a shard whose every token was pruned): the prior decides
            return np.zeros_like(feature_sums, dtype=np.float64)
        # in place, one (classes × features) array: the same operations, without two more
        # temporaries of that size to allocate and fault in (docs/performance.md, figures
        # behind the code)
        log_theta = feature_sums + alpha
        log(log_theta, out=log_theta)
        log_theta -= Multinomial.log_denominator(totals, d, alpha)[:, None]
        return log_theta

    @staticmethod
    def log_denominator(totals, d, alpha):
        """log(T_k + d·λ), the denominator of θ_kj, of each class's total T_k over its d features."""
        from nbtext.exactmath import log

        return log(totals + d * alpha)

    # --- its numpy forms
    def jll_and_lengths(self, model, token_lists):
        import numpy as np

        from nbtext.features.matrix import scores_of_counts
        from nbtext.features.weighting import is_tfidf

        if model.settings.get("max_evidence") is not None:
            if len(token_lists) == 1:
                ids = model.vocabulary.ids_of_one_document(token_lists[0])
                indptr = np.array([0, len(ids)])
            else:
                ids, indptr = model.vocabulary.ids(token_lists)
            return self.jll_of_ids(model, ids, indptr), np.diff(indptr)
        if len(token_lists) != 1 or model.binary or is_tfidf(model.settings):
            return super().jll_and_lengths(model, token_lists)
        # a pipeline that classifies one message never smooths the whole table
        ids = model.vocabulary.ids_of_one_document(token_lists[0])
        columns, local = np.unique(ids, return_inverse=True)
        log_theta = self.log_theta_of(
            model.feature_count_columns(columns), model.alpha, model.feature_totals, model.n_features
        )
        # each token in turn, as a batch adds them (scores_of_counts, one class's row at a time)
        jll = scores_of_counts(local.ravel(), np.array([0, len(ids)]), log_theta)
        return jll + model.prior_term, np.array([len(ids)])

    @staticmethod
    def _cells(model, ids, indptr):
        """features.matrix.document_cells with each cell's value x: its count, or 1 for presence."""
        import numpy as np

        from nbtext.features.matrix import document_cells

        columns, cell_document, cell_column, counts = document_cells(ids, indptr)
        return (
            columns,
            cell_document,
            cell_column,
            (np.ones(len(counts)) if model.binary else counts.astype(np.float64)),
        )

    @staticmethod
    def _capped(model, n_documents, cell_document, cell_column, x, column_weights):
        """Σ over the used cells (nbtext.stats.evidence) of their terms x W_kj (W_kj the row of
        `column_weights`, (columns, classes), at the cell's column index), per document and
        class, each sum in the cells' order: (n_documents, n_classes). The terms are made a
        run of whole documents at a time (evidence.document_blocks): never (cells, classes)
        of a whole batch."""
        import numpy as np

        from nbtext.stats.evidence import document_blocks, used_cells_of

        n_classes = column_weights.shape[1]
        jll = np.zeros((n_documents, n_classes))
        for start, end in document_blocks(cell_document, n_classes):
            document, column = cell_document[start:end], cell_column[start:end]
            terms = column_weights[column] * x[start:end, None]
            used = used_cells_of(document, column, terms, model.settings["max_evidence"])
            first, last = int(document[0]), int(document[-1])  # (whole documents: each sum made here alone)
            for k in range(n_classes):
                jll[first : last + 1, k] = np.bincount(
                    document[used] - first, weights=terms[used, k], minlength=last + 1 - first
                )
        return jll

    def _column_weights(self, model, ids, indptr):
        """(the columns, the cells' document, column index and x, the weights W_kj of the
        columns (columns, classes)) of documents under the model, on their own columns alone."""
        columns, cell_document, cell_column, x = self._cells(model, ids, indptr)
        log_theta = self.log_theta_of(
            model.feature_count_columns(columns), model.alpha, model.feature_totals, model.n_features
        )
        return columns, cell_document, cell_column, x, log_theta.T

    def jll_of_ids(self, model, ids, indptr):
        if model.settings.get("max_evidence") is None:
            return super().jll_of_ids(model, ids, indptr)
        _, cell_document, cell_column, x, column_weights = self._column_weights(model, ids, indptr)
        return self._capped(model, len(indptr) - 1, cell_document, cell_column, x, column_weights) + model.prior_term

    def explanation_terms(self, model, ids, indptr, winner, runner_up):
        """With --max-evidence, the used features' terms alone (the others do not score it)."""
        if model.settings.get("max_evidence") is None:
            return super().explanation_terms(model, ids, indptr, winner, runner_up)
        from nbtext.stats.evidence import used_cells_of

        columns, cell_document, cell_column, x, column_weights = self._column_weights(model, ids, indptr)
        weights = column_weights[cell_column]  # (one document's cells, classes)
        used = used_cells_of(cell_document, cell_column, weights * x[:, None], model.settings["max_evidence"])
        return columns[cell_column[used]], x[used] * (weights[used, winner] - weights[used, runner_up])

    def out_of_fold_jll(self, model, ids, indptr, rows, folds):
        """On the sample's own columns only (never a (classes × features) table per fold):
        log θ'_kj = log(B_kj − S_kj + λ) − log(T_k − Σ_j S_kj + d·λ), S the fold's class sums,
        T the class totals. The sample's documents hold every column S has, so Σ_j S_kj is
        its sum over them. Same values as the whole table gives (LinearModel's).

        In numpy alone (a -j parent never imports scipy for it): the sample as its distinct
        (document, column) cells in order, each with its count (or 1 for presence); every sum
        runs over the cells in that order, as a canonical CSR matrix's products do."""
        import numpy as np

        from nbtext.exactmath import log
        from nbtext.stats.sufficient import Statistics

        if model.tfidf_sums is not None:
            return super().out_of_fold_jll(model, ids, indptr, rows, folds)
        jll = np.zeros((len(rows), len(model.classes)))
        n_classes = len(model.classes)
        columns, cell_document, cell_column, x = self._cells(model, ids, indptr)
        counts = model.feature_count_columns(columns).T.copy()  # (columns, classes): a cell's classes side by side
        log_counts = log(counts + model.alpha)  # log(B_kj + λ), once: a fold changes only the B_kj its S_kj > 0
        for f in np.unique(folds):
            held_out = np.flatnonzero(folds == f)
            held = folds[cell_document] == f
            # S: the fold's class sums on the sample's columns (whole numbers: exact in any order)
            sums = np.bincount(
                cell_column[held] * n_classes + rows[cell_document[held]],
                weights=x[held],
                minlength=len(columns) * n_classes,
            ).reshape(len(columns), n_classes)
            changed = np.flatnonzero(sums)
            # the fold's statistics on the sample's columns: B' = max(B − S, 0)
            fold_sums = counts.copy()
            fold_sums.flat[changed] = np.maximum(counts.flat[changed] - sums.flat[changed], 0.0)
            fold = Statistics(
                np.maximum(model.class_count - np.bincount(rows[held_out], minlength=n_classes), 0.0),
                fold_sums.T,
                None,
                model.alpha,
                model.settings,
            )
            # log θ'_kj = log(B'_kj + λ) − log(T_k − Σ_j S_kj + d·λ), as log_theta_of
            log_theta = log_counts.copy()
            log_theta.flat[changed] = log(fold_sums.flat[changed] + model.alpha)
            log_theta -= self.log_denominator(model.feature_totals - sums.sum(axis=0), model.n_features, model.alpha)
            # Σ_j x_ij log θ'_kj for each held-out document i (its position among them), each
            # (i, k)'s terms summed in the cells' order
            position = np.searchsorted(held_out, cell_document[held])
            if model.settings.get("max_evidence") is not None:
                part = self._capped(model, len(held_out), position, cell_column[held], x[held], log_theta)
                jll[held_out] = part + self.prior_term(fold)
                continue
            terms = log_theta[cell_column[held]] * x[held][:, None]  # (cells, classes)
            where = (position[:, None] * n_classes + np.arange(n_classes)).ravel()
            part = np.bincount(where, weights=terms.ravel(), minlength=len(held_out) * n_classes)
            jll[held_out] = part.reshape(len(held_out), n_classes) + self.prior_term(fold)
        return jll


class Bernoulli(LinearModel):
    name = "bernoulli"
    flags = Flags(
        default_features=feature_defaults("binary", idf=False, length_norm=False),
        feature_kinds=("binary",),
        feature_kind_error="--model bernoulli models token presence: drop --features (or use --model multinomial)",
        mail_alpha=True,
        count_unit="tokens (each counted once a document)",
        unk_from_documents=True,
        presence=True,
        record_values={"absent": "log"},
    )
    one_document = ITS_OWN_CLASS

    # its form of one document: x_j = 1 for the features present, W_kj = log(D_kj + λ) −
    # log(N_k − D_kj + λ), D_kj the class's documents holding feature j, N_k its documents; the
    # constant Σ_j log(1 − θ_kj) over every feature is the record's `absent`
    class_count: list[float]  # N_k
    alpha: float  # λ

    @classmethod
    def of_record(cls, record, class_count, alpha, classes):
        return cls._of(absent=list(record["absent"]), class_count=list(class_count), alpha=alpha)

    @staticmethod
    def record_of(model):
        return {"absent": model.linear_form[1].tolist()}

    def weight(self, k, count):
        return math.log(count + self.alpha) - math.log(self.class_count[k] - count + self.alpha)

    # --- its formulas and numpy forms
    @staticmethod
    def log_theta_pair_of(feature_sums, class_count, alpha):
        """(log θ_kj, log(1 − θ_kj)), θ_kj = (D_kj + λ) / (N_k + 2λ), of `feature_sums`
        (n_classes, n_features: D_kj) and `class_count` (N_k).

        Both come straight from the counts: 1 − θ_kj = (N_k − D_kj + λ) / (N_k + 2λ).
        (Seed 000 writes N_k + dλ in the denominator; each feature has two values, so 2λ.)
        """
        from nbtext.exactmath import log

        denominator = log(class_count + 2 * alpha)[:, None]
        log_present = log(feature_sums + alpha) - denominator
        log_absent = log(class_count[:, None] - feature_sums + alpha) - denominator
        return log_present, log_absent

    def log_theta(self, stats):
        return self.log_theta_pair_of(stats.feature_sums, stats.class_count, stats.alpha)[0]

    def linear_form(self, stats):
        # Σ_j [x_j log θ_j + (1 − x_j) log(1 − θ_j)] = x·(log θ − log(1 − θ)) + Σ_j log(1 − θ_j):
        # absent features are counted without ever forming a dense (1 − X).
        log_present, log_absent = self.log_theta_pair_of(stats.feature_sums, stats.class_count, stats.alpha)
        return log_present - log_absent, log_absent.sum(axis=1), None


class Complement(LinearModel):
    # Rennie et al.'s (2003) transforms for topic classification: log tf, idf, length
    # normalization; their fourth, weight normalization, costs 0.3 points on 20 Newsgroups
    # here and is off by default (`make accuracy` measures each; the README has the table).
    name = "complement"
    flags = Flags(
        default_features=feature_defaults("tfidf", tf="log"),
        prior_in_jll=False,  # as in Rennie et al.
        normalizes_weights=True,
    )

    @staticmethod
    def weights_of(feature_sums, alpha, weight_norm):
        """Complement NB (Rennie et al. 2003): w_kj = log θ̃_kj, θ̃ estimated from every class
        but k, θ̃_kj = (Σ_{k'≠k} B_k'j + λ) / (Σ_{k'≠k} Σ_j B_k'j + d·λ); with weight
        normalization w_kj / Σ_j |w_kj|. A document goes to the class whose complement fits
        it worst, so the weights are −w (argmax of −x·w)."""
        import numpy as np

        complement = feature_sums.sum(axis=0, keepdims=True) - feature_sums
        w = Multinomial.log_theta_of(complement, alpha)
        if weight_norm:
            w = w / np.abs(w).sum(axis=1, keepdims=True)
        return -w

    def linear_form(self, stats):
        import numpy as np

        W = self.weights_of(stats.feature_sums, stats.alpha, stats.settings.get("weight_norm", False))
        return W, np.zeros(stats.n_classes), None


class Gaussian(LinearModel):
    name = "gaussian"
    flags = Flags(
        default_features=feature_defaults("tfidf"),
        feature_kinds=("tfidf",),
        feature_kind_error="--model gaussian takes --features tfidf (real-valued features)",
        smooths=False,
        needs_squares=True,
    )

    VAR_SMOOTHING = 1e-9  # σ² floor, as a fraction of the largest feature variance

    @staticmethod
    def weights_of(class_count, sums, squares):
        """x_j ~ N(μ_kj, σ²_kj) with μ = S1/N_k and σ² = S2/N_k − μ² (S1 = Yᵀ X, S2 = Yᵀ X∘X),
        floored at σ² + VAR_SMOOTHING · max_j Var(x_j) so a zero variance cannot blow up.

        Σ_j log N(x_j; μ, σ²) = Σ_j [−½ log 2πσ² − μ²/2σ²] + x·(μ/σ²) − ½ (x∘x)·(1/σ²):
        returns (W1 = μ/σ², b, W2 = 1/σ²) for jll = X W1ᵀ − ½ (X∘X) W2ᵀ + b."""
        import numpy as np

        from nbtext.exactmath import log

        n = class_count[:, None]
        mean = sums / n
        variance = Gaussian._variance(squares / n, mean)
        total = class_count.sum()
        overall_variance = Gaussian._variance(squares.sum(axis=0) / total, sums.sum(axis=0) / total)
        variance = variance + Gaussian.VAR_SMOOTHING * max(overall_variance.max(initial=0.0), np.finfo(float).tiny)
        precision = 1.0 / variance
        bias = (-0.5 * log(2 * np.pi * variance) - 0.5 * mean**2 * precision).sum(axis=1)
        return mean * precision, bias, precision

    @staticmethod
    def _variance(mean_square, mean):
        """E[x²] − μ², and 0 where that difference is within its own rounding (a few units in
        the last place of E[x²]): values all equal (a class whose documents share a feature's
        value) then have variance 0, as a two-pass variance gives, not a rounding residue that
        the VAR_SMOOTHING floor would turn into a precision of 10⁹ times the noise."""
        import numpy as np

        variance = mean_square - mean**2
        return np.where(variance > 4 * np.finfo(float).eps * mean_square, variance, 0.0)

    def linear_form(self, stats):
        return self.weights_of(stats.class_count, stats.feature_sums, stats.feature_squares)


class Categorical(EventModel):
    """Categorical NB on table rows (seed 000's dating example).

    A row is one `column=value` token per column (nbtext.reading.tokenize.RowTokenizer), so the
    text models' counting serves unchanged: B_kt is the number of class-k rows whose
    column takes that value. A value never seen in training gets λ / (N_k + n_j·λ) in
    every class (λ > 0), or is skipped for that row (λ = 0). Never calibrated."""

    name = "categorical"
    flags = Flags(
        default_features=None,
        zero_alpha=True,
        min_classes=1,
        calibrates=False,
    )

    def _columns(self, stats):
        """(the column index of every feature `column=value`, the number of columns)."""
        import numpy as np

        columns = stats.settings["tokenizer"]["columns"]
        position = {name: j for j, name in enumerate(columns)}
        feature_of = np.array([position[t.split("=", 1)[0]] for t in stats.vocabulary.feature_names], dtype=np.intp)
        return feature_of, len(columns)

    @staticmethod
    def log_theta_of(feature_sums, class_count, alpha, feature_of, n_columns):
        """log P(x_j = v | k) for every `column=value` token, shape (n_classes, n_tokens):
        (B_k,(j,v) + λ) / (N_k + n_j·λ), n_j the number of values column j takes."""
        import numpy as np

        from nbtext.exactmath import log

        n_values = np.bincount(feature_of, minlength=n_columns)  # n_j
        denominator = class_count[:, None] + n_values[None, :] * alpha  # N_k + n_j·λ
        with np.errstate(divide="ignore"):  # λ = 0: an unseen (class, value) pair is log 0 = -inf
            return log(feature_sums + alpha) - log(denominator[:, feature_of])

    @staticmethod
    def unseen_log_theta_of(class_count, alpha, feature_of, n_columns):
        """log λ / (N_k + n_j·λ), a value never seen in training, per (class, column); None for
        λ = 0, where it would rule every class out (such values are skipped instead)."""
        import numpy as np

        from nbtext.exactmath import log

        if alpha <= 0:
            return None
        n_values = np.bincount(feature_of, minlength=n_columns)
        return log(alpha) - log(class_count[:, None] + n_values[None, :] * alpha)

    def log_theta(self, stats):
        return self.log_theta_of(stats.feature_sums, stats.class_count, stats.alpha, *self._columns(stats))

    def derive(self, model):
        model.feature_log_prob  # noqa: B018

    def jll_and_lengths(self, model, token_lists):
        """log P(k) + Σ_j log P(x_j | k) for each row, the model's log θ gathered per row,
        never a dense product, where 0·(−inf) would be NaN."""
        import numpy as np

        stats, log_theta = model.statistics, model.feature_log_prob
        columns = stats.settings["tokenizer"]["columns"]
        position = {name: j for j, name in enumerate(columns)}
        lookup = stats.vocabulary.lookup
        ids = [[lookup[t] for t in row if t in lookup] for row in token_lists]
        unseen = [[position[t.split("=", 1)[0]] for t in row if t not in lookup] for row in token_lists]
        if stats.alpha == 0 and any(unseen):
            import warnings

            warnings.warn(
                "with --alpha 0, values never seen in training are skipped "
                f"({sum(map(len, unseen))} in {sum(1 for u in unseen if u)} rows)",
                stacklevel=4,
            )
        unseen_log_prob = self.unseen_log_theta_of(stats.class_count, stats.alpha, *self._columns(stats))
        jll = np.zeros((len(token_lists), stats.n_classes))
        for i, (row_ids, missing) in enumerate(zip(ids, unseen)):
            jll[i] = log_theta[:, row_ids].sum(axis=1)
            if unseen_log_prob is not None and missing:
                jll[i] += unseen_log_prob[:, missing].sum(axis=1)
        return jll + model.prior_term, None

    def explanation_terms(self, model, ids, indptr, winner, runner_up):
        """The log-probabilities of the row's values."""
        import numpy as np

        columns, x = np.unique(ids, return_counts=True)
        weights = model.feature_log_prob
        with np.errstate(invalid="ignore"):  # λ = 0: −inf − −inf
            return columns, x * (weights[winner, columns] - weights[runner_up, columns])


class Fisher(EventModel):
    """Robinson's f(w) and Fisher's inverse chi-square combining, as SpamBayes and bogofilter
    score mail (nbtext.stats.fisher has the formulas; its form of one document the same in pure Python).
    Its statistics are Bernoulli's: per class the documents holding each token, and N_k; λ is
    Robinson's prior strength s. Two classes, the positive one (nbtext.labels.positive_class)
    spam; its jll is (ln I, ln(1 − I)), so the posterior is I. Pruned and unseen tokens carry no
    evidence (f = x): there is no UNK feature."""

    name = "fisher"
    flags = Flags(
        default_features=feature_defaults("binary", idf=False, length_norm=False),
        feature_kinds=("binary",),
        feature_kind_error="--model fisher counts the documents holding each token: drop --features",
        prior_in_jll=False,
        max_classes=2,
        reads_unk=False,
        count_unit="tokens (each counted once a document)",
        unk_from_documents=True,
        presence=True,  # (its record: the class counts and λ are all it reads besides the tokens' own counts)
        tone_margin=4.0,  # on ln I − ln(1 − I): chosen by cross-validation on the train splits (docs/performance.md)
    )
    one_document = online = ITS_OWN_CLASS

    @property
    def fisher(self):
        """nbtext.stats.fisher, what both its forms score by, imported at its first use (the
        one-message path of the other models never needs it)."""
        from nbtext.stats import fisher

        return fisher

    # its form of one document: each feature's f(w) from the documents of each class holding
    # it, the most deviant combined by Fisher's method into I; jll = (ln I, ln(1 − I)) in the
    # classes' order. No log prior enters. Also the online protocol's form.
    class_count: list[float]  # N_k
    positive: int  # the positive class's (spam's) index
    strength: float  # Robinson's s: λ

    @classmethod
    def _of_classes(cls, class_count, alpha, classes):
        if len(class_count) != 2:
            raise ValueError("a fisher model has two classes")
        positive = classes.index(positive_class(classes))
        return cls._of(class_count=[float(c) for c in class_count], positive=positive, strength=alpha)

    @classmethod
    def of_record(cls, record, class_count, alpha, classes):
        return cls._of_classes(class_count, alpha, classes)

    @classmethod
    def of_counts(cls, totals, n_features, alpha, class_count, classes):
        return cls._of_classes(class_count, alpha, classes)

    @staticmethod
    def record_of(model):
        return {}

    def used(self, features):
        """[(token, f, 1 − f)] of the features that enter the combining (UNK never does)."""
        spam, ham = self.positive, 1 - self.positive
        n_spam, n_ham = self.class_count[spam], self.class_count[ham]
        probability = self.fisher.token_probability
        scored = [
            (token, *probability(counts[spam], counts[ham], n_spam, n_ham, self.strength))
            for token, _, counts in features
            if token is not None
        ]
        return self.fisher.used_tokens(scored)

    # (max_evidence: always None, the model file's schema refuses it of fisher, whose own cap is MAX_TOKENS)
    def joint_log_likelihood(self, log_prior, features, max_evidence=None):
        log_spam, log_ham = self.fisher.log_spam_probability(self.used(features))
        return [log_spam, log_ham] if self.positive == 0 else [log_ham, log_spam]

    def explanation(self, features, winner, runner_up, max_evidence=None):
        """Each used token's ln f − ln(1 − f), towards the winner."""
        sign = 1.0 if winner == self.positive else -1.0
        smallest = self.fisher.SMALLEST
        return [
            (token, sign * (math.log(max(f, smallest)) - math.log(max(g, smallest))))
            for token, f, g in self.used(features)
        ]

    # --- its numpy forms

    def log_theta(self, stats):
        """The presence probabilities (D_kj + λ) / (N_k + 2λ), as Bernoulli's: what `info --top` weighs."""
        return Bernoulli.log_theta_pair_of(stats.feature_sums, stats.class_count, stats.alpha)[0]

    @staticmethod
    def _cells(ids, indptr):
        """(the distinct columns, each distinct (document, column) cell's document and column
        index into them): features.matrix.document_cells, without the counts (presence)."""
        from nbtext.features.matrix import document_cells

        return document_cells(ids, indptr)[:3]

    def _cell_probabilities(self, model, columns, cell_column, counts, class_count):
        """(f, 1 − f, not UNK) of each cell, of the columns' counts (classes × columns)."""
        import numpy as np

        spam = model.classes.index(positive_class(model.classes))
        f, g = self.fisher.token_probabilities_of(
            counts[spam], counts[1 - spam], class_count[spam], class_count[1 - spam], model.alpha
        )
        unk = model.vocabulary.unk_column
        known = np.ones(len(columns), dtype=bool) if unk is None else columns != unk
        return f[cell_column], g[cell_column], known[cell_column]

    def _used(self, model, columns, cell_document, cell_column, counts, class_count):
        """(f, 1 − f, used mask) of the cells."""
        f, g, known = self._cell_probabilities(model, columns, cell_column, counts, class_count)
        used = self.fisher.used_cells_of(cell_document, columns[cell_column], f) & known
        return f, g, used

    def _jll(self, model, n_documents, cell_document, f, g, used):
        import numpy as np

        from nbtext.exactmath import log

        document = cell_document[used]
        n = np.bincount(document, minlength=n_documents)
        m_f = -np.bincount(document, weights=log(np.maximum(f[used], self.fisher.SMALLEST)), minlength=n_documents)
        m_g = -np.bincount(document, weights=log(np.maximum(g[used], self.fisher.SMALLEST)), minlength=n_documents)
        log_spam, log_ham = self.fisher.log_spam_probabilities_of(n, m_f, m_g)
        spam = model.classes.index(positive_class(model.classes))
        return np.stack([log_spam, log_ham] if spam == 0 else [log_ham, log_spam], axis=1)

    def jll_of_ids(self, model, ids, indptr):
        columns, cell_document, cell_column = self._cells(ids, indptr)
        counts = model.feature_count_columns(columns)
        f, g, used = self._used(model, columns, cell_document, cell_column, counts, model.class_count)
        return self._jll(model, len(indptr) - 1, cell_document, f, g, used)

    def jll_and_lengths(self, model, token_lists):
        import numpy as np

        ids, indptr = model.vocabulary.ids(token_lists)
        return self.jll_of_ids(model, ids, indptr), np.diff(indptr)

    def explanation_terms(self, model, ids, indptr, winner, runner_up):
        """Each used token's ln f − ln(1 − f), towards the winner."""
        import numpy as np

        from nbtext.exactmath import log

        columns, cell_document, cell_column = self._cells(ids, indptr)
        counts = model.feature_count_columns(columns)
        f, g, used = self._used(model, columns, cell_document, cell_column, counts, model.class_count)
        sign = 1.0 if model.classes[winner] == positive_class(model.classes) else -1.0
        smallest = self.fisher.SMALLEST
        return columns[cell_column[used]], sign * (
            log(np.maximum(f[used], smallest)) - log(np.maximum(g[used], smallest))
        )

    def out_of_fold_jll(self, model, ids, indptr, rows, folds):
        """Each fold's documents scored by the counts without them: b_w, g_w and N_k minus
        the fold's, on the sample's own columns."""
        import numpy as np

        columns, cell_document, cell_column = self._cells(ids, indptr)
        counts = model.feature_count_columns(columns)
        n_classes = len(model.classes)
        jll = np.zeros((len(rows), n_classes))
        for fold in np.unique(folds):
            held_out = np.flatnonzero(folds == fold)
            held = folds[cell_document] == fold
            # presence: each held cell is one document of its class holding the column
            sums = np.bincount(
                rows[cell_document[held]] * len(columns) + cell_column[held], minlength=n_classes * len(columns)
            ).reshape(n_classes, len(columns))
            fold_counts = np.maximum(counts - sums, 0.0)
            fold_class_count = np.maximum(model.class_count - np.bincount(rows[held_out], minlength=n_classes), 0.0)
            position = np.searchsorted(held_out, cell_document[held])
            f, g, used = self._used(model, columns, position, cell_column[held], fold_counts, fold_class_count)
            jll[held_out] = self._jll(model, len(held_out), position, f, g, used)
        return jll


EVENT_MODELS = {model.name: model() for model in (Multinomial, Bernoulli, Complement, Gaussian, Categorical, Fisher)}
assert tuple(EVENT_MODELS) == choices.EVENT_MODELS
