"""The temperature of one document, T(x) = T · max(n, m)^γ (nbtext.jobs.calibration fits T,
γ and the length floor m), and its posterior softmax(jll / T(x)), in the standard library
alone: the one-message path and an online run score with them; nbtext.stats.formulas'
temperatures and tempered_log_posterior are their forms over arrays.

n is the number of the document's tokens that enter its likelihood. A document shorter
than m is tempered as one of m tokens: few tokens are little evidence, and T · n^γ alone
makes them surer than the raw model once T < 1 (docs/calibration.md). A document with n = 0
keeps its raw posterior when γ is not 0 (no evidence to temper)."""

import math


def length_floor(calibration):
    """m of a calibration record: 1 (no floor) when it holds none, as files before it."""
    return calibration.get("length_floor", 1)


def document_temperature(calibration, length):
    """T(x) of a document of `length` tokens under `calibration` ({} or None: 1)."""
    calibration = calibration or {}
    exponent = calibration.get("length_exponent", 0.0)
    if length == 0 and exponent:
        return 1.0  # no evidence to temper
    return calibration.get("temperature", 1.0) * float(max(length, length_floor(calibration))) ** exponent


def tempered_posterior(jll, temperature):
    """(P(k | x) for each class, jll / T) of one document's joint log-likelihoods `jll`:
    softmax(jll / T) = e^(jll_k / T − ln Σ_j e^(jll_j / T)); uniform where no class's is finite
    (nothing tells them apart), as formulas.log_normalize."""
    tempered = [v / temperature for v in jll]
    log_total = log_sum_exp(tempered)
    if not math.isfinite(log_total):
        return [1.0 / len(tempered)] * len(tempered), tempered
    return [math.exp(v - log_total) for v in tempered], tempered


def log_sum_exp(values):
    """ln Σ e^v of `values` (floats), as top + ln Σ e^(v − top) with top the largest (no
    e^v overflows, and the sum is at least 1); the largest itself where it is not finite."""
    top = max(values)
    if not math.isfinite(top):
        return top
    return top + math.log(math.fsum(math.exp(v - top) for v in values))
