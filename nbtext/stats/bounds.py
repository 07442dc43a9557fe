"""An upper confidence bound on a share: the one-sided Clopper-Pearson bound, exact (the
binomial distribution itself, no normal approximation), in the standard library alone.

Of n independent trials, k succeeded: the share p is at most upper_share(k, n, δ) with
confidence 1 − δ, the p at which k or fewer successes have probability δ,
P(Binomial(n, p) ≤ k) = δ (for k = n, 1). It is the (1 − δ) quantile of Beta(k + 1, n − k)."""

import math


def binomial_cdf(k, n, p):
    """P(Binomial(n, p) ≤ k), its terms summed in log space (exact to rounding for any n)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        for i in range(k + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))


def upper_share(k, n, risk):
    """The one-sided Clopper-Pearson upper bound, at confidence 1 − `risk`, on the share of
    which `k` of `n` trials succeeded: bisection on the binomial distribution (which falls
    as p grows) to 1e-15."""
    if not 0 <= k <= n or not 0.0 < risk < 1.0:
        raise ValueError(f"upper_share takes 0 <= k <= n and a risk in (0, 1), not k={k}, n={n}, risk={risk}")
    if k == n:
        return 1.0
    low, high = 0.0, 1.0
    while high - low > 1e-15:
        middle = (low + high) / 2.0
        if binomial_cdf(k, n, middle) > risk:
            low = middle
        else:
            high = middle
    return high


def most_within(n, share, risk):
    """The largest k of n whose upper bound upper_share(k, n, risk) is at most `share`, or
    None when even k = 0's is above it (n too small to show so small a share). The bound
    grows with k and falls with p, so it is the largest k with P(Binomial(n, share) ≤ k)
    ≤ risk: the binomial's terms summed from k = 0 until they pass `risk`."""
    if share <= 0.0:
        return None
    if share >= 1.0:
        return n
    log_p, log_q = math.log(share), math.log1p(-share)
    total, k = 0.0, -1
    while k < n:
        term = math.exp(
            math.lgamma(n + 1) - math.lgamma(k + 2) - math.lgamma(n - k) + (k + 1) * log_p + (n - k - 1) * log_q
        )
        if total + term > risk:
            break
        total, k = total + term, k + 1
    return None if k < 0 else k
