"""Event models: how a class's counts become log-probabilities and a joint log-likelihood.

One small class per event model, in one registry (EVENT_MODELS); nothing outside this
module compares event-model names. Every text model reduces to one linear form, so
prediction is a single sparse product:

    jll(x, k) = log P(k) + Σ_j x_j W_kj + b_k          (gaussian adds −½ Σ_j x_j² W2_kj)

Categorical NB (table rows) brings its own joint log-likelihood. Every hook reads one
record, the sufficient statistics (nbtext.stats.sufficient.Statistics: `class_count` N_k,
`feature_sums` B_kj, per class the sum of the documents' feature values - token counts,
documents containing the token, or tf-idf sums -, `feature_squares` for the gaussian, λ and
the settings), never the model. The formulas are in nbtext.stats.formulas (numpy); this
module imports neither, so a model file's header can be checked, and one message scored
(nbtext.classifier.purescore), without numpy.
"""

from nbtext import choices


def feature_defaults(features, tf="raw", idf=True, length_norm=True, weight_norm=False):
    """An event model's default feature values (nbtext.features.weighting; the settings' key order)."""
    return {"features": features, "tf": tf, "idf": idf, "length_norm": length_norm, "weight_norm": weight_norm}


class EventModel:
    """What one event model says; the base is a multinomial over token counts. Its hooks
    take the sufficient statistics (nbtext.stats.sufficient.Statistics)."""

    name = None
    # The default feature values (nbtext.features.weighting), or None for a model of table rows.
    default_features = feature_defaults("counts")
    feature_kinds = choices.FEATURES  # the --features it accepts
    feature_kind_error = None  # the message when another is asked for
    zero_alpha = False  # whether λ = 0 is allowed
    prior_in_jll = True  # whether log P(k) enters the joint log-likelihood
    mail_alpha = False  # whether λ defaults to 0.1 when most training documents are e-mail
    smooths = True  # whether λ enters at all
    normalizes_weights = False  # whether it reads --weight-norm
    min_classes = 2
    count_unit = "tokens"  # what `nbtext info` says a class's count is of
    unk_from_documents = False  # UNK's count: documents with a pruned token (else the pruned tokens' counts)
    reports_unk_share = False  # `nbtext info` gives UNK's share of the training tokens
    needs_squares = False  # its statistics hold feature_squares: training sums the squares of the values
    local_smoothing = False  # one document of counts smooths only its own columns
    own_jll = False  # brings joint_log_likelihood() instead of the linear form
    # How one document of counts or presence is scored without numpy (nbtext.classifier.purescore):
    # "counts", Σ_j x_j log θ_kj; "presence", Bernoulli's; None: not that way.
    pure_form = None

    def log_theta(self, stats):
        """log θ_kj, shape (n_classes, n_features)."""
        from nbtext.stats.formulas import multinomial_log_prob

        return multinomial_log_prob(stats.feature_sums, stats.alpha)

    def linear_form(self, stats):
        """(W, b, W2) with jll = X Wᵀ − ½ (X∘X) W2ᵀ + b (+ log prior); W2 None but for gaussian."""
        import numpy as np

        return self.log_theta(stats), np.zeros(stats.n_classes), None

    def prior_term(self, stats):
        """log P(k) as it enters the joint log-likelihood (0 for a model without one)."""
        import numpy as np

        from nbtext.stats.formulas import class_log_prior

        if not self.prior_in_jll:
            return np.zeros(stats.n_classes)
        return class_log_prior(stats.class_count, stats.alpha, stats.settings["prior"])


class Multinomial(EventModel):
    name = "multinomial"
    mail_alpha = True
    reports_unk_share = True
    local_smoothing = True
    pure_form = "counts"


class Bernoulli(EventModel):
    name = "bernoulli"
    default_features = feature_defaults("binary", idf=False, length_norm=False)
    feature_kinds = ("binary",)
    feature_kind_error = "--model bernoulli models token presence: drop --features (or use --model multinomial)"
    mail_alpha = True
    count_unit = "documents with"
    unk_from_documents = True
    pure_form = "presence"

    def log_theta(self, stats):
        from nbtext.stats.formulas import bernoulli_log_prob

        return bernoulli_log_prob(stats.feature_sums, stats.class_count, stats.alpha)[0]

    def linear_form(self, stats):
        from nbtext.stats.formulas import bernoulli_log_prob

        # Σ_j [x_j log θ_j + (1 − x_j) log(1 − θ_j)] = x·(log θ − log(1 − θ)) + Σ_j log(1 − θ_j):
        # absent features are counted without ever forming a dense (1 − X).
        log_present, log_absent = bernoulli_log_prob(stats.feature_sums, stats.class_count, stats.alpha)
        return log_present - log_absent, log_absent.sum(axis=1), None


class Complement(EventModel):
    # Rennie et al.'s (2003) transforms for topic classification: log tf, idf, length
    # normalization; their fourth, weight normalization, costs 0.3 points on 20 Newsgroups
    # here and is off by default (`make accuracy` measures each; the README has the table).
    name = "complement"
    default_features = feature_defaults("tfidf", tf="log")
    prior_in_jll = False  # as in Rennie et al.
    normalizes_weights = True

    def linear_form(self, stats):
        import numpy as np

        from nbtext.stats.formulas import complement_weights

        W = complement_weights(stats.feature_sums, stats.alpha, stats.settings.get("weight_norm", False))
        return W, np.zeros(stats.n_classes), None


class Gaussian(EventModel):
    name = "gaussian"
    default_features = feature_defaults("tfidf")
    feature_kinds = ("tfidf",)
    feature_kind_error = "--model gaussian takes --features tfidf (real-valued features)"
    smooths = False
    needs_squares = True

    def linear_form(self, stats):
        from nbtext.stats.formulas import gaussian_weights

        return gaussian_weights(stats.class_count, stats.feature_sums, stats.feature_squares)


class Categorical(EventModel):
    """Categorical NB on table rows (seed 000's dating example).

    A row is one `column=value` token per column (nbtext.reading.tokenize.RowTokenizer), so the
    text models' counting serves unchanged: B_kt is the number of class-k rows whose
    column takes that value. A value never seen in training gets λ / (N_k + n_j·λ) in
    every class (λ > 0), or is skipped for that row (λ = 0)."""

    name = "categorical"
    default_features = None
    zero_alpha = True
    min_classes = 1
    own_jll = True

    def _columns(self, stats):
        """(the column index of every feature `column=value`, the number of columns)."""
        import numpy as np

        columns = stats.settings["tokenizer"]["columns"]
        position = {name: j for j, name in enumerate(columns)}
        feature_of = np.array([position[t.split("=", 1)[0]] for t in stats.vocabulary.feature_names], dtype=np.intp)
        return feature_of, len(columns)

    def log_theta(self, stats):
        from nbtext.stats.formulas import categorical_log_prob

        return categorical_log_prob(stats.feature_sums, stats.class_count, stats.alpha, *self._columns(stats))

    def joint_log_likelihood(self, stats, log_theta, rows):
        """Σ_j log P(x_j | k) for each row (without the prior), `log_theta` this model's of
        `stats`: gathered per row, never a dense product, where 0·(−inf) would be NaN."""
        import numpy as np

        from nbtext.stats.formulas import categorical_unseen_log_prob

        columns = stats.settings["tokenizer"]["columns"]
        position = {name: j for j, name in enumerate(columns)}
        lookup = stats.vocabulary.lookup
        ids = [[lookup[t] for t in row if t in lookup] for row in rows]
        unseen = [[position[t.split("=", 1)[0]] for t in row if t not in lookup] for row in rows]
        if stats.alpha == 0 and any(unseen):
            import warnings

            warnings.warn(
                "with --alpha 0, values never seen in training are skipped "
                f"({sum(map(len, unseen))} in {sum(1 for u in unseen if u)} rows)",
                stacklevel=3,
            )
        unseen_log_prob = categorical_unseen_log_prob(stats.class_count, stats.alpha, *self._columns(stats))
        jll = np.zeros((len(rows), stats.n_classes))
        for i, (row_ids, missing) in enumerate(zip(ids, unseen)):
            jll[i] = log_theta[:, row_ids].sum(axis=1)
            if unseen_log_prob is not None and missing:
                jll[i] += unseen_log_prob[:, missing].sum(axis=1)
        return jll


EVENT_MODELS = {model.name: model() for model in (Multinomial, Bernoulli, Complement, Gaussian, Categorical)}
assert tuple(EVENT_MODELS) == choices.EVENT_MODELS
