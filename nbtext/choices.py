"""Every choice list and train default, defined once.

Used by the command line (click.Choice, option defaults) and by the settings checks, so
the two can never disagree. Imports neither numpy nor click: it is read at start-up.
"""

from __future__ import annotations

from math import copysign

TYPE_CHECKING = False  # (nor typing: the type checker reads the block)
if TYPE_CHECKING:
    from typing import Any

EVENT_MODELS = ("multinomial", "bernoulli", "complement", "gaussian", "categorical", "fisher")
PRIORS = ("smoothed", "empirical", "uniform")
FEATURES = ("counts", "binary", "tfidf")
TF_MODES = ("raw", "log")
INPUT_MODES = ("auto", "mail", "text")
LEXERS = ("words", "mail")  # how text becomes tokens (nbtext.reading.tokenize.LEXER_RULES)
UNKNOWN_MODES = ("unk", "ignore")
CALIBRATIONS = ("auto", "none", "temperature")
# γ of a calibrated temperature T·n^γ (nbtext.jobs.calibration fits it, nbtext.modelfile.schema checks it):
# from one temperature for all (0) to the mean evidence per token (1); beyond 1 a longer
# document would be less sure than a shorter one of the same per-token evidence
LENGTH_EXPONENT_RANGE = (0.0, 1.0)
PREDICT_FORMATS = ("tsv", "json", "fasttext")
EVAL_FORMATS = ("table", "json")
INFO_FORMATS = ("text", "json")
# eval --online's learning rules (nbtext.jobs.online.learns): every message, the misclassified, or
# TONE, train on or near error: the misclassified and those within a margin of the other class
ONLINE_LEARNING = ("errors", "tone", "all")
# --tone-margin, in nats of log-odds: chosen with presence features and λ 0.1 on the train splits (docs/performance.md);
# the multinomial's (an event model says its own: nbtext.stats.event_models, its flags.tone_margin)
DEFAULT_TONE_MARGIN = 80.0
ONLINE_FEATURES = ("counts", "binary")  # the feature values the online protocol scores: a count, or presence
# train --learn: every document, or those one TONE pass over them in content-key order learns (nbtext.jobs.online)
TRAIN_LEARNING = ("all", "tone")
# train's settings that choose which documents the model learns, not how: declared apart from the other
# train options (eval has its own --learn, for --online), stored in a model only when not "all"
LEARNING_SETTINGS = ("learn", "tone_margin")
# train's settings of how a model's labels are decided, not of what it computes: train's own option (eval's
# --unsure-below is a use option, of the model it scores), stored in a model only when given
DECISION_SETTINGS = ("unsure_below",)
# stored settings a reader must not ignore (a reader of format 3 would score or decide otherwise):
# a file holding one is format 4 (nbtext.modelfile.container.written_version)
FORMAT_4_SETTINGS = DECISION_SETTINGS + ("max_evidence",)

DEFAULT_HEADERS = ("subject", "from", "to", "content-type")  # mail headers whose words are tokens
# train --preset: the defaults a model starts from. auto: spam's for a spam filter's classes (two, one
# named spam or ham: nbtext.labels.spam_filter_classes) when they are known before reading (CLASS_DIR
# names, the Python API's labels), else general's (TRAIN_DEFAULTS)
PRESETS = ("auto", "spam", "general")
# The spam preset: a multinomial model's defaults for a spam filter, chosen by cross-validation on the
# train splits of three spam corpora (docs/choices.md#the-spam-preset); a setting typed overrides
# its own (nbtext.classifier.settings.preset_defaults says which of these yield to what is typed)
SPAM_PRESET_MODEL = "multinomial"  # the event model whose defaults the spam preset is (--model, or its default)
SPAM_PRESET = {
    "features": "binary",
    "learn": "tone",
    "tone_margin": 20.0,
    "min_count": 1,
    "alpha": 1.0,
    "ngrams": 2,
    "char_ngrams": 3,
    "headers": DEFAULT_HEADERS + ("received", "x-mailer", "return-path", "reply-to", "message-id"),
    "max_evidence": 40,
    "calibration": "none",
    "unsure_below": 0.999,
}
MAX_CLASSES = 10_000  # a model's classes: train refuses more, the model reader a file that holds more
MAX_NGRAMS = 8  # --ngrams: word n-grams up to this length (longer ones never recur)
MAX_CHAR_NGRAMS = 8  # --char-ngrams: character n-grams of at most this length
CHAR_BYTES = 3000  # --char-ngrams: the first bytes of a message its character n-grams are of (the spam tracks')
MAX_EVIDENCE = 1 << 30  # --max-evidence: more than any document holds (a bound, for the arrays that compare with it)
DEFAULT_MAX_BYTES = 10_000_000  # --max-bytes: a document's bytes read (spamc leaves mail over 500 KB alone)
MAX_MAX_BYTES = 1 << 62  # a larger --max-bytes is this one (no read size Python takes is larger: no limit)
DEFAULT_MODEL = "nbtext.model"  # the model file, unless $NBTEXT_MODEL or -m / -o say otherwise

TRAIN_DEFAULTS: dict[str, Any] = {
    "model": "multinomial",
    "alpha": None,  # 1, or 0.1 when most training documents are e-mail (nbtext.classifier.settings)
    "prior": "smoothed",
    "min_count": 2,
    "max_features": None,
    "ngrams": 1,
    "unknown": None,  # "unk", or "ignore" with tf-idf features
    "input": "auto",
    "headers": DEFAULT_HEADERS,
    "lexer": "words",
    "char_ngrams": None,  # character n-grams of this length beside the words (None: none)
    "columns": None,  # categorical: the feature columns of the table, in order
    # feature values; None: the event model's own default (nbtext.stats.event_models)
    "features": None,
    "tf": None,
    "idf": None,
    "length_norm": None,
    "weight_norm": None,
    "max_evidence": None,  # the features that score a document: all, or each class's K most telling (nbtext.stats.evidence)
    "calibration": "auto",  # how posteriors are calibrated (nbtext.jobs.calibration)
    "max_ham_flagged": None,  # a budget of ham flagged: the spam cut-off chosen to it (nbtext.jobs.calibration)
    "learn": "all",  # which documents the model learns: all, or those a TONE pass chooses (TRAIN_LEARNING)
    "tone_margin": None,  # --learn tone's margin, in nats (None: the event model's own, its flags.tone_margin)
    "unsure_below": None,  # the model's own --unsure-below, for the commands that decide by it (None: none)
    "preset": "auto",  # the defaults the others start from (PRESETS)
    "classes": None,  # the classes the training makes, when known before reading: --preset auto chooses by them
}

# What each train setting means: the --help of `train` and `eval --folds`.
TRAIN_HELP = {
    "model": (
        "Event model: token counts (multinomial), token presence (bernoulli), complement NB "
        "(Rennie et al. 2003; tf-idf), gaussian (tf-idf), the columns of a --table (categorical), "
        "or spam filters' Robinson-Fisher combining of two classes (fisher)."
    ),
    "alpha": (
        "Smoothing λ > 0: 1 is Laplace, below 1 Lidstone [default: 1; 0.1 when most training "
        "documents are e-mail]. --model categorical also takes 0 (no smoothing: a value never seen "
        "with a class then rules that class out). --model fisher: Robinson's prior strength s."
    ),
    "prior": "Class prior: (N_k+λ)/(N+cλ), N_k/N, or 1/c.",
    "min_count": "Tokens seen fewer times are pruned (counted as UNK).",
    "max_features": "Keep only the N most frequent tokens.",
    "ngrams": "Add word n-grams up to N.",
    "unknown": (
        "Pruned and unseen tokens: count them as UNK, or drop them [default: unk; ignore with --features tfidf]."
    ),
    "input": "Parse documents as e-mail: when they look like it, always, never.",
    "headers": (
        "Mail headers whose words become tagged tokens (subject:free); * adds every other header line, "
        "tagged by its name, but Date, Message-ID, In-Reply-To and References."
    ),
    "lexer": (
        "How text becomes tokens: runs of 2+ word characters, lower-cased (words), or spam filters' rules "
        "(mail): case kept, ! . , $ kept in tokens (free!!, example.com, 10.1.2.3, $20), tokens under 3 "
        "characters dropped."
    ),
    "char_ngrams": (
        "Add the character N-grams of each message's first 3000 bytes (as sent, header lines too) beside "
        "its words, as the spam tracks' filters read short messages [default: none]."
    ),
    "features": (
        "Feature values: token counts, presence, or tf-idf [default: the model's: counts "
        "(multinomial), binary (bernoulli, fisher), tfidf (complement, gaussian)]."
    ),
    "tf": "tf-idf: the count itself, or log(1 + count) [default: log for complement, else raw].",
    "idf": "tf-idf: weight by inverse document frequency [default: on].",
    "length_norm": "tf-idf: scale each document to unit L2 length [default: on].",
    "weight_norm": "complement: normalize each class's weights to unit L1 length [default: off].",
    "max_evidence": (
        "Score each document on its K features that favour each class most (of spam and ham: the K "
        "that point to spam most and the K that point to ham most), as spam filters score a message "
        "on its most telling tokens [default: every feature]. Multinomial of counts or presence."
    ),
    "calibration": (
        "Posteriors as Naive Bayes gives them (none), or softmax(jll / (T·max(n, m)^γ)) with a "
        "temperature T, its growth γ with the document's length n and a length floor m fitted on "
        "out-of-fold predictions "
        "(probabilities that mean what they say; same labels); auto: temperature for the text "
        "models once there are 100 documents to fit T on."
    ),
    "max_ham_flagged": (
        "A budget of good mail flagged, e.g. 0.2%: spam only at a probability high enough that, "
        "judged on the training ham out of fold, at most this share of new ham would be flagged "
        "(an upper bound at 80% confidence; where the training ham are too few to bound it, spam only "
        "above every one of them, and said so); what the plain decision calls spam below it is "
        "'unsure'. Two classes, one named spam or ham; calibrated models."
    ),
    "learn": (
        "Learn every document (all), or only those one TONE pass learns (tone: train on or near error): "
        "in the order of their content, each scored by the model of those learned before it and learned "
        "when misclassified, within --tone-margin of even, or the first of its class. Multinomial of counts "
        "or presence, or "
        "fisher; calibrated on every document the pass saw."
    ),
    "tone_margin": (
        "--learn tone: learn a rightly classified document whose |log-odds| are at most this "
        "[default: 80; 4 with --model fisher, whose log-odds are ln I − ln(1 − I)]."
    ),
    "preset": (
        "The defaults of the options not given: a spam filter's (spam: presence of words, pairs of words, "
        "character 3-grams and more header lines, learned by a TONE pass, each message scored on its 40 most "
        "telling features each way, unsure below 0.999) or the general ones; auto: spam for --model multinomial "
        "when the CLASS_DIRs are two classes, one named spam or ham."
    ),
    "unsure_below": (
        "Store P in the model as its own --unsure-below: predict, filter, eval and imap-scan label "
        "'unsure' when the winning class's probability is below P, unless given their own --unsure-below."
    ),
}
TRAIN_CHOICES = {
    "model": EVENT_MODELS,
    "prior": PRIORS,
    "unknown": UNKNOWN_MODES,
    "input": INPUT_MODES,
    "lexer": LEXERS,
    "features": FEATURES,
    "tf": TF_MODES,
    "calibration": CALIBRATIONS,
    "learn": TRAIN_LEARNING,
    "preset": PRESETS,
}
TRAIN_FLAGS = ("idf", "length_norm", "weight_norm")  # --idf/--no-idf, ...
# the whole-number train settings, each from 1 up to its bound (None: no bound)
TRAIN_COUNTS = {
    "min_count": None,
    "max_features": None,
    "ngrams": MAX_NGRAMS,
    "char_ngrams": MAX_CHAR_NGRAMS,
    "max_evidence": MAX_EVIDENCE,
}


def learned_by_tone(settings):
    """Whether a model of these stored settings learned only what a TONE pass chose (files
    without the setting learned every document)."""
    return settings.get("learn", "all") == "tone"


def is_unsure_below(value):
    """Whether `value` can be a model's stored --unsure-below: a float from 0 to 1 (not -0.0,
    which no build writes: it was said "-0")."""
    return isinstance(value, float) and 0.0 <= value <= 1.0 and copysign(1.0, value) > 0


def is_max_evidence(value):
    """Whether `value` can be a --max-evidence: a whole number from 1 to MAX_EVIDENCE (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_EVIDENCE


def is_tone_margin(value):
    """Whether `value` can be a --tone-margin: a number (not a bool), at least 0 and finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")


# nbtext serve's defaults (nbtext.delivery.server): spamd's port is 783, a root's; 7830 is no common service's
SERVE_PORT = 7830
SERVE_WORKERS, SERVE_MAX_WORKERS = 2, 64
SERVE_MAX_CONNECTIONS = 64  # connections answered at once, all workers together
SERVE_TIMEOUT = 30.0  # seconds a client may send (or read) nothing
SERVE_MAX_SIZE = 500 * 1024  # spamc's own -s: a larger message is passed on unjudged
MILTER_ACTIONS = ("tag", "quarantine", "reject")  # what serve's milter does with spam (the first by default)
