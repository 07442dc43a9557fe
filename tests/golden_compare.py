"""How a produced golden output is compared with the recorded one, and a readable account of
what differs: what must be exact (labels, paths, counts, structure, integer arrays) exactly,
and floating-point numbers to a stated tolerance:

- a number printed in full (ten or more significant digits, as JSON and repr print floats)
  within RELATIVE of the recorded one (or ABSOLUTE of it, near zero);
- a number printed short (`0.9987`, `+1.234`) within one unit of its last printed digit;
- a model file decoded field by field: the header's JSON as above, every array by name,
  integer arrays exactly and float arrays element by element within RELATIVE.

The model file's bytes themselves are checked exactly elsewhere, against a training on
another SIMD path (test_reproducible.py): the tolerance here is what lets a failure say
which field moved and by how much, rather than that two files differ.
"""

import json
import math
import re

import numpy as np

from nbtext.modelfile.container import sample_section, split

RELATIVE = 1e-9
ABSOLUTE = 1e-12
SHOWN = 8  # differences listed per file
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)\b")


def differences(name, recorded, produced):
    """Lines saying how `produced` differs from `recorded` beyond the tolerance ([] if not)."""
    if name.endswith(".model"):
        return _model_differences(recorded, produced)
    return _text_differences(recorded.decode("utf-8", "replace"), produced.decode("utf-8", "replace"))


def _close(recorded, produced, text=None):
    """Whether two numbers agree: `text` is how the recorded one was printed."""
    if isinstance(recorded, bool) or isinstance(produced, bool):
        return recorded is produced
    if math.isnan(recorded) or math.isnan(produced):
        return math.isnan(recorded) and math.isnan(produced)
    if recorded == produced:
        return True
    tolerance = max(RELATIVE * abs(recorded), ABSOLUTE)
    if text is not None:
        digits = re.sub(r"[eE].*", "", text).lstrip("+-")
        significant = len(digits.replace(".", "").lstrip("0"))
        if significant < 10 and "." in digits and not re.search(r"[eE]", text):
            tolerance = max(tolerance, 1.01 * 10.0 ** -len(digits.split(".")[1]))
    return abs(recorded - produced) <= tolerance


def _text_differences(recorded, produced):
    old, new = recorded.splitlines(), produced.splitlines()
    found = [] if len(old) == len(new) else [f"{len(old)} lines recorded, {len(new)} produced"]
    for number, (a, b) in enumerate(zip(old, new), 1):
        if a == b:
            continue
        words_a, words_b = NUMBER.split(a), NUMBER.split(b)
        values_a, values_b = NUMBER.findall(a), NUMBER.findall(b)
        same = (
            words_a == words_b
            and len(values_a) == len(values_b)
            and all(
                _close(float(x), float(y), x) if ("." in x or "e" in x.lower() or "n" in x.lower()) else x == y
                for x, y in zip(values_a, values_b)
            )
        )
        if not same:
            found.append(f"line {number}:\n    recorded {a[:240]}\n    produced {b[:240]}")
    return found


def decoded(data):
    """(header without its checksum, {array name: array}) of a model file's bytes."""
    header, payload = split(bytes(data), "golden")
    arrays = {}
    section = sample_section(bytes(data), header, "golden")
    for table, source, prefix in (
        (header["arrays"], payload, ""),
        (header.get("sample", {}).get("arrays", {}), section, "sample section: "),
    ):
        for array_name, spec in table.items():
            count = int(np.prod(spec["shape"], dtype=np.int64))
            arrays[prefix + array_name] = np.frombuffer(source, spec["dtype"], count, spec["offset"]).reshape(
                spec["shape"]
            )
    header = {k: v for k, v in header.items() if k not in ("payload_crc32",)}
    if "sample" in header:
        header["sample"] = {k: v for k, v in header["sample"].items() if k != "crc32"}
    return header, arrays


def _model_differences(recorded, produced):
    (old_header, old_arrays), (new_header, new_arrays) = decoded(recorded), decoded(produced)
    found = []
    _json_differences(old_header, new_header, "header", found)
    for array_name in sorted(set(old_arrays) | set(new_arrays)):
        a, b = old_arrays.get(array_name), new_arrays.get(array_name)
        if a is None or b is None:
            found.append(f"array {array_name}: {'only produced' if a is None else 'only recorded'}")
        elif a.shape != b.shape or a.dtype != b.dtype:
            found.append(f"array {array_name}: {a.dtype}{a.shape} recorded, {b.dtype}{b.shape} produced")
        elif a.dtype.kind == "f":
            off = ~np.isclose(a, b, rtol=RELATIVE, atol=ABSOLUTE, equal_nan=True)
            for index in list(zip(*np.nonzero(off)))[:SHOWN]:
                found.append(f"array {array_name}{list(map(int, index))}: recorded {a[index]!r}, produced {b[index]!r}")
        elif not np.array_equal(a, b):
            index = tuple(int(i) for i in np.argwhere(a != b)[0])
            found.append(
                f"array {array_name}{list(index)}: recorded {a[index]!r}, produced {b[index]!r}"
                f" ({int((a != b).sum())} elements differ)"
            )
    return found


def _json_differences(a, b, where, found):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                found.append(f"{where}.{key}: {'only produced' if key not in a else 'only recorded'}")
            else:
                _json_differences(a[key], b[key], f"{where}.{key}", found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _json_differences(x, y, f"{where}[{i}]", found)
    elif isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if not _close(a, float(b)):
            found.append(f"{where}: recorded {a!r}, produced {b!r}")
    elif a != b or type(a) is not type(b):
        found.append(f"{where}: recorded {json.dumps(a)[:200]}, produced {json.dumps(b)[:200]}")
