"""Robinson's token probability and Fisher's inverse chi-square combining: the spam filters'
way to score a message (SpamBayes, bogofilter), `--model fisher`. docs/math.md has the formulas.

Of two classes, the positive one (spam) and the other (ham), per token w: b_w and g_w the
documents of each holding it, N_spam and N_ham their documents, s the prior strength (λ):

    p(w) = (b_w/N_spam) / (b_w/N_spam + g_w/N_ham)
    f(w) = (s·x + n_w·p(w)) / (s + n_w),   n_w = b_w + g_w,   x = ASSUMED

A message's used tokens are its distinct tokens with |f − x| >= MIN_DEVIATION, the
MAX_TOKENS most deviant of them (equals in token order). Of their n:

    H = Q(−2 Σ ln f, 2n),  S = Q(−2 Σ ln(1 − f), 2n),  I = (1 + H − S) / 2

Q the chi-square survival function; I is the probability of spam. With P = 1 − Q,
I = (H + P_S) / 2 and 1 − I = (P_H + S) / 2: every part is computed as its logarithm
(`log_chi_square_tails`), so a message far on either side keeps its rank where I itself
would round to 0 or 1.

Each rule has two forms, the same operations in the same order: in pure Python for one
document (the one-message path imports no numpy) and over numpy arrays for a batch
(`*_of` functions, numpy imported in them). This module imports no numpy at module level.
"""

import math

from nbtext.stats.tempering import log_sum_exp

ASSUMED = 0.5  # x: f(w) of a token never seen, the prior belief the strength s weighs
MIN_DEVIATION = 0.1  # a token enters only when |f(w) − x| >= this (SpamBayes' minimum_prob_strength)
MAX_TOKENS = 150  # the most deviant tokens a message is scored on (SpamBayes' max_discriminators)
# Terms of Σ_{i>=n} m^i/i! summed past the n-th: enough for n <= MAX_TOKENS wherever the series is
# used (Q >= 1/2, so m <= n), the last term below e^-90 of the largest
TAIL_TERMS = 200
LOG_FACTORIALS = [math.lgamma(i + 1) for i in range(MAX_TOKENS + TAIL_TERMS)]
LN2 = math.log(2.0)
# f(w) and 1 − f(w) are above 0 for s > 0; floored here so that a tiny s cannot make ln 0
SMALLEST = 2.2250738585072014e-308


# --- one document, pure Python ---------------------------------------------------------------------
def token_probability(spam, ham, n_spam, n_ham, strength):
    """(f(w), 1 − f(w)) of a token in `spam` and `ham` documents of n_spam and n_ham, each
    computed from the counts (1 − f without a subtraction, where f rounds near 1)."""
    spam_ratio = spam / n_spam if n_spam > 0 else 0.0
    ham_ratio = ham / n_ham if n_ham > 0 else 0.0
    both = spam_ratio + ham_ratio
    n = spam + ham
    if both > 0:
        p, q = spam_ratio / both, ham_ratio / both
    else:
        p = q = ASSUMED
    prior = strength * ASSUMED
    return (prior + n * p) / (strength + n), (prior + n * q) / (strength + n)


def used_tokens(scored):
    """The (key, f, 1 − f) of `scored` [(key, f, 1 − f)] that enter the combining: deviant
    enough, the MAX_TOKENS most deviant, equals by key (a token, or its column: both in the
    model's token order)."""
    deviant = [(abs(f - ASSUMED), key, f, g) for key, f, g in scored if abs(f - ASSUMED) >= MIN_DEVIATION]
    deviant.sort(key=lambda item: (-item[0], item[1]))
    return [(key, f, g) for _, key, f, g in deviant[:MAX_TOKENS]]


def log_chi_square_tails(n, m):
    """(ln Q, ln P) of the chi-square distribution of 2n degrees of freedom at 2m (n >= 1,
    m >= 0): Q = e^−m Σ_{i<n} m^i/i! (the survival function), P = 1 − Q = e^−m Σ_{i>=n} m^i/i!,
    each sum in logarithms; P as 1 − Q where Q < 1/2 (nothing lost), else by its series."""
    if m <= 0:
        return 0.0, -math.inf
    log_m = math.log(m)
    log_q = -m + log_sum_exp([i * log_m - LOG_FACTORIALS[i] for i in range(n)])
    if log_q < -LN2:
        return log_q, math.log(1.0 - math.exp(log_q))
    return log_q, -m + log_sum_exp([i * log_m - LOG_FACTORIALS[i] for i in range(n, n + TAIL_TERMS)])


def _log_add(a, b):
    """ln(e^a + e^b)."""
    top = max(a, b)
    if top == -math.inf:
        return top
    return top + math.log(math.exp(a - top) + math.exp(b - top))


def log_spam_probability(used):
    """(ln I, ln(1 − I)) of the used tokens' (key, f, 1 − f); no token: I = 1/2."""
    if not used:
        return -LN2, -LN2
    m_f = -math.fsum(math.log(max(f, SMALLEST)) for _, f, _ in used)
    m_g = -math.fsum(math.log(max(g, SMALLEST)) for _, _, g in used)
    log_h, log_not_h = log_chi_square_tails(len(used), m_f)
    log_s, log_not_s = log_chi_square_tails(len(used), m_g)
    return _log_add(log_h, log_not_s) - LN2, _log_add(log_not_h, log_s) - LN2


# --- a batch, numpy ------------------------------------------------------------------------------
def token_probabilities_of(spam, ham, n_spam, n_ham, strength):
    """token_probability over arrays of counts (n_spam and n_ham numbers)."""
    import numpy as np

    spam, ham = np.asarray(spam, dtype=np.float64), np.asarray(ham, dtype=np.float64)
    spam_ratio = spam / n_spam if n_spam > 0 else np.zeros_like(spam)
    ham_ratio = ham / n_ham if n_ham > 0 else np.zeros_like(ham)
    both = spam_ratio + ham_ratio
    n = spam + ham
    seen = both > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(seen, spam_ratio / both, ASSUMED)
        q = np.where(seen, ham_ratio / both, ASSUMED)
    prior = strength * ASSUMED
    return (prior + n * p) / (strength + n), (prior + n * q) / (strength + n)


def used_cells_of(document, key, f):
    """The cells (a document, a token of it: `document` ascending, `key` its token order,
    `f` its f(w)) that enter the combining, as used_tokens chooses them per document:
    a boolean mask. One sort of the deviant cells by (document, −deviation, key)."""
    import numpy as np

    deviation = np.abs(f - ASSUMED)
    deviant = np.flatnonzero(deviation >= MIN_DEVIATION)
    order = deviant[np.lexsort((key[deviant], -deviation[deviant], document[deviant]))]
    ranked = document[order]
    first = np.searchsorted(ranked, ranked, side="left")  # each cell's document's first place
    used = np.zeros(len(document), dtype=bool)
    used[order[np.arange(len(order)) - first < MAX_TOKENS]] = True
    return used


def log_chi_square_tails_of(n, m, block=2048):
    """log_chi_square_tails over arrays (n whole numbers >= 1), in blocks of documents."""
    import numpy as np

    from nbtext.exactmath import exp, log

    n, m = np.asarray(n, dtype=np.int64), np.asarray(m, dtype=np.float64)
    log_q, log_p = np.zeros(len(n)), np.full(len(n), -np.inf)
    factorials = np.array(LOG_FACTORIALS)
    for start in range(0, len(n), block):
        part = slice(start, start + block)
        nb, mb = n[part], m[part]
        positive = mb > 0
        width = int(nb.max()) + TAIL_TERMS if len(nb) else 0
        i = np.arange(width)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = i * log(mb)[:, None] - factorials[:width]
        head = _masked_log_sum_exp(terms, i < nb[:, None])
        tail = _masked_log_sum_exp(terms, (i >= nb[:, None]) & (i < nb[:, None] + TAIL_TERMS))
        q = -mb + head
        with np.errstate(divide="ignore"):
            p = np.where(q < -LN2, log(1.0 - exp(q)), -mb + tail)
        log_q[part] = np.where(positive, q, 0.0)
        log_p[part] = np.where(positive, p, -np.inf)
    return log_q, log_p


def _masked_log_sum_exp(terms, mask):
    import numpy as np

    from nbtext.exactmath import exp, log

    values = np.where(mask, terms, -np.inf)
    top = values.max(axis=1)
    finite = np.isfinite(top)
    safe_top = np.where(finite, top, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(finite, safe_top + log(exp(values - safe_top[:, None]).sum(axis=1)), -np.inf)


def log_spam_probabilities_of(n, m_f, m_g):
    """log_spam_probability of documents given as their number of used tokens `n` and
    m_f = −Σ ln f, m_g = −Σ ln(1 − f) over them: (ln I, ln(1 − I)), arrays."""
    import numpy as np

    n = np.asarray(n, dtype=np.int64)
    has = n > 0
    log_h, log_not_h = log_chi_square_tails_of(np.maximum(n, 1), m_f)
    log_s, log_not_s = log_chi_square_tails_of(np.maximum(n, 1), m_g)
    log_spam = _log_add_of(log_h, log_not_s) - LN2
    log_ham = _log_add_of(log_not_h, log_s) - LN2
    return np.where(has, log_spam, -LN2), np.where(has, log_ham, -LN2)


def _log_add_of(a, b):
    """_log_add over arrays (exactmath's logarithm and exponential: the same bits on every CPU)."""
    import numpy as np

    from nbtext.exactmath import exp, log

    top = np.maximum(a, b)
    finite = np.isfinite(top)
    safe_top = np.where(finite, top, 0.0)
    return np.where(finite, safe_top + log(exp(a - safe_top) + exp(b - safe_top)), -np.inf)
