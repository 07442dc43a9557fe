"""A model file is input too: crafted, truncated or bit-flipped files are refused with one
`Error:` line naming the file, before any large allocation."""

from hypothesis import given, settings, strategies as st
import json
import random
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from nbtext.classifier.settings import make_settings
from nbtext.errors import NbtextError
from nbtext.jobs.loading import load
from nbtext.modelfile import container, format as modelfile

from conftest import run

MAGIC = modelfile.MAGIC


def parts(data):
    """(header dict, payload bytes) of a model file (format 2 on: the header's CRC after the
    preamble), without its calibration sample section (the header then announces none)."""
    header, payload, _ = sample_parts(data)
    header.pop("sample", None)
    return header, payload


def sample_parts(data):
    """(header dict, payload bytes, sample section bytes) of a model file."""
    version, length = struct.unpack_from("<IQ", data, len(MAGIC))
    start = len(MAGIC) + 12 + (4 if version >= 2 else 0)
    header = json.loads(data[start : start + length])
    end = start + length + header.get("payload_bytes", len(data))
    return header, data[start + length : end], data[end:]


def assemble(header, payload, crc=True, version=container.FORMAT_VERSION):
    """A model file of `header` and `payload`, its checksums right (the payload's only with
    `crc`): so what is tested is the check of the header's contents."""
    if crc:
        header = {**header, "payload_bytes": len(payload), "payload_crc32": zlib.crc32(payload)}
    if isinstance(header, dict) and "format_version" in header and not isinstance(header["format_version"], str):
        header = {**header, "format_version": version}
    text = json.dumps(header, ensure_ascii=False).encode()
    header_crc = struct.pack("<I", zlib.crc32(text)) if version >= 2 else b""
    return MAGIC + struct.pack("<IQ", version, len(text)) + header_crc + text + payload


def refused(tmp_path, data):
    path = tmp_path / "crafted.model"
    path.write_bytes(data)
    with pytest.raises(NbtextError, match=str(path).replace("\\", "\\\\")):
        load(str(path))
    return path


def with_key(d, dotted, value):
    """A deep copy of d with the dotted key set (or deleted when value is ...)."""
    d = json.loads(json.dumps(d))
    *parents, last = dotted.split(".")
    node = d
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return d


CRAFTED = [
    ("n_tokens", None),
    ("n_tokens", "12"),
    ("n_tokens", 12.0),
    ("n_tokens", 10**20),
    ("n_tokens", -1),
    ("classes", []),
    ("classes", ["ham", "ham"]),
    ("classes", [1, 2]),
    ("classes", None),
    ("classes", ["ham\nX-Spam-Flag: NO", "spam"]),
    ("classes", ["ham", "sp\x00am"]),
    ("classes", ["ham", "\x1b[31m"]),
    ("settings.alpha", None),
    ("settings.alpha", "0.1"),
    ("settings.alpha", -1),
    ("settings.alpha", 0),
    ("settings.min_count", 0),
    ("settings.min_count", 2.5),
    ("settings.max_features", "all"),
    ("settings.prior", "psychic"),
    ("settings.event_model", "neural"),
    ("settings.tokenizer.ngrams", 10**6),
    ("settings.tokenizer.ngrams", True),
    ("settings.tokenizer.input", "pdf"),
    ("settings.tokenizer.lexer", "bytes"),
    ("settings.tokenizer.lexer", "words"),  # (words is stored as no lexer)
    ("settings.tokenizer.lexer", "mail"),  # with the words lexer's pattern and case
    ("settings.tokenizer.lexer", None),
    ("settings.tokenizer.char_ngrams", ...),  # (its char_bytes without it: the preset's model has both)
    ("settings.tokenizer.char_bytes", ...),  # (its char_ngrams without it)
    ("settings.tokenizer.lowercase", False),
    ("settings.tokenizer.pattern", r"\w+"),
    ("settings.tokenizer", ...),
    ("settings.features", "tfidf"),
    ("settings.tf", "sqrt"),
    ("settings.idf", "yes"),
    ("settings", ...),
    ("settings", []),
    ("arrays.class_count", ...),
    ("arrays.class_count.shape", [10**18]),
    ("arrays.class_count.shape", [2, 1]),
    ("arrays.class_count.dtype", "|O"),
    ("arrays.class_count.offset", -8),
    ("arrays.class_count.offset", 10**12),
    ("arrays.count_data.shape", [3]),
    ("arrays.count_indptr.shape", [2]),
    ("arrays.pickle", {"dtype": "|O", "shape": [1], "offset": 0}),
    ("arrays", None),
    ("format_version", "1"),
    ("nbtext_version", 1),
    ("payload_bytes", None),
    ("payload_crc32", "x"),
    *(
        ("calibration", {"method": "temperature", "temperature": 2.0, "documents": 100, **extra})
        for extra in (
            {"length_exponent": -0.5},
            {"length_exponent": 3.0},
            {"length_exponent": "0.8"},
            {"length_exponent": 1},
            {"temperature": 0.0},
            {"width": 1.0},
            # a spam cut-off (train --max-ham-flagged): a ceiling on P(other) from 0 to 1/2, or an older
            # build's floor on P(spam) from 1/2 to the number after 1; with its class and budget, and one only
            *(
                {"positive": "spam", "max_ham_flagged": 0.01, "other_ceiling": bad}
                for bad in (float("nan"), -1e-300, -1.0, 0.6, 0.5000000000000001, float("inf"), "0.001", 0, None)
            ),
            *(
                {"positive": "spam", "max_ham_flagged": 0.01, "spam_cutoff": bad}
                for bad in (float("nan"), 0.4, 0.49999999999999994, 1.5, 1.0000000000000004, "0.9", 1)
            ),
            # -0.0 compares equal to 0.0, but no build writes it: it was read as the ceiling "never spam" and
            # said "with ham at -0 or more"; a budget of -0.0 said "-0.00%"
            {"positive": "spam", "max_ham_flagged": 0.01, "other_ceiling": -0.0},
            {"positive": "spam", "max_ham_flagged": -0.0, "other_ceiling": 1e-5},
            {"positive": "spam", "max_ham_flagged": 0.01, "other_ceiling": 1e-5, "spam_cutoff": 0.9},
            {"positive": "eggs", "max_ham_flagged": 0.01, "other_ceiling": 1e-5},
            {"positive": "spam", "max_ham_flagged": 0.6, "other_ceiling": 1e-5},
            {"positive": "spam", "other_ceiling": 1e-5},
            {"max_ham_flagged": 0.01, "other_ceiling": 1e-5},
            {"positive": "spam", "max_ham_flagged": 0.01},
            # the count of ham out of fold too few to bound the budget: a whole number, beside a ceiling only
            *(
                {"positive": "spam", "max_ham_flagged": 0.01, "other_ceiling": 1e-5, "too_few_to_bound": bad}
                for bad in (-1, 3.0, True, "40", None)
            ),
            {"positive": "spam", "max_ham_flagged": 0.01, "spam_cutoff": 0.9, "too_few_to_bound": 40},
            {"too_few_to_bound": 40},
        )
    ),
]


@pytest.mark.parametrize(
    "cutoff",
    [
        {"other_ceiling": 0.0},
        {"other_ceiling": 2.6e-300},
        {"other_ceiling": 0.5},
        {"spam_cutoff": 0.5},
        {"spam_cutoff": 0.97},
        {"spam_cutoff": 1.0000000000000002},  # (the number after 1: older builds' "never spam")
        {"other_ceiling": 2.6e-3, "too_few_to_bound": 40},
        {"other_ceiling": 0.0, "too_few_to_bound": 0},
    ],
)
def test_a_good_cutoff_loads(tmp_path, demo_model, cutoff):
    """(So that the crafted ones above are refused for their cut-off, not for the rest.)"""
    header, payload = parts(Path(demo_model).read_bytes())
    calibration = {"method": "temperature", "temperature": 2.0, "documents": 100}
    path = tmp_path / "good.model"
    path.write_bytes(
        assemble(
            {**header, "calibration": {**calibration, "positive": "spam", "max_ham_flagged": 0.01, **cutoff}}, payload
        )
    )
    assert load(str(path)).calibration == {**calibration, "positive": "spam", "max_ham_flagged": 0.01, **cutoff}


@pytest.mark.parametrize("key", ["other_ceiling", "max_ham_flagged"])
@pytest.mark.parametrize(
    "command", [["info"], ["eval", "--online", "{test}/spam", "{test}/ham"], ["predict"], ["predict", "--proba"]]
)
def test_a_cutoff_record_of_negative_zero_is_one_line_for_every_reader(tmp_path, demo_model, key, command):
    """A crafted calibration record holding -0.0 (the ceiling, or the budget): every command
    that reads the model (info, eval --online from it, predict's click-free path of one
    message) refuses it in one line, where it showed as "at -0 or more" or "-0.00%"."""
    from conftest import NBTEXT, ROOT

    header, payload = parts(Path(demo_model).read_bytes())
    record = {"method": "temperature", "temperature": 2.0, "documents": 100, "positive": "spam"}
    record.update({"max_ham_flagged": 0.01, "other_ceiling": 1e-5, key: -0.0})
    path = tmp_path / "crafted.model"
    path.write_bytes(assemble({**header, "calibration": record}, payload))
    args = [a.format(test=ROOT / "corpora" / "mail" / "test") for a in command]
    result = subprocess.run([NBTEXT, *args, "-m", path], input=b"free prize now", capture_output=True, timeout=120)
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.decode() == f"Error: {path} is corrupt: bad spam cut-off in the calibration record\n"


@pytest.mark.parametrize(
    "key, value",
    [("char_ngrams", 0), ("char_ngrams", 9), ("char_ngrams", True), ("char_ngrams", "3"), ("char_bytes", 2999)],
)
def test_crafted_character_ngram_settings_are_refused(tmp_path, key, value):
    """A model of --char-ngrams is read only with its length in range and of the bytes this
    build reads (CHAR_BYTES): another prefix would tokenize every message otherwise."""
    import nbtext

    model = nbtext.train(["cheap pills now", "lunch at noon"] * 3, ["spam", "ham"] * 3, min_count=1, char_ngrams=3)
    model.save(str(tmp_path / "m.model"))
    header, payload = parts((tmp_path / "m.model").read_bytes())
    refused(tmp_path, assemble(with_key(header, f"settings.tokenizer.{key}", value), payload))


@pytest.mark.parametrize("key, value", CRAFTED, ids=[f"{k}={v!r}"[:40] for k, v in CRAFTED])
def test_a_crafted_header_is_refused(tmp_path, demo_model, key, value):
    header, payload = parts(Path(demo_model).read_bytes())
    crc = not key.startswith("payload")
    refused(tmp_path, assemble(with_key(header, key, value), payload, crc))


def test_json_nested_a_thousand_deep_is_refused(tmp_path, demo_model):
    header, payload = parts(Path(demo_model).read_bytes())
    text = (json.dumps(header)[:-1] + ', "x": ' + "[" * 1000 + "]" * 1000 + "}").encode()
    data = MAGIC + struct.pack("<IQI", 2, len(text), zlib.crc32(text)) + text + payload
    refused(tmp_path, data)


def test_a_changed_header_byte_is_refused_by_its_checksum(tmp_path, demo_model):
    """λ 1.0 -> 7.0 is a header the schema would accept: the header's CRC-32 refuses it."""
    data = Path(demo_model).read_bytes()
    assert b'"alpha": 1.0' in data
    path = refused(tmp_path, data.replace(b'"alpha": 1.0', b'"alpha": 7.0', 1))
    assert "header checksum mismatch" in run("info", "-m", path).stderr


def test_a_format_1_file_still_loads(tmp_path, demo_model):
    """Files written before the header had a checksum (format 1) load as they did."""
    header, payload = parts(Path(demo_model).read_bytes())
    old = tmp_path / "old.model"
    old.write_bytes(assemble(header, payload, version=1))
    model, current = load(str(old)), load(str(demo_model))
    assert model.file_info["format_version"] == 1 and model.classes == current.classes
    assert np.array_equal(model.feature_log_prob, current.feature_log_prob)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
@pytest.mark.parametrize("array", ["class_count", "count_data"])
def test_counts_that_are_not_finite_and_non_negative_are_refused(tmp_path, demo_model, bad, array):
    header, payload = parts(Path(demo_model).read_bytes())
    payload = bytearray(payload)
    offset = header["arrays"][array]["offset"]
    payload[offset : offset + 8] = struct.pack("<d", bad)
    refused(tmp_path, assemble(header, bytes(payload)))


def test_a_small_file_claiming_a_huge_table_is_refused_before_allocating(tmp_path):
    """4,000 classes × 200,000 tokens in a few MB: predict would build a dense 6 GB table."""
    classes = [f"c{i}" for i in range(4000)]
    tokens = [f"t{j}" for j in range(200_000)]
    import nbtext
    from nbtext.classifier.model import NaiveBayes
    from nbtext.features.vocabulary import Vocabulary
    from nbtext.stats.token_counts import ClassCounts

    small = nbtext.train(["a b", "c d"], ["x", "y"], min_count=1)
    counts = ClassCounts(csr=(np.ones(4000), np.arange(4000, dtype=np.int32), np.arange(4001)), shape=(4000, 200_000))
    huge = NaiveBayes(small.settings, classes, np.ones(4000), counts, Vocabulary(tokens, np.arange(200_000), True))
    huge.save(tmp_path / "huge.model")
    size = (tmp_path / "huge.model").stat().st_size
    assert size < 10_000_000
    code = f"import nbtext; nbtext.load({str(tmp_path / 'huge.model')!r})"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "would need" in result.stderr and "GiB" in result.stderr
    # the same through the command line: one line, exit 1
    cli = run("predict", "-m", tmp_path / "huge.model", input="a b")
    assert cli.exit_code == 1 and cli.stderr.startswith("Error: ") and cli.stderr.count("\n") == 1


def test_truncation_at_every_point_is_refused(tmp_path):
    import nbtext

    nbtext.train(["cheap pills", "lunch notes", "free prize"], ["spam", "ham", "spam"], min_count=1).save(
        tmp_path / "small.model"
    )
    data = (tmp_path / "small.model").read_bytes()
    for end in range(len(data)):
        refused(tmp_path, data[:end])


def test_a_hostile_small_file_is_refused_before_allocating(tmp_path, demo_model):
    """1 KB that claims a billion tokens: refused at the size of a normal start-up."""
    import os

    header, payload = parts(Path(demo_model).read_bytes())
    header = with_key(with_key(header, "n_tokens", 10**9), "arrays.count_data.shape", [10**9])
    path = refused(tmp_path, assemble(header, payload[:1024]))
    peaks = []
    for model in (demo_model, path):
        process = subprocess.Popen(
            [sys.executable, "-c", f"import nbtext\ntry: nbtext.load({str(model)!r})\nexcept nbtext.NbtextError: pass"]
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait again
        peaks.append(usage.ru_maxrss)
    assert peaks[1] <= peaks[0] * 1.1


def test_random_bit_flips_are_refused_or_harmless(tmp_path, demo_model):
    """A flipped bit in the payload fails the checksum; one in the header gives a refusal
    or a header that is still valid: never a traceback."""
    data = Path(demo_model).read_bytes()
    rng = random.Random(7)
    path = tmp_path / "flipped.model"
    for _ in range(300):
        flipped = bytearray(data)
        i = rng.randrange(len(data))
        flipped[i] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(flipped))
        try:
            model = load(str(path))
        except NbtextError as e:
            assert str(path) in str(e)
        else:
            model.predict_proba(["free prize lunch"])  # a still-valid header: usable


# --- fuzzing with a fixed budget (`make fuzz` runs atheris for longer) -----------------------


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_after_the_magic_are_refused_or_loaded(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "m.model"
    path.write_bytes(MAGIC + data)
    with pytest.raises(NbtextError):
        load(str(path))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(['"', ",", "\t", "\n", "\r", "spam", "ham", "text", "\0", "é"]), max_size=40),
    st.sampled_from(["t.csv", "t.tsv"]),
)
def test_any_table_is_read_or_refused_in_one_line(tmp_path_factory, pieces, name):
    from nbtext.reading.sources import table_documents

    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_text("".join(pieces), encoding="utf-8")
    try:
        for doc in table_documents(str(path), "1", "2"):
            assert isinstance(doc.data, str) or (doc.data is None and "\n" not in doc.error)  # a row skipped by name
    except NbtextError as e:
        assert "\n" not in str(e)


def test_a_parts_calibration_sample_is_checked(tmp_path):
    """A --shard part's sample arrays: indices past the vocabulary, a label past the classes
    or a row pointer that runs backwards are refused as corrupt (a part is input too)."""
    import numpy as np

    import nbtext
    from nbtext.jobs.training import train_corpus
    from nbtext.reading.documents import Document, in_batches

    docs = [
        Document(str(i), f"free prize {i % 7}" if i % 2 else f"lunch report {i % 5}", "spam" if i % 2 else "ham")
        for i in range(120)
    ]
    part = train_corpus(lambda: in_batches(docs, 50), make_settings(min_count=1), partial=True)
    good = tmp_path / "part.model"
    part.save(good)
    assert nbtext.load(good).calibration_sample[1] == part.calibration_sample[1]
    header, payload, section = sample_parts(good.read_bytes())
    for name, value in [("sample_indices", 10**6), ("sample_labels", 5), ("sample_indptr", -1)]:
        spec = header["sample"]["arrays"][name]
        array = np.frombuffer(section, dtype=spec["dtype"], count=spec["shape"][0], offset=spec["offset"]).copy()
        array[-1] = value
        changed = section[: spec["offset"]] + array.tobytes() + section[spec["offset"] + array.nbytes :]
        crafted = {**header, "sample": {**header["sample"], "crc32": zlib.crc32(changed)}}
        refused(tmp_path, assemble(crafted, payload) + changed)
    crafted = {**header, "sample": {**header["sample"], "crc32": 0}}  # the sample's own checksum
    refused(tmp_path, assemble(crafted, payload) + section)


def peak_and_status(command, model, message):
    """(the peak memory in KB, the exit status, stdout, stderr) of `nbtext COMMAND -m MODEL` on
    `message`, run by a Python of its own that reports its child's peak."""
    measured = (
        "import resource, subprocess, sys\n"
        "code = subprocess.run(sys.argv[1:]).returncode\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code, file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-c", measured, Path(sys.executable).with_name("nbtext"), *command, "-m", model],
        input=message,
        capture_output=True,
        timeout=120,
    )
    said, report = result.stderr.decode().rstrip("\n").rpartition("\n")[::2]
    peak, status = map(int, report.split())
    return peak, status, result.stdout, said


def test_a_header_name_of_a_megabyte_in_a_model_file_tags_with_a_bounded_tag(tmp_path, demo_model):
    """A crafted file may name a header of a megabyte, and a message hold that line: each of
    its tokens carried the whole name (300 tokens: 300 MB). filter and predict now read it
    at about the memory of an ordinary message."""
    header, payload = parts(Path(demo_model).read_bytes())
    name = "x" * 1_000_000
    crafted = tmp_path / "crafted.model"
    crafted.write_bytes(assemble(with_key(header, "settings.tokenizer.headers", ["subject", name]), payload))
    line = name.encode() + b": " + b" ".join(b"w%d" % i for i in range(300))
    for command in (["filter"], ["predict", "-"]):
        ordinary = peak_and_status(
            command, demo_model, b"Subject: hi\nFrom: a@b.c\n" + line.replace(b"x", b"y") + b"\n\nfree\n"
        )
        message = b"Subject: hi\nFrom: a@b.c\n" + line + b"\n\nfree prize\n"
        peak, status, out, said = peak_and_status(command, crafted, message)
        assert status == 0 and ordinary[1] == 0 and "Traceback" not in said, (command, said)
        assert peak < ordinary[0] + 100_000, f"{command}: {peak:,} KB against {ordinary[0]:,} KB"
        if command == ["filter"]:
            assert out.startswith(message.split(b"\n\n")[0] + b"\nX-Nbtext-Class: ")


def test_a_header_named_twenty_thousand_times_in_a_model_file_is_read_once(tmp_path, demo_model):
    """A crafted file may repeat a header's name: each token of that line came once per
    repeat (Subject 20,000 times, a file of 230 KB, and a subject of 300 words: 440 MB and
    4 s). filter and predict now read it once, at about the memory of an ordinary message."""
    header, payload = parts(Path(demo_model).read_bytes())
    crafted = tmp_path / "crafted.model"
    crafted.write_bytes(assemble(with_key(header, "settings.tokenizer.headers", ["subject"] * 20_000), payload))
    message = b"From: a@b.c\nSubject: " + b" ".join(b"w%d" % i for i in range(300)) + b"\n\nfree prize\n"
    for command in (["filter"], ["predict", "-"]):
        ordinary = peak_and_status(command, demo_model, message)
        peak, status, out, said = peak_and_status(command, crafted, message)
        assert status == 0 and ordinary[1] == 0 and "Traceback" not in said, (command, said)
        assert peak < ordinary[0] + 100_000, f"{command}: {peak:,} KB against {ordinary[0]:,} KB"


@pytest.mark.parametrize("kind", ["sparse 2 GB file", "/dev/zero", "FIFO", "folder", "claims a terabyte"])
def test_what_is_no_model_file_is_refused_before_it_is_read(tmp_path, demo_model, kind):
    """The preamble is checked on the first bytes, what is not a regular file is refused
    before it is opened, and nothing past what the header claims (nor a claim past the end
    of the file) is read: `filter -m` of a 2 GB sparse file read it whole (2.1 GB), /dev/zero
    ended in MemoryError, a FIFO hung. One line, status 1, the message passed on; the
    child's peak memory stays that of an ordinary start. The learner of one message (train
    --update, forget), which maps the file it appends to, says the same line: `forget` mapped
    the 2 GB file whole (2.1 GB) before it looked at its magic, and said of a FIFO, a folder
    and /dev/zero what `-o` says of them (or read /dev/zero), a lock file made beside each."""
    import os

    path = {"/dev/zero": "/dev/zero", "folder": tmp_path}.get(kind, tmp_path / "m")
    if kind == "sparse 2 GB file":
        with open(path, "wb") as f:
            f.truncate(2 << 30)
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "claims a terabyte":
        header, payload = parts(Path(demo_model).read_bytes())
        data = assemble(header, payload)
        path.write_bytes(data[: len(MAGIC) + 4] + struct.pack("<Q", 10**12) + data[len(MAGIC) + 12 :])
    # each command run by a Python of its own that reports its child's peak memory (KB)
    measured = (
        "import resource, subprocess, sys\n"
        "code = subprocess.run(sys.argv[1:]).returncode\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code, file=sys.stderr)"
    )
    message = b"Subject: hi\n\nfree prize\n"
    (tmp_path / "message.eml").write_bytes(message)
    lines = set()
    for command in (
        ["filter"],
        ["predict", "-"],
        ["info"],
        ["train", "--update", f"spam={tmp_path / 'message.eml'}"],
        ["forget", tmp_path / "message.eml"],
    ):
        result = subprocess.run(
            [sys.executable, "-c", measured, Path(sys.executable).with_name("nbtext"), *command, "-m", path],
            input=message,
            capture_output=True,
            timeout=60,
        )
        said, report = result.stderr.decode().rstrip("\n").rsplit("\n", 1)
        peak, status = map(int, report.split())
        assert status == 1 and "\n" not in said and "Traceback" not in said, (command, said)
        assert peak < 400_000, f"{command}: {peak:,} KB"  # (an ordinary start: about 60,000 KB)
        lines.add(said)
        if command == ["filter"]:
            assert result.stdout == b"Subject: hi\nX-Nbtext-Class: error\n\nfree prize\n"
    assert len(lines) == 1, lines
    assert kind not in ("/dev/zero", "FIFO", "folder") or not os.path.exists(os.path.realpath(path) + ".lock")


def test_a_vocabulary_that_is_not_utf8_is_refused_at_load(tmp_path, demo_model):
    """It loaded for predict, then crashed --update, forget, --explain and info --top."""
    header, payload = parts(Path(demo_model).read_bytes())
    spec = header["arrays"]["vocabulary"]
    payload = bytearray(payload)
    payload[spec["offset"]] = 0xFF  # the first token's first byte
    path = refused(tmp_path, assemble(header, bytes(payload)))
    for command in (["info", "--top", "3"], ["predict", "--explain", "2", "-"]):
        result = run(*command, "-m", path, input="free prize")
        assert result.exit_code == 1 and "not UTF-8" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("relabelled", ["fisher", "bernoulli"])
def test_a_model_relabelled_as_another_event_model_is_refused_by_every_path(tmp_path, relabelled):
    """A multinomial file of presence counts whose settings say another event model with the
    same counts: its one_document record is the multinomial's. One message (the pure-Python
    path) scored it as a fisher model where two messages said the file was corrupt; the one
    validator now checks that the record is the file's own event model's."""
    import nbtext
    from nbtext.classifier import purescore

    model = nbtext.train(["cheap pills now", "lunch at noon"] * 3, ["spam", "ham"] * 3, min_count=1, features="binary")
    source = tmp_path / "m.model"
    model.save(str(source))
    header, payload = parts(source.read_bytes())
    header = {**header, "settings": {**header["settings"], "event_model": relabelled, "unknown": "ignore"}}
    data = assemble(header, payload)
    path = refused(tmp_path, data)
    assert purescore.of_file(data, str(path)) is None
    for documents in (["-"], ["-", "-"]):
        result = run("predict", "-m", path, *documents, input="cheap pills")
        assert result.exit_code == 1 and "corrupt" in result.stderr and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize(
    "options",
    [{"features": "counts"}, {"features": "binary"}, {"model": "complement"}, {"model": "fisher"}, {"char_ngrams": 3}],
    ids=["counts", "presence", "tf-idf", "fisher", "character n-grams"],
)
def test_a_settings_key_left_out_is_read_or_refused_alike_by_every_reader(tmp_path, options):
    """Each key of the settings train writes (the tokenizer's too), left out of a model file:
    the model loaded whole (info), the pure-Python path of one message (predict) and the
    pending section's learner (train --update in place, which asks PureModel.follows_changes)
    all read the file, or all refuse it in one line. A file without max_features passed the
    validator, was scored by predict, said to be corrupt by info and raised a KeyError
    traceback from train --update of a model that --min-count 1 leaves unpruned; a tf-idf
    model without one of tf, idf or length_norm was shown by info and raised a KeyError
    traceback from predict."""
    import nbtext

    model = nbtext.train(["cheap pills now", "lunch at noon"] * 3, ["spam", "ham"] * 3, min_count=1, **options)
    source = tmp_path / "m.model"
    model.save(str(source))
    header, payload = parts(source.read_bytes())
    keys = [f"settings.{key}" for key in header["settings"]]
    keys += [f"settings.tokenizer.{key}" for key in header["settings"]["tokenizer"]]
    (tmp_path / "one.txt").write_text("cheap pills again")
    for key in keys:
        path = tmp_path / "crafted.model"
        path.write_bytes(assemble(with_key(header, key, ...), payload))
        results = [
            run("info", "-m", path),
            run("predict", "-m", path, "-", input="cheap pills"),
            run("predict", "-m", path, "-", "-", input="cheap pills"),  # (the model loaded whole)
            run("train", "--update", "-m", path, f"spam={tmp_path / 'one.txt'}"),
        ]
        if any(result.exit_code == 0 for result in results):
            assert all(result.exit_code == 0 for result in results), (key, [r.output for r in results])
        else:
            for result in results:
                assert result.exception is None or isinstance(result.exception, SystemExit), (key, result.exception)
                assert result.stderr.startswith(f"Error: {path} is corrupt") and result.stderr.count("\n") == 1


@pytest.mark.parametrize("sample", [{}, [], 5, "x", {"bytes": True}, {"bytes": -1}, {"bytes": 1.5}])
def test_a_sample_record_that_is_not_one_is_a_corrupt_header_not_a_truncated_file(tmp_path, demo_model, sample):
    """A header whose sample record gives no size (its checksum right) is a corrupt header in
    every reader's and learner's line: they said the whole file 'is truncated', which sends
    its owner looking for a short copy."""
    header, payload = parts(Path(demo_model).read_bytes())
    path = refused(tmp_path, assemble({**header, "sample": sample}, payload))
    (tmp_path / "message.eml").write_bytes(b"Subject: hi\n\nfree prize\n")
    for command in (
        ["predict", "-"],
        ["filter"],
        ["info"],
        ["train", "--update", f"spam={tmp_path / 'message.eml'}"],
        ["forget", tmp_path / "message.eml"],
    ):
        result = subprocess.run(
            [Path(sys.executable).with_name("nbtext"), *map(str, command), "-m", path],
            input=b"Subject: hi\n\nfree prize\n",
            capture_output=True,
            timeout=60,
        )
        said = result.stderr.decode()
        assert result.returncode == 1 and said == f"Error: {path} is corrupt (unreadable header)\n", (command, said)
