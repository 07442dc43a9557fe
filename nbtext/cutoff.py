"""The spam cut-off of a ham-flagged budget (`train --max-ham-flagged`), as a model file's
calibration record holds it, and what it leaves unsure. nbtext.jobs.calibration chooses it,
nbtext.modelfile.schema checks it, nbtext.classifier.purescore.decide decides by it; the
one-message path's agreement check, eval and info read it here. What each of its two kinds
means (its range, its decision, when it means never, where the paths must agree, its words)
is written here alone (`Cutoff`): no other module tells the kinds apart.

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
KEYS = (OTHER_CEILING, SPAM_FLOOR)  # a calibration record holds one of them at most
# with a cut-off, where the other class's documents out of fold were too few for any share of
# them flagged to bound the budget: their count (the cut-off then lies under every one of them)
TOO_FEW = "too_few_to_bound"
AFTER_ONE = 1.0000000000000002  # the float after 1 (math.nextafter(1.0, 2.0); math is not imported for it)


class Cutoff:
    """A spam cut-off: its record's `key` (OTHER_CEILING or SPAM_FLOOR), its `value` (q or
    c) and the `positive` class it holds back (the spam class). (A plain class: a
    namedtuple's definition would cost the one-message path's start-up more.)"""

    __slots__ = ("key", "value", "positive")

    def __init__(self, key, value, positive):
        self.key, self.value, self.positive = key, value, positive

    @property
    def _ceiling(self):
        return self.key == OTHER_CEILING

    def in_range(self):
        """Whether its value is one its kind can hold: q in [0, 1/2], c in [1/2, the number
        after 1] (past 1: ham was certain out of fold, nothing is spam)."""
        if self._ceiling:
            return 0.0 <= self.value <= 0.5
        return 0.5 <= self.value <= AFTER_ONE

    def holds_back(self, probabilities, k):
        """Whether it leaves unsure a document the plain decision gives to the positive class,
        the k-th of two, by its `probabilities` (one per class)."""
        if self._ceiling:
            return not float(probabilities[1 - k]) < self.value
        return float(probabilities[k]) < self.value

    def log_odds_from(self):
        """The log-odds of the positive class against the other, ln(P(positive) / P(other)),
        from which it is the positive class (inf: never): above ln((1 − q) / q) for a
        ceiling, from ln(c / (1 − c)) up for a floor."""
        import math

        if self.never or (not self._ceiling and self.value >= 1.0):
            return math.inf
        if self._ceiling:
            return math.log((1.0 - self.value) / self.value)
        return math.log(self.value / (1.0 - self.value))

    @property
    def never(self):
        """Whether it leaves every document of the positive class unsure: q = 0, c past 1."""
        return self.value == 0.0 if self._ceiling else self.value > 1.0

    def near(self, p, absolute, relative):
        """Whether probability `p` lies within `absolute` of a floor, or within `relative` of
        a ceiling's value (a ceiling reads small probabilities, exact to a share of them)."""
        if self._ceiling:
            return abs(p - self.value) <= relative * self.value
        return abs(p - self.value) <= absolute

    def said(self, other, budget, too_few=None):
        """(It in words, what it leaves unsure), with `other` the other class's name and
        `budget` the share of it flagged at most (max_ham_flagged, as a percentage); `too_few`:
        the count of the other class's documents out of fold where they could bound no share
        flagged within the budget (the record's TOO_FEW): then it says what it is instead."""
        positive, value = self.positive, self.value
        if too_few is not None:
            return (
                f"{positive} only when the probability of {other} is below {value:.3g}, under every one of the "
                f"{too_few:,} {other} documents out of fold: they are too few to bound the share flagged by "
                f"{budget}, so no such bound is claimed",
                "at or above it, up to 0.5: unsure",
            )
        if self.never:
            return (
                f"never {positive}: the other class was certain of it out of fold, so no cut-off keeps to "
                f"{budget} flagged",
                f"what would be {positive} is unsure",
            )
        bound = "an upper bound from the training data out of fold"
        if self._ceiling:
            words = (
                f"{positive} when the probability of {other} is below {value:.3g} (at most {budget} of {other} "
                f"flagged, {bound})",
                "at or above it, up to 0.5: unsure",
            )
        else:  # (an older build's file)
            words = (
                f"{positive} from a probability of {value:.6f} up (at most {budget} of the other class flagged, "
                f"{bound})",
                "below it, down to 0.5: unsure",
            )
        if value == 0.5:  # the plain decision's own turn: no band between them
            return words[0], "it leaves nothing unsure: it is the plain decision"
        return words

    def unsure_band(self, negative):
        """What it leaves unsure, short (an online run's report), `negative` the other class."""
        if self._ceiling:
            return f"{self.positive} with {negative} at {self.value:.3g} or more"
        return f"{self.positive} below {self.value:.4f}"


def cutoff_of(record):
    """The Cutoff a calibration record (or an online run's report of the unsure ones,
    `report_fields`) holds, or None."""
    for key in KEYS:
        if key in (record or {}):
            return Cutoff(key, record[key], record.get("positive"))
    return None


def held_back(classes, probabilities, k, calibration):
    """Whether the cut-off of `calibration` (if any) leaves unsure a document whose most
    probable of two `classes` is the k-th, by its `probabilities` (one per class)."""
    cutoff = cutoff_of(calibration)
    return cutoff is not None and classes[k] == cutoff.positive and cutoff.holds_back(probabilities, k)


def budget_record(positive, ceiling, max_ham_flagged, too_few=None):
    """The calibration record's fields of a ham-flagged budget as this build writes them, in
    the model file's order: the positive class, the ceiling q and the budget, and with
    `too_few` (the other class's documents out of fold, too few to bound it) TOO_FEW."""
    record = {"positive": positive, OTHER_CEILING: ceiling, "max_ham_flagged": max_ham_flagged}
    return record if too_few is None else {**record, TOO_FEW: too_few}


def report_fields(cutoff):
    """The fields an online run's report of the unsure ones gives `cutoff` (a Cutoff or None):
    its key and value and its positive class (None without one)."""
    if cutoff is None:
        return {OTHER_CEILING: None, "positive": None}
    return {cutoff.key: cutoff.value, "positive": cutoff.positive}
