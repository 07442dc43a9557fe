"""Event models: how smoothed counts become log-probabilities, and the joint log-likelihood.

Every model reduces to one linear form, so prediction is a single sparse product:

    jll(x, k) = log P(k) + Σ_j x_j W_kj + b_k

`feature_count` has shape (n_classes, n_features), `class_count` shape (n_classes,);
λ is the Lidstone smoothing constant (λ = 1 is Laplace).
"""

import numpy as np

EVENT_MODELS = ("multinomial", "bernoulli", "categorical")
PRIORS = ("smoothed", "empirical", "uniform")


def multinomial_log_prob(feature_count, alpha, totals=None, d=None):
    """log θ_kj, θ_kj = (B_kj + λ) / (Σ_j B_kj + d·λ), d = number of features.

    `feature_count` may hold only some columns when `totals` (Σ_j B_kj over all d
    features, per class) and `d` are given.
    """
    if totals is None:
        d, totals = feature_count.shape[1], feature_count.sum(axis=1)
    return np.log(feature_count + alpha) - np.log(totals + d * alpha)[:, None]


def bernoulli_log_prob(feature_count, class_count, alpha):
    """(log θ_kj, log(1 − θ_kj)), θ_kj = (D_kj + λ) / (N_k + 2λ).

    Both come straight from the counts: 1 − θ_kj = (N_k − D_kj + λ) / (N_k + 2λ).
    (Seed 000 writes N_k + dλ in the denominator; each feature has two values, so 2λ.)
    """
    denominator = np.log(class_count + 2 * alpha)[:, None]
    log_present = np.log(feature_count + alpha) - denominator
    log_absent = np.log(class_count[:, None] - feature_count + alpha) - denominator
    return log_present, log_absent


def linear_weights(event_model, feature_count, class_count, alpha):
    """(W, b) with jll = X Wᵀ + b + log prior, for the given event model."""
    if event_model == "multinomial":
        return multinomial_log_prob(feature_count, alpha), np.zeros(len(class_count))
    if event_model == "bernoulli":
        # Σ_j [x_j log θ_j + (1 − x_j) log(1 − θ_j)] = x·(log θ − log(1 − θ)) + Σ_j log(1 − θ_j):
        # absent features are counted without ever forming a dense (1 − X).
        log_present, log_absent = bernoulli_log_prob(feature_count, class_count, alpha)
        return log_present - log_absent, log_absent.sum(axis=1)
    raise ValueError(f"unknown event model {event_model!r}")


def class_log_prior(class_count, alpha, prior):
    """log P(k): smoothed (N_k + λ)/(N + c·λ), empirical N_k/N, or uniform 1/c."""
    n_classes = len(class_count)
    if prior == "smoothed":
        with np.errstate(divide="ignore"):  # λ = 0 (categorical): an empty class has log 0
            return np.log(class_count + alpha) - np.log(class_count.sum() + n_classes * alpha)
    if prior == "empirical":
        with np.errstate(divide="ignore"):  # a class with no documents gets log 0 = -inf
            return np.log(class_count) - np.log(class_count.sum())
    if prior == "uniform":
        return np.full(n_classes, -np.log(n_classes))
    raise ValueError(f"unknown prior {prior!r}")


def log_normalize(jll):
    """Rows of log-posteriors from joint log-likelihoods, by log-sum-exp (no overflow)."""
    top = jll.max(axis=1, keepdims=True)
    impossible = ~np.isfinite(top[:, 0])  # every class ruled out (zero probabilities, λ = 0)
    if impossible.any():
        jll = jll.copy()
        jll[impossible] = 0.0  # nothing to tell the classes apart: uniform
        top[impossible] = 0.0
    return jll - (top + np.log(np.exp(jll - top).sum(axis=1, keepdims=True)))
