"""log P(k), the class prior, in the standard library alone: the one rule the model loaded
whole (as an array), the one-message path and an online run take their prior from. Each
logarithm is exactmath's, so the figures are the same bits on every CPU and on every path."""

import math

from nbtext.exactmath import scalar_log


def class_log_prior(class_count, alpha, prior):
    """log P(k) of each class (a list): smoothed (N_k + λ)/(N + c·λ), empirical N_k/N, or
    uniform 1/c; log 0 = −inf (a class with no documents under the empirical prior, or under
    λ = 0: categorical)."""
    n = len(class_count)
    if prior == "smoothed":
        total = scalar_log(math.fsum(class_count) + n * alpha)
        return [scalar_log(c + alpha) - total for c in class_count]
    if prior == "empirical":
        total = scalar_log(math.fsum(class_count))
        return [scalar_log(c) - total for c in class_count]
    if prior == "uniform":
        return [-scalar_log(n)] * n
    raise ValueError(f"unknown prior {prior!r}")


def learner_log_prior(class_count, alpha, prior):
    """log P(k) of a learner that starts from no documents (the online protocol and the TONE
    pass, nbtext.jobs.online): the prior's, but uniform under the empirical prior while a class
    has none yet (its log 0 would rule the class out before it is learned)."""
    if prior == "empirical" and not all(class_count):
        prior = "uniform"
    return class_log_prior(class_count, alpha, prior)
