"""Fitting the temperature of calibrated probabilities, T(x) = T · max(n, m)^γ (the choices
behind it: nbtext.jobs.calibration): the mean Brier score of tempered posteriors against the
true classes, and the one-dimensional searches that minimize it (Brent's method, written out).
"""

from functools import partial

import numpy as np

from nbtext.choices import LENGTH_EXPONENT_RANGE
from nbtext.exactmath import exp, log

BETA_RANGE = (1e-4, 20.0)  # 1/T: from 10,000 times softer to 20 times sharper than raw NB
# ... where the search starts. Scores far larger than a count model's need softer (the Gaussian
# model's variance floor makes jll differences of 1e10), so the search looks on past the
# soft end (minimize_softening), down to SOFTEST_BETA.
SOFTEST_BETA = 1e-300
# γ: from one temperature for all to the mean evidence per token, no further (past 1, short
# messages come out certain; docs/calibration.md).
EXPONENT_RANGE = LENGTH_EXPONENT_RANGE
# m of T · max(n, m)^γ, the length below which a document is tempered as one of m tokens:
# the one of these whose fit has the lowest Brier score (docs/calibration.md: with γ near 1
# and T < 1, a document of a few tokens came out surer than the raw model, and where such
# documents are often wrong, as on Enron1, the fit took γ = 0 instead).
LENGTH_FLOORS = (1, 2, 4, 8, 16, 32, 64)
# A floor is kept when it lowers the Brier score by more than this share of the no-floor fit's:
# a third parameter has to pay its way, and below it the floors differ by the screening's noise
# (on a corpus of a hundred documents, by a few millionths).
FLOOR_GAIN = 1e-3
SCREENING = (1e-2, 1e-2)  # the scale's and γ's tolerances of the fits that compare the floors (then one exact fit)
# How closely the fit finds log(1/T) and γ: 0.1% of T, and n^γ within 1% up to n = 8,000
# tokens. Finer costs time (each step is a pass over the sample's (documents × classes)
# table: docs/performance.md, figures behind the code) and changes no probability that matters.
SCALE_TOLERANCE = 1e-3
EXPONENT_TOLERANCE = 1e-3


def brier_of_scaled(jll, rows, log_scale):
    """The mean Brier score of softmax(exp(log_scale) · jll) against the true classes `rows`;
    `log_scale` one number or one per document. (Σ_k p_k² − 2 p_y + 1 from the unnormalized
    exponentials e_k, p_k = e_k / Σ e: fewer passes over the table than forming p.)"""
    z = exp(np.reshape(log_scale, (-1, 1))) * jll
    z -= z.max(axis=1, keepdims=True)
    exp(z, out=z)
    total = z.sum(axis=1)
    picked = z[np.arange(len(rows)), rows]
    return float(((z * z).sum(axis=1) / (total * total) - 2.0 * picked / total).mean() + 1.0)


def brier_of_margins(margins, rows, log_scale):
    """brier_of_scaled of two classes from each document's margin, jll of its class minus
    the other's (a column): the Brier score is 2 (1 − p_y)², 1 − p_y = 1 / (1 + e^(margin · scale))."""
    wrong = 1.0 / (1.0 + exp(exp(np.reshape(log_scale, -1)) * margins[:, 0]))
    return float(2.0 * (wrong * wrong).mean())


def fit_inverse_temperature(jll, rows):
    """β = 1/T minimizing the mean Brier score of softmax(β · jll) against the true classes
    `rows`, within BETA_RANGE (one temperature for all documents)."""
    finite = np.isfinite(jll).all(axis=1)
    jll, rows = jll[finite], rows[finite]
    loss = partial(brier_of_scaled, jll, rows)
    return exp(minimize_softening(loss, 1e-6)[0])


def fit_tempering(jll, rows, lengths):
    """(T, γ, m) minimizing the mean Brier score of softmax(jll / (T · max(n, m)^γ)), n =
    lengths: each length floor m of LENGTH_FLOORS under which some document falls is tried
    with a coarser fit (SCREENING's tolerances); the lowest score wins if it is below m = 1's
    by more than FLOOR_GAIN of it, else m = 1, no floor (as in a sample without short
    documents); then T and γ are fitted as fit_temperature fits them to max(n, m)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    short = lengths[np.isfinite(jll).all(axis=1) & (lengths > 0)]
    floors = [m for m in LENGTH_FLOORS if m == 1 or np.any(short < m)]  # (past every length, the same fit)

    def floored(m):
        return np.where(lengths > 0, np.maximum(lengths, float(m)), 0.0)

    if len(floors) > 1:
        if jll.shape[1] == 2:  # the Brier score of two classes from the margins alone: a third of the work
            margins = ((jll[:, 1] - jll[:, 0]) * (2 * rows - 1))[:, None]
            scores = [_fit(margins, rows, floored(m), *SCREENING, loss=brier_of_margins)[2] for m in floors]
        else:
            scores = [_fit(jll, rows, floored(m), *SCREENING)[2] for m in floors]
        best = scores.index(min(scores))
        floors = [floors[best] if scores[best] < (1.0 - FLOOR_GAIN) * scores[0] else 1]
    return (*fit_temperature(jll, rows, floored(floors[0])), floors[0])


def fit_temperature(jll, rows, lengths):
    """(T, γ) minimizing the mean Brier score of softmax(jll / (T · n^γ)), n = lengths, γ
    within EXPONENT_RANGE; documents of length 0 keep their raw posterior
    (NaiveBayes.posterior), so they do not enter the fit.

    Nested one-dimensional searches: for each γ the best scale, then the best γ. The scale
    is fitted at the mean log-length c, 1/T(x) = exp(a − γ (log n − c)), where it hardly
    moves with γ."""
    return _fit(jll, rows, lengths, SCALE_TOLERANCE, EXPONENT_TOLERANCE)[:2]


def _fit(jll, rows, lengths, scale_tolerance, exponent_tolerance, loss=None):
    """(T, γ, the mean Brier score there) of fit_temperature, to the tolerances given;
    `loss` (brier_of_margins) in place of brier_of_scaled."""
    loss_of = brier_of_scaled if loss is None else loss
    lengths = np.asarray(lengths, dtype=np.float64)
    kept = np.isfinite(jll).all(axis=1) & (lengths > 0)
    jll, rows, log_n = jll[kept], rows[kept], log(lengths[kept])
    centre = log_n.mean() if len(log_n) else 0.0
    best = {}  # γ -> (loss, a)

    def best_scale(exponent):
        loss = lambda a: loss_of(jll, rows, a - exponent * (log_n - centre))  # noqa: E731
        a, value = minimize_softening(loss, scale_tolerance)
        best[exponent] = (value, a)
        return value

    exponent = minimize_bounded(best_scale, *EXPONENT_RANGE, exponent_tolerance)
    value, a = best[exponent]  # Brent's answer is a point it evaluated
    # 1/T(x) = exp(a − γ (log n − c)) = exp(−log T − γ log n):  T = exp(−a − γ c)
    return exp(-a - exponent * centre), float(exponent), value


def minimize_softening(loss, tolerance):
    """(x, loss(x)) for the x = log(1/T) minimizing `loss`: Brent's search over log BETA_RANGE, then
    a look beyond its soft end, a tenfold softer each step until the probabilities are all
    but uniform (the loss within 1% of theirs); where a step beats the answer, Brent's
    search between its two neighbours gives it. (Not a wider range for one search: the loss
    need not be unimodal there. SpamAssassin's Gaussian model has a local minimum where
    every answer is certain, a bump at 1/T ≈ 1e-7 and its best at 1e-9.) A count model's
    probabilities are all but uniform at the soft end already: its answer is the one
    search's."""
    low, high = log(np.array(BETA_RANGE))
    best = minimize_bounded(loss, low, high, tolerance)
    lowest = loss(best)
    softest, step, beyond = log(SOFTEST_BETA), log(10.0), None
    uniform = loss(softest)  # every posterior 1/classes
    point = low
    while point > softest:
        point -= step
        value = loss(point)
        if value < lowest:
            lowest, beyond = value, point
        if abs(uniform - value) <= 1e-2 * uniform:
            break
    if beyond is None:
        return best, lowest
    refined = minimize_bounded(loss, max(beyond - step, softest), beyond + step, tolerance)
    value = loss(refined)
    return (refined, value) if value <= lowest else (beyond, lowest)  # never worse than the range's answer


def minimize_bounded(f, low, high, tolerance):
    """The x in [low, high] minimizing a unimodal f, to within `tolerance`: Brent's method,
    a parabola through the three best points so far where it can be trusted, a golden-section
    step where not (as scipy.optimize.minimize_scalar(method="bounded"), whose import would
    be a cost of its own for every training), in far fewer evaluations than golden section
    alone takes (docs/performance.md, figures behind the code)."""
    shrink = (3.0 - np.sqrt(5.0)) / 2.0  # 0.381966...: the golden section of a bracket
    a, b = float(low), float(high)
    x = w = v = a + shrink * (b - a)
    fx = fw = fv = f(x)
    step = last_step = 0.0
    while True:
        middle = (a + b) / 2.0
        tol1 = tolerance / 3.0 + 1e-12
        tol2 = 2.0 * tol1
        if abs(x - middle) <= tol2 - (b - a) / 2.0:
            return x
        parabolic = False
        if abs(last_step) > tol1:  # try the parabola's minimum: x + p / q
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            # trusted if it moves less than half the step before last and stays inside (a, b)
            if abs(p) < abs(0.5 * q * last_step) and q * (a - x) < p < q * (b - x):
                last_step, step = step, p / q
                parabolic = True
                if (x + step) - a < tol2 or b - (x + step) < tol2:
                    step = tol1 if middle >= x else -tol1
        if not parabolic:  # golden section into the larger part of the bracket
            last_step = (a - x) if x >= middle else (b - x)
            step = shrink * last_step
        u = x + (step if abs(step) >= tol1 else (tol1 if step > 0 else -tol1))
        fu = f(u)
        if fu <= fx:  # u is the new best: the bracket shrinks to its side of x
            if u >= x:
                a = x
            else:
                b = x
            v, w, x = w, x, u
            fv, fw, fx = fw, fx, fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, w = w, u
                fv, fw = fw, fu
            elif fu <= fv or v == x or v == w:
                v, fv = u, fu
