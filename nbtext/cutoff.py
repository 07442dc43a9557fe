"""The spam cut-off of a ham-flagged budget (`train --max-ham-flagged`), as a model file's
calibration record holds it, and what it leaves unsure. nbtext.jobs.calibration chooses it,
nbtext.modelfile.schema checks it, nbtext.classifier.purescore.decide decides by it; the
one-message path's agreement check, eval and info read it here.

A ceiling on the probability of the other class (OTHER_CEILING, q): a document the plain
decision gives to the positive class (the spam class) is that class when P(other | document)
< q, and unsure otherwise. In exact arithmetic the same as P(spam) > 1 − q, but not in
float64: there P(spam) is exactly 1.0 once the log-odds pass about 37, so every surer spam
ties with the ham most sure to be spam, while P(other) holds down to about 1e-308 (log-odds
about 709). Strictly below, so that q = 0 leaves everything unsure: the cut-off of a budget
whose excluded ham had P(other) = 0 (nothing can be told from it).

Files of older builds hold a floor on the probability of spam instead (SPAM_FLOOR, c in
[1/2, the number after 1]: spam from c up); they decide as they did.
"""

OTHER_CEILING = "other_ceiling"  # this build's: spam when P(other | document) < q, q in [0, 1/2]
SPAM_FLOOR = "spam_cutoff"  # older builds': spam when P(spam | document) >= c


def cutoff_of(calibration):
    """(key, value) of the cut-off a calibration record holds (OTHER_CEILING or SPAM_FLOOR),
    or None."""
    for key in (OTHER_CEILING, SPAM_FLOOR):
        if key in (calibration or {}):
            return key, calibration[key]
    return None


def held_back(classes, probabilities, k, calibration):
    """Whether the cut-off of `calibration` (if any) leaves unsure a document whose most
    probable of two `classes` is the k-th, by its `probabilities` (one per class)."""
    cutoff = cutoff_of(calibration)
    if cutoff is None or classes[k] != calibration["positive"]:
        return False
    key, value = cutoff
    if key == OTHER_CEILING:
        return not float(probabilities[1 - k]) < value
    return float(probabilities[k]) < value
