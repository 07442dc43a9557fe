"""Which train options a model reads: an option given that would change nothing for the
model it trains (its event model, its features, how it learns) is refused by name, never
ignored in silence. The one table of it (OPTIONS_READ), asked by make_settings (train,
nbtext.train), the command line (the options typed), `--alpha` given to a loaded model and eval
--compare (each model given what it reads). What each event model reads is its flags'
(nbtext.stats.event_models).
"""

from __future__ import annotations

from nbtext.choices import ONLINE_FEATURES, SPAM_PRESET_MODEL, TRAIN_DEFAULTS
from nbtext.stats.event_models import EVENT_MODELS

TYPE_CHECKING = False  # (typing is not imported on the one-message path; the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

    from nbtext.stats.event_models import EventModel

    # a train option's value as make_settings takes it, by name (nbtext.choices.TRAIN_DEFAULTS)
    Options = Mapping[str, Any]
    # a row of OPTIONS_READ: the options, whether a model of `event` leaves them unread, why
    Setting = Callable[[str], Any]
    OptionsRead = tuple[tuple[str, ...], Callable[[EventModel, Setting], bool], Callable[[EventModel, Setting], str]]


def _flag(name: str, value: object) -> str:
    """The command-line spelling of a train option (--no-idf for idf=False)."""
    flag = "--" + name.replace("_", "-")
    return flag.replace("--", "--no-", 1) if value is False else flag


def unread_by_all(
    options: Options, models: Sequence[str], typed: Iterable[str] | None = None
) -> tuple[str, str] | None:
    """(flag, why) of a train option given that none of `models` reads, or None: for one
    model, what unused_options finds; for models compared on the same folds, what each
    leaves out (options_read_by). `typed` as unused_options takes it."""
    if len(models) == 1:
        unused = unused_options({**options, "model": models[0]}, typed)
        return unused[0] if unused else None
    left_out = [options_read_by(options, name, typed)[1] for name in models]
    return next(((flag, why) for flag, why in left_out[0].items() if all(flag in other for other in left_out)), None)


def options_read_by(
    options: Options, event_model: str, typed: Iterable[str] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """(the options one model of several compared on the same folds is trained with,
    {flag: why} of those it leaves out): what unused_options finds it does not read, and
    feature values it does not take (--features tfidf for bernoulli, --unknown unk with
    tf-idf): it keeps its own for those."""
    options = {**options, "model": event_model}
    left_out: dict[str, str] = {}
    event = EVENT_MODELS.get(event_model)
    for _ in range(2):  # (once --features is left out, the tf-idf options may be unused)
        left_out.update(unused_options(options, typed))
        defaults = event.flags.default_features if event is not None else None
        if event is not None and defaults is not None:
            features = options.get("features")
            if features is not None and features not in event.flags.feature_kinds:
                left_out[_flag("features", features)] = f"--model {event.name} takes no --features {features}"
                features = None  # its own
            if options.get("unknown") == "unk" and (features or defaults["features"]) == "tfidf":
                left_out["--unknown"] = f"--model {event.name}'s tf-idf features have no UNK"
        options = {k: v for k, v in options.items() if v is None or _flag(k, v) not in left_out}
    return options, left_out


def _text_features(event: EventModel, setting: Setting) -> str | None:
    """The feature values of a text model (None for a model of table rows)."""
    defaults = event.flags.default_features
    return None if defaults is None else setting("features") or defaults["features"]


def _tfidf_left_out(event: EventModel, setting: Setting) -> str:
    features = _text_features(event, setting)
    instead = "add --features tfidf" if "tfidf" in event.flags.feature_kinds else f"--model {event.name} has no others"
    return f"it shapes tf-idf features, and these are {features} features ({instead})"


# Which train options a model reads, for every event model (its flags: nbtext.stats.event_models):
# a row names options, when a model of `event` with these settings (`setting(name)`) leaves them
# unread, and why. The one table of it: make_settings (train, nbtext.train), the command line
# (its options typed) and eval --compare (each model given what it reads) all ask unused_options.
OPTIONS_READ: tuple[OptionsRead, ...] = (
    (
        ("min_count", "max_features", "ngrams", "unknown", "input", "headers", "lexer", "char_ngrams")
        + ("features", "tf", "idf", "length_norm", "weight_norm"),
        lambda event, setting: event.flags.of_table_rows,
        lambda event, setting: f"--model {event.name} takes a table's columns whole, as they are",
    ),
    (
        ("tf", "idf", "length_norm"),
        lambda event, setting: _text_features(event, setting) not in (None, "tfidf"),
        _tfidf_left_out,
    ),
    (
        ("weight_norm",),
        lambda event, setting: not event.flags.of_table_rows and not event.flags.normalizes_weights,
        lambda event, setting: f"it normalizes complement NB's weights (--model complement), not {event.name}'s",
    ),
    (
        ("headers",),
        lambda event, setting: not event.flags.of_table_rows and setting("input") == "text",
        lambda event, setting: "it names mail headers to read, and --input text reads no mail",
    ),
    (
        ("unknown",),
        lambda event, setting: not event.flags.of_table_rows and not event.flags.reads_unk,
        lambda event, setting: f"--model {event.name} leaves pruned and unseen tokens out (no evidence: f = x)",
    ),
    (
        ("max_evidence",),
        lambda event, setting: not event.flags.of_table_rows and not event.flags.caps_evidence,
        lambda event, setting: f"it caps a multinomial model's evidence, and --model {event.name} scores otherwise",
    ),
    (
        ("max_evidence",),
        lambda event, setting: event.flags.caps_evidence and _text_features(event, setting) not in ("counts", "binary"),
        lambda event, setting: (
            f"it caps the terms of counts or presence, not of {_text_features(event, setting)} features"
        ),
    ),
    (
        ("prior",),
        lambda event, setting: not event.flags.of_table_rows and not event.flags.prior_in_jll,
        lambda event, setting: f"--model {event.name} scores without a class prior",
    ),
    (
        ("alpha",),
        lambda event, setting: (
            not event.flags.of_table_rows
            and not event.flags.smooths
            and (not event.flags.prior_in_jll or setting("prior") != "smoothed")
        ),
        lambda event, setting: f"--model {event.name} does not smooth (λ enters only a smoothed --prior)",
    ),
)


def _tone_scorer(event: EventModel, setting: Setting) -> str:
    features = _text_features(event, setting)
    if event.online is not None and features is not None:
        return f"its pass scores a multinomial model of counts or presence, or fisher, not of {features} features"
    return f"its pass scores a multinomial model of counts or presence, or fisher, not --model {event.name}"


# Which documents a model learns (--learn, --tone-margin), and what a TONE pass's model takes
OPTIONS_READ += (
    (
        ("learn",),
        lambda event, setting: (
            setting("learn") == "tone"
            and (event.online is None or _text_features(event, setting) not in ONLINE_FEATURES)
        ),
        _tone_scorer,
    ),
    (("tone_margin",), lambda event, setting: setting("learn") != "tone", lambda *_: "it is --learn tone's margin"),
    (
        ("preset",),
        lambda event, setting: setting("preset") == "spam" and event.name != SPAM_PRESET_MODEL,
        lambda event, setting: f"it is a {SPAM_PRESET_MODEL} model's defaults, and --model {event.name} has its own",
    ),
)


def unused_options(options: Options, typed: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """[(flag, why)] of the train options in `options` (make_settings' keywords) that are
    given and would change nothing for the model and the features they choose (OPTIONS_READ):
    what training would otherwise ignore in silence. Given: those named in `typed` (the command
    line says which the user typed, their defaults too), else those not None and not their
    default. Every path that makes settings refuses them (make_settings); comparing models
    (crossval) passes each only the options it reads."""
    if typed is None:
        given = {k: v for k, v in options.items() if v is not None and v != TRAIN_DEFAULTS.get(k)}
    else:
        given = {k: v for k, v in options.items() if k in typed}
    setting: Setting = {**TRAIN_DEFAULTS, **{k: v for k, v in options.items() if v is not None}}.get
    event = EVENT_MODELS.get(setting("model"))
    if event is None:
        return []  # (make_settings names the unknown model)
    return [
        (_flag(name, given[name]), why(event, setting))
        for names, unread, why in OPTIONS_READ
        if any(name in given for name in names) and unread(event, setting)
        for name in names
        if name in given
    ]
