"""Train settings: their checks, the settings dict a model stores, and TrainSettings, the
value a training is given.

Every setting that changes what a model computes travels in the model file, so a loaded
model tokenizes, weights and smooths exactly as it was trained to. The choices and the
defaults are nbtext.choices'; what each event model allows is nbtext.stats.event_models'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from nbtext.choices import (
    CALIBRATIONS,
    FEATURES,
    INPUT_MODES,
    LEXERS,
    MAX_CHAR_NGRAMS,
    MAX_EVIDENCE,
    MAX_NGRAMS,
    PRESETS,
    PRIORS,
    SPAM_PRESET,
    SPAM_PRESET_MODEL,
    TF_MODES,
    TRAIN_DEFAULTS,
    TRAIN_LEARNING,
    UNKNOWN_MODES,
    is_max_evidence,
    is_tone_margin,
    is_unsure_below,
)
from nbtext.errors import NbtextError
from nbtext.labels import spam_filter_classes
from nbtext.reading.tokenize import RowTokenizer, Tokenizer
from nbtext.stats.event_models import EVENT_MODELS

TYPE_CHECKING = False  # (typing is not imported on the one-message path; the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    # the settings a model stores (its file's settings JSON): {"event_model": "multinomial", "alpha": 1.0, ...}
    StoredSettings = dict[str, Any]
    # a train option's value as make_settings takes it, by name (nbtext.choices.TRAIN_DEFAULTS)
    Options = Mapping[str, Any]

TEXT_ALPHA = 1.0  # Laplace
# Mail has a large, sparse vocabulary (header tags, hosts, HTML leftovers) where add-one
# smoothing gives rare tokens far too much mass: on the SpamAssassin split λ = 0.1 makes
# 8 errors where λ = 1 makes 12, and flags 5 ham messages instead of 9 (see the README).
MAIL_ALPHA = 0.1


def check_settings(
    event_model: str,
    alpha: Any,
    prior: str,
    min_count: Any,
    max_features: Any,
    unknown: str,
    ngrams: Any,
    max_evidence: Any = None,
) -> None:
    """Refuse bad settings with a message that names the option to change."""
    if event_model not in EVENT_MODELS:
        raise NbtextError(f"unknown model {event_model!r} (choose from {', '.join(EVENT_MODELS)})")
    if prior not in PRIORS:
        raise NbtextError(f"unknown prior {prior!r} (choose from {', '.join(PRIORS)})")
    if unknown not in UNKNOWN_MODES:
        raise NbtextError(f"unknown --unknown mode {unknown!r} (choose from {', '.join(UNKNOWN_MODES)})")
    check_alpha(alpha, zero_allowed=EVENT_MODELS[event_model].flags.zero_alpha)
    if not isinstance(min_count, int) or min_count < 1:
        raise NbtextError(f"--min-count must be a whole number >= 1, not {min_count!r}")
    if max_features is not None and (not isinstance(max_features, int) or max_features < 1):
        raise NbtextError(f"--max-features must be a whole number >= 1, not {max_features!r}")
    if not isinstance(ngrams, int) or not 1 <= ngrams <= MAX_NGRAMS:
        raise NbtextError(f"--ngrams must be a whole number from 1 to {MAX_NGRAMS}, not {ngrams!r}")
    if max_evidence is not None and not is_max_evidence(max_evidence):
        raise NbtextError(f"--max-evidence must be a whole number from 1 to {MAX_EVIDENCE}, not {max_evidence!r}")


def check_alpha(alpha: Any, zero_allowed: bool = False) -> None:
    number = isinstance(alpha, (int, float)) and math.isfinite(alpha)
    if not number or alpha < 0 or (alpha == 0 and not zero_allowed):
        raise NbtextError(
            f"--alpha must be a number > 0, not {alpha!r} (1 is Laplace smoothing, below 1 Lidstone; "
            "0 only for --model categorical)"
        )


def make_tokenizer(settings: Mapping[str, Any]) -> Tokenizer | RowTokenizer:
    """The tokenizer that tokenizer settings describe: text (and mail), or table rows."""
    if settings.get("kind") == "row":
        return RowTokenizer(settings["columns"])
    return Tokenizer.from_settings(settings)


class TrainSettings(Mapping):  # (of str to a setting; a bare base: no typing at run time)
    """What a training is told, as one value made once per command (make_settings) and never
    changed: the settings its model stores (read as a mapping: settings["alpha"]), the
    calibration as it applies (`calibration`: "none" for a model of table rows under "auto")
    and the budget of ham flagged (`budget`, a share, or None). λ left to the corpus is None
    until `resolved` gives the value with it chosen (`default_alpha` says it was left so)."""

    __slots__ = ("_stored", "calibration", "budget", "default_alpha")
    _stored: Mapping[str, Any]  # (read-only: _frozen)
    calibration: str  # one of nbtext.choices.CALIBRATIONS
    budget: float | None
    default_alpha: bool

    def __init__(self, stored: Mapping[str, Any], calibration: str, budget: float | None, default_alpha: bool):
        for name, value in zip(self.__slots__, (_frozen(stored), calibration, budget, default_alpha)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("train settings are a value: make new ones (TrainSettings.resolved)")

    def __getitem__(self, key: str) -> Any:
        return self._stored[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._stored)

    def __len__(self) -> int:
        return len(self._stored)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TrainSettings):
            return NotImplemented
        return (self.stored(), self.calibration, self.budget, self.default_alpha) == (
            other.stored(),
            other.calibration,
            other.budget,
            other.default_alpha,
        )

    __hash__ = None  # type: ignore[assignment]  # (compared by value: no hash)

    def __reduce__(
        self,
    ) -> tuple[
        type[TrainSettings], tuple[StoredSettings, str, float | None, bool]
    ]:  # (a cluster's workers are sent it pickled)
        return TrainSettings, (self.stored(), self.calibration, self.budget, self.default_alpha)

    def __repr__(self) -> str:
        return f"TrainSettings({self.stored()!r}, calibration={self.calibration!r}, budget={self.budget!r})"

    def stored(self) -> StoredSettings:
        """The settings a model stores, as a new dict (its file's settings JSON)."""
        return model_settings(self._stored)

    def resolved(self, mail_documents: float, documents: float) -> TrainSettings:
        """These settings with λ chosen, if it was left to the corpus: default_alpha's."""
        if self["alpha"] is not None:
            return self
        alpha = corpus_alpha(self, {"mail_documents": mail_documents, "default_alpha": True}, documents)
        return TrainSettings({**self.stored(), "alpha": alpha}, self.calibration, self.budget, self.default_alpha)


def _frozen(value: Any) -> Any:
    """A settings value that cannot be changed: dicts as read-only mappings, lists as tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value


def model_settings(settings: Any) -> Any:
    """The settings dict a model holds (and its file stores) of stored settings, a model's
    own or TrainSettings': a new dict, nested ones and lists new too (lists as a file
    reads them back)."""
    if isinstance(settings, Mapping):
        return {key: model_settings(item) for key, item in settings.items()}
    if isinstance(settings, (list, tuple)):
        return [model_settings(item) for item in settings]
    return settings


def make_settings(**options: Any) -> TrainSettings:
    """The validated TrainSettings of train options (see TRAIN_DEFAULTS): those not given
    (None) are the preset's (preset_defaults), else TRAIN_DEFAULTS'. An option given that
    would change nothing for the model is refused (unused_options)."""
    unknown_options = set(options) - set(TRAIN_DEFAULTS)
    if unknown_options:
        raise TypeError(f"unknown train options: {', '.join(sorted(unknown_options))}")
    if options.get("headers") is not None:  # names, however spelled, before they are compared with the default
        options = {**options, "headers": header_names(options["headers"])}
    given = {k: _zero_signless(v) for k, v in options.items() if v is not None}
    preset = preset_defaults(given)
    chosen = {k for k, v in given.items() if v != TRAIN_DEFAULTS.get(k)}  # (a default given changes nothing)
    from nbtext.classifier.options_read import unread_by_all  # (not on the one-message path's start)

    if unread := unread_by_all({**preset, **given}, [given.get("model", TRAIN_DEFAULTS["model"])], chosen):
        raise NbtextError(f"{unread[0]} does nothing here: {unread[1]}; drop it")
    o = {**TRAIN_DEFAULTS, **preset, **given}  # (None: the default)
    stored = _stored_settings(o)
    calibration = o["calibration"]
    if calibration == "auto" and not EVENT_MODELS[stored["event_model"]].flags.calibrates:
        calibration = "none"  # (a model of table rows: categorical)
    budget = ham_flagged_budget(o["max_ham_flagged"])
    if budget is not None and calibration == "none":
        raise NbtextError(BUDGET_REFUSED)
    return TrainSettings(stored, calibration, budget, default_alpha=o["alpha"] is None)


def preset_of(options: Options) -> str:
    """The preset whose defaults a training of train `options` (those given) starts from:
    "spam" for a model of SPAM_PRESET_MODEL (--model, or its default) with --preset spam, or --preset
    auto and a spam filter's classes (labels.spam_filter_classes: two, one named spam or ham,
    in any case) known before reading; else "general" (TRAIN_DEFAULTS alone)."""
    preset = options.get("preset") or TRAIN_DEFAULTS["preset"]
    if preset not in PRESETS:
        raise NbtextError(f"unknown --preset {preset!r} (choose from {', '.join(PRESETS)})")
    if (options.get("model") or TRAIN_DEFAULTS["model"]) != SPAM_PRESET_MODEL:
        return "general"
    classes = options.get("classes")
    auto_spam = preset == "auto" and classes is not None and spam_filter_classes(classes)
    return "spam" if preset == "spam" or auto_spam else "general"


# the kind of model the spam preset's decision (uncalibrated, unsure below 0.999) was chosen for
PRESET_KIND = (SPAM_PRESET["features"], SPAM_PRESET["learn"])


def preset_defaults(given: Options) -> dict[str, Any]:
    """The defaults of the preset of train options `given` (preset_of) for the options not
    given, beside TRAIN_DEFAULTS: {} for the general preset. Of the spam preset's, those that
    what is given leaves unread (OPTIONS_READ: its --learn tone and --max-evidence beside
    --features tfidf, its --headers beside --input text) are left out, and so is its decision
    (--calibration none, --unsure-below 0.999) beside a budget of ham flagged (which takes a
    calibrated model) or where the model is not of its kind (presence learned by a TONE pass:
    PRESET_KIND, as --features counts or tfidf or --learn all make it), its --unsure-below
    beside any calibration given but none. With a pruning
    given (--min-count above 1, --max-features) its presence features drop pruned tokens
    (--unknown ignore), so that the model can still be updated, forgotten and merged."""
    from nbtext.classifier.options_read import unused_options

    if preset_of(given) != "spam":
        return {}
    preset = {k: v for k, v in SPAM_PRESET.items() if k not in given}
    for _ in range(2):  # (once --learn tone is left out, its --tone-margin is unread)
        preset = {k: v for k, v in preset.items() if not unused_options({**given, **preset}, typed={k})}
    model = {**TRAIN_DEFAULTS, **preset, **given}
    if "max_ham_flagged" in given or (model["features"], model["learn"]) != PRESET_KIND:
        # its decision is of its kind of model's own probabilities; a budget's cut-off of calibrated ones
        for decision in ("calibration", "unsure_below"):
            preset.pop(decision, None)
    elif model["calibration"] != "none":
        preset.pop("unsure_below", None)
    if "unknown" not in given and unk_counts_pruned_documents({**model, "unknown": "unk"}):
        preset["unknown"] = "ignore"  # (pruning typed: an UNK of presence could not be updated, forgotten or merged)
    return preset


def _zero_signless(value: Any) -> Any:
    """A train option as a model stores it: -0.0 is 0.0 (equal to it, it was written -0.0 into
    the model file and said "-0"), as the command line's float options take it (cli.options.Number)."""
    return value + 0.0 if isinstance(value, float) else value


BUDGET_REFUSED = (
    "--max-ham-flagged chooses a cut-off on a calibrated text model's out-of-fold "
    "probabilities: not with --calibration none, --model categorical or --shard"
)


# ({}: the option that splits the training, as typed; the CLI's table of refusals says it too)
TONE_SPLIT_REFUSED = (
    "--learn tone's pass (the spam preset's too, a model of spam and ham by default) takes every document in "
    "one order: {} does not go with it (train with --learn all, or on all the documents in one place)"
)


# ({}: the option as typed, --unsure-below; the CLI's table of refusals says it too, before reading)
FOLDS_UNSURE_REFUSED = (
    "--folds decides by {} on its folds' models' own probabilities, which are not calibrated: give "
    "--calibration none (the models it stands for), or judge a calibrated model by eval -m MODEL"
)


def _stored_settings(o: Options) -> StoredSettings:
    """The settings dict a model stores, of train options `o` (every one given: the
    defaults filled in), checked."""
    if o["calibration"] not in CALIBRATIONS:
        raise NbtextError(f"unknown --calibration {o['calibration']!r} (choose from {', '.join(CALIBRATIONS)})")
    alpha = TEXT_ALPHA if o["alpha"] is None else o["alpha"]  # checked now, resolved after counting
    check_settings(
        o["model"],
        alpha,
        o["prior"],
        o["min_count"],
        o["max_features"],
        o["unknown"] or "unk",
        o["ngrams"],
        o["max_evidence"],
    )
    if o["input"] not in INPUT_MODES:
        raise NbtextError(f"unknown --input {o['input']!r} (choose from {', '.join(INPUT_MODES)})")
    if o["lexer"] not in LEXERS:
        raise NbtextError(f"unknown --lexer {o['lexer']!r} (choose from {', '.join(LEXERS)})")
    chars = o["char_ngrams"]
    if chars is not None and (
        not isinstance(chars, int) or isinstance(chars, bool) or not 1 <= chars <= MAX_CHAR_NGRAMS
    ):
        raise NbtextError(f"--char-ngrams must be a whole number from 1 to {MAX_CHAR_NGRAMS}, not {chars!r}")
    event, learning = EVENT_MODELS[o["model"]], _learning(o)
    if o["calibration"] == "temperature" and not event.flags.calibrates:  # refused before any corpus is read
        raise NbtextError(f"--calibration temperature is for the text models, not --model {event.name}")
    defaults = event.flags.default_features
    if defaults is None:  # a model of table rows
        if not o["columns"]:
            raise NbtextError(f"--model {event.name} reads a table: give --table FILE --label-col NAME")
        # every value counts: no pruning, and unseen values are handled per feature
        return {
            "event_model": event.name,
            "alpha": None if o["alpha"] is None else float(o["alpha"]),
            "prior": o["prior"],
            "min_count": 1,
            "max_features": None,
            "unknown": "ignore",
            "tokenizer": RowTokenizer(o["columns"]).settings(),
            **_decision(o),
        }
    shape = {k: (defaults[k] if o[k] is None else o[k]) for k in defaults}
    if shape["features"] not in FEATURES:
        raise NbtextError(f"unknown --features {shape['features']!r} (choose from {', '.join(FEATURES)})")
    if shape["tf"] not in TF_MODES:
        raise NbtextError(f"unknown --tf {shape['tf']!r} (choose from {', '.join(TF_MODES)})")
    if shape["features"] not in event.flags.feature_kinds:
        raise NbtextError(event.flags.feature_kind_error)
    unknown = o["unknown"] or ("ignore" if shape["features"] == "tfidf" or not event.flags.reads_unk else "unk")
    if unknown == "unk" and shape["features"] == "tfidf":
        raise NbtextError(
            "--features tfidf drops unknown tokens: an UNK feature has no document frequency "
            "to weight it by (use --unknown ignore)"
        )
    return {
        "event_model": event.name,
        "alpha": None if o["alpha"] is None else float(o["alpha"]),
        "prior": o["prior"],
        "min_count": o["min_count"],
        "max_features": o["max_features"],
        "unknown": unknown,
        **shape,
        "tokenizer": Tokenizer(o["ngrams"], o["input"], o["headers"], o["lexer"], o["char_ngrams"]).settings(),
        **({} if o["max_evidence"] is None else {"max_evidence": o["max_evidence"]}),
        **learning,
        **_decision(o),
    }


def _learning(o: Options) -> dict[str, Any]:
    """The stored settings of which documents a model learns: none for every one (--learn all,
    as models before --learn), else the rule and its margin."""
    if o["learn"] not in TRAIN_LEARNING:
        raise NbtextError(f"unknown --learn {o['learn']!r} (choose from {', '.join(TRAIN_LEARNING)})")
    if o["learn"] == "all":
        return {}
    margin = tone_margin_of(o["model"], o["tone_margin"])
    if not is_tone_margin(margin):
        raise NbtextError(f"--tone-margin must be a number >= 0 (nats of log-odds), not {margin!r}")
    return {"learn": o["learn"], "tone_margin": float(margin)}


def tone_margin_of(event_model: str, *given: float | None) -> float:
    """--learn tone's margin: the first of `given` that is not None (--tone-margin, then a
    model's own), else the event model's (its flags.tone_margin) named `event_model`."""
    return next((margin for margin in given if margin is not None), EVENT_MODELS[event_model].flags.tone_margin)


def _decision(o: Options) -> dict[str, Any]:
    """The stored settings of how the model's labels are decided: none unless train was given
    --unsure-below (then the model's own, for the commands that decide: purescore.unsure_threshold)."""
    if o["unsure_below"] is None:
        return {}
    value = o["unsure_below"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = float(value) + 0.0  # (a plain float, as the command line's: numpy's float64 too; -0 is 0)
    if not is_unsure_below(value):
        raise NbtextError(f"--unsure-below must be a probability from 0 to 1, not {o['unsure_below']!r}")
    return {"unsure_below": value}


def header_names(headers: str | Iterable[str]) -> tuple[str, ...]:
    """--headers as names: a sequence of them, or the command line's spelling, 'subject,from'
    (a string is not taken letter by letter); one that names no header line is refused."""
    from nbtext.reading.mail import header_name_problem  # (not on the one-message path's start)

    names = tuple(h.strip() for h in headers.split(",") if h.strip()) if isinstance(headers, str) else tuple(headers)
    for name in names:
        if problem := header_name_problem(name):
            raise NbtextError(problem)
    return names


def ham_flagged_budget(value: object) -> float | None:
    """--max-ham-flagged as a share: '0.2%' or '0.002' -> 0.002; None stays None."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        share = math.nan
    if not 0 <= share < 0.5:
        raise NbtextError(
            f"--max-ham-flagged takes a share of the ham from 0 to 50% (less than half), like 0.2%, not {value!r}"
        )
    return share + 0.0  # (-0 is 0)


def default_alpha(event_model: str, mail_documents: float, documents: float) -> float:
    """λ left to the corpus: MAIL_ALPHA for the token models (multinomial, bernoulli) when
    most training documents were read as e-mail, else TEXT_ALPHA (complement NB included,
    as in Rennie et al.; docs/performance.md has what 0.1 would cost it)."""
    mostly_mail = 2 * mail_documents > documents
    return MAIL_ALPHA if mostly_mail and EVENT_MODELS[event_model].flags.mail_alpha else TEXT_ALPHA


def corpus_alpha(settings: Mapping[str, Any], corpus: Mapping[str, Any] | None, documents: float) -> float:
    """The λ of a model of `documents` counted (Σ_k N_k) whose corpus record is `corpus`
    ({"mail_documents", "default_alpha"}, NaiveBayes.corpus): default_alpha of the record's
    documents read as mail when λ was left to the corpus, else the settings' own (given, or
    a preset's; None for a record of an older build, which does not say). The one rule every
    model of changed counts takes its λ by (a training's, update's, forget's, merge's, a
    pending section's reader's, a fold's), so each is the λ one training of its documents
    chooses."""
    if corpus is None or not corpus["default_alpha"]:
        return settings["alpha"]
    return default_alpha(settings["event_model"], corpus["mail_documents"], documents)


TFIDF_MERGE = (
    "its tf-idf features need every document's idf; use --features counts or binary, "
    "or train on all the documents at once"
)
UNK_MERGE = (
    "which documents held a pruned token is not in the counts of presence features with an UNK "
    "feature; train with --unknown ignore or --min-count 1, or on all the documents at once"
)


TONE_MERGE = (
    "a --learn tone model's temperature is fitted on documents its pass saw and it does not hold; "
    "train the parts with --calibration none, or train on all the documents at once"
)
CALIBRATED_MERGE = (
    "an older nbtext wrote it, which kept no sample to fit the merged model's temperature on; "
    "train it again, or train on all the documents at once"
)


def merge_refusal(settings: Mapping[str, Any]) -> str | None:
    """Why models of these settings could not be merged exactly (nbtext.jobs.merging), or None.
    (Presence features with UNK merge while no token is pruned: only --min-count 1 and no
    --max-features promise that before the counts are known.)"""
    if settings.get("features") == "tfidf":
        return TFIDF_MERGE
    if unk_counts_pruned_documents(settings):
        return UNK_MERGE
    return None


def unk_counts_pruned_documents(settings: Mapping[str, Any]) -> bool:
    """Whether a model of these (stored) settings has an UNK feature that counts the
    documents holding a pruned token: presence features with UNK, and a pruning (--min-count
    above 1, --max-features). Which documents held one is known only from a reading of them:
    training reads twice, and --update, forget and merge cannot change such counts exactly.
    With --min-count 1 and no --max-features every token counted is kept: UNK counts none."""
    prunes = settings["min_count"] > 1 or settings["max_features"] is not None
    return settings.get("features") == "binary" and settings["unknown"] == "unk" and prunes


def shard_of(spec: str | None, settings: Mapping[str, Any], update: bool = False) -> tuple[int, int] | None:
    """(k, n) of train's --shard K/N (None without it), refused where its part of a model of
    `settings` (TrainSettings) could not be merged exactly or where it makes no sense (--update)."""
    if spec is None:
        return None
    from nbtext.reading.sources import parse_shard

    shard, refusal = parse_shard(spec), merge_refusal(settings)
    if refusal:
        raise NbtextError(f"--shard makes a part to merge, and {refusal}")
    if update:
        raise NbtextError("--shard trains a new part; it does not go with --update")
    return shard


def table_rows_model(event_model: str) -> bool:
    """Whether an event model classifies table rows (its documents are rows of columns)."""
    return EVENT_MODELS[event_model].flags.of_table_rows
