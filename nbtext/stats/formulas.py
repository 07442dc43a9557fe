"""The posterior of every event model's joint log-likelihoods, in numpy: log-sum-exp
normalization and softmax(jll / T(x)) with a calibrated temperature, over arrays
(nbtext.stats.tempering is the same for one document in the standard library alone). Each
event model's own formulas are its class's (nbtext.stats.event_models).
"""

import numpy as np

from nbtext.exactmath import exp, log, power
from nbtext.stats.tempering import length_floor


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
