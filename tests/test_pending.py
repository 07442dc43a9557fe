"""Learning and forgetting a few messages through the model's pending log (nbtext.modelfile.pending,
nbtext.jobs.learnone): what every reader sees is what the full way would give, and folding the
log into the file writes the bytes `train --update` and `forget` write."""

from hypothesis import HealthCheck, example, given, settings, strategies as st
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nbtext
from nbtext.delivery.judging import OneMessageModel
from nbtext.modelfile import pending

from conftest import ROOT, run

NBTEXT = Path(sys.executable).with_name("nbtext")
MAIL = ROOT / "corpora" / "mail"
# the general defaults: these tests are not about a spam filter's (tests/test_preset.py)
GENERAL = ["--preset", "general"]
pytestmark = pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")


def nbtext_run(*args, input=None):
    result = subprocess.run([NBTEXT, *map(str, args)], input=input, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    return result


@pytest.fixture(
    scope="module",
    params=[
        GENERAL,
        [*GENERAL, "--max-evidence", "5"],
        [*GENERAL, "--features", "binary", "--min-count", "1", "--max-evidence", "5"],
        [],
    ],
    ids=["every feature", "max-evidence", "presence", "spam preset"],
)
def trained_model(tmp_path_factory, request):
    """The bytes of a model of half the demo corpus (scored on every feature, and on each
    class's 5 most telling: train --max-evidence; of counts, and of presence with nothing
    pruned, as the spam preset trains; and the spam preset's own, the defaults of spam and
    ham), trained once for the module: a training is byte for byte the same each time."""
    folder = tmp_path_factory.mktemp("half")
    train = folder / "train"
    for label in ("spam", "ham"):
        files = sorted((MAIL / "train" / label).iterdir())
        (train / label).mkdir(parents=True)
        for f in files[::2]:
            shutil.copy(f, train / label / f.name)
    path = folder / "m.model"
    nbtext_run("train", *request.param, "-o", path, train / "spam", train / "ham")
    return path


@pytest.fixture
def model(tmp_path, trained_model):
    """trained_model's file copied into the test's own folder (mode included), and the other
    half's messages to learn: each test changes its own copy."""
    path = tmp_path / "m.model"
    shutil.copy(trained_model, path)
    return path


def messages(label, part="train"):
    return sorted((MAIL / part / label).iterdir())


def copy(path, name):
    target = path.with_name(name)
    shutil.copy(path, target)
    return target


def probabilities(model_path, documents):
    """(the one-message path's, the model loaded whole's) P(k | document) of each."""
    one = OneMessageModel(str(model_path))
    assert one.pure is not None, "the one-message path should serve this model"
    whole = nbtext.load(str(model_path), sample=False)
    return [one.pure_probabilities(d.read_bytes()) for d in documents], whole.predict_proba(
        [d.read_bytes() for d in documents]
    ).tolist()


def test_learning_through_the_log_then_folding_it_writes_what_update_writes(model):
    """Each message learned on its own through the log (new ones, ones moved to the other
    class, one already known); then the log folded into the file: the bytes of one
    `train --update` of them all, through the full way."""
    start, full = copy(model, "start.model"), model.with_name("full.model")
    batch = (
        [("spam", m) for m in messages("spam")[1::2][:6]]
        + [("ham", m) for m in messages("ham")[1::2][:6]]
        + [("ham", messages("spam")[0]), ("spam", messages("ham")[0])]
    )  # moved: learned under the other class
    for label, message in batch + [("ham", messages("ham")[1])]:  # the last: learned already (a duplicate)
        result = nbtext_run("train", "--update", "-m", model, f"{label}={message}")
        assert b"pending at the end of the model file" in result.stderr  # the pending section took it
    assert len(pending.Log(model.read_bytes()).records) == len(batch)
    # the full way, from the same start: -o another file never goes through the log
    nbtext_run("train", "--update", "-m", start, "-o", full, *(f"{label}={message}" for label, message in batch))
    folded = model.with_name("folded.model")
    nbtext.load(str(model), fold=True).save(
        str(folded)
    )  # loaded whole with its sample: the log folded in as update does
    assert folded.read_bytes() == full.read_bytes()


def test_every_reader_sees_the_log_and_agrees(model):
    """The one-message path and the model loaded whole score with the log's changes (new
    tokens, tokens crossing --min-count, moved and forgotten messages) and agree."""
    queries = messages("spam", "test")[:5] + messages("ham", "test")[:5]
    before = probabilities(model, queries)
    for message in messages("spam")[1::2][:5]:
        nbtext_run("train", "--update", "-m", model, f"spam={message}")
    nbtext_run("train", "--update", "-m", model, f"spam={messages('ham')[0]}")  # moved
    nbtext_run("forget", "-m", model, messages("spam")[2])  # learned by the training, forgotten here
    pure, whole = probabilities(model, queries)
    assert pure != before[0]  # the log changed something
    for p, q in zip(pure, whole):
        assert p == pytest.approx(q, abs=1e-9)
    stdin = nbtext_run("predict", "-m", model, "--proba", input=queries[0].read_bytes()).stdout.split()
    batch = nbtext_run("predict", "-j", "1", "-m", model, "--proba", queries[0]).stdout.split()
    assert stdin[1:] == batch[1:]  # the label and the probabilities, to the printed digit


def test_learn_then_forget_through_the_log_gives_back_the_same_file(model):
    original = model.read_bytes()
    new = messages("spam", "test")[:3]
    for message in new:
        nbtext_run("train", "--update", "-m", model, f"spam={message}")
    for message in new:
        nbtext_run("forget", "-m", model, message)
    folded = model.with_name("folded.model")
    nbtext.load(str(model), fold=True).save(str(folded))
    assert folded.read_bytes() == original


def test_the_log_is_folded_into_the_file_when_full(model):
    """At COMPACT_AFTER records the next learner takes the full way: the file is rewritten
    whole, without a pending section, and it is the one update writes."""
    start, full = copy(model, "start.model"), model.with_name("full.model")
    batch = [f"{label}={m}" for label in ("spam", "ham") for m in messages(label, "test") + messages(label)[1::2]]
    batch = batch[: pending.COMPACT_AFTER + 1]
    assert len(batch) == pending.COMPACT_AFTER + 1
    for spec in batch[:-1]:
        nbtext_run("train", "--update", "-m", model, spec)
    assert len(pending.Log(model.read_bytes()).records) == pending.COMPACT_AFTER
    result = nbtext_run("train", "--update", "-m", model, batch[-1])
    assert b"pending" not in result.stderr and pending.PENDING_MAGIC not in model.read_bytes()
    nbtext_run("train", "--update", "-m", start, "-o", full, *batch)
    assert model.read_bytes() == full.read_bytes()


def test_a_section_cut_short_anywhere_is_the_state_before_its_last_record(model):
    """A kill mid-append leaves a torn last record: readers see the model without it, and
    the next learner cuts it off before it appends."""
    first, second, third = messages("spam", "test")[:3]
    nbtext_run("train", "--update", "-m", model, f"spam={first}")
    one = model.read_bytes()
    nbtext_run("train", "--update", "-m", model, f"spam={second}")
    two = model.read_bytes()
    expected = probabilities(model, [third])  # with both
    model.write_bytes(one)
    with_one = probabilities(model, [third])
    assert with_one != expected
    for cut in sorted(random.Random(0).sample(range(len(one), len(two)), 25)):
        model.write_bytes(two[:cut])
        assert probabilities(model, [third]) == with_one
    model.write_bytes(two[: len(two) - 3])
    nbtext_run("train", "--update", "-m", model, f"spam={second}")  # learned again: the torn copy is cut off
    assert model.read_bytes() == two and probabilities(model, [third]) == expected


def test_a_copy_of_the_model_file_is_all_of_it(model, tmp_path):
    """The pending section is in the model file: a copy (a backup, a model shared) holds
    what was learned, and a model trained anew over it has none."""
    nbtext_run("train", "--update", "-m", model, f"spam={messages('spam', 'test')[0]}")
    backup = copy(model, "backup.model")
    queries = messages("ham", "test")[:3]
    assert probabilities(backup, queries) == probabilities(model, queries)
    nbtext_run("train", "-o", model, MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert pending.Log(model.read_bytes()).records == [] and pending.PENDING_MAGIC not in model.read_bytes()


@pytest.mark.parametrize("damage", ["unknown class", "tokens not text", "derived not a record", "garbage"])
def test_a_corrupt_log_is_one_line_on_every_path(model, damage):
    """A log whose checksums are right but whose records are not ones nbtext writes: the
    one-message path and the whole model refuse it alike (filter tags the message `error`
    and exits 1, as for a corrupt model)."""
    import json
    import zlib

    before = model.read_bytes()
    nbtext_run("train", "--update", "-m", model, f"spam={messages('spam', 'test')[0]}")
    data = model.read_bytes()
    head = len(before) + len(pending.PENDING_MAGIC)
    record = json.loads(data[head + 8 :])
    if damage == "unknown class":
        record["label"] = "eggs"
    elif damage == "tokens not text":
        record["tokens"] = [1, 2]
    elif damage == "derived not a record":
        record["derived"] = {"features": -1}
    body = b"{not json" if damage == "garbage" else json.dumps(record).encode()
    model.write_bytes(data[:head] + pending.RECORD.pack(len(body), zlib.crc32(body)) + body)
    message = messages("spam", "test")[1].read_bytes()
    results = [
        subprocess.run([NBTEXT, *args, "-m", model], input=message, capture_output=True)
        for args in (["predict"], ["filter"], ["predict", "-j", "1", "-"])
    ]
    for r in results:  # whole by its checksum, yet not a record nbtext writes: crafted, refused
        assert r.returncode == 1 and r.stderr.count(b"\n") == 1 and b"its pending section" in r.stderr, r.stderr
    assert b"X-Nbtext-Class: error" in results[1].stdout


def test_learners_at_once_lose_nothing(model):
    """Learners started together take turns on the model's lock: every message is in."""
    batch = messages("spam", "test")[:8]
    processes = [
        subprocess.Popen([NBTEXT, "train", "--update", "-m", model, f"spam={m}"], stderr=subprocess.DEVNULL)
        for m in batch
    ]
    assert all(p.wait(timeout=120) == 0 for p in processes)
    journal = pending.Changes(["ham", "spam"], pending.Log(model.read_bytes()).records, presence=False)
    assert len(journal.journal) == len(batch) and set(journal.journal.values()) == {"spam"}


# --- hostile pending sections: both readers, one verdict, never a traceback ---------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
_RECORD_FIELDS = st.fixed_dictionaries(
    {
        "hash": st.sampled_from(["00" * 16, "ab" * 16, "zz" * 16, ""]),
        "label": st.sampled_from([None, "spam", "ham", "x"]),
        "from": st.sampled_from([None, "spam", "ham", 3]),
        "tokens": st.lists(st.sampled_from(["free", "prize", "lunch", "zebra", ""]), max_size=6),
        "mail": st.booleans(),
        "derived": _JSON
        | st.fixed_dictionaries(
            {
                "features": st.integers(-2, 10**6),
                "unk": st.none() | st.lists(st.floats(), min_size=2, max_size=2),
                "totals": st.lists(st.floats(allow_nan=True), min_size=1, max_size=3),
            }
        ),
    }
)


@pytest.mark.parametrize("where", ["checksum of the first", "body of the first", "body of the last"])
def test_a_damaged_record_is_refused_not_cut_off(model, where):
    """A whole record whose checksum fails is damage, not a kill (a kill leaves a record that
    runs past the file's end): every reader refuses the file, and a learner neither cuts the
    records after it off nor appends (it cut them all off silently before)."""
    before = len(model.read_bytes())
    for document in messages("spam", "test")[:3]:
        learn_one(model, f"spam={document}")
    data = bytearray(model.read_bytes())
    first = before + len(pending.PENDING_MAGIC)
    length = pending.RECORD.unpack_from(data, first)[0]
    at = {
        "checksum of the first": first + 5,
        "body of the first": first + pending.RECORD.size + length // 2,
        "body of the last": len(data) - 2,
    }[where]
    data[at] ^= 0x10
    model.write_bytes(bytes(data))
    message = messages("ham", "test")[0]
    for args in (
        ["predict"],
        ["filter"],
        ["predict", "-j", "1", "-"],
        ["info"],
        ["train", "--update", f"ham={message}"],
        ["forget", messages("spam", "test")[0]],
    ):
        r = subprocess.run([NBTEXT, *args, "-m", model], input=message.read_bytes(), capture_output=True, timeout=120)
        assert r.returncode == 1 and r.stderr.count(b"\n") == 1 and b"a damaged record" in r.stderr, (args, r.stderr)
        if args == ["filter"]:
            assert r.stdout.startswith(message.read_bytes().split(b"\n\n")[0].split(b"\n")[0])
    assert model.read_bytes() == bytes(data)


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("pending") / "m.model"
    nbtext_run("train", "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham")
    return path.read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tail=st.one_of(st.binary(max_size=300), st.lists(_RECORD_FIELDS | _JSON, max_size=3)))
def test_whatever_follows_a_model_both_readers_agree_or_refuse(tmp_path_factory, small_model, tail):
    import json
    import zlib

    from nbtext.errors import NbtextError

    if isinstance(tail, list):  # well-framed records, whatever they say
        bodies = [json.dumps(record).encode() for record in tail]
        tail = pending.PENDING_MAGIC + b"".join(pending.RECORD.pack(len(b), zlib.crc32(b)) + b for b in bodies)
    path = tmp_path_factory.mktemp("fuzz") / "m.model"
    path.write_bytes(small_model + tail)
    document = b"Subject: free prize\n\nfree prize lunch zebra"
    one = OneMessageModel(str(path))
    pure = one.pure_probabilities(document)
    try:
        whole = one.model.predict_proba([document])[0].tolist()
    except NbtextError as e:  # (the one-message path may score a record whose counts a whole pass refutes:
        assert "\n" not in str(e) and str(path) in str(e)  # docs/model-file.md, as for the file's own record)
        return
    if pure is not None:
        assert pure == pytest.approx(whole, abs=1e-9)


# --- what an attack found (each failed before its fix) --------------------------------------
def learn_one(model, spec):
    return subprocess.run([NBTEXT, "train", "--update", "-m", model, spec], capture_output=True, timeout=120)


def pending_records(model):
    return len(pending.Log(Path(model).read_bytes()).records)


@pytest.mark.parametrize(
    "options", [["--features", "binary", "--unknown", "ignore"], ["--features", "binary"]], ids=["no UNK", "UNK"]
)
def test_a_model_of_presence_takes_the_section_unless_its_unk_counts_pruned_documents(tmp_path, options):
    """Presence features count a document once per distinct token: through the section as
    the full way counts it (the fold gives update's bytes; both readers agree before it). With
    tokens pruned (the default --min-count) and an UNK feature, which documents held a pruned
    token is not stored: such a model is refused its change in one line, as the full way refuses it."""
    model = tmp_path / "b.model"
    nbtext_run("train", *GENERAL, *options, "-o", model, MAIL / "train" / "spam", MAIL / "train" / "ham")
    start, full = copy(model, "start.model"), model.with_name("full.model")
    batch = [f"spam={messages('ham', 'test')[0]}", f"spam={messages('spam', 'test')[0]}"]
    results = [learn_one(model, spec) for spec in batch]
    if "ignore" not in options:
        assert all(r.returncode == 1 and r.stderr.count(b"\n") == 1 for r in results)
        assert b"cannot --update a Bernoulli or binary-feature model" in results[0].stderr
        assert model.read_bytes() == start.read_bytes()
        return
    assert all(r.returncode == 0 for r in results) and pending_records(model) == len(batch)
    queries = messages("spam", "test")[1:4] + messages("ham", "test")[1:4]
    pure, whole = probabilities(model, queries)
    assert pure != probabilities(start, queries)[0]
    for p, q in zip(pure, whole):
        assert p == pytest.approx(q, abs=1e-9)
    nbtext_run("train", "--update", "-m", start, "-o", full, *batch)
    folded = model.with_name("folded.model")
    nbtext.load(str(model), fold=True).save(str(folded))
    assert folded.read_bytes() == full.read_bytes()


def test_a_model_put_in_place_while_a_learner_works_is_never_written(model, tmp_path):
    """The learner writes the file it read (its open descriptor), never one renamed over the
    path meanwhile (a `train -o` takes no lock): that one stays whole."""
    from nbtext.modelfile.container import read_open

    other = copy(model, "other.model")
    with open(model, "r+b") as f:
        data = read_open(f, str(model))
        log = pending.Log(data)
        replacement = other.read_bytes()
        tmp = tmp_path / "t"
        tmp.write_bytes(replacement)
        tmp.rename(model)  # as train -o does
        record = {
            "hash": "00" * 16,
            "label": "spam",
            "from": None,
            "tokens": ["free"],
            "mail": False,
            "derived": {"features": 1, "unk": [0.0, 0.0], "totals": [0.0, 1.0]},
        }
        log.append(f, str(model), [record])
    assert model.read_bytes() == replacement


def test_an_append_that_fails_leaves_the_file_as_it_was(model):
    """A full disk or a file size limit mid-append: the model stays readable and unchanged,
    and a first append cut inside its magic reads as no section at all."""
    before = model.read_bytes()
    limit = (
        f"import resource, os, sys; resource.setrlimit(resource.RLIMIT_FSIZE, ({len(before) + 7},) * 2); "
        f"os.execv(sys.argv[1], sys.argv[1:])"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            limit,
            str(NBTEXT),
            "train",
            "--update",
            "-m",
            str(model),
            f"spam={messages('ham', 'test')[0]}",
        ],
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 1 and b"cannot write" in result.stderr and result.stderr.count(b"\n") == 1
    assert model.read_bytes() == before
    model.write_bytes(before + pending.PENDING_MAGIC[:7])  # as a kill could leave it
    assert probabilities(model, messages("spam", "test")[:2]) == probabilities(
        copy(model, "x.model"), messages("spam", "test")[:2]
    )
    nbtext_run("train", "--update", "-m", model, f"spam={messages('ham', 'test')[0]}")
    assert pending_records(model) == 1


def test_a_crafted_section_is_one_line_for_learners_too(model):
    import json
    import zlib

    body = json.dumps(
        {
            "hash": "0" * 32,
            "label": "nosuch",
            "from": None,
            "tokens": ["free"],
            "mail": False,
            "derived": {"features": 1, "unk": [0.0, 0.0], "totals": [1.0, 1.0]},
        }
    ).encode()
    model.write_bytes(
        model.read_bytes() + pending.PENDING_MAGIC + pending.RECORD.pack(len(body), zlib.crc32(body)) + body
    )
    for args in (
        ["train", "--update", "-m", model, f"spam={messages('ham', 'test')[0]}"],
        ["forget", "-m", model, messages("spam", "train")[0]],
    ):
        result = subprocess.run([NBTEXT, *map(str, args)], capture_output=True, timeout=120)
        assert result.returncode == 1 and result.stderr.count(b"\n") == 1 and b"is corrupt" in result.stderr, (
            result.stderr
        )


def test_forgetting_what_was_never_counted_is_refused(model):
    """A well-framed record that takes tokens from a class that never held them would make
    counts negative: the model loaded whole refuses it in one line, and so does every
    one-message reader (predict of stdin, filter), which derives the section's record again
    from the counts of every token it moves (docs/model-file.md)."""
    import json
    import zlib

    body = json.dumps(
        {
            "hash": "1" * 32,
            "label": None,
            "from": "spam",
            "tokens": ["the"] * 50,
            "mail": False,
            "derived": {"features": 151, "unk": [196.0, 198.0], "totals": [549.0, 550.0]},
        }
    ).encode()
    model.write_bytes(
        model.read_bytes() + pending.PENDING_MAGIC + pending.RECORD.pack(len(body), zlib.crc32(body)) + body
    )
    message = messages("spam", "test")[0].read_bytes()
    for args in (
        ["predict", "-j", "1", messages("spam", "test")[0]],
        ["info"],
        ["eval", MAIL / "test" / "spam"],
        ["predict"],
        ["filter"],
    ):
        result = subprocess.run([NBTEXT, *map(str, args), "-m", model], input=message, capture_output=True, timeout=120)
        assert result.returncode == 1 and result.stderr.count(b"\n") == 1 and b"corrupt" in result.stderr, args


def test_large_messages_are_folded_in_not_kept_in_the_section(model, tmp_path):
    """Every message's filter reads the section: it stays under MAX_SECTION_BYTES."""
    big = tmp_path / "big.eml"
    big.write_text("Subject: big\n\n" + " ".join(f"w{i}" for i in range(120_000)))
    result = learn_one(model, f"spam={big}")
    assert result.returncode == 0 and pending.PENDING_MAGIC not in model.read_bytes()  # the full way took it
    assert pending.Log(model.read_bytes()).bytes <= pending.MAX_SECTION_BYTES


def test_a_read_only_model_takes_the_full_way(model, request):
    """Learning into a read-only file works as the full way does (a new file by rename, the
    mode kept), whatever the number of messages."""
    import os

    model.chmod(0o444)
    as_user = []
    if os.geteuid() == 0:  # root writes read-only files: learn as nobody, in a folder nobody may write
        as_user = request.getfixturevalue("another_user")
        model.parent.chmod(0o777)
    result = subprocess.run(
        [*as_user, NBTEXT, "train", "--update", "-m", model, f"spam={messages('ham', 'test')[0]}"],
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert pending.PENDING_MAGIC not in model.read_bytes() and (model.stat().st_mode & 0o777) == 0o444


def test_a_hard_link_is_not_changed_with_the_model(model, tmp_path):
    backup = tmp_path / "backup.model"
    backup.hardlink_to(model)
    before = backup.read_bytes()
    assert learn_one(model, f"spam={messages('ham', 'test')[0]}").returncode == 0
    assert backup.read_bytes() == before and model.read_bytes() != before


def test_the_python_api_scores_as_the_command_line_until_the_fold(model):
    nbtext_run("train", "--update", "-m", model, f"spam={messages('ham', 'test')[0]}")
    query = messages("ham", "test")[1]
    line = nbtext_run("predict", "-j", "1", "--proba", "-m", model, query).stdout.split()
    api = nbtext.load(str(model)).predict_proba([query.read_bytes()])[0]
    assert [float(x) for x in line[3:]] == pytest.approx(api.tolist(), abs=5e-5)
    view = nbtext.load(str(model))
    if view.sample_unread:  # a sample to fit the temperature on again: the scoring view is not a file's
        with pytest.raises(nbtext.NbtextError, match="calibration sample"):
            view.save(str(model.with_name("x.model")))
    else:  # (none: the spam preset's, uncalibrated) the view is the model the fold writes
        view.save(str(model.with_name("x.model")))
        nbtext.load(str(model), fold=True).save(str(model.with_name("y.model")))
        assert model.with_name("x.model").read_bytes() == model.with_name("y.model").read_bytes()


def test_a_record_on_a_model_that_takes_none_is_one_line(tmp_path):
    """A Bernoulli model takes no records: one crafted on it is refused in one line (it was
    a KeyError traceback from every reader)."""
    import json
    import zlib

    model = tmp_path / "b.model"
    nbtext_run(
        "train",
        "--model",
        "bernoulli",
        "--unknown",
        "ignore",
        "-o",
        model,
        MAIL / "train" / "spam",
        MAIL / "train" / "ham",
    )
    body = json.dumps(
        {
            "hash": "ab" * 16,
            "label": "spam",
            "from": None,
            "tokens": ["free"],
            "mail": False,
            "derived": {"features": 150, "unk": None, "totals": [0.0, 0.0]},
        }
    ).encode()
    model.write_bytes(
        model.read_bytes() + pending.PENDING_MAGIC + pending.RECORD.pack(len(body), zlib.crc32(body)) + body
    )
    for args in (["info"], ["predict", "-j", "1", messages("spam", "test")[0]]):
        result = subprocess.run([NBTEXT, *map(str, args), "-m", model], capture_output=True, timeout=120)
        assert result.returncode == 1 and result.stderr.count(b"\n") == 1 and b"corrupt" in result.stderr, args
    body = json.dumps(
        {
            "hash": "cd" * 16,
            "label": "spam",
            "from": None,
            "tokens": ["free"],
            "mail": False,
            "derived": {"features": True, "unk": None, "totals": [0.0, 0.0]},
        }
    ).encode()
    with pytest.raises(ValueError):
        pending.Changes(["ham", "spam"], [json.loads(body)], presence=False)  # a bool is not a number of features


def test_a_shared_model_lets_every_user_of_its_group_learn(model, another_user):
    """The lock file the first learner made (mode 644 under a usual umask) still lets
    another user lock the model: flock needs the file open for reading only."""
    import os

    folder = model.parent
    for path in (folder, model):
        os.chown(path, 0, 65534)
    folder.chmod(0o2775)
    model.chmod(0o664)
    old = os.umask(0o022)
    try:
        assert learn_one(model, f"spam={messages('ham', 'test')[0]}").returncode == 0
    finally:
        os.umask(old)
    result = subprocess.run(
        [*another_user, NBTEXT, "train", "--update", "-m", model, f"ham={messages('ham', 'test')[1]}"],
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_a_folder_that_takes_no_lock_file_is_said_as_such(model, another_user):
    """A learner that may not make the lock file says the folder is why (it said the lock file
    does not exist: its second try, to open one another user made, was what it reported)."""
    model.chmod(0o666)
    model.parent.chmod(0o555)
    try:
        result = subprocess.run(
            [*another_user, NBTEXT, "train", "--update", "-m", model, f"ham={messages('ham', 'test')[1]}"],
            capture_output=True,
            timeout=120,
        )
    finally:
        model.parent.chmod(0o755)
    assert result.returncode == 1 and result.stderr.count(b"\n") == 1, result.stderr
    assert b"Permission denied; its folder must be writable" in result.stderr, result.stderr


def test_a_change_of_nothing_leaves_the_file_as_it_was(model, tmp_path):
    """forget of messages the model never learned, or an update of messages it knows under
    the same label, past what the pending section takes (the full way): the file is not
    rewritten (it was: a new inode holding the same bytes, the whole model's time), and the
    summary says so. With -o another file, that file is written."""
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    for i in range(pending.MAX_BATCH + 5):
        (unknown / str(i)).write_text(f"never seen {i}")
    known = tmp_path / "spam"
    known.mkdir()
    for f in (messages("spam") + messages("spam", "test"))[: pending.MAX_BATCH + 5]:
        shutil.copy(f, known / f.name)
    nbtext_run("train", "--update", "-m", model, known)  # learned once (the full way, then folded)
    before = (model.stat().st_ino, model.read_bytes())
    forgot = nbtext_run("forget", "-m", model, unknown)
    assert forgot.stderr.decode().rstrip().endswith(f"({model} unchanged)")
    again = nbtext_run("train", "--update", "-m", model, known)
    assert again.stderr.decode().rstrip().endswith(f"({model} unchanged)")
    assert (model.stat().st_ino, model.read_bytes()) == before
    elsewhere = tmp_path / "copy.model"
    assert (
        nbtext_run("train", "--update", "-m", model, "-o", elsewhere, known)
        .stderr.decode()
        .rstrip()
        .endswith(f"-> {elsewhere}")
    )
    assert nbtext.load(str(elsewhere)).class_count.tolist() == nbtext.load(str(model)).class_count.tolist()
    few = tmp_path / "few"  # through the pending section: nothing appended either
    few.mkdir()
    shutil.copy(messages("spam")[0], few)
    said = (
        nbtext_run("forget", "-m", model, unknown / "1").stderr.decode()
        + nbtext_run("train", "--update", "-m", model, f"spam={few}").stderr.decode()
    )
    assert said.count(f"({model} unchanged)") == 2 and model.read_bytes() == before[1]


def test_a_forget_the_full_way_says_documents_were_cut_once(model, tmp_path):
    """--max-bytes's notice is one line for the run, though the pending section's try read
    the first messages before the full way read them all (numpy's import in between reset
    the warnings module's memory of what it had said: two lines)."""
    folder = tmp_path / "many"
    folder.mkdir()
    for f in (messages("spam") + messages("spam", "test"))[: pending.MAX_BATCH + 5]:
        shutil.copy(f, folder / f.name)
    said = nbtext_run("forget", "-m", model, "--max-bytes", "50", folder).stderr.decode()
    assert said.count("are cut: only the first 50 bytes") == 1, said


MESSAGE_BODY = b"Subject: cheap\n\nwin cheap pills now\nFrom the start, more pills\n>From quoted\n"
ENVELOPE = b"From bob@example.com Thu Aug  8 11:15:38 2002\n"


def _as(via, tmp_path, name):
    """(the PATH argument, stdin) that hands the message over `via` a folder file (an mbox of
    one message, envelope included), an mbox file (quoted), or stdin (envelope included)."""
    import re

    if via == "stdin":
        return "-", ENVELOPE + MESSAGE_BODY
    folder = tmp_path / name
    folder.mkdir()
    body = re.sub(rb"^(>*From )", rb">\1", MESSAGE_BODY, flags=re.MULTILINE) if via == "mbox" else MESSAGE_BODY
    (folder / "m").write_bytes(ENVELOPE + body)
    return str(folder), None


@pytest.mark.parametrize("input_mode", ["text", "auto"])
@pytest.mark.parametrize(
    "learn_via, forget_via", [(a, b) for a in ("file", "mbox", "stdin") for b in ("file", "mbox", "stdin") if a != b]
)
@pytest.mark.parametrize("full_way", [False, True])
def test_learned_one_way_forgotten_another_gives_the_model_back(tmp_path, input_mode, learn_via, forget_via, full_way):
    """A message is one document whichever way it comes: its journal key and its tokens are
    of the same bytes. Read from stdin, its mbox envelope line was tokens (with --input
    text) while its key left the line out: forgetting it from a file left phantom tokens,
    negative counts or a model no reader would load."""
    import nbtext

    original = tmp_path / "m.model"
    extra = ["--max-features", "100"] if full_way else []  # (the full way rewrites the file; else records)
    assert (
        run(
            "train", "--input", input_mode, *extra, "-o", original, MAIL / "train" / "spam", MAIL / "train" / "ham"
        ).exit_code
        == 0
    )
    model = tmp_path / "copy.model"
    model.write_bytes(original.read_bytes())
    path, stdin = _as(learn_via, tmp_path, "learn")
    assert run("train", "--update", "-q", "-m", model, f"spam={path}", input=stdin).exit_code == 0
    path, stdin = _as(forget_via, tmp_path, "forget")
    forgotten = run("forget", "-m", model, path, input=stdin)
    assert forgotten.exit_code == 0 and "forgot 1, not learned 0" in forgotten.stderr
    if full_way:
        assert model.read_bytes() == original.read_bytes()
    else:
        back, before = nbtext.load(model, fold=True), nbtext.load(original)
        assert back.class_count.tolist() == before.class_count.tolist()
        assert (back.token_counts.dense == before.token_counts.dense).all() and back.journal == before.journal


def test_stdin_leaves_out_the_envelope_as_a_file_does_even_with_nothing_after_it(tmp_path):
    """stdin's reader wrote the envelope rule again: a lone envelope line with no line end
    stayed in the document read from stdin, and was left out of the same bytes read as a file."""
    import io

    from nbtext.reading.documents import file_documents, opened_documents

    for data in (b"From a@b Mon Jun 24 17:54:30 2002", b"From a@b Mon Jun 24 17:54:30 2002\nSubject: x\n\nhi\n"):
        (tmp_path / "m").write_bytes(data)
        assert [doc.data for doc in opened_documents(io.BytesIO(data), "-")] == [
            doc.data for doc in file_documents(str(tmp_path / "m"))
        ]


def test_records_that_read_like_envelope_lines_are_not_one_message(tmp_path):
    """The key left out a leading line that reads as an mbox envelope even in a fastText
    line, so every such line had the empty text's key: learned after one, a second was
    'already known'."""
    first, second = tmp_path / "a.ft", tmp_path / "b.ft"
    first.write_text("__label__spam From bob@x.com Thu Aug  8 11:15:38 2002 cheap pills\n__label__ham lunch notes\n")
    second.write_text("__label__spam From eve@y.com Fri Aug  9 10:00:00 2002 free money\n")
    assert run("train", "--min-count", "1", "-o", tmp_path / "m", "--fasttext", first).exit_code == 0
    result = run("train", "--update", "-m", tmp_path / "m", "--fasttext", second)
    assert result.exit_code == 0 and "added 1, moved 0, already known 0" in result.stderr


def test_the_one_message_learner_refuses_a_model_whose_sample_is_damaged(tmp_path):
    """A bit flipped in the calibration sample: every other command refused the file, while
    the one-message learner appended to it, exit 0, until the fold failed for good."""
    import json

    model = tmp_path / "m.model"
    assert (
        run(
            "train",
            *GENERAL,
            "-o",
            model,
            "--calibration",
            "temperature",
            MAIL / "train" / "spam",
            MAIL / "train" / "ham",
        ).exit_code
        == 0
    )
    data = bytearray(model.read_bytes())
    from nbtext.modelfile.container import HEADER_CRC, MAGIC, PREAMBLE

    _, length = PREAMBLE.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + PREAMBLE.size + HEADER_CRC.size
    header = json.loads(data[start : start + length])
    assert header.get("sample")
    data[start + length + header["payload_bytes"] + 10] ^= 1
    model.write_bytes(bytes(data))
    message = (MAIL / "test" / "spam").iterdir().__next__().read_bytes()
    for args in (["train", "--update", "-m", model, "spam=-"], ["forget", "-m", model, "-"]):
        result = subprocess.run([NBTEXT, *map(str, args)], input=message, capture_output=True, timeout=120)
        assert result.returncode == 1 and b"calibration sample's checksum does not match" in result.stderr
    assert model.read_bytes() == bytes(data)


def test_a_class_emptied_under_the_empirical_prior_goes_the_full_way(tmp_path):
    """--prior empirical: once forget leaves a class with no documents, its log prior is
    log 0; the one-message path took math.log(0) for a corrupt file (every later learner
    said 'corrupt ... math domain error'). It now leaves such a model to the full way."""
    for label, text in (("spam", "free prize cash"), ("ham", "lunch notes"), ("other", "odd words here")):
        (tmp_path / label).mkdir()
        (tmp_path / label / "1").write_text(text + "\n")
    model = tmp_path / "m.model"
    nbtext_run(
        "train",
        "--min-count",
        "1",
        "--prior",
        "empirical",
        "--calibration",
        "none",
        "-o",
        model,
        *(tmp_path / label for label in ("spam", "ham", "other")),
    )
    nbtext_run("forget", "-q", "-m", model, tmp_path / "other" / "1")
    learned = nbtext_run("train", "--update", "-m", model, "spam=-", input=b"cheap prize offer\n")
    assert b"added 1" in learned.stderr
    assert nbtext_run("predict", "-m", model, input=b"free prize").stdout == b"spam\n"


# --- an append that fails at any step leaves a model every reader loads (issue 33) -----------
WRITE_STEP = 97  # bytes: the faked os.write writes at most this much a call, so a record takes many


def _every_reader(model_path, queries):
    """What every reader makes of a model file: the model loaded whole and folded (its file's
    bytes), the one-message path's probabilities, and info's output."""
    folded = model_path.with_name("folded.model")
    nbtext.load(str(model_path), fold=True).save(str(folded))
    one = OneMessageModel(str(model_path))
    assert one.pure is not None, "the one-message path refused the model"
    info = run("info", "-m", model_path)
    assert info.exit_code == 0, info.stderr
    return folded.read_bytes(), [one.pure_probabilities(q.read_bytes()) for q in queries], info.stdout


def _failing_at(monkeypatch, at, when):
    """os.ftruncate, os.lseek, os.write (short: WRITE_STEP bytes a call) and os.fsync, the
    call numbered `at` failing with EIO: `before` doing anything, `after` doing its work (a
    write that wrote, an fsync of what was written), or `from then on` (every call after it
    fails too, the restoring one included). Returns the count of calls made."""
    import errno
    import os

    calls = [0]

    def wrapped(name, real):
        def call(fd, *args):
            k, calls[0] = calls[0], calls[0] + 1
            fails = k == at or (when == "from then on" and k > at)
            if name == "write":
                args = (args[0][:WRITE_STEP],)
            if fails and when != "after":
                raise OSError(errno.EIO, "Input/output error")
            done = real(fd, *args)
            if fails:
                raise OSError(errno.EIO, "Input/output error")
            return done

        return call

    for name in ("ftruncate", "lseek", "write", "fsync"):
        monkeypatch.setattr(os, name, wrapped(name, getattr(os, name)))
    return calls


@pytest.mark.parametrize(
    "start", ["no section", "a torn magic", "a record", "a torn record", "a torn record longer than the new one"]
)
def test_an_append_failing_at_any_step_leaves_the_model_before_or_after_it(model, monkeypatch, start):
    """A write or an fsync that fails (EIO, a copy-on-write file system out of space) at
    every step of an append, once or from then on: every reader loads the model, and it is
    the one before the append or after it whole. The append restored the size the file had
    before the torn tail was cut off: the file grew back with zeros, which read as an empty
    record whose CRC (0) passed, and every reader refused the model."""
    from nbtext.errors import NbtextError
    from nbtext.modelfile.container import read_open

    queries = messages("spam", "test")[:2] + messages("ham", "test")[:1]
    if start != "no section":
        nbtext_run("train", "--update", "-m", model, f"spam={messages('ham', 'test')[3]}")
    clean = model.read_bytes()
    long_message = messages("spam", "test")[4]
    long_tail = copy(model, "long.model")
    nbtext_run("train", "--update", "-m", long_tail, f"ham={long_message}")
    longer = pending.framed(pending.Log(long_tail.read_bytes()).records[-1])
    nbtext_run("train", "--update", "-m", model, f"ham={messages('spam', 'test')[5]}")
    after = model.read_bytes()
    record = pending.Log(after).records[-1]
    assert len(pending.framed(record)) < len(longer)
    torn = {
        "a torn magic": pending.PENDING_MAGIC[:9],
        "a torn record": pending.framed(record)[:-4],
        "a torn record longer than the new one": longer[:-2],
    }.get(start, b"")
    states = {}
    for name, data in (("before", clean), ("after", after)):
        model.write_bytes(data)
        states[name] = _every_reader(model, queries)
    assert states["before"] != states["after"]
    for when in ("before", "after", "from then on"):
        at = 0
        while True:
            model.write_bytes(clean + torn)
            with monkeypatch.context() as patched, open(model, "r+b") as f:
                log = pending.Log(read_open(f, str(model)))
                calls = _failing_at(patched, at, when)
                try:
                    log.append(f, str(model), [record])
                    failed = False
                except NbtextError as e:
                    assert "cannot write" in str(e) and "Input/output error" in str(e)
                    failed = True
            seen = _every_reader(model, queries)
            if not failed:
                assert calls[0] <= at and seen == states["after"] and model.read_bytes() == after
                break
            assert seen in (states["before"], states["after"]), (when, at)
            if when != "from then on":  # the restoring call ran: the file is the cut, never longer
                assert model.read_bytes() == clean, (when, at)
            at += 1
        assert at > 3  # ftruncate, lseek, a write or more, fsync: each step failed once


@pytest.mark.parametrize("zeros", [3, 8, 13, 4096])
def test_zeros_after_the_records_are_no_record(model, zeros):
    """A file grown with zeros after its records (by an older build's failed append, or a
    crash that kept a size without its data) loads as the model before them, and the next
    learner cuts them off. Zeros read as a record of length 0 whose CRC (of nothing, 0)
    passed: every reader refused the model. A zero length with anything after it is damage."""
    nbtext_run("train", "--update", "-m", model, f"spam={messages('ham', 'test')[3]}")
    clean = model.read_bytes()
    queries = messages("spam", "test")[:2]
    expected = probabilities(model, queries)
    model.write_bytes(clean + bytes(zeros))
    assert probabilities(model, queries) == expected
    assert pending.Log(model.read_bytes()).end == len(clean)
    nbtext_run("train", "--update", "-m", model, f"spam={messages('ham', 'test')[4]}")
    assert pending_records(model) == 2 and b"\0" * 8 not in model.read_bytes()[len(clean) :]
    model.write_bytes(clean + bytes(zeros) + b"x")
    if zeros >= pending.RECORD.size:
        assert pending.Log(model.read_bytes()).problem == "a damaged record"
        assert "damaged record" in run("info", "-m", model).stderr


# --- one message whatever its line ends (issue 33) ------------------------------------------
LINES_MESSAGE = (
    b"Subject: cheap pills\nFrom: bob@example.com\nTo: ann@example.com\n\nwin cheap pills now\n"
    b"From the start, more pills\n\n>From quoted\nlast line\n"
)
LINE_ENDS = {
    "LF": lambda data: data,
    "CRLF": lambda data: data.replace(b"\n", b"\r\n"),
    "mixed": lambda data: b"".join(
        line + (b"\r\n" if i % 2 else b"\n") for i, line in enumerate(data.split(b"\n")[:-1])
    ),
}
WAYS_IN = [(way, ends) for way in ("file", "maildir", "mbox", "stdin") for ends in LINE_ENDS]


def _handed(way, ends, folder):
    """(PATH, stdin) that hands LINES_MESSAGE over `way` (a file in a folder, a Maildir, an mbox
    file, quoted, or stdin, envelope included) with `ends` line ends, its envelope's too."""
    import re

    form = LINE_ENDS[ends]
    folder.mkdir()
    if way == "stdin":
        return "-", form(ENVELOPE + LINES_MESSAGE)
    if way == "mbox":
        (folder / "mail.mbox").write_bytes(
            form(ENVELOPE + re.sub(rb"^(>*From )", rb">\1", LINES_MESSAGE, flags=re.MULTILINE))
        )
        return str(folder / "mail.mbox"), None
    if way == "maildir":
        for part in ("cur", "new", "tmp"):
            (folder / part).mkdir()
        (folder / "cur" / "1.host:2,S").write_bytes(form(LINES_MESSAGE))
    else:
        (folder / "m").write_bytes(form(LINES_MESSAGE))
    return str(folder), None


def _line_end_models(folder, *options):
    """{full way: a model of the demo corpus}: one whose changes take the pending section, one
    (--max-features) the full way."""
    models = {}
    for full_way in (False, True):
        models[full_way] = folder / f"{full_way}.model"
        extra = [*options, "--max-features", "100"] if full_way else [*options]
        assert (
            run("train", *extra, "-o", models[full_way], MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
        )
    return models


@pytest.fixture(scope="module")
def line_end_models(tmp_path_factory):
    """_line_end_models of the spam preset (character n-grams among its tokens)."""
    return _line_end_models(tmp_path_factory.mktemp("line-ends"))


@pytest.fixture(scope="module")
def general_line_end_models(tmp_path_factory):
    """_line_end_models of the general defaults: words alone, as every model of a build before
    CR LF was read as LF (none took character n-grams)."""
    return _line_end_models(tmp_path_factory.mktemp("line-ends-general"), *GENERAL)


def _folded(model):
    """The bytes of the model file `model` with its pending section folded in (none: its own)."""
    folded = model.with_name("folded.model")
    nbtext.load(str(model), fold=True).save(str(folded))
    return folded.read_bytes()


@pytest.mark.parametrize("full_way", [False, True], ids=["pending", "full"])
@pytest.mark.parametrize("learned", WAYS_IN, ids="-".join)
def test_a_message_learned_with_any_line_ends_is_moved_and_forgotten_from_any_copy(
    tmp_path, line_end_models, full_way, learned
):
    """A message learned as spam over one way in with one form of line ends (LF, CR LF,
    mixed), moved to ham over any way with any form, then forgotten over the first: the
    model comes back byte for byte. The key was of the raw bytes: a message learned from a
    CR LF stream (an IMAP client) and forgotten from its LF copy in a Maildir was two
    messages ("not learned"), and one moved to ham stayed counted as spam."""
    original = line_end_models[full_way]

    def handed(command, way, label=None):
        path, stdin = _handed(*way, tmp_path / f"{n}-{label}")
        result = run(*command.split(), "-m", model, f"{label}={path}" if label else path, input=stdin)
        assert result.exit_code == 0, result.stderr
        return result.stderr

    for n, other in enumerate(WAYS_IN):
        model = tmp_path / f"{n}.model"
        model.write_bytes(original.read_bytes())
        assert "added 1," in handed("train --update", learned, "spam") and (pending_records(model) == 1) != full_way
        assert "added 0, moved 1," in handed("train --update", other, "ham"), other
        assert "forgot 1, not learned 0" in handed("forget", learned), other
        assert (model.read_bytes() if full_way else _folded(model)) == original.read_bytes(), other


@pytest.mark.parametrize("full_way", [False, True], ids=["pending", "full"])
def test_a_model_written_before_still_forgets_and_moves_its_crlf_message(tmp_path, general_line_end_models, full_way):
    """A model written before CR LF was read as LF holds a CR LF message under the key of its
    raw bytes: `forget` and `train --update` of those bytes still find it (and the result is the
    model a build of now writes), while its LF copy is another message to such a model."""
    from nbtext.journal import content_hash
    from nbtext.reading.documents import document_key
    from nbtext.reading.mail import unquoted_from

    crlf = LINE_ENDS["CRLF"](LINES_MESSAGE)
    message = tmp_path / "crlf.eml"
    message.write_bytes(crlf)
    now, before = tmp_path / "now.model", tmp_path / "before.model"
    now.write_bytes(general_line_end_models[full_way].read_bytes())
    assert run("train", "--update", "-q", "-m", now, f"spam={message}").exit_code == 0
    learned = nbtext.load(str(now), fold=True)
    key, raw = document_key(crlf), content_hash(unquoted_from(crlf))
    assert key != raw and learned.journal[key] == "spam"
    learned.journal[raw] = learned.journal.pop(key)  # the key of the raw bytes, as main wrote it
    learned.save(str(before))
    lf_copy = tmp_path / "lf.eml"
    lf_copy.write_bytes(LINES_MESSAGE)
    assert "forgot 0, not learned 1" in run("forget", "-m", copy(before, "b2.model"), lf_copy).stderr
    for model in (now, before):  # moved to ham, then forgotten: both files the same as a build of now writes
        assert "moved 1" in run("train", "--update", "-m", model, f"ham={message}").stderr
        assert (pending_records(model) > 0) != full_way
        assert "forgot 1, not learned 0" in run("forget", "-m", model, message).stderr
    assert _folded(before) == _folded(now) == general_line_end_models[full_way].read_bytes()


@pytest.mark.parametrize("full_way", [False, True], ids=["pending", "full"])
@pytest.mark.parametrize("ends", ["CRLF", "mixed"])
def test_a_message_whose_raw_bytes_are_another_learned_message_is_not_it_to_a_model_of_grams(
    tmp_path, line_end_models, full_way, ends
):
    """A model of character n-grams (the spam preset's) was never written with the keys of raw
    CR LF bytes, and its grams tell a CR apart (a control character is a space in them): a
    message with CR LF line ends is not the learned message whose bytes as sent are its raw
    bytes (those with a CR before each CR LF: a client that wrote LF as CR LF without looking).
    forget took the learned one's key for the other's, then refused: 'the model's counts do
    not hold a document its journal says it learned' (or, the full way, took its grams out)."""
    stored = LINE_ENDS[ends](LINES_MESSAGE)  # (CR LF where the other has CR CR LF)
    (tmp_path / "a.eml").write_bytes(stored.replace(b"\n", b"\r\n"))
    (tmp_path / "b.eml").write_bytes(stored)
    model = tmp_path / "m.model"
    model.write_bytes(line_end_models[full_way].read_bytes())
    assert "added 1," in run("train", "--update", "-m", model, f"spam={tmp_path / 'a.eml'}").stderr
    learned = model.read_bytes()
    result = run("forget", "-m", model, tmp_path / "b.eml")
    assert result.exit_code == 0 and "forgot 0, not learned 1" in result.stderr, result.stderr
    assert model.read_bytes() == learned
    assert "forgot 1, not learned 0" in run("forget", "-m", model, tmp_path / "a.eml").stderr
    assert (model.read_bytes() if full_way else _folded(model)) == line_end_models[full_way].read_bytes()


@pytest.mark.parametrize("forget", [False, True], ids=["learn", "forget"])
def test_a_message_too_large_for_the_section_is_not_looked_up_token_by_token_first(
    model, tmp_path, monkeypatch, forget
):
    """A message whose tokens alone pass MAX_SECTION_BYTES goes the full way before its
    tokens' counts are looked up one by one in the file (pure Python, a binary search each):
    forgetting a message of 125,000 distinct tokens took 10.5 s, 9.5 of them in lookups whose
    record was then refused for its size, where the full way takes 1.5 s."""
    import nbtext.jobs.learnone as learnone

    big = tmp_path / "big.eml"
    big.write_text("Subject: big\n\n" + " ".join(f"w{i}" for i in range(120_000)))
    if forget:
        assert run("train", "--update", "-m", model, f"spam={big}").exit_code == 0
    before = model.read_bytes()
    looked_up = []
    derived_after = learnone._derived_after
    monkeypatch.setattr(learnone, "_derived_after", lambda *a: looked_up.append(1) or derived_after(*a))
    result = run("forget", "-m", model, big) if forget else run("train", "--update", "-m", model, f"spam={big}")
    assert result.exit_code == 0, result.stderr
    assert looked_up == [] and model.read_bytes() != before
    assert ("forgot 1" if forget else "added 1") in result.stderr


# --- random sequences through the section of small models of presence -------------------------
_WORDS = [f"w{i}" for i in range(8)]
_PRESENCE_MODELS = {
    "unk": ["--min-count", "1"],  # nothing pruned, an UNK feature of unseen tokens (the spam preset's)
    "max-evidence": ["--min-count", "1", "--max-evidence", "2"],  # each class's 2 most telling features
    "pruned": ["--unknown", "ignore", "--min-count", "3"],  # tokens cross --min-count as documents come and go
}


@pytest.fixture(scope="module")
def presence_models(tmp_path_factory):
    """A folder of small models of presence that take the section (_PRESENCE_MODELS, each
    NAME.model) and of the documents they were trained on (spam/, ham/)."""
    folder = tmp_path_factory.mktemp("presence")
    rng = random.Random(7)
    for label, words in (("spam", _WORDS[:6]), ("ham", _WORDS[2:])):
        (folder / label).mkdir()
        for i in range(6):
            (folder / label / f"{i}.txt").write_text(" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))))
    for name, options in _PRESENCE_MODELS.items():
        trained = run(
            "train",
            "-q",
            "--features",
            "binary",
            *options,
            "-o",
            folder / f"{name}.model",
            *(folder / label for label in ("spam", "ham")),
        )
        assert trained.exit_code == 0, trained.stderr
    return folder


_steps = st.lists(
    st.tuples(st.sampled_from(["spam", "ham", None]), st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(_PRESENCE_MODELS)),
    new=st.lists(
        st.lists(st.sampled_from(_WORDS + ["new", "other"]), max_size=6).map(" ".join), min_size=1, max_size=3
    ),
    steps=_steps,
)
def test_any_changes_of_a_model_of_presence_are_read_alike_and_fold_to_the_full_ways_file(
    tmp_path_factory, presence_models, monkeypatch, name, new, steps
):
    """Batches of documents learned (a label), moved (another) or forgotten (None) through
    the section: new ones, a copy of one (the same message under another name) and the
    training's own. After each, the one-message path and the model loaded whole agree; the
    file (folded by a learner every few records, COMPACT_AFTER made small, and at the end)
    is, byte for byte, the one the same changes write the full way. A document adds 1 to
    each of its distinct tokens (presence), however often a token comes in it."""
    folder = tmp_path_factory.mktemp("steps")
    monkeypatch.setattr(pending, "COMPACT_AFTER", 5)
    documents = []
    for i, text in enumerate(new):
        documents.append(folder / f"new{i}.txt")
        documents[-1].write_text(text)
    (folder / "copy.txt").write_text(new[0])
    documents += [folder / "copy.txt", presence_models / "spam" / "0.txt", presence_models / "ham" / "1.txt"]
    section, full = folder / "section.model", folder / "full.model"
    for path in (section, full):
        path.write_bytes((presence_models / f"{name}.model").read_bytes())
    queries = [d.read_bytes() for d in documents] + [b"w1 w1 w1 new unseen"]
    for label, which in steps:
        batch = list(dict.fromkeys(documents[i % len(documents)] for i in which))
        args = ["forget", *batch] if label is None else ["train", "--update", *(f"{label}={d}" for d in batch)]
        records, before = pending_records(section), full.read_bytes()
        assert run(*args, "-q", "-m", section).exit_code == 0
        link = folder / "link.model"  # another hard link to the file: the full way
        os.link(full, link)
        assert run(*args, "-q", "-m", full).exit_code == 0
        link.unlink()
        assert pending.PENDING_MAGIC not in full.read_bytes()
        if full.read_bytes() != before and records + len(batch) <= pending.COMPACT_AFTER:
            assert pending_records(section) > records  # the section took the change
        one = OneMessageModel(str(section))
        assert one.pure is not None
        whole = nbtext.load(str(section), sample=False).predict_proba(queries).tolist()
        for query, expected in zip(queries, whole):
            assert one.pure_probabilities(query) == pytest.approx(expected, abs=1e-9)
    folded = folder / "folded.model"
    nbtext.load(str(section), fold=True).save(str(folded))
    assert folded.read_bytes() == full.read_bytes()


@pytest.mark.parametrize("name", sorted(_PRESENCE_MODELS))
def test_a_record_derived_by_counting_occurrences_is_refused_by_the_model_loaded_whole(presence_models, tmp_path, name):
    """A well-framed record of a model of presence whose `derived` a learner counting a
    token's occurrences would write (right for a model of counts, wrong here): the model
    loaded whole, which replays the section by the presence rule, refuses it in one line on
    every command that loads it so, and predict of one message on stdin too (the one-message
    path derives the section's record again by the presence rule: docs/model-file.md)."""
    import json
    import zlib

    from nbtext.classifier.purescore import of_file
    from nbtext.jobs.learnone import _derived_after
    from nbtext.stats.changes import Change

    model = tmp_path / "m.model"
    model.write_bytes((presence_models / f"{name}.model").read_bytes())
    pure = of_file(model.read_bytes(), str(model))
    start = {key: pure.header["one_document"][key] for key in ("features", "unk", "totals")}
    change = Change(bytes(16), None, "spam", ["w1", "w1", "w1", "w6", "w6", "new"], False)
    right = _derived_after(pure, start, change)
    pure.presence = False  # (as a learner that counts occurrences derives it)
    wrong = _derived_after(pure, start, change)
    assert wrong != right
    for derived, refused in ((right, False), (wrong, True)):
        record = {"hash": "00" * 16, "label": "spam", "from": None, "tokens": change.tokens, "mail": False}
        body = json.dumps({**record, "derived": derived}).encode()
        model.write_bytes(
            (presence_models / f"{name}.model").read_bytes()
            + pending.PENDING_MAGIC
            + pending.RECORD.pack(len(body), zlib.crc32(body))
            + body
        )
        for args in (
            ["info"],
            ["eval", presence_models / "spam", presence_models / "ham"],
            ["predict", "-j", "1", presence_models / "spam"],
            ["predict"],
        ):
            result = run(*args, "-m", model, input="w1 w6 new\n")
            if refused:
                assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
                assert "its pending section does not agree with its counts" in result.stderr
            else:
                assert result.exit_code == 0, result.stderr


@pytest.fixture(scope="module")
def sampled_model(tmp_path_factory):
    """(a model file with a calibration sample (120 documents, --calibration auto) and two
    records in its pending section, the sample's start and end in it, a message it learned)."""
    from nbtext.modelfile.container import split

    rng = random.Random(7)
    spam_words, ham_words = "free prize claim winner cash".split(), "meeting lunch agenda notes team".split()
    documents = [
        f"Subject: {rng.choice(words)} {i}\n\n{' '.join(rng.choices(words, k=10))}".encode()
        for i in range(120)
        for words in [spam_words if i % 2 else ham_words]
    ]
    folder = tmp_path_factory.mktemp("sampled")
    path = folder / "m.model"
    nbtext.train(documents, ["spam" if i % 2 else "ham" for i in range(120)], preset="general", min_count=1).save(
        str(path)
    )
    header, payload = split(path.read_bytes(), path)
    start = len(path.read_bytes()) - header["sample"]["bytes"]
    for i in range(2):
        (folder / f"new{i}.eml").write_bytes(b"Subject: free lunch\n\nclaim the free prize at lunch %d\n" % i)
        assert learn_one(path, f"spam={folder / f'new{i}.eml'}").returncode == 0
    assert pending_records(path) == 2
    return path, start, start + header["sample"]["bytes"], folder / "new0.eml"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.tuples(st.floats(0, 1), st.floats(0, 1)))
@example(cut=(0.0, 1.0))  # the whole sample
def test_a_model_cut_inside_its_sample_is_refused_alike_by_readers_and_learners(tmp_path, sampled_model, cut):
    """A model file with bytes missing from its calibration sample (its header intact,
    announcing them): the one-message learner (train --update and forget of one message),
    which maps the file where readers read it, refuses it in the loader's line and writes
    nothing, as predict, filter and info do. With the whole sample gone, the learner said
    the file 'changed while it was read' (train --update) or forgot a message of its section
    into it (forget), where every reader said it was truncated."""
    from click.testing import CliRunner

    from nbtext.cli.oneshot import fast
    from nbtext.errors import NbtextError

    path, start, end, message = sampled_model
    data = path.read_bytes()
    a, b = sorted(start + round(x * (end - start)) for x in cut)
    b = max(b, a + 1)
    model = tmp_path / "cut.model"
    model.write_bytes(data[:a] + data[b:])
    with pytest.raises(NbtextError) as refused:
        nbtext.load(str(model))
    line = f"Error: {refused.value}\n".encode()
    for command in (
        ["predict"],
        ["filter"],
        ["predict", str(message)],
        ["train", "--update", "-q", f"ham={message}"],
        ["forget", "-q", str(message)],
    ):
        with CliRunner().isolation(input=message.read_bytes()) as (stdout, stderr, _):
            status = fast([command[0], "-m", str(model), *command[1:]])
            sys.stderr.flush()
        assert (status, stderr.getvalue()) == (1, line), (command, a, b, stderr.getvalue())
        assert model.read_bytes() == data[:a] + data[b:], command
    result = run("info", "-m", model)
    assert (result.exit_code, result.stderr) == (1, line.decode())


# --- a section whose records lie, its checksums right: one verdict from every reader (issue 49) ---
_LYING_MODELS = {
    "spam preset": [],  # counts of presence, nothing pruned, UNK (tokens never cross --min-count)
    "counts": [*GENERAL, "--min-count", "2"],  # tokens cross --min-count as documents come and go
    "pruned presence": [*GENERAL, "--features", "binary", "--unknown", "ignore", "--min-count", "3"],
}
_RECORDS = 7  # in each of their sections (learned_sections)
_READERS = {  # each reader of one message: (its command line, whether the message is a FILE, not stdin)
    "predict": (["predict"], False),
    "predict --proba": (["predict", "--proba"], False),
    "predict -k 2": (["predict", "-k", "2"], False),
    "predict --format fasttext": (["predict", "--format", "fasttext"], False),
    "predict --format json": (["predict", "--format", "json"], False),
    "filter": (["filter"], False),
    "predict FILE": (["predict"], True),
    "info": (["info"], False),
}


@pytest.fixture(scope="module")
def learned_sections(tmp_path_factory):
    """{name: (a model file of _LYING_MODELS without a section, the records the one-message
    learner appended to it: messages learned, one moved to the other class, one forgotten)},
    and the messages left to classify."""
    folder = tmp_path_factory.mktemp("lying")
    spam, ham = messages("spam", "test"), messages("ham", "test")
    made = {}
    for name, options in _LYING_MODELS.items():
        model = folder / f"{name.replace(' ', '-')}.model"
        nbtext_run("train", "-q", *options, "-o", model, MAIL / "train" / "spam", MAIL / "train" / "ham")
        base = model.read_bytes()
        for args in (
            ["train", "--update", f"spam={spam[0]}"],
            ["train", "--update", f"ham={ham[0]}"],
            ["train", "--update", f"spam={spam[1]}", f"ham={ham[1]}"],
            ["train", "--update", f"ham={spam[0]}"],  # moved
            ["forget", ham[0]],
            ["train", "--update", f"spam={spam[2]}"],
        ):
            nbtext_run(*args, "-q", "-m", model)
        log = pending.Log(model.read_bytes())
        assert len(log.records) == _RECORDS and model.read_bytes()[: log.start] == base
        made[name] = (base, log.records)
    return made, [spam[5], ham[5], ham[6]]


@st.composite
def _lies(draw, n):
    """How a forger changes a section of `n` records: one record appended again (anywhere
    after it), one dropped, the records reordered, or one field of a record's `derived`
    altered; (kind, arguments)."""
    kind = draw(st.sampled_from(["twice", "dropped", "reordered", "altered"]))
    if kind == "twice":
        i = draw(st.integers(0, n - 1))
        return kind, (i, draw(st.integers(i + 1, n)))
    if kind == "dropped":
        return kind, (draw(st.integers(0, n - 1)),)
    if kind == "reordered":
        return kind, (draw(st.permutations(range(n))),)
    field = draw(st.sampled_from(["features", "unk", "totals"]))
    change = draw(st.sampled_from([1, -1, 2, 0.5, -0.5, 1000]))
    return kind, (draw(st.integers(0, n - 1)), field, draw(st.integers(0, 1)), change)


def _lied(records, lie):
    """The records as `lie` (_lies) changes them."""
    import copy

    kind, arguments = lie
    records = copy.deepcopy(records)
    if kind == "twice":
        i, at = arguments
        records.insert(at, records[i])
    elif kind == "dropped":
        del records[arguments[0]]
    elif kind == "reordered":
        records = [records[i] for i in arguments[0]]
    else:
        i, field, k, change = arguments
        derived = records[i]["derived"]
        if field == "features" or derived[field] is None:
            derived["features"] += int(change) or 1
        else:
            derived[field][k] += change
    return records


def _every_reader_of(model, message, folder):
    """{reader: (exit status, stdout, stderr)} of each of _READERS for `message`, through the
    command line's own functions as the nbtext executable dispatches them: the click-free
    path (nbtext.cli.oneshot.fast) where it serves the command line, else click's."""
    from click.testing import CliRunner

    from nbtext.cli.oneshot import fast

    path = folder / "message.eml"
    path.write_bytes(message)
    done = {}
    for name, (args, a_file) in _READERS.items():
        argv = [args[0], "-m", str(model), *args[1:], *([str(path)] if a_file else [])]
        with CliRunner().isolation(input=message) as (stdout, stderr, _):
            status = fast(argv)
            sys.stderr.flush()
        if status is None:
            result = run(*argv, input=message)
            done[name] = (result.exit_code, result.stdout_bytes, result.stderr_bytes)
        else:
            done[name] = (status, stdout.getvalue(), stderr.getvalue())
    return done


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lie=_lies(_RECORDS), name=st.sampled_from(sorted(_LYING_MODELS)), which=st.integers(0, 2))
@example(lie=("twice", (_RECORDS - 1, _RECORDS)), name="spam preset", which=0)  # (the attack's: the last, twice)
def test_a_section_that_lies_gets_one_verdict_from_every_reader(tmp_path_factory, learned_sections, lie, name, which):
    """A model file's pending section changed as a forger would, its checksums made right: a
    record appended again, one dropped, the records reordered, a field of a record's `derived`
    altered. Every reader of one message (predict of stdin with each --format, --proba and
    -k, filter, predict FILE, info) refuses it as the model loaded whole does (exit 1, its
    line; filter passes the message on tagged error), or all give its answer. predict of
    stdin, --proba, -k, fasttext, filter and predict FILE scored a record appended twice
    (exit 0) where the others refused the file: the one-message path took the last record's
    `derived` on trust."""
    made, queries = learned_sections
    base, records = made[name]
    folder = tmp_path_factory.mktemp("lie")
    model = folder / "lying.model"
    model.write_bytes(base + pending.PENDING_MAGIC + b"".join(map(pending.framed, _lied(records, lie))))
    message = b"From: someone@example.com\nSubject: a note\n\n" + queries[which].read_bytes()  # (a mail: filter's)
    done = _every_reader_of(model, message, folder)
    try:
        nbtext.load(str(model), sample=False)
        refusal = None
    except nbtext.NbtextError as e:
        refusal = f"Error: {e}\n".encode()
    if refusal is not None:  # refused by each reader, in the loader's words
        assert {result[0] for result in done.values()} == {1}, (lie, done)
        assert all(result[2] == refusal for result in done.values()), (lie, refusal, done)
        assert done["filter"][1] == message.replace(b"\n\n", b"\nX-Nbtext-Class: error\n\n", 1)
        return
    assert {result[0] for result in done.values()} == {0} and not any(r[2] for r in done.values()), (lie, done)
    whole = json.loads(done["predict --format json"][1])  # (the model loaded whole prints JSON)
    label, probabilities = whole["label"], list(whole["probabilities"].values())
    p, figures = f"{max(probabilities):.4f}", [f"{q:.4f}" for q in probabilities]
    assert done["predict"][1] == f"{label}\n".encode()
    assert done["predict --proba"][1].decode() == "\t".join(["-", label, p, *figures]) + "\n"
    assert done["predict -k 2"][1].decode().split("\t")[1] == label
    assert done["predict --format fasttext"][1].decode() == f"__label__{label} {p}\n"
    assert done["predict FILE"][1].decode().split("\t")[1:] == [label, p + "\n"]
    assert f"\nX-Nbtext-Class: {label}\n".encode() in done["filter"][1]


@pytest.mark.parametrize(
    "options",
    [["--features", "tfidf"], ["--model", "complement"], ["--model", "bernoulli"]],
    ids=["tf-idf", "complement", "bernoulli with UNK"],
)
def test_a_record_on_a_model_no_learner_appends_to_is_a_corrupt_file_to_every_command(tmp_path, options):
    """A well-framed record on a model of tf-idf features or a Bernoulli model with UNK (no
    learner appends one: train --update takes them the full way) is what a reader says of any
    record nbtext does not write, from every reader and learner alike. It was train --update's
    advice ("cannot change a model of tf-idf features ...; retrain it") in a corrupt file's line."""
    model = tmp_path / "m.model"
    nbtext_run("train", "-q", *GENERAL, *options, "-o", model, MAIL / "train" / "spam", MAIL / "train" / "ham")
    record = {"hash": "ab" * 16, "label": "spam", "from": None, "tokens": ["free"], "mail": False}
    record["derived"] = {"features": 150, "unk": None, "totals": [0.0, 0.0]}
    model.write_bytes(model.read_bytes() + pending.PENDING_MAGIC + pending.framed(record))
    said = f"Error: {model} is corrupt (its pending section holds {pending.NOT_WRITTEN})\n".encode()
    message = b"Subject: free\n\nfree money now\n"
    done = _every_reader_of(model, message, tmp_path)
    learned = run("train", "--update", "-m", model, f"spam={messages('spam', 'test')[0]}")
    done["train --update"] = (learned.exit_code, b"", learned.stderr_bytes)
    assert {result[0] for result in done.values()} == {1} and all(result[2] == said for result in done.values()), done


@pytest.mark.parametrize("options", [GENERAL, []], ids=["general", "spam preset"])
@pytest.mark.parametrize("full_way", [False, True], ids=["through the section", "the full way"])
@pytest.mark.parametrize("change", ["forget", "move"])
def test_a_record_whose_tokens_are_not_its_messages_is_never_written_into_the_counts(
    tmp_path, options, full_way, change
):
    """A forged record (checksums right, its `derived` the counts', which every reader checks)
    whose tokens are not those of the message its hash names: one unseen token swapped for
    another. No reader can tell, but forgetting or moving that message takes from the counts
    what they never held. That is one line and the model file left as it was: the full way
    wrote a model of a negative count (general: every reader then refused the file) or ended
    in a traceback (the spam preset's: a second pass over a corpus read once)."""
    model, message = tmp_path / "m.model", tmp_path / "m.eml"
    nbtext_run("train", "-q", *options, "-o", model, MAIL / "train" / "spam", MAIL / "train" / "ham")
    message.write_bytes(b"Subject: hello\n\nqqzzuniqtokenone some words here\n")
    nbtext_run("train", "--update", "-q", "-m", model, f"spam={message}")
    data = model.read_bytes()
    log = pending.Log(data)
    (record,) = log.records
    record["tokens"] = ["qqzzothertoken" if t == "qqzzuniqtokenone" else t for t in record["tokens"]]
    model.write_bytes(data[: log.start] + pending.PENDING_MAGIC + pending.framed(record))
    nbtext.load(str(model), sample=False)  # (a section every reader takes)
    forged = model.read_bytes()
    if full_way:
        os.link(model, tmp_path / "backup.model")
    args = (
        ["forget", "-m", model, message] if change == "forget" else ["train", "--update", "-m", model, f"ham={message}"]
    )
    result = subprocess.run([NBTEXT, *map(str, args)], capture_output=True, timeout=120)
    assert result.returncode == 1 and result.stderr.count(b"\n") == 1, result.stderr.decode()
    assert b"Traceback" not in result.stderr and model.read_bytes() == forged
