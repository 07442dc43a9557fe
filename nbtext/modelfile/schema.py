"""The model file's header, checked whole before any array is touched.

A model file is input too (people share them; a mail server loads one per message), so
every field is checked for its type and range, the settings must be ones `nbtext train`
could have written, and the arrays' shapes and offsets must fit the payload, all with
Python integers (no overflow) and before anything is allocated. A file whose dense
(classes × tokens) table would need far more memory than its size can justify is refused
with the reason. Any problem is a ValueError with a message; modelfile names the file.
"""

import math
import struct

from nbtext.choices import (
    CHAR_BYTES,
    FEATURES,
    INPUT_MODES,
    LENGTH_EXPONENT_RANGE,
    MAX_CHAR_NGRAMS,
    MAX_CLASSES,
    MAX_EVIDENCE,
    MAX_NGRAMS,
    PRIORS,
    TF_MODES,
    UNKNOWN_MODES,
    is_max_evidence,
    is_tone_margin,
    is_unsure_below,
    learned_by_tone,
)
from nbtext.cutoff import KEYS as CUTOFF_KEYS, TOO_FEW, cutoff_of
from nbtext.labels import label_problem
from nbtext.reading.tokenize import stored_lexer
from nbtext.stats.event_models import EVENT_MODELS

# name: (dtype, number of dimensions); the first five are in every model file
ARRAYS = {
    "class_count": ("<f8", 1),
    "count_data": ("<f8", 1),
    "count_indices": ("<i4", 1),
    "count_indptr": ("<i8", 1),
    "vocabulary": ("|u1", 1),
    "token_keys": ("<u8", 1),
    "token_order": ("<i4", 1),
    "token_starts": ("<i4", 1),
    "unk_doc_count": ("<f8", 1),
    "weighted_sums": ("<f8", 2),
    "weighted_squares": ("<f8", 2),
    "journal_hashes": ("|u1", 2),
    "journal_labels": ("<i4", 1),
    "sample_indices": ("<i4", 1),
    "sample_counts": ("<i4", 1),
    "sample_indptr": ("<i8", 1),
    "sample_labels": ("<i4", 1),
    "sample_hashes": ("<u8", 1),
}
SAMPLE_ARRAYS = ("sample_indices", "sample_counts", "sample_indptr", "sample_labels", "sample_hashes")
REQUIRED = ("class_count", "count_data", "count_indices", "count_indptr", "vocabulary")
ITEMSIZE = {"<f8": 8, "<i4": 4, "<i8": 8, "<u8": 8, "|u1": 1}
# What a (classes × tokens) table of floats may cost for a file of a given size: legitimate
# models stay far below (docs/performance.md, figures behind the code).
DENSE_PER_FILE_BYTE, DENSE_FLOOR = 64, 64 << 20
FEATURE_KEYS = ("features", "tf", "idf", "length_norm", "weight_norm")
COUNT_ARRAYS = ("class_count", "count_data", "unk_doc_count", "weighted_sums", "weighted_squares")  # floats >= 0
_INTEGER = {"<i4": struct.Struct("<i"), "<i8": struct.Struct("<q")}
# The last byte of a little-endian float64 holds its sign and the exponent's high bits: below
# 0x7F the number is non-negative and below 2**1023, which every count and sum is.
_SMALL_NON_NEGATIVE = bytes(range(0x7F))
TEXT_TOKENIZER = {"pattern", "lowercase", "ngrams", "input", "headers"}  # and "lexer", when not words
CHAR_TOKENIZER = {"char_ngrams", "char_bytes"}  # both, or neither (no character n-grams)


def _whole(value, name, low=0, high=None):
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be a whole number in [{low}, {high if high is not None else '...'}]")
    return value


def _is(value, kind, name):
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ValueError(f"{name} has the wrong type")
    return value


def check_header(header, payload_bytes, file_bytes):
    """Raise ValueError unless `header` is one nbtext could have written for this payload."""
    _is(header, dict, "the header")
    for key in ("nbtext_version", "format_version", "settings", "classes", "n_tokens", "arrays"):
        if key not in header:
            raise ValueError(f"the header has no {key}")
    _is(header["nbtext_version"], str, "nbtext_version")
    _whole(header["format_version"], "format_version", 1)
    classes = _is(header["classes"], list, "classes")
    if not classes or not all(isinstance(c, str) and c for c in classes) or len(set(classes)) != len(classes):
        raise ValueError("classes must be distinct, non-empty names")
    if len(classes) > MAX_CLASSES:
        raise ValueError(f"it holds {len(classes):,} classes, more than the {MAX_CLASSES:,} nbtext models hold")
    for label in classes:
        if problem := label_problem(label):
            raise ValueError(problem)
    n_tokens = _whole(header["n_tokens"], "n_tokens", 0, payload_bytes)
    arrays = _is(header["arrays"], dict, "arrays")
    for name in REQUIRED:
        if name not in arrays:
            raise ValueError(f"the array {name} is missing")
    for name, spec in arrays.items():
        _check_array(name, spec, payload_bytes)
    dense = len(classes) * n_tokens * 8
    if dense > DENSE_PER_FILE_BYTE * file_bytes + DENSE_FLOOR:
        raise ValueError(
            f"its {len(classes):,} classes × {n_tokens:,} tokens would need {dense / 2**30:.1f} GiB of tables, "
            f"more than a file of {file_bytes:,} bytes can justify"
        )
    settings = check_settings_record(header["settings"])
    most = EVENT_MODELS[settings["event_model"]].flags.max_classes
    if most is not None and len(classes) > most:
        raise ValueError(f"a {settings['event_model']} model of {len(classes)} classes (it models {most})")
    if "corpus" in header:
        corpus = _is(header["corpus"], dict, "the corpus record")
        if set(corpus) != {"mail_documents", "default_alpha"}:
            raise ValueError("bad corpus record")
        _whole(corpus["mail_documents"], "mail_documents", 0)
        _is(corpus["default_alpha"], bool, "default_alpha")
    if "calibration" in header:
        calibration = _is(header["calibration"], dict, "the calibration record")
        # files of older builds hold no length_exponent (γ = 0) and no length_floor (1); older builds
        # refuse one that does
        # --max-ham-flagged: "positive", "max_ham_flagged" and one cut-off (nbtext.cutoff: this build's
        # ceiling, or older builds' floor), or none of them; older builds refuse the ceiling. With a
        # ceiling, TOO_FEW where the ham out of fold could bound no share (older builds refuse it)
        budget_keys = {"positive", "max_ham_flagged"}
        cutoff_keys = set(CUTOFF_KEYS) & set(calibration)
        if (
            set(calibration) - {"length_exponent", "length_floor", TOO_FEW} - budget_keys - set(CUTOFF_KEYS)
            != {"method", "temperature", "documents"}
            or (TOO_FEW in calibration and cutoff_keys != {CUTOFF_KEYS[0]})
            or calibration["method"] != "temperature"
            or len(cutoff_keys) > 1
            or len(budget_keys & set(calibration)) != 2 * len(cutoff_keys)
        ):
            raise ValueError("bad calibration record")
        cutoff = cutoff_of(calibration)
        if cutoff is not None:
            budget = calibration["max_ham_flagged"]
            if (
                cutoff.positive not in classes
                or len(classes) != 2
                or not isinstance(cutoff.value, float)
                or not cutoff.in_range()
                or not isinstance(budget, float)
                or not 0.0 <= budget < 0.5
                or math.copysign(1.0, cutoff.value) < 0  # -0.0: in range by comparison, but no build writes it
                or math.copysign(1.0, budget) < 0  # (and it was said "at -0 or more", "-0.00%")
                or TOO_FEW in calibration
                and (type(calibration[TOO_FEW]) is not int or calibration[TOO_FEW] < 0)
            ):
                raise ValueError("bad spam cut-off in the calibration record")
        T = calibration["temperature"]
        if not isinstance(T, float) or not math.isfinite(T) or T <= 0:
            raise ValueError(f"bad temperature {T!r}")
        exponent = calibration.get("length_exponent", 0.0)
        if not isinstance(exponent, float) or not LENGTH_EXPONENT_RANGE[0] <= exponent <= LENGTH_EXPONENT_RANGE[1]:
            raise ValueError(f"bad length exponent {exponent!r}")
        if "length_floor" in calibration:
            _whole(calibration["length_floor"], "length floor", 2)  # (1, no floor, is written as none)
        _whole(calibration["documents"], "calibration documents", 0)
    if "one_document" in header:
        form = EVENT_MODELS[settings["event_model"]].one_document
        if form is None:
            raise ValueError(f"a {settings['event_model']} model with a one_document record")
        check_one_document(header["one_document"], len(classes), n_tokens, form)
    if "sample" in header:
        _check_sample(header["sample"])
    if settings.get("features") == "tfidf":  # the class sums of tf-idf values are stored
        event = EVENT_MODELS[settings["event_model"]]
        for name in ("weighted_sums",) + (("weighted_squares",) if event.flags.needs_squares else ()):
            if name not in arrays:
                raise ValueError(f"a model of tf-idf features without {name}")


def check_arrays(header, payload):
    """Raise ValueError unless the arrays of a checked `header` agree with each other and
    hold what counts can be: the checks every reader of a model file runs (nbtext.modelfile.format
    and nbtext.classifier.purescore alike), each a pass over bytes in C at most, so that one message
    pays for them no more than for its own tokens. Their shapes; the class rows of the
    counts (count_indptr) rising from 0 to the number of entries, each row's first and last
    token index in range; one NUL between tokens; every count and sum finite and not
    negative; the journal's class indices in range. Gives back the vocabulary's bytes it
    counted the NULs of: each reader's own copy of them (a large model's vocabulary is
    megabytes, each copy paid by one message)."""
    arrays, classes, n_tokens = header["arrays"], header["classes"], header["n_tokens"]
    n_classes = len(classes)
    shape = {name: tuple(spec["shape"]) for name, spec in arrays.items()}
    expected = {
        "class_count": (n_classes,),
        "count_indptr": (n_classes + 1,),
        "token_keys": (n_tokens,),
        "token_order": (n_tokens,),
        "token_starts": (n_tokens,),
        "unk_doc_count": (n_classes,),
    }
    for name, wanted in expected.items():
        if name in shape and shape[name] != wanted:
            raise ValueError(f"{name} has {shape[name]} entries where the header's classes and tokens say {wanted}")
    if shape["count_data"] != shape["count_indices"]:
        raise ValueError("count_data and count_indices differ in length")
    if ("token_keys" in shape) != ("token_order" in shape):
        raise ValueError("token_keys and token_order come together")
    if "token_starts" in shape and "token_keys" not in shape:
        raise ValueError("token_starts come with token_keys")
    sums = shape.get("weighted_sums")
    if sums is not None and (sums[0] != n_classes or shape.get("weighted_squares", sums) != sums):
        raise ValueError("the weighted sums do not have a row per class")
    if ("journal_hashes" in shape) != ("journal_labels" in shape) or (
        "journal_hashes" in shape
        and (shape["journal_hashes"][1] != 16 or shape["journal_labels"] != shape["journal_hashes"][:1])
    ):
        raise ValueError("the journal's arrays do not agree")
    indptr = _integers(payload, arrays["count_indptr"])
    n_entries = shape["count_indices"][0]
    if indptr[0] != 0 or indptr[-1] != n_entries or any(a > b for a, b in zip(indptr, indptr[1:])):
        raise ValueError("the class rows of the counts do not agree with their entries")
    indices = arrays["count_indices"]
    for lo, hi in zip(indptr, indptr[1:]):
        if lo < hi and not (0 <= _integer(payload, indices, lo) and _integer(payload, indices, hi - 1) < n_tokens):
            raise ValueError("a token index of the counts is out of range")
    vocabulary = bytes(raw_array(payload, arrays["vocabulary"]))
    if vocabulary.count(b"\0") != max(n_tokens - 1, 0):
        raise ValueError("the vocabulary does not hold one token per index (NUL separators)")
    for name in COUNT_ARRAYS:
        values = raw_array(payload, arrays[name]) if name in arrays else b""
        if _last_bytes_outside(values, _SMALL_NON_NEGATIVE):  # a rare case: then exactly
            if not all(0 <= v < math.inf for (v,) in struct.iter_unpack("<d", values)):
                raise ValueError(f"{name} holds a count that is negative, infinite or not a number")
    if "journal_labels" in arrays:
        labels = raw_array(payload, arrays["journal_labels"])
        wrong: bool | bytes  # (true: a label out of range)
        if n_classes <= 256:  # little-endian int32 in [0, n_classes): high bytes 0, low byte below n_classes
            wrong = any(bytes(labels[i::4]).strip(b"\0") for i in (1, 2, 3)) or bytes(labels[0::4]).translate(
                None, bytes(range(n_classes))
            )
        else:
            wrong = not all(0 <= k < n_classes for (k,) in struct.iter_unpack("<i", labels))
        if wrong:
            raise ValueError("a class of the journal is out of range")
    return vocabulary


def _last_bytes_outside(values, allowed):
    """Whether the last byte of any 8-byte value of `values` is not one of `allowed`: read a
    piece at a time, each copied whole (in the cache) and its every 8th byte taken in C, which
    costs less than a strided view of the whole array copied element by element."""
    return any(bytes(values[at : at + _PIECE])[7::8].translate(None, allowed) for at in range(0, len(values), _PIECE))


_PIECE = 1 << 16  # bytes (a multiple of 8) of an array read at once: a copy that stays in the cache


def raw_array(payload, spec):
    """The bytes of one array of the payload (a memoryview; bounds checked by check_header)."""
    size = ITEMSIZE[spec["dtype"]]
    for n in spec["shape"]:
        size *= n
    return payload[spec["offset"] : spec["offset"] + size]


def _integers(payload, spec):
    """A small integer array of the payload as a list."""
    return [value for (value,) in _INTEGER[spec["dtype"]].iter_unpack(raw_array(payload, spec))]


def _integer(payload, spec, i):
    """Entry i of an integer array of the payload."""
    unpack = _INTEGER[spec["dtype"]]
    return unpack.unpack_from(payload, spec["offset"] + i * unpack.size)[0]


def same_record(stored, derived):
    """Whether a file's one_document record is the one its counts give, to rounding (files
    of older builds computed its logarithms with numpy's, which may differ in the last bit)."""
    if isinstance(stored, float) and isinstance(derived, float):
        return abs(stored - derived) <= 1e-9 * max(1.0, abs(derived))
    if isinstance(stored, dict) and isinstance(derived, dict):
        return stored.keys() == derived.keys() and all(same_record(stored[k], derived[k]) for k in stored)
    if isinstance(stored, list) and isinstance(derived, list):
        return len(stored) == len(derived) and all(map(same_record, stored, derived))
    return stored == derived and type(stored) is type(derived)


def check_one_document(record, n_classes, n_tokens, form=None):
    """Raise ValueError unless the derived `one_document` record (nbtext.classifier.model) is well formed:
    the record of `form` (the file's event model's one-document form: what the one-message path
    scores with; None: of any)."""
    _is(record, dict, "the one_document record")
    forms = [event.one_document for event in EVENT_MODELS.values() if event.one_document is not None]
    if not any(set(record) == {"features", "unk", "kept", *f.flags.record_values} for f in ([form] if form else forms)):
        raise ValueError("bad one_document record")
    _whole(record["features"], "the number of features", 0, n_tokens + 1)
    # per class, counts and their sums are >= 0, logarithms of probabilities (Σ log(1 − θ)) <= 0
    kinds = {"unk": "counts", **{key: kind for form in forms for key, kind in form.flags.record_values.items()}}
    for key, kind in kinds.items():
        values = record.get(key)
        if values is not None and not (
            isinstance(values, list)
            and len(values) == n_classes
            and all(isinstance(v, float) and math.isfinite(v) and (v <= 0 if kind == "log" else v >= 0) for v in values)
        ):
            raise ValueError(f"bad {key} in the one_document record")
    kept = record["kept"]
    if kept is not None and not (isinstance(kept, list) and len(kept) == 2 and isinstance(kept[0], float)):
        raise ValueError("bad kept rule in the one_document record")
    if kept is not None:
        _whole(kept[1], "the kept rule's last token", 0, n_tokens)


def _check_sample(record):
    """The calibration sample's record: the rate under which it holds every document, its
    section's size and CRC-32, and its arrays (offsets within the section)."""
    _is(record, dict, "the sample record")
    if set(record) != {"rate", "mode", "bytes", "crc32", "arrays"} or record["mode"] not in ("auto", "temperature"):
        raise ValueError("bad sample record")
    rate = record["rate"]
    if not isinstance(rate, float) or not 0.0 < rate <= 1.0:
        raise ValueError(f"bad sample rate {rate!r}")
    size = _whole(record["bytes"], "the sample's size", 0)
    _whole(record["crc32"], "the sample's checksum", 0, 2**32 - 1)
    arrays = _is(record["arrays"], dict, "the sample's arrays")
    if set(arrays) != set(SAMPLE_ARRAYS):
        raise ValueError("the sample's arrays are not those of a sample")
    for name, spec in arrays.items():
        _check_array(name, spec, size)


def _check_array(name, spec, payload_bytes):
    if name not in ARRAYS:
        raise ValueError(f"unknown array {name!r}")
    _is(spec, dict, f"the spec of {name}")
    dtype, rank = ARRAYS[name]
    if spec.get("dtype") != dtype:
        raise ValueError(f"{name} must be of dtype {dtype}")
    shape = _is(spec.get("shape"), list, f"the shape of {name}")
    if len(shape) != rank:
        raise ValueError(f"{name} must have {rank} dimension(s)")
    size = ITEMSIZE[dtype]
    for n in shape:
        size *= _whole(n, f"a dimension of {name}", 0, payload_bytes)
    offset = _whole(spec.get("offset"), f"the offset of {name}", 0, payload_bytes)
    if offset % ITEMSIZE[dtype]:
        raise ValueError(f"{name} is not aligned to its items")
    if offset + size > payload_bytes:
        raise ValueError(f"{name} runs past the end of the payload")


def check_settings_record(settings):
    """Raise ValueError unless `settings` are ones `nbtext train` could have written; the
    feature settings a file of nbtext's first builds left out are filled in (the event
    model's defaults), so that every reader, which checks its header here, reads them alike."""
    _is(settings, dict, "settings")
    model = settings.get("event_model")
    if model not in EVENT_MODELS:
        raise ValueError(f"unknown event model {model!r}")
    alpha = settings.get("alpha")
    event = EVENT_MODELS[model]
    if (
        not isinstance(alpha, (int, float))
        or isinstance(alpha, bool)
        or not math.isfinite(alpha)
        or alpha < 0
        or (alpha == 0 and not event.flags.zero_alpha)
    ):
        raise ValueError(f"bad alpha {alpha!r}")
    if settings.get("prior") not in PRIORS or settings.get("unknown") not in UNKNOWN_MODES:
        raise ValueError("bad prior or unknown mode")
    _whole(settings.get("min_count"), "min_count", 1)
    if "max_features" not in settings:  # (every build wrote it, None for no --max-features; every reader reads it)
        raise ValueError("the settings have no max_features")
    if settings["max_features"] is not None:
        _whole(settings["max_features"], "max_features", 1)
    if "learn" in settings or "tone_margin" in settings:  # (absent: every document learned, --learn all)
        if not learned_by_tone(settings) or not is_tone_margin(settings.get("tone_margin")) or event.online is None:
            raise ValueError("bad learn or tone_margin")
    if "unsure_below" in settings and not is_unsure_below(settings["unsure_below"]):  # (absent: none)
        raise ValueError("bad unsure_below: not a probability from 0 to 1")
    tokenizer = _is(settings.get("tokenizer"), dict, "the tokenizer settings")
    if (tokenizer.get("kind") == "row") != event.flags.of_table_rows:
        raise ValueError(f"a {model} model with the wrong kind of tokenizer")
    if tokenizer.get("kind") == "row":
        columns = _is(tokenizer.get("columns"), list, "the table columns")
        if set(tokenizer) != {"kind", "columns"} or not all(isinstance(c, str) and "=" not in c for c in columns):
            raise ValueError("bad table columns")
        return settings
    if set(tokenizer) - {"lexer"} - CHAR_TOKENIZER != TEXT_TOKENIZER or tokenizer["input"] not in INPUT_MODES:
        raise ValueError("bad tokenizer settings")
    if CHAR_TOKENIZER & set(tokenizer):  # (a file of another CHAR_BYTES would be tokenized otherwise: refused)
        if not CHAR_TOKENIZER <= set(tokenizer) or tokenizer["char_bytes"] != CHAR_BYTES:
            raise ValueError("bad character n-gram settings")
        _whole(tokenizer["char_ngrams"], "char_ngrams", 1, MAX_CHAR_NGRAMS)
    if tokenizer.get("lexer") == "words" or stored_lexer(tokenizer) is None:  # (words is stored as no lexer)
        raise ValueError(
            f"lexer {tokenizer.get('lexer', 'words')!r} unknown or not stored with its own pattern and case"
        )
    _whole(tokenizer["ngrams"], "ngrams", 1, MAX_NGRAMS)
    headers = _is(tokenizer["headers"], list, "the mail headers")
    if not all(isinstance(h, str) for h in headers):
        raise ValueError("bad mail headers")
    given = [key for key in FEATURE_KEYS if key in settings]  # (none in files of nbtext's first builds)
    if given and len(given) < len(FEATURE_KEYS):  # every later build wrote them all, and readers read them so
        raise ValueError(f"feature settings without {', '.join(k for k in FEATURE_KEYS if k not in given)}")
    if not given:  # the event model's defaults, filled in here to be read as such by every reader
        defaults = event.flags.default_features or {}  # (a text model's: a model of table rows returned above)
        settings.update({key: defaults[key] for key in FEATURE_KEYS})  # (a Bernoulli's: presence)
    for key in FEATURE_KEYS:
        value = settings[key]
        allowed = FEATURES if key == "features" else TF_MODES if key == "tf" else (True, False)
        if isinstance(value, bool) != (key not in ("features", "tf")) or value not in allowed:
            raise ValueError(f"bad {key} {value!r}")
    features = settings["features"]
    if features not in event.flags.feature_kinds:
        raise ValueError(f"a {model} model of {features} features")
    if features == "tfidf" and settings["unknown"] == "unk":
        raise ValueError("tf-idf features with an UNK feature")
    if not event.flags.reads_unk and settings["unknown"] == "unk":
        raise ValueError(f"a {model} model with an UNK feature")
    if "max_evidence" in settings:  # (absent: every feature scores)
        if not is_max_evidence(settings["max_evidence"]) or not event.flags.caps_evidence or features == "tfidf":
            raise ValueError(
                f"bad max_evidence: a whole number from 1 to {MAX_EVIDENCE}, of a multinomial model of counts or presence"
            )
    return settings
