"""One door for every reader of a model file, and no writer builds on what the readers refuse.

Every place in nbtext/ that opens a file, or reads or parses a model file's bytes, is named
here (a new one fails the first test until it is named, and said to go through the one
loader, nbtext.jobs.loading, or why it opens no model file). The Dask worker's path loads as
every reader does (a crafted pending record refused), and every writer that builds on an
existing model refuses a pending section the model loaded whole refuses (generated lies).
"""

import ast
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nbtext.errors import NbtextError
from nbtext.modelfile import pending

from conftest import ROOT, one_line_error, run

PACKAGE = ROOT / "nbtext"
NBTEXT = Path(sys.executable).with_name("nbtext")
MAIL = ROOT / "corpora" / "mail"
GENERAL = ["--preset", "general"]  # (the spam preset's TONE pass is not what these tests are about)

# What opens a file, or reads or parses a model file's bytes.
WATCHED = {
    "builtins.open",
    "io.open",
    "os.open",
    "os.fdopen",
    "mmap.mmap",
    "fsspec.open",
    "*.open",  # a method of something not resolved here (a Path's, a file system's)
    "*.read_bytes",
    "*.read_text",
    "nbtext.modelfile.container.read_bytes",
    "nbtext.modelfile.container.read_open",
    "nbtext.modelfile.container.mapped",
    "nbtext.modelfile.container.split",
    "nbtext.modelfile.container.read_header",
    "nbtext.modelfile.container.sample_section",
    "nbtext.modelfile.format.parse_state",
    "nbtext.modelfile.pending.Log",
    "nbtext.classifier.model.from_bytes",
    "nbtext.classifier.model.NaiveBayes.from_state",
    "nbtext.classifier.purescore.of_file",
    "nbtext.classifier.purescore.as_read",
}

# Every such call: (module, function, what it calls) -> what it opens or reads, and how.
MODEL_FILE_DOORS = {
    # the one loader and the model-file modules under it
    ("nbtext.jobs.loading", "model_bytes", "nbtext.modelfile.container.read_bytes"): "the door: a model's bytes",
    ("nbtext.jobs.loading", "load", "nbtext.modelfile.container.read_bytes"): "the door (nbtext.load)",
    ("nbtext.jobs.loading", "_with_pending_checked", "nbtext.classifier.model.from_bytes"): "the one validator",
    ("nbtext.jobs.loading", "_with_pending_checked", "nbtext.modelfile.pending.Log"): "the one validator",
    ("nbtext.classifier.purescore", "as_read", "nbtext.modelfile.pending.Log"): "the one-message reader's section",
    ("nbtext.modelfile.container", "read_bytes", "builtins.open"): "the model file, read for the door",
    ("nbtext.modelfile.container", "read_bytes", "nbtext.modelfile.container.read_open"): "(the same)",
    ("nbtext.modelfile.container", "read_open", "nbtext.modelfile.container.split"): "(the same)",
    ("nbtext.modelfile.container", "mapped", "mmap.mmap"): "the learner's file, mapped",
    ("nbtext.modelfile.container", "locked.__enter__", "os.open"): "a model's lock file, not the model",
    ("nbtext.modelfile.container", "write_atomically", "os.fdopen"): "a model written, by rename",
    ("nbtext.modelfile.format", "parse_state", "nbtext.modelfile.container.split"): "under model_of_bytes",
    ("nbtext.modelfile.format", "parse_state", "nbtext.modelfile.container.sample_section"): "(the same)",
    ("nbtext.classifier.model", "from_bytes", "nbtext.modelfile.format.parse_state"): "under model_of_bytes",
    ("nbtext.classifier.model", "from_bytes", "nbtext.classifier.model.NaiveBayes.from_state"): "(the same)",
    # the one-message reader: the checks of the door's (tests/test_one_validator.py), numpy's loader behind it
    ("nbtext.classifier.purescore", "of_file", "nbtext.modelfile.container.split"): "bytes from model_bytes",
    ("nbtext.classifier.purescore", "as_read", "nbtext.classifier.purescore.of_file"): "(the same)",
    ("nbtext.delivery.judging", "OneMessageModel.__init__", "nbtext.classifier.purescore.as_read"): "(the same)",
    # the one-message learner: the file read is the file written, under the model's lock; it checks the
    # section as every one-message reader does (PureModel.with_changes) before it appends
    ("nbtext.jobs.learnone", "through_log", "builtins.open"): "the model file, to append to it",
    ("nbtext.jobs.learnone", "through_log", "nbtext.modelfile.container.mapped"): "(the same)",
    ("nbtext.jobs.learnone", "through_log", "nbtext.modelfile.container.read_open"): "(the same)",
    ("nbtext.jobs.learnone", "through_log", "nbtext.classifier.purescore.of_file"): "(the same)",
    ("nbtext.jobs.learnone", "through_log", "nbtext.modelfile.container.sample_section"): "(the same)",
    ("nbtext.jobs.learnone", "through_log", "nbtext.modelfile.pending.Log"): "(the same)",
    # a header's classes alone, the bytes read by model_bytes; the model is loaded by the door before use
    ("nbtext.cli.commands", "imap_scan", "nbtext.modelfile.container.split"): "classes, from model_bytes",
    ("nbtext.jobs.learning", "nothing_to_update", "nbtext.modelfile.container.split"): "classes, from model_bytes",
    # the header alone, before any document is read (train --update's labels checked against the classes);
    # the model is loaded by the door before use
    ("nbtext.jobs.learning", "nothing_to_update", "nbtext.modelfile.container.read_header"): "classes, header alone",
    ("nbtext.modelfile.container", "read_header", "builtins.open"): "(the same): magic, preamble, header checked",
    ("nbtext.modelfile.container", "read_header", "nbtext.modelfile.container.read_bytes"): "(the same), or",
    ("nbtext.modelfile.container", "read_header", "nbtext.modelfile.container.split"): "(the same)",
}
OTHER_FILES = {
    ("nbtext.errors", "quiet_stdout", "os.open"): "/dev/null",
    ("nbtext.report.output", "guard_descriptors", "os.open"): "/dev/null",
    ("nbtext.jobs.cluster", "_opener", "builtins.open"): "documents, on a worker",
    ("nbtext.jobs.cluster", "_opener", "fsspec.open"): "documents at a URL, on a worker",
    ("nbtext.jobs.cluster", "_opener", "*.open"): "(the same)",
    ("nbtext.jobs.imapscan", "read_state", "builtins.open"): "imap-scan's state file",
    ("nbtext.jobs.setupcheck", "programs", "builtins.open"): "the nbtext executable's first line (its interpreter)",
    ("nbtext.jobs.imapscan", "_StateLock.__enter__", "os.open"): "imap-scan's state lock",
    ("nbtext.reading.imapclient", "Bounded.open", "*.open"): "imaplib's connection to an IMAP server (no file)",
    ("nbtext.reading.documents", "_open_binary", "builtins.open"): "documents",
    ("nbtext.reading.sources", "is_mbox", "builtins.open"): "documents",
    ("nbtext.reading.sources", "opened_input.__enter__", "builtins.open"): "inputs (documents, tables, lists)",
}


def watched_calls(path):
    """(module, function, qualified callee) of every call in the module at `path` of a name
    in WATCHED, names resolved through the module's imports and its own definitions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            names.update(
                {a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0] for a in node.names}
            )
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.setdefault(node.name, f"{module}.{node.name}")

    def qualified(f):
        if isinstance(f, ast.Name):
            return names.get(f.id, f"builtins.{f.id}")
        if isinstance(f, ast.Attribute):
            base = qualified(f.value) if isinstance(f.value, (ast.Name, ast.Attribute)) else None
            return f"{base}.{f.attr}" if base is not None else f"*.{f.attr}"
        return None

    found = set()

    def walk(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                walk(child, [*scope, child.name])
                continue
            name = qualified(child.func) if isinstance(child, ast.Call) else None
            if name is not None and name not in WATCHED and "." in name:
                name = "*." + name.rsplit(".", 1)[1]  # a method of an object (a Path's read_bytes, say)
            if name in WATCHED:
                found.add((module, ".".join(scope) or "<module>", name))
            walk(child, scope)

    walk(tree, [])
    return found


def test_every_place_that_opens_a_file_or_reads_a_model_file_is_named():
    """A new reader of a model file fails here until it is named: it goes through
    nbtext.jobs.loading (model_bytes, then model_of_bytes or the one-message reader), as
    the Dask worker now does, or it says why it opens no model file."""
    found = set().union(*(watched_calls(p) for p in sorted(PACKAGE.rglob("*.py"))))
    named = set(MODEL_FILE_DOORS) | set(OTHER_FILES)
    assert sorted(found - named) == [], "not named here: does it go through nbtext.jobs.loading?"
    assert sorted(named - found) == [], "named here but gone: drop them"


# --- the Dask worker's path -------------------------------------------------------------------
def record_body(**fields):
    record = {
        "hash": "ab" * 16,
        "label": "spam",
        "from": None,
        "tokens": ["free"],
        "mail": False,
        "derived": {"features": 1, "unk": [0.0, 0.0], "totals": [1.0, 1.0]},
    }
    return json.dumps({**record, **fields}).encode()


def with_record(model_bytes, body):
    return model_bytes + pending.PENDING_MAGIC + pending.RECORD.pack(len(body), zlib.crc32(body)) + body


@pytest.fixture(scope="module")
def eggs_model(tmp_path_factory):
    """A model of spam and ham with one well-framed pending record of a class "eggs"."""
    folder = tmp_path_factory.mktemp("door")
    result = run("train", *GENERAL, "-o", folder / "m.model", MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 0, result.stderr
    path = folder / "eggs.model"
    path.write_bytes(with_record((folder / "m.model").read_bytes(), record_body(label="eggs")))
    return path


def test_the_dask_workers_load_a_model_as_every_reader_does(eggs_model):
    """score_partition (what a worker runs) refuses the record of a class the model lacks,
    where it returned a three-class model."""
    from nbtext.jobs.cluster import score_partition

    entries = [("source", str(next((MAIL / "test" / "spam").iterdir())), None)]
    with pytest.raises(NbtextError, match="is corrupt .its pending section"):
        score_partition(entries, eggs_model.read_bytes(), str(eggs_model), None, 10_000, ("label",), 0)


def test_predict_on_a_cluster_refuses_the_crafted_record_in_one_line(eggs_model):
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        result = run("predict", "-m", eggs_model, "--scheduler", c.scheduler_address, MAIL / "test" / "spam")
    one_line_error(result, "is corrupt (its pending section")
    local = run("predict", "-m", eggs_model, MAIL / "test" / "spam")
    assert local.exit_code == result.exit_code and local.stderr == result.stderr


# --- writers that build on a model ------------------------------------------------------------
def nbtext(*args):
    return subprocess.run([NBTEXT, *map(str, args)], capture_output=True, timeout=120)


SPAM, HAM = sorted((MAIL / "test" / "spam").iterdir()), sorted((MAIL / "test" / "ham").iterdir())
# Each writer that appends to or rewrites an existing model (MODEL: the file; OUT: another file)
WRITERS = {
    "learn": lambda m, out: ["train", "--update", "-m", m, f"spam={SPAM[5]}"],
    "move": lambda m, out: ["train", "--update", "-m", m, f"ham={SPAM[0]}"],
    "forget": lambda m, out: ["forget", "-m", m, SPAM[1]],
    "learn, the full way": lambda m, out: ["train", "--update", "-m", m, "-o", out, f"spam={SPAM[5]}"],
    "merge": lambda m, out: ["merge", "-o", out, m],
}


@pytest.fixture(scope="module")
def learned_models(tmp_path_factory):
    """Models (of counts; of presence) whose pending section holds two records, learned
    through it."""
    models = {}
    for name, options in {
        "counts": GENERAL,
        "presence": [*GENERAL, "--features", "binary", "--min-count", "1"],
    }.items():
        path = tmp_path_factory.mktemp("writers") / "m.model"
        assert nbtext("train", *options, "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham").returncode == 0
        for message in SPAM[:2]:
            assert nbtext("train", "--update", "-m", path, f"spam={message}").returncode == 0
        models[name] = path
        assert len(pending.Log(path.read_bytes()).records) == 2
    return models


def lied(data, index, lie):
    """The model's bytes with pending record `index` rewritten by lie(record) (checksum right)."""
    log = pending.Log(data)
    at = data.index(pending.PENDING_MAGIC, log.start) + len(pending.PENDING_MAGIC)
    bodies = []
    for k, record in enumerate(log.records):
        if k == index:
            record = json.loads(json.dumps(record))
            lie(record["derived"])
        bodies.append(json.dumps(record).encode())
    return data[:at] + b"".join(pending.RECORD.pack(len(b), zlib.crc32(b)) + b for b in bodies)


_NUMBERS = st.one_of(
    st.sampled_from([1e300, -1e300, 0.0, 1.0, -1.0, 0.5, 2.0**53]),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e308, max_value=1e308),
)


def told(derived, fields, number, replace, k):
    """Record `derived` told otherwise: in each of `fields`, class k's entry `number` (or
    that much more; features: that many more, at least 0)."""
    for field in fields:
        if field == "features":
            derived["features"] = max(0, derived["features"] + int(max(-3, min(3, number))))
        elif derived[field] is not None:
            derived[field][k] = number if replace else derived[field][k] + number


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    model=st.sampled_from(["counts", "presence"]),
    index=st.integers(0, 1),
    fields=st.lists(st.sampled_from(["features", "totals", "unk"]), max_size=3, unique=True),
    number=_NUMBERS,
    replace=st.booleans(),
    k=st.integers(0, 1),
    writer=st.sampled_from(sorted(WRITERS)),
)
def test_no_writer_builds_on_a_pending_section_the_readers_refuse(
    tmp_path_factory, learned_models, model, index, fields, number, replace, k, writer
):
    """A record whose derived one-document record lies (totals of 1e300, features 0, ...):
    every writer that builds on the model refuses it in one line, and leaves every file as
    it was, exactly when the model loaded whole (`info`) refuses it; else it writes."""
    folder = tmp_path_factory.mktemp("lie")
    path, out = folder / "m.model", folder / "out.model"
    data = lied(learned_models[model].read_bytes(), index, lambda d: told(d, fields, number, replace, k))
    path.write_bytes(data)
    readers = nbtext("info", "-m", path)
    result = nbtext(*WRITERS[writer](path, out))
    if readers.returncode == 0:
        assert result.returncode == 0, result.stderr
        return
    assert b"is corrupt" in readers.stderr, readers.stderr
    assert result.returncode == 1 and result.stderr.count(b"\n") == 1, result.stderr
    assert b"is corrupt" in result.stderr and b"Traceback" not in result.stderr, result.stderr
    assert path.read_bytes() == data and not out.exists()


def test_the_lie_the_attack_found_is_refused_by_the_learner(tmp_path, learned_models):
    """Totals of 1e300 and no features in the last record: predict and info refuse it, and
    train --update appended to it, after which predict's one-message path accepted it."""
    path = tmp_path / "m.model"

    def lie(derived):
        derived["totals"], derived["features"] = [1e300] * len(derived["totals"]), 0

    path.write_bytes(lied(learned_models["counts"].read_bytes(), 1, lie))
    message = SPAM[3].read_bytes()
    for args in (["predict"], ["info"]):
        assert subprocess.run([NBTEXT, *args, "-m", path], input=message, capture_output=True).returncode == 1
    learn = nbtext("train", "--update", "-m", path, f"spam={SPAM[4]}")
    assert learn.returncode == 1 and b"does not agree with its counts" in learn.stderr, learn.stderr
    predict = subprocess.run([NBTEXT, "predict", "-m", path], input=message, capture_output=True)
    assert predict.returncode == 1, predict.stdout
