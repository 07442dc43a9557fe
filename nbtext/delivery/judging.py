"""One message judged by a model held in memory: the verdict `nbtext filter` writes and
`nbtext serve` answers with (nbtext.delivery.spamd, nbtext.delivery.milter). One guard around
classifying a message (`verdict`): whatever goes wrong in there gives X-Nbtext-Class: error,
never a lost message.

A model of a one-message command scores in pure Python where its file allows it
(nbtext.classifier.purescore, which never imports numpy); the model loaded whole decides
wherever the two paths could print different figures (clear_of_turns).
"""

import sys

from nbtext.cutoff import cutoff_of
from nbtext.errors import ModelRefused, NbtextError, unless_signal


class OneMessageModel:
    """The model of a one-message command: one document scored in pure Python when the
    file allows it (nbtext.classifier.purescore, which never imports numpy), else by the model loaded
    whole (`.model`, loaded on first use). `held`: every document scored by the model loaded
    whole (nbtext serve, see `loaded`)."""

    def __init__(self, path, alpha=None, held=False):
        from nbtext.classifier.purescore import as_read
        from nbtext.jobs.loading import model_bytes

        self.path, self.alpha = path, alpha
        self._data = model_bytes(path)
        self.pure = as_read(self._data, path) if alpha is None and not held else None
        self._model = None

    @property
    def model(self):
        """The model loaded whole, on first use: a file it refuses is a ModelRefused, in the
        loader's words (the one-message path hands it a file whose arrays it found wrong where
        it read them, and the loader, the one validator, says what is wrong)."""
        if self._model is None:
            from nbtext.jobs.loading import model_of_bytes

            try:
                self._model = model_of_bytes(self._data, self.path, self.alpha)
            except NbtextError as e:
                raise ModelRefused(str(e)) from None
            except Exception as e:  # a check the loader missed, tripped on: the file's too
                unless_signal(e)
                raise ModelRefused(f"cannot load the model {self.path} ({e.__class__.__name__}: {e})") from None
            self._data = None  # (what the one-message path reads it holds itself)
        return self._model

    @property
    def classes(self):
        return self.pure.classes if self.pure is not None else self.model.classes

    @property
    def calibration(self):
        """The model's calibration record (its spam cut-off decides too: purescore.decide)."""
        return self.pure.header.get("calibration") if self.pure is not None else self.model.calibration

    def unsure_threshold(self, unsure_below=None):
        """The --unsure-below its labels are decided by: `unsure_below`, else the model's own
        (train --unsure-below), else None (purescore.unsure_threshold)."""
        from nbtext.classifier.purescore import unsure_threshold

        settings = self.pure.header["settings"] if self.pure is not None else self.model.settings
        return unsure_threshold(unsure_below, settings)

    def pure_probabilities(self, document):
        """P(k | document) as a list, or None when the model loaded whole must score it."""
        from nbtext.classifier.purescore import probabilities

        return probabilities(self.pure, document) if self.pure is not None else None

    def pure_explained(self, document, n):
        """(P(k | document), the n tokens that decided), or None when the model loaded
        whole must score it."""
        from nbtext.classifier.purescore import explained

        return explained(self.pure, document, n) if self.pure is not None else None

    def decide(self, document, unsure_below=None):
        """(label, its probability) of one document (bytes), as NaiveBayes.decide: of the
        one-message path's probabilities when they are `clear`, else of the model loaded whole's."""
        from nbtext.classifier.purescore import decide

        unsure_below = self.unsure_threshold(unsure_below)
        probabilities = self.clear(self.pure_probabilities(document), unsure_below)
        if probabilities is None:
            probabilities = self.model.predict_proba([document])[0]
        return decide(self.classes, probabilities, unsure_below, self.calibration)

    def clear(self, probabilities, unsure_below=None):
        """The one-message path's `probabilities` (None: it does not serve the document) when
        the label and the probability to 4 decimals that a command prints of them are those of
        the model loaded whole (clear_of_turns: away from a spam cut-off, the --unsure-below
        decided by (unsure_threshold), a tie and a fourth decimal's rounding), else None: the
        model loaded whole must score it. What predict's label, predict FILE, --is and filter
        decide by."""
        if probabilities is None:
            return None
        if not clear_of_turns(probabilities, _LabelAlone(self.unsure_threshold(unsure_below)), self.calibration):
            return None
        return probabilities

    def printed_lines(self, document, output):
        """predict's lines of one document (bytes, named -) in `output`'s form (a
        report.text.Output) as the model loaded whole prints them, scored in pure Python;
        None when the model loaded whole must print them: a model or document this path
        does not serve (or cannot read: the whole model names it, skipped), JSON (whose
        probabilities are written whole, and the two paths' last bits differ), or figures
        within AGREEMENT of where a printed digit or a decision turns."""
        from nbtext.reading.documents import Document
        from nbtext.report.text import prediction_lines

        if output.format == "json" or self.pure is None:
            return None
        output = output._replace(unsure_below=self.unsure_threshold(output.unsure_below))  # (its turn too)
        try:
            probabilities = self.pure_probabilities(document)
        except NbtextError:
            return None
        if probabilities is None or not clear_of_turns(probabilities, output, self.calibration):
            return None
        return prediction_lines(
            _Decisions(self.classes, self.calibration), [Document("-", document)], [probabilities], None, output
        )


# How far apart the one-message path's probabilities and the model loaded whole's may be
# (both are exact to about 1e-14; tests/test_purescore.py holds them to this over random
# corpora, settings and the real SpamAssassin messages).
AGREEMENT = 1e-12
# ... and relative to the probability, for the small ones a spam cut-off's ceiling reads
# (nbtext.cutoff): the log-odds of the two paths differ by the rounding of sums of the
# tokens' evidence, which grows with the length (tests/test_purescore.py holds them to it)
RELATIVE_AGREEMENT = 1e-9


def clear_of_turns(probabilities, output, calibration):
    """Whether each of `probabilities` lies further than AGREEMENT from where what predict
    prints turns: a fourth decimal's rounding, a threshold (--threshold, an older build's
    spam cut-off; --unsure-below for the winner's alone, the one purescore.decide holds to
    it), and for the most probable (the winner, -k's ranking) the next one down; and further
    than RELATIVE_AGREEMENT of it from a spam cut-off's ceiling. Then the model loaded whole,
    within these of them, prints the same line."""
    cutoff = cutoff_of(calibration)
    turns = [output.threshold] if output.threshold is not None else []
    ranked = sorted(probabilities, reverse=True)[: (output.top or 1) + 1]  # (the unranked rest may tie: 0.0000)
    if any(a - b <= AGREEMENT for a, b in zip(ranked, ranked[1:])):
        return False
    if output.unsure_below is not None and abs(ranked[0] - output.unsure_below) <= AGREEMENT:
        return False  # (a loser's probability near it turns nothing: a sure message's is near 0)
    return not any(
        abs(p * 10_000 % 1 - 0.5) <= AGREEMENT * 10_000
        or any(abs(p - t) <= AGREEMENT for t in turns)
        or cutoff is not None
        and cutoff.near(p, AGREEMENT, RELATIVE_AGREEMENT)
        for p in probabilities
    )


class _LabelAlone:
    """What a label with its probability prints (clear_of_turns's `output`: a report.text.Output,
    without its import): no --threshold, no ranking past the winner."""

    threshold = top = None

    def __init__(self, unsure_below):
        self.unsure_below = unsure_below


class _Decisions:
    """What report.text.prediction_lines asks of a model, of the one-message path's: its
    classes and its decision (purescore.decide, the rule every path decides by)."""

    def __init__(self, classes, calibration):
        self.classes, self.calibration = classes, calibration

    def decide(self, probabilities, unsure_below=None):
        from nbtext.classifier.purescore import decide

        return decide(self.classes, probabilities, unsure_below, self.calibration)


def loaded(model_path, alpha=None, held=False):
    """The OneMessageModel of the file `model_path`, checked whole now (a model the one-message
    path does not serve is loaded whole): a file that cannot be read or is no valid model is
    an NbtextError, also one the checks let through and the loader tripped on. `held`: made
    to judge many messages (nbtext serve): loaded whole and every message scored by it (in a
    process that holds numpy already its path is the faster from about 2 KB of mail up, and it
    loads faster than a lookup of the vocabulary made for pure Python), and what its scoring
    makes on first use (caches of the vocabulary and the counts) made now, by judging one
    message: nbtext serve's workers, forked after, share them instead of each making its own."""
    try:
        model = OneMessageModel(model_path, alpha, held)
        if model.pure is None:
            model.model  # noqa: B018 (loaded and checked now: a bad model file, not a bad message)
        if held:
            _warmed_up(model.model)
    except NbtextError:
        raise
    except Exception as e:
        unless_signal(e)
        raise ModelRefused(f"cannot load the model {model_path} ({e.__class__.__name__}: {e})") from None
    return model


def _warmed_up(model):
    """`model` (loaded whole) made to judge: one message scored, so that what its scoring
    makes on first use is made now. A model that judges no mail (a categorical model reads
    table rows) is no bad model file: each message then says why, as in `nbtext filter`."""
    from nbtext.reading.documents import Document

    try:
        model.score([Document("-", _FIRST_MESSAGE)])
    except NbtextError:
        pass


_FIRST_MESSAGE = b"Subject: nbtext\n\nnbtext\n"  # (judged by a held model as it is loaded)


class Verdict:
    """One message's verdict: its label (`error` where it could not be classified), the
    probability X-Nbtext-Probability shows (None for `error`), X-Nbtext-Score's pair
    (headers.spam_score; None without a class spam) and the header fields that say them.
    (A plain class: typing's NamedTuple would be one more import in one message's start-up.)"""

    __slots__ = ("label", "probability", "score", "fields")

    def __init__(self, label, probability, score, fields):
        self.label, self.probability, self.score, self.fields = label, probability, score, fields


def verdict(model, message, unsure_below, explain, max_bytes, say=None):
    """One message's Verdict: the one guard around classifying it. Whatever goes wrong in
    there (a message no tokenizer should meet, a fault of nbtext's) gives the label `error`
    (X-Nbtext-Class: error), said in one line (to `say`, else on stderr), never a lost message;
    but a model file the loader refuses only now (ModelRefused: the one-message path found it
    wrong where the message's tokens read it) is raised, as when it is loaded (`loaded`). A message is
    classified as `predict` classifies its bytes whenever it has a header block to put the
    verdict in (headers.header_block: a blank line after it or not)."""
    from nbtext.delivery.headers import header_block, shown_probability, spam_score, verdict_fields

    try:
        from nbtext.classifier.purescore import decide
        from nbtext.reading.documents import Document, cut
        from nbtext.reading.mail import strip_envelope

        if header_block(message) is None:
            raise NbtextError("not a mail message (no header block)")
        unsure_below = model.unsure_threshold(unsure_below)  # (the command's, else the model's own)
        document = cut(strip_envelope(message), max_bytes)  # (classified as read from a file: no envelope line)
        scored = model.pure_explained(document, explain) if explain else (model.pure_probabilities(document), ())
        probabilities, evidence = scored if scored is not None else (None, ())
        score = clear_score(model, model.clear(probabilities, unsure_below), unsure_below)
        # scored by the whole model where the one-message path is not clear (errors named as for any document)
        if score is False:
            from nbtext.exactmath import exp

            _, log_proba, explanations = model.model.score([Document("-", document)], explain=explain)
            probabilities, evidence = exp(log_proba[0]), explanations[0] if explain else ()
            score = spam_score(model.classes, log_proba[0], unsure_below, model.calibration)
        label, probability = decide(model.classes, probabilities, unsure_below, model.calibration)
        shown = shown_probability(model.classes, probabilities, probability)
        return Verdict(label, shown, score, verdict_fields(label, shown, evidence, score))
    except ModelRefused:  # the model file's fault, found as the message was scored: the caller's to say
        raise
    except NbtextError as e:
        (say or _said)(str(e))
    except Exception as e:  # a fault of nbtext's, not of the message: the message still goes on
        unless_signal(e)
        (say or _said)(f"cannot classify the message ({e.__class__.__name__}: {e})")
    return UNJUDGED


def tagged(message, fields, say=None):
    """`message` with the verdict's header `fields` (headers.with_headers), or with
    X-Nbtext-Class: error where those cannot be written as a header: the message goes on
    (why, said in one line to `say`, else on stderr)."""
    from nbtext.delivery.headers import verdict_fields, with_headers

    try:
        return with_headers(message, fields)
    except Exception as e:
        unless_signal(e)
        (say or _said)(f"cannot write the verdict ({e.__class__.__name__}: {e})")
        return with_headers(message, verdict_fields("error", None))


def _said(line):
    """A line on stderr, as every nbtext command says its problems."""
    print(f"nbtext: {line}", file=sys.stderr)


def clear_score(model, probabilities, unsure_below):
    """X-Nbtext-Score's pair (headers.spam_score) of the one-message path's `probabilities`
    (None: not clear), or False where the model loaded whole must give it: a probability
    below float64's least normal number (its log below about −708, where the float holds too
    few digits or is 0: the whole model's log-probabilities are exact there) or a score within
    agreement of where its second decimal turns."""
    import math

    from nbtext.delivery.headers import spam_score

    if probabilities is None or not all(p >= sys.float_info.min for p in probabilities):
        return False  # (a subnormal's log is off by up to a percent: the whole model's logs are exact)
    score = spam_score(model.classes, [math.log(p) for p in probabilities], unsure_below, model.calibration)
    if score is not None and abs(score[0] * 100 % 1 - 0.5) <= RELATIVE_AGREEMENT * 100 * max(1.0, abs(score[0])):
        return False
    return score


UNJUDGED = Verdict("error", None, None, [("X-Nbtext-Class", "error")])  # (headers.verdict_fields("error", None))
