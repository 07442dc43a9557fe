"""Both readers of a model file, one verdict: the one-message path (nbtext.classifier.purescore, no
numpy) and the full loader run the same checks (schema.check_header and check_arrays), so
a crafted file (its checksums made right) that one refuses, the other refuses too, from
the command line's `filter` and `predict` alike, and a file both accept scores the same.

What the one-message path cannot check without a pass over the whole file in Python (a
row's middle out of order, keys out of order, a vocabulary not UTF-8 past the tokens it
reads, a derived record that disagrees with the counts) is listed as xfail(strict): the
full loader refuses those files, the one-message path may score them (docs/model-file.md).
"""

import json
import math
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nbtext.classifier import purescore
from nbtext.errors import NbtextError
from nbtext.jobs.loading import load
from nbtext.modelfile.container import split

from conftest import run
from test_hostile_models import assemble

NBTEXT = Path(sys.executable).with_name("nbtext")

# the general defaults, for the models these tests name by their features (counts, presence): a model of spam and
# ham starts from the spam preset by default (tests/test_preset.py)
GENERAL = ["--preset", "general"]

MESSAGE = b"Subject: free prize\n\nclick now to claim your free prize money\n"


def crafted(demo_model, change):
    """The demo model with `change(header, payload)` applied and its checksums made right."""
    header, payload = split(Path(demo_model).read_bytes(), "m")
    header, payload = json.loads(json.dumps(header)), bytearray(payload)
    header.pop("sample", None)
    change(header, payload)
    return assemble(header, bytes(payload), version=header["format_version"])


def put(header, payload, name, i, value):
    """Entry i of array `name` set to `value`."""
    spec = header["arrays"][name]
    code = {"<f8": "<d", "<i4": "<i", "<i8": "<q", "<u8": "<Q", "|u1": "<B"}[spec["dtype"]]
    struct.pack_into(code, payload, spec["offset"] + i * struct.calcsize(code), value)


def get(header, payload, name, i):
    spec = header["arrays"][name]
    code = {"<f8": "<d", "<i4": "<i", "<i8": "<q", "<u8": "<Q", "|u1": "<B"}[spec["dtype"]]
    return struct.unpack_from(code, payload, spec["offset"] + i * struct.calcsize(code))[0]


def row_end(header, payload, k):
    return get(header, payload, "count_indptr", k + 1)


def vocabulary_byte(header, payload, i, value):
    payload[header["arrays"]["vocabulary"]["offset"] + i] = value


CHEAP = {  # what every path checks: refused by both
    "count negative": lambda h, p: put(h, p, "count_data", 3, -1.0),
    "count infinite": lambda h, p: put(h, p, "count_data", 0, float("inf")),
    "count not a number": lambda h, p: put(h, p, "count_data", 5, float("nan")),
    "class count negative": lambda h, p: put(h, p, "class_count", 1, -3.0),
    "last index of a row out of range": lambda h, p: put(h, p, "count_indices", row_end(h, p, 0) - 1, h["n_tokens"]),
    "first index of a row negative": lambda h, p: put(h, p, "count_indices", 0, -1),
    "rows falling": lambda h, p: put(h, p, "count_indptr", 1, row_end(h, p, 1) + 1),
    "rows not from 0": lambda h, p: put(h, p, "count_indptr", 0, 1),
    "a NUL separator gone": lambda h, p: vocabulary_byte(
        h, p, bytes(p[h["arrays"]["vocabulary"]["offset"] :]).index(b"\0"), ord("x")
    ),
    "journal class out of range": lambda h, p: put(h, p, "journal_labels", 7, len(h["classes"])),
    "journal class negative": lambda h, p: put(h, p, "journal_labels", 0, -1),
    "journal shapes disagree": lambda h, p: h["arrays"]["journal_labels"].update(
        shape=[h["arrays"]["journal_labels"]["shape"][0] - 1]
    ),
    "misaligned array": lambda h, p: h["arrays"]["count_data"].update(offset=h["arrays"]["count_data"]["offset"] + 4),
    "keys shorter than tokens": lambda h, p: h["arrays"]["token_keys"].update(shape=[h["n_tokens"] - 1]),
    "counts longer than indices": lambda h, p: h["arrays"]["count_data"].update(
        shape=[h["arrays"]["count_data"]["shape"][0] + 1]
    ),
    "record totals negative": lambda h, p: h["one_document"].update(totals=[-1.0] * len(h["classes"])),
    "record unk negative": lambda h, p: h["one_document"].update(unk=[-5.0] * len(h["classes"])),
    "too many classes": lambda h, p: h.update(classes=[f"c{i}" for i in range(10_001)]),
}
RESIDUAL = {  # O(model) in Python: the full loader refuses, the one-message path may not see it
    "a row's middle out of order": lambda h, p: put(h, p, "count_indices", 2, get(h, p, "count_indices", 1)),
    "keys out of order": lambda h, p: put(h, p, "token_keys", 1, 2**64 - 1),
    "token order not a permutation": lambda h, p: put(h, p, "token_order", 0, get(h, p, "token_order", 1)),
    "a token not UTF-8": lambda h, p: vocabulary_byte(h, p, 1, 0xFF),
    "record totals not the counts'": lambda h, p: h["one_document"].update(totals=[1e6] * len(h["classes"])),
}


def verdicts(tmp_path, data):
    """(full loader's, one-message path's): 'refused', or the probabilities of MESSAGE."""
    path = tmp_path / "crafted.model"
    path.write_bytes(data)
    try:
        full = [round(p, 9) for p in load(str(path)).predict_proba([MESSAGE])[0]]
    except NbtextError:
        full = "refused"
    pure = purescore.of_file(data, str(path))
    pure = "refused" if pure is None else purescore.probabilities(pure, MESSAGE)
    return full, "refused" if pure is None else pure if pure == "refused" else [round(p, 9) for p in pure]


@pytest.mark.parametrize("name", CHEAP)
def test_a_crafted_file_gets_one_verdict_from_both_readers(tmp_path, demo_model, name):
    full, pure = verdicts(tmp_path, crafted(demo_model, CHEAP[name]))
    assert full == pure == "refused"


@pytest.mark.parametrize("name", RESIDUAL)
def test_what_only_a_whole_pass_finds_is_refused_by_the_full_loader(tmp_path, demo_model, name):
    full, _ = verdicts(tmp_path, crafted(demo_model, RESIDUAL[name]))
    assert full == "refused"


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="O(model) in Python")) for name in RESIDUAL]
)
def test_the_one_message_path_does_not_pay_for_a_whole_pass(tmp_path, demo_model, name):
    _, pure = verdicts(tmp_path, crafted(demo_model, RESIDUAL[name]))
    assert pure == "refused"


def test_the_untouched_file_scores_the_same_on_both(tmp_path, demo_model):
    full, pure = verdicts(tmp_path, crafted(demo_model, lambda h, p: None))
    assert full != "refused" and full == pure


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
@pytest.mark.parametrize(
    "name", ["count negative", "journal class out of range", "misaligned array", "too many classes"]
)
def test_the_command_line_refuses_them_on_every_path(tmp_path, demo_model, name):
    """filter tags the message `error` and exits 1 (the README's table); predict of stdin,
    of a file and the full command line exit 1 with one line naming the file."""
    model = tmp_path / "crafted.model"
    model.write_bytes(crafted(demo_model, CHEAP[name]))
    message = tmp_path / "message.eml"
    message.write_bytes(MESSAGE)
    filtered = subprocess.run([NBTEXT, "filter", "-m", model], input=MESSAGE, capture_output=True)
    assert filtered.returncode == 1 and b"X-Nbtext-Class: error" in filtered.stdout
    assert filtered.stdout.endswith(MESSAGE.split(b"\n\n", 1)[1])
    for args in (["predict", "-m", model], ["predict", "-m", model, message]):
        result = subprocess.run([NBTEXT, *args], input=MESSAGE.decode(), capture_output=True, text=True)
        assert result.returncode == 1 and result.stderr.count("\n") == 1 and str(model) in result.stderr
    result = run("info", "-m", model)
    assert result.exit_code == 1 and "is corrupt" in result.stderr


def test_train_refuses_more_classes_than_a_model_holds(tmp_path):
    from nbtext.choices import MAX_CLASSES

    table = tmp_path / "t.tsv"
    table.write_text("".join(f"c{i}\tword{i} other\n" for i in range(MAX_CLASSES + 1)))
    result = run(
        "train", "-o", tmp_path / "m.model", "--table", table, "--no-header", "--label-col", "1", "--text-col", "2"
    )
    assert result.exit_code == 1 and f"more than {MAX_CLASSES:,} classes" in result.stderr
    assert not (tmp_path / "m.model").exists()


@pytest.fixture(scope="module")
def learnable_models(tmp_path_factory):
    """{name: bytes} of models that learn through their pending section: the defaults, and
    presence with nothing pruned (the spam preset's kind)."""
    folder, models = tmp_path_factory.mktemp("learnable"), {}
    for name, options in (("counts", []), ("presence", ["--features", "binary", "--min-count", "1"])):
        path = folder / f"{name}.model"
        train = Path(__file__).resolve().parent.parent / "corpora" / "mail" / "train"
        assert run("train", *GENERAL, *options, "-o", path, train / "spam", train / "ham").exit_code == 0
        models[name] = path.read_bytes()
    return models


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
@pytest.mark.parametrize("model", ["counts", "presence"])
@pytest.mark.parametrize(
    "key",
    ["event_model", "alpha", "prior", "min_count", "max_features", "unknown", "features", "tf", "idf", "tokenizer"],
)
def test_a_setting_left_out_gets_one_verdict_from_readers_and_learners(tmp_path, learnable_models, model, key):
    """A header without one of its settings: what the full loader refuses, the one-message
    path does not score, and a learner (train --update, forget: the pending section's, which
    asks the settings whether the model can take records) either learns or says why not in
    one line. Without max_features, which the checks let be absent, the loader said corrupt
    (KeyError), predict of stdin scored, and the learners ended in a traceback."""

    def without(header, payload):
        del header["settings"][key]

    source = tmp_path / "source.model"
    source.write_bytes(learnable_models[model])
    data = crafted(source, without)
    full, pure = verdicts(tmp_path, data)
    if full == "refused":
        assert pure == "refused"
    elif pure != "refused":
        assert pure == full
    message = tmp_path / "message.eml"
    message.write_bytes(MESSAGE)
    for args in (["train", "--update", f"spam={message}"], ["forget", message]):
        target = tmp_path / "learner.model"
        target.write_bytes(data)
        result = subprocess.run([NBTEXT, *map(str, args), "-m", target], capture_output=True, text=True)
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == 0 or (result.returncode == 1 and result.stderr.count("\n") == 1), result.stderr
        if full == "refused":
            assert result.returncode == 1 and "is corrupt" in result.stderr


@pytest.mark.parametrize(
    "options",
    [["--model", "bernoulli", "--unknown", "ignore"], ["--model", "bernoulli"], ["--min-count", "1"]],
    ids=["bernoulli", "bernoulli UNK of pruned tokens", "multinomial"],
)
def test_a_first_builds_file_without_feature_settings_learns_as_its_event_models_defaults(tmp_path, options):
    """nbtext's first builds wrote no feature settings (--features, --tf, ...): they are the
    event model's defaults, as the checks say. Every reader reads them so: a Bernoulli model
    counts the documents holding a token, and `train --update` of a message holding one token
    four times added 4 to it (and took a Bernoulli model whose UNK counts pruned tokens'
    documents, which it refuses); now the file written is the one the same model with its
    settings written out gives (the same settings as read, the same arrays and pending
    records), or both are refused alike."""
    from nbtext.modelfile.schema import FEATURE_KEYS, check_settings_record

    train = Path(__file__).resolve().parent.parent / "corpora" / "mail" / "train"
    written = tmp_path / "written.model"
    assert run("train", "-q", *GENERAL, *options, "-o", written, train / "spam", train / "ham").exit_code == 0

    def first_builds(header, payload):
        for key in FEATURE_KEYS:
            del header["settings"][key]

    first = tmp_path / "first.model"
    first.write_bytes(crafted(written, first_builds))
    keyed = tmp_path / "keyed.model"
    keyed.write_bytes(crafted(written, lambda h, p: None))  # (the same file, its sample left out as crafted does)
    message = tmp_path / "message.eml"
    message.write_bytes(b"Subject: hello\n\nprize prize prize prize money\n")
    before = first.read_bytes()
    results = [run("train", "--update", "-q", "-m", model, f"spam={message}") for model in (first, keyed)]
    assert results[0].exit_code == results[1].exit_code
    assert results[0].stderr == results[1].stderr.replace(str(keyed), str(first))
    if results[0].exit_code:
        assert first.read_bytes() == before and "cannot --update a Bernoulli" in results[0].stderr
        return
    (header, rest), (keyed_header, keyed_rest) = (split(m.read_bytes(), "m") for m in (first, keyed))
    for h in (header, keyed_header):  # (the pending section leaves the header as written; the full way
        check_settings_record(h["settings"])  # writes the settings read, in another order)
    assert header == keyed_header and bytes(rest) == bytes(keyed_rest)


# --- the key table (token_keys, token_order, token_starts) as the one-message path reads it -----
# A small model whose every token a message can hold (words, and the words of its Subject).
SPAM_WORDS, HAM_WORDS = ["cheap", "pills", "now", "buy", "viagra", "offer", "money", "prize"], ["lunch", "at", "noon"]
SUBJECT_WORDS, BODY_WORDS = SPAM_WORDS[:2] + HAM_WORDS[:1], SPAM_WORDS + HAM_WORDS + ["today"]  # (the vocabulary's)


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    import nbtext

    documents = [
        f"Subject: {' '.join(SPAM_WORDS[:2])}\n\n{' '.join(SPAM_WORDS)}".encode(),
        f"Subject: {HAM_WORDS[0]}\n\n{' '.join(HAM_WORDS)} today".encode(),
    ]
    model = nbtext.train(documents * 3, ["spam", "ham"] * 3, preset="general", min_count=1, ngrams=1)
    path = tmp_path_factory.mktemp("small") / "small.model"
    model.save(str(path))
    return path


def one_message_commands(model, message, folder):
    """{command line: (exit status, stdout, stderr)} of the nbtext executable's own function for
    one message (nbtext.cli.oneshot.fast, which serves these without click): predict of stdin,
    its figures, filter, predict FILE, and train --update of it (of a copy of the model)."""
    import shutil

    from click.testing import CliRunner

    from nbtext.cli.oneshot import fast

    (folder / "message.eml").write_bytes(message)
    learner = folder / "learner.model"
    shutil.copyfile(model, learner)
    done = {}
    for command in (
        ["predict"],
        ["predict", "--proba"],
        ["filter"],
        ["predict", str(folder / "message.eml")],
        ["train", "--update", "-q", f"spam={folder / 'message.eml'}"],
    ):
        with CliRunner().isolation(input=message) as (stdout, stderr, _):
            status = fast([command[0], "-m", str(learner if command[0] == "train" else model), *command[1:]])
            assert status is not None, command  # (served by the one-message path, not handed to click)
            sys.stderr.flush()
        said = stderr.getvalue().replace(str(learner).encode(), str(model).encode())  # (the copy named as the model)
        done[" ".join(command[:2])] = (status, stdout.getvalue(), said)
    return done


@st.composite
def key_table_changes(draw, n_tokens):
    """(array, kind, i, j, bytes): entry i of token_keys, token_order or token_starts changed: to
    other bytes, to entry j's value, swapped with entry j, or one bit flipped."""
    array = draw(st.sampled_from(["token_keys", "token_order", "token_starts"]))
    kind = draw(st.sampled_from(["bytes", "entry j's", "swapped with j", "a bit"]))
    i, j = draw(st.integers(0, n_tokens - 1)), draw(st.integers(0, n_tokens - 1))
    size = 8 if array == "token_keys" else 4
    value = (
        draw(st.binary(min_size=size, max_size=size))
        if kind == "bytes"
        else bytes([draw(st.integers(0, 8 * size - 1))])
    )
    return array, kind, i, j, value


def changed(header, payload, change):
    array, kind, i, j, value = change
    spec = header["arrays"][array]
    size = 8 if array == "token_keys" else 4
    at = lambda k: slice(spec["offset"] + k * size, spec["offset"] + (k + 1) * size)  # noqa: E731
    if kind == "bytes":
        payload[at(i)] = value
    elif kind == "entry j's":
        payload[at(i)] = payload[at(j)]
    elif kind == "swapped with j":
        payload[at(i)], payload[at(j)] = bytes(payload[at(j)]), bytes(payload[at(i)])
    else:
        payload[spec["offset"] + i * size + value[0] // 8] ^= 1 << (value[0] % 8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    subject=st.just(set(SUBJECT_WORDS)) | st.sets(st.sampled_from(SUBJECT_WORDS)),
    body=st.just(set(BODY_WORDS)) | st.sets(st.sampled_from(BODY_WORDS + ["hello"]), min_size=1),
)
def test_a_changed_key_table_gets_one_verdict_from_every_one_message_command(
    tmp_path_factory, small_model, data, subject, body
):
    """A model file whose key table (the keys of its tokens, the index each names, where each
    token starts) was changed, its checksums forged: predict of stdin, filter, predict FILE and train --update of
    the message, which find its tokens by it, refuse it all alike (exit 1 and the full loader's
    line; filter passes the message on whole, tagged error, as for any unreadable model) or all
    give one verdict (the learner learns). Where the message holds every token of the vocabulary they also agree with the full
    loader (predict of two documents): what it refuses, they refuse (each entry the message
    reads is checked as it is read), what it scores, they score alike, also where a key names
    another token than its own (the bytes at its index are compared, from the token's start). An out-of-range token
    index read by filter gave exit 0 and X-Nbtext-Class: error, where predict said corrupt."""
    folder = tmp_path_factory.mktemp("keys")
    n_tokens = split(small_model.read_bytes(), "m")[0]["n_tokens"]
    change = data.draw(key_table_changes(n_tokens))
    model = folder / "changed.model"
    model.write_bytes(crafted(small_model, lambda header, payload: changed(header, payload, change)))
    message = f"Subject: {' '.join(sorted(subject))}\n\n{' '.join(sorted(body))}\n".encode()
    done = one_message_commands(model, message, folder)
    try:
        load(str(model))
        refusal = None
    except NbtextError as e:
        refusal = f"Error: {e}\n".encode()
    status = {command: result[0] for command, result in done.items()}
    if any(result[0] == 1 for result in done.values()):  # refused: by each, in the loader's words
        assert set(status.values()) == {1}, done
        assert all(result[2] == refusal for result in done.values()), (refusal, done)
        assert done["filter"][1] == message.replace(b"\n\n", b"\nX-Nbtext-Class: error\n\n", 1)
        assert all(result[1] == b"" for command, result in done.items() if command != "filter")
    else:
        assert set(status.values()) == {0} and not any(result[2] for result in done.values()), done
        label, figures = done["predict"][1].strip(), done["predict --proba"][1].split(b"\t")
        assert figures[1] == label and done["predict " + str(folder / "message.eml")][1].split(b"\t")[1] == label
        spam = float(figures[3 + split(small_model.read_bytes(), "m")[0]["classes"].index("spam")])
        header = re.search(rb"\nX-Nbtext-Class: (\w+)\nX-Nbtext-Probability: ([0-9.]+)\n", done["filter"][1])
        assert header is not None and header[1] == label and abs(float(header[2]) - spam) <= 0.00005, done["filter"]
    if set(subject) != set(SUBJECT_WORDS) or not set(body) >= set(BODY_WORDS):
        return  # (the message leaves some entries unread)
    if refusal is not None:
        assert status["predict"] == 1, (change, done)
    else:
        whole = run("predict", "-m", model, folder / "message.eml", folder / "message.eml")
        assert (
            whole.exit_code == 0 and whole.stdout.splitlines()[0].split("\t")[1] == done["predict"][1].decode().strip()
        )


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
def out_of_range(header, payload):
    """Every token index of the key table set out of range (whatever a message's tokens find)."""
    for entry in range(header["n_tokens"]):
        put(header, payload, "token_order", entry, header["n_tokens"] + entry)


def test_an_index_out_of_range_where_the_message_reads_it_is_an_unreadable_model_to_filter(tmp_path, small_model):
    """The attack: the token index of a key the message's token finds set out of range (the
    checksums forged). predict of stdin and of a file said the model is corrupt (exit 1);
    filter gave exit 0 with X-Nbtext-Class: error, the loader's refusal taken for the message's
    problem. Now filter exits 1 with the same line, the message passed on whole, tagged error."""

    model = tmp_path / "changed.model"
    model.write_bytes(crafted(small_model, out_of_range))
    message = b"Subject: lunch\n\ncheap pills at noon\n"
    (tmp_path / "message.eml").write_bytes(message)
    said = set()
    for args in (["filter"], ["predict"], ["predict", tmp_path / "message.eml"]):
        done = subprocess.run([NBTEXT, args[0], "-m", model, *args[1:]], input=message, capture_output=True)
        assert done.returncode == 1 and done.stderr.count(b"\n") == 1 and b"is corrupt" in done.stderr, done
        said.add(done.stderr)
        if args == ["filter"]:
            assert done.stdout == message.replace(b"\n\n", b"\nX-Nbtext-Class: error\n\n", 1)
    assert len(said) == 1


def test_a_serve_worker_goes_back_to_its_model_when_a_new_file_is_refused_at_a_message(tmp_path, small_model):
    """A worker of nbtext serve loads a changed model file as filter does; one the loader
    refuses only once a message's tokens read its key table gave every such message an error
    verdict, where the parent, loading it whole, refused it and kept the model before. The
    worker now goes back to the model before (and does not load the refused file again): the
    message is judged by it, as every later one."""
    from nbtext.delivery.server import Service

    model = tmp_path / "served.model"
    model.write_bytes(small_model.read_bytes())
    message = b"Subject: lunch\n\ncheap pills at noon\n"
    said = []
    service = Service(str(model), say=said.append)
    service.in_worker = True  # (as a forked worker: the parent's held model, changed files loaded as filter does)
    before = service.judge(message)
    assert dict(before.fields)["X-Nbtext-Class"] in ("spam", "ham")
    changed = tmp_path / "changed.model"
    changed.write_bytes(crafted(small_model, out_of_range))
    changed.replace(model)
    assert service.judge(message).fields == before.fields
    assert service.judge(message).fields == before.fields and service.refused is not None


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3 * 8192), st.data())
def test_a_count_array_is_checked_in_pieces_as_whole(n, data):
    """check_arrays reads the last byte of each count a piece of the array at a time
    (schema._PIECE bytes): it finds a count that is negative, infinite or not a number in any
    piece, at a piece's edges too, as the whole array read at once finds it."""
    from nbtext.modelfile import schema

    values = bytearray(struct.pack(f"<{n}d", *[float(i % 7) for i in range(n)]))
    edges = [i for at in range(0, 8 * n, schema._PIECE) for i in (at // 8 - 1, at // 8) if 0 <= i < n]
    for i in data.draw(st.lists(st.sampled_from(edges) | st.integers(0, n - 1), max_size=3)) if n else []:
        struct.pack_into("<d", values, 8 * i, data.draw(st.sampled_from([-1.0, -0.0, math.inf, math.nan, 2.0**1023])))
    view = memoryview(bytes(values))
    whole = bool(bytes(view[7::8]).translate(None, schema._SMALL_NON_NEGATIVE))
    assert schema._last_bytes_outside(view, schema._SMALL_NON_NEGATIVE) == whole
