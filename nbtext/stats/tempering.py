"""The temperature of one document, T(x) = T · max(n, m)^γ (nbtext.jobs.calibration fits T,
γ and the length floor m), in the standard library alone: the one-message path and an
online run score with it; nbtext.stats.formulas.temperatures is its form over arrays.

n is the number of the document's tokens that enter its likelihood. A document shorter
than m is tempered as one of m tokens: few tokens are little evidence, and T · n^γ alone
makes them surer than the raw model once T < 1 (docs/calibration.md). A document with n = 0
keeps its raw posterior when γ is not 0 (no evidence to temper)."""


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
