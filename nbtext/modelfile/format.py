"""The model file: a versioned, self-describing format that never runs code when loaded.

Its layout, arrays and checks are described once, in docs/model-file.md. Here: the arrays
written (`save`, laid out at 8-byte aligned offsets) and read back with numpy.frombuffer
from an allow-list of plain numeric dtypes, after nbtext.modelfile.container has checked the
preamble and checksums and nbtext.modelfile.schema the header and the arrays; then what only a
whole pass over the arrays can check (`_state`). (The atomic write and the lock of
concurrent learners are nbtext.modelfile.container's.)
"""

from __future__ import annotations

import json
import zlib

import numpy as np

from nbtext.modelfile.container import (
    HEADER_CRC,
    MAGIC,
    PREAMBLE,
    sample_section,
    split,
    write_atomically,
    written_version,
)
from nbtext.errors import NbtextError
from nbtext.features.vocabindex import TokenIndex, build_keys, token_starts
from nbtext.modelfile.schema import ARRAYS, SAMPLE_ARRAYS, check_arrays, check_header
from nbtext.version import __version__

TYPE_CHECKING = False  # (the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from numpy.typing import NDArray

    from nbtext.modelfile.container import PathLike

    Array = NDArray[Any]
    Buffer = bytes | memoryview  # a model file's payload or section, read or mapped
    Record = dict[str, Any]  # a record of the header's JSON: {"method": "temperature", ...}
    CsrRows = tuple[Array, Array, Array]  # (data, indices, indptr): the counts of each class, a CSR row each
    # (token indices, counts, indptr) CSR rows of the sample's documents, their labels (class indices), hashes
    CalibrationSample = tuple[Array, Array, Array, Array, Array]

_DTYPES = {"<f8", "<i4", "<i8", "<u8", "|u1"}
_ALIGN = 8


class ModelState:
    """What a model file holds: the settings and the stored arrays, nothing derived
    (nbtext.classifier.model.NaiveBayes is built from it and gives it back). A plain class, not a
    dataclass: importing dataclasses would cost every one-message start-up
    (docs/performance.md, figures behind the code)."""

    def __init__(
        self,
        settings: Record,
        classes: list[str],
        tokens: list[str] | TokenIndex,
        n_tokens: int,
        class_count: Array,
        token_counts: CsrRows,
        unk_doc_count: Array | None = None,
        tfidf_sums: Array | None = None,
        tfidf_squares: Array | None = None,
        journal: tuple[Array, Array] | None = None,
        file_info: Record | None = None,
        corpus: Record | None = None,
        calibration: Record | None = None,
        one_document: Record | None = None,
        calibration_sample: CalibrationSample | None = None,
        sample_bound: float | None = None,
        sample_mode: str | None = None,
    ):
        self.settings = settings  # the stored settings (nbtext.classifier.settings.StoredSettings)
        self.classes = classes  # the labels
        self.tokens = tokens  # every token seen, sorted: a list of str, or (read) a TokenIndex
        self.n_tokens = n_tokens
        self.class_count = class_count  # (c,)
        self.token_counts = token_counts  # the (c, V) counts as CSR rows: (data, indices, indptr)
        self.unk_doc_count = unk_doc_count  # (c,) or None
        self.tfidf_sums = tfidf_sums  # (c, d) or None
        self.tfidf_squares = tfidf_squares  # (c, d) or None
        self.journal = journal  # ((n, 16) hashes, (n,) label indices) or None
        self.file_info = file_info or {}  # read: the format version, the nbtext version, the file's bytes
        self.corpus = corpus  # {"mail_documents": n, "default_alpha": bool}, or None (older files)
        # {"method": "temperature", "temperature": T, "length_exponent": γ, "documents": n, and with
        # --max-ham-flagged "positive", "max_ham_flagged" and its cut-off (nbtext.cutoff)} or None
        self.calibration = calibration
        self.one_document = one_document  # derived: what nbtext.classifier.purescore needs besides the counts, or None
        # the calibration sample, every document whose hash is under `sample_bound`: (token
        # indices, counts, indptr) CSR rows, labels, hashes; None without one, or when not read
        self.calibration_sample = calibration_sample
        self.sample_bound = sample_bound
        self.sample_mode = sample_mode


def save(state: ModelState, path: PathLike) -> None:
    """Write a ModelState to `path` atomically: a temporary file in the same folder, then rename."""
    table, payload = _laid_out(_arrays(state))
    sample = None
    if state.calibration_sample is not None:  # a section of its own, after the payload
        sample_table, section = _laid_out(
            {
                name: np.asarray(array, dtype=ARRAYS[name][0])
                for name, array in zip(SAMPLE_ARRAYS, state.calibration_sample)
            }
        )
        sample = {
            "rate": float(state.sample_bound),  # type: ignore[arg-type]  # (a sample has its bound)
            "mode": state.sample_mode or "auto",
            "bytes": len(section),
            "crc32": zlib.crc32(section),
            "arrays": sample_table,
        }
    version = written_version(state.settings, table)
    header = {
        "nbtext_version": __version__,
        "format_version": version,
        "settings": state.settings,
        "classes": state.classes,
        "n_tokens": state.n_tokens,
        "arrays": table,
        **({"corpus": state.corpus} if state.corpus is not None else {}),
        **({"calibration": state.calibration} if state.calibration is not None else {}),
        **({"one_document": state.one_document} if state.one_document is not None else {}),
        **({"sample": sample} if sample is not None else {}),
        "payload_bytes": len(payload),
        "payload_crc32": zlib.crc32(payload),
    }
    # Labels from file names that are not UTF-8 hold surrogate escapes: written as the
    # bytes they were, and read back to the same labels.
    header_bytes = json.dumps(header, ensure_ascii=False).encode("utf-8", "surrogateescape")
    write_atomically(
        path,
        [
            MAGIC,
            PREAMBLE.pack(version, len(header_bytes)),
            HEADER_CRC.pack(zlib.crc32(header_bytes)),
            header_bytes,
            payload,
            section if sample is not None else b"",
        ],
    )


def _laid_out(arrays: Mapping[str, Array]) -> tuple[dict[str, Record], bytes]:
    """({name: {dtype, shape, offset}}, the bytes) of arrays laid end to end, each at an
    8-byte aligned offset."""
    table: dict[str, Record] = {}
    chunks: list[bytes] = []
    offset = 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        padding = -offset % _ALIGN
        chunks.append(b"\0" * padding)
        offset += padding
        table[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset}
        data = array.tobytes()
        chunks.append(data)
        offset += len(data)
    return table, b"".join(chunks)


def _arrays(state: ModelState) -> dict[str, Array]:
    data, indices, indptr = state.token_counts
    tokens = state.tokens.tokens() if isinstance(state.tokens, TokenIndex) else state.tokens
    vocabulary = "\0".join(tokens).encode("utf-8", "surrogatepass")
    if vocabulary.count(b"\0") != max(len(tokens) - 1, 0):
        raise NbtextError("a token contains a NUL character and cannot be stored")
    keys, order = build_keys(tokens)
    arrays = {
        "class_count": state.class_count.astype("<f8"),
        "token_keys": keys.astype("<u8"),
        "token_order": order.astype("<i4"),
        "count_data": np.asarray(data).astype("<f8"),
        "count_indices": np.asarray(indices).astype("<i4"),
        "count_indptr": np.asarray(indptr).astype("<i8"),
        "vocabulary": np.frombuffer(vocabulary, dtype="|u1"),
    }
    if len(vocabulary) < 2**31:  # (i4; a larger vocabulary is found by its bytes alone)
        arrays["token_starts"] = token_starts(vocabulary)[: len(tokens)].astype("<i4")
    if state.unk_doc_count is not None:
        arrays["unk_doc_count"] = state.unk_doc_count.astype("<f8")
    if state.tfidf_sums is not None:
        arrays["weighted_sums"] = np.asarray(state.tfidf_sums, dtype="<f8")
        if state.tfidf_squares is not None:
            arrays["weighted_squares"] = np.asarray(state.tfidf_squares, dtype="<f8")
    if state.journal is not None:
        hashes, labels = state.journal
        arrays["journal_hashes"] = np.asarray(hashes, dtype="|u1")
        arrays["journal_labels"] = np.asarray(labels, dtype="<i4")
    return arrays


def parse_state(data: bytes, path: PathLike) -> ModelState:
    """The ModelState of a model file's bytes (`path` names it in errors)."""
    header, payload = split(data, path)
    try:
        check_header(header, len(payload), len(data))
        state = _state(header, payload)
        section = sample_section(data, header, path)
        if section is not None:
            arrays = {name: _array(section, spec) for name, spec in header["sample"]["arrays"].items()}
            state.calibration_sample = _calibration_sample(arrays, state.n_tokens, len(state.classes))
        state.sample_bound = header["sample"]["rate"] if "sample" in header else None
        state.sample_mode = header["sample"]["mode"] if "sample" in header else None
    except (NbtextError, ValueError) as e:  # what the checks say, in their words
        raise NbtextError(f"{path} is corrupt: {e}") from None
    except (KeyError, TypeError, IndexError, AttributeError, UnicodeDecodeError, OverflowError) as e:
        raise NbtextError(f"{path} is corrupt ({e.__class__.__name__}: {e})") from None
    state.file_info["bytes"] = len(data)
    return state


def _state(header: Record, payload: Buffer) -> ModelState:
    """The ModelState of a checksummed header and payload, every shape and index checked:
    schema.check_arrays (what the one-message path checks too), then what only a whole
    pass over the arrays can check (numpy's)."""
    blob = check_arrays(header, payload)  # (the vocabulary's bytes)
    arrays = {name: _array(payload, spec) for name, spec in header["arrays"].items()}
    settings = header["settings"]
    classes = header["classes"]
    n_classes, n_tokens = len(classes), header["n_tokens"]
    try:  # checked now, not when --update, forget, --explain or info --top first decode it
        blob.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise ValueError("the vocabulary is not UTF-8 text") from None
    tokens: list[str] | TokenIndex
    if "token_keys" in arrays:  # absent from files of nbtext's first builds: then a plain list
        keys, order = arrays["token_keys"], arrays["token_order"]
        if n_tokens and (
            np.any(keys[1:] < keys[:-1])
            or order.min() < 0
            or order.max() >= n_tokens
            or np.any(np.bincount(order, minlength=n_tokens) != 1)
        ):
            raise ValueError("the token keys are not sorted, or their token indices not each index once")
        tokens = TokenIndex(blob, n_tokens, keys, order)
        if "token_starts" in arrays:  # (one NUL between tokens: schema.check_arrays)
            if np.any(arrays["token_starts"] != tokens.bounds()[0]):  # (computed once: find reads them too)
                raise ValueError("the vocabulary does not hold one token per index where its token starts say")
    else:
        tokens = blob.decode("utf-8", "surrogatepass").split("\0") if n_tokens else []
    indptr, indices = arrays["count_indptr"], arrays["count_indices"]
    if len(indices) and (indices.min() < 0 or indices.max() >= n_tokens):
        raise ValueError("a token index of the counts is out of range")
    same_row = np.diff(np.repeat(np.arange(n_classes), np.diff(indptr))) == 0
    if np.any((np.diff(indices.astype(np.int64)) <= 0) & same_row):
        raise ValueError("count indices are not sorted within a class")
    sums, squares = arrays.get("weighted_sums"), arrays.get("weighted_squares")
    return ModelState(
        settings,
        classes,
        tokens,
        n_tokens,
        arrays["class_count"],
        (arrays["count_data"], indices, indptr),
        arrays.get("unk_doc_count"),
        sums,
        squares,
        _journal(arrays, classes),
        {"format_version": header["format_version"], "nbtext_version": header["nbtext_version"]},
        header.get("corpus"),
        header.get("calibration"),
        header.get("one_document"),
        _calibration_sample(arrays, n_tokens, n_classes),
    )


def _calibration_sample(arrays: Mapping[str, Array], n_tokens: int, n_classes: int) -> CalibrationSample | None:
    """A calibrated model's sample arrays (SAMPLE_ARRAYS), checked, or None."""
    if SAMPLE_ARRAYS[0] not in arrays:
        return None
    if any(name not in arrays for name in SAMPLE_ARRAYS):
        raise ValueError("an incomplete calibration sample")
    indices, counts, indptr, labels, hashes = (arrays[name] for name in SAMPLE_ARRAYS)
    if (
        len(indptr) != len(labels) + 1
        or hashes.shape != labels.shape
        or len(counts) != len(indices)
        or (len(indptr) and (indptr[0] != 0 or indptr[-1] != len(indices) or np.any(np.diff(indptr) < 0)))
        or (len(indices) and (indices.min() < 0 or indices.max() >= n_tokens or counts.min() < 1))
        or (len(labels) and (labels.min() < 0 or labels.max() >= n_classes))
    ):
        raise ValueError("calibration sample arrays do not agree")
    return indices, counts, indptr, labels, hashes


def _journal(arrays: Mapping[str, Array], classes: list[str]) -> tuple[Array, Array] | None:
    """(hashes, class indices) of the journal, checked (the model decodes it when needed)."""
    if "journal_hashes" not in arrays:
        return None
    hashes, labels = arrays["journal_hashes"], arrays["journal_labels"]
    if hashes.ndim != 2 or hashes.shape[1] != 16 or labels.shape != (len(hashes),):
        raise ValueError("journal arrays do not agree")
    if len(labels) and (labels.min() < 0 or labels.max() >= len(classes)):
        raise ValueError("journal label out of range")
    return hashes, labels


def _array(payload: Buffer, spec: Record) -> Array:
    dtype, shape, offset = spec["dtype"], tuple(spec["shape"]), spec["offset"]
    if dtype not in _DTYPES or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError(f"bad array spec {spec!r}")
    count = int(np.prod(shape, dtype=np.int64))
    array = np.frombuffer(payload, dtype=dtype, count=count, offset=offset).reshape(shape)
    # aligned in memory (the payload starts where the header ends): numpy copies an unaligned
    # array whole for each search or product over it, here it is copied once
    return array if array.flags.aligned else array.copy()
