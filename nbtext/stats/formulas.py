"""The formulas of the event models, in numpy: smoothed log-probabilities, the class prior,
and log-sum-exp normalization (nbtext.stats.event_models says which model uses which).

Shapes: `feature_sums` (n_classes, n_features), per class the sum of the documents' feature
values; `class_count` (n_classes,); λ (`alpha`) is the Lidstone smoothing constant
(λ = 1 is Laplace).
"""

import numpy as np

from nbtext.exactmath import exp, log, power
from nbtext.stats.tempering import length_floor

VAR_SMOOTHING = 1e-9  # gaussian: σ² floor, as a fraction of the largest feature variance


def multinomial_log_prob(feature_sums, alpha, totals=None, d=None):
    """log θ_kj, θ_kj = (B_kj + λ) / (Σ_j B_kj + d·λ), d = number of features.

    `feature_sums` may hold only some columns when `totals` (Σ_j B_kj over all d
    features, per class) and `d` are given.
    """
    if totals is None:
        d, totals = feature_sums.shape[1], feature_sums.sum(axis=1)
    if d == 0:  # no features at all (a shard whose every token was pruned): the prior decides
        return np.zeros_like(feature_sums, dtype=np.float64)
    # in place, one (classes × features) array: the same operations, without two more
    # temporaries of that size to allocate and fault in (docs/performance.md, figures
    # behind the code)
    log_theta = feature_sums + alpha
    log(log_theta, out=log_theta)
    log_theta -= multinomial_log_denominator(totals, d, alpha)[:, None]
    return log_theta


def multinomial_log_denominator(totals, d, alpha):
    """log(T_k + d·λ), the denominator of the multinomial's θ_kj, of each class's total T_k
    over its d features."""
    return log(totals + d * alpha)


def bernoulli_log_prob(feature_sums, class_count, alpha):
    """(log θ_kj, log(1 − θ_kj)), θ_kj = (D_kj + λ) / (N_k + 2λ).

    Both come straight from the counts: 1 − θ_kj = (N_k − D_kj + λ) / (N_k + 2λ).
    (Seed 000 writes N_k + dλ in the denominator; each feature has two values, so 2λ.)
    """
    denominator = log(class_count + 2 * alpha)[:, None]
    log_present = log(feature_sums + alpha) - denominator
    log_absent = log(class_count[:, None] - feature_sums + alpha) - denominator
    return log_present, log_absent


def complement_weights(feature_sums, alpha, weight_norm):
    """Complement NB (Rennie et al. 2003): w_kj = log θ̃_kj, θ̃ estimated from every class
    but k, θ̃_kj = (Σ_{k'≠k} B_k'j + λ) / (Σ_{k'≠k} Σ_j B_k'j + d·λ); with weight
    normalization w_kj / Σ_j |w_kj|. A document goes to the class whose complement fits
    it worst, so the weights are −w (argmax of −x·w)."""
    complement = feature_sums.sum(axis=0, keepdims=True) - feature_sums
    w = multinomial_log_prob(complement, alpha)
    if weight_norm:
        w = w / np.abs(w).sum(axis=1, keepdims=True)
    return -w


def gaussian_weights(class_count, sums, squares):
    """x_j ~ N(μ_kj, σ²_kj) with μ = S1/N_k and σ² = S2/N_k − μ² (S1 = Yᵀ X, S2 = Yᵀ X∘X),
    floored at σ² + VAR_SMOOTHING · max_j Var(x_j) so a zero variance cannot blow up.

    Σ_j log N(x_j; μ, σ²) = Σ_j [−½ log 2πσ² − μ²/2σ²] + x·(μ/σ²) − ½ (x∘x)·(1/σ²):
    returns (W1 = μ/σ², b, W2 = 1/σ²) for jll = X W1ᵀ − ½ (X∘X) W2ᵀ + b."""
    n = class_count[:, None]
    mean = sums / n
    variance = _variance(squares / n, mean)
    total = class_count.sum()
    overall_variance = _variance(squares.sum(axis=0) / total, sums.sum(axis=0) / total)
    variance = variance + VAR_SMOOTHING * max(overall_variance.max(initial=0.0), np.finfo(float).tiny)
    precision = 1.0 / variance
    bias = (-0.5 * log(2 * np.pi * variance) - 0.5 * mean**2 * precision).sum(axis=1)
    return mean * precision, bias, precision


def _variance(mean_square, mean):
    """E[x²] − μ², and 0 where that difference is within its own rounding (a few units in
    the last place of E[x²]): values all equal (a class whose documents share a feature's
    value) then have variance 0, as a two-pass variance gives, not a rounding residue that
    the VAR_SMOOTHING floor would turn into a precision of 10⁹ times the noise."""
    variance = mean_square - mean**2
    return np.where(variance > 4 * np.finfo(float).eps * mean_square, variance, 0.0)


def categorical_log_prob(feature_sums, class_count, alpha, feature_of, n_columns):
    """log P(x_j = v | k) for every `column=value` token, shape (n_classes, n_tokens):
    (B_k,(j,v) + λ) / (N_k + n_j·λ), n_j the number of values column j takes."""
    n_values = np.bincount(feature_of, minlength=n_columns)  # n_j
    denominator = class_count[:, None] + n_values[None, :] * alpha  # N_k + n_j·λ
    with np.errstate(divide="ignore"):  # λ = 0: an unseen (class, value) pair is log 0 = -inf
        return log(feature_sums + alpha) - log(denominator[:, feature_of])


def categorical_unseen_log_prob(class_count, alpha, feature_of, n_columns):
    """log λ / (N_k + n_j·λ), a value never seen in training, per (class, column); None for
    λ = 0, where it would rule every class out (such values are skipped instead)."""
    if alpha <= 0:
        return None
    n_values = np.bincount(feature_of, minlength=n_columns)
    return log(alpha) - log(class_count[:, None] + n_values[None, :] * alpha)


def log_normalize(jll):
    """Rows of log-posteriors from joint log-likelihoods, by log-sum-exp (no overflow)."""
    top = jll.max(axis=1, keepdims=True)
    impossible = ~np.isfinite(top[:, 0])  # every class ruled out (zero probabilities, λ = 0)
    if impossible.any():
        jll = jll.copy()
        jll[impossible] = 0.0  # nothing to tell the classes apart: uniform
        top[impossible] = 0.0
    return jll - (top + log(exp(jll - top).sum(axis=1, keepdims=True)))


def tempered_log_posterior(jll, calibration=None, lengths=None):
    """Rows of log P(k | x) = log_softmax(jll / T(x)) (T(x) = temperatures: 1 without
    calibration): the form over arrays of nbtext.stats.tempering.tempered_posterior."""
    if calibration is not None:
        jll = jll / temperatures(calibration, len(jll), lengths)[:, None]
    return log_normalize(jll)


def temperatures(calibration, n_documents, lengths=None):
    """T(x) = T · max(n, m)^γ of each document (1 without calibration, or for n = 0 when γ is
    not 0): what its joint log-likelihoods are divided by before the softmax; the form over
    arrays of nbtext.stats.tempering.document_temperature. (n^γ by exact power: a number
    behind every probability printed and every cut-off stored.)"""
    if calibration is None:
        return np.ones(n_documents)
    exponent = calibration.get("length_exponent", 0.0)
    if exponent == 0.0:
        return np.full(n_documents, float(calibration["temperature"]))
    if lengths is None:
        raise ValueError("this model's temperature grows with the document's length: pass the lengths")
    n = np.asarray(lengths, dtype=np.float64)
    floor = float(length_floor(calibration))
    return np.where(n > 0, calibration["temperature"] * power(np.maximum(n, floor), exponent), 1.0)
