"""A change is a record (nbtext.stats.changes): a document leaves the class it was learned under
and joins another. Its rule is written once; the count table's side (CountTable.apply) and the
one-message path's (Ledger) give the same counts, and every reader refuses a record that
changes nothing."""

import ast
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from nbtext.stats.changes import (
    CHANGING,
    OUTCOMES,
    Change,
    HeldCounts,
    LearnedBatch,
    Ledger,
    changes_anything,
    outcome,
    outcome_counts,
    steps,
)
from nbtext.stats.counting import ColumnCounter, CountTable

CLASSES = ["a", "b", "c"]
PACKAGE = Path(__file__).resolve().parent.parent / "nbtext"


def test_a_change_is_made_exactly_when_its_classes_differ():
    assert outcome(None, "a") == "added" and outcome("b", "a") == "moved" and outcome("a", None) == "forgotten"
    assert outcome("a", "a") == "duplicates" and outcome(None, None) == "unknown"
    for before in (None, *CLASSES):
        for after in (None, *CLASSES):
            assert (outcome(before, after) in CHANGING) == (before != after)
            assert changes_anything({outcome(before, after): 1}) == (before != after)
    assert set(CHANGING) < set(OUTCOMES)


_tokens = st.lists(st.sampled_from(["w1", "w2", "w3", "w4", "w5"]), min_size=1, max_size=6)
_changes = st.lists(
    st.tuples(st.sampled_from([None, *CLASSES]), st.sampled_from([None, *CLASSES]), _tokens, st.booleans()).filter(
        lambda c: c[0] != c[1]
    ),
    max_size=12,
)


@pytest.mark.parametrize("presence", [False, True], ids=["counts", "presence"])
@settings(max_examples=200, deadline=None)
@given(changes=_changes)
def test_the_count_table_and_the_ledger_apply_the_same_rule(changes, presence):
    """Any changes, applied by the count table (numpy, the model loaded whole) and by the
    Ledger (pure Python, the one-message path), change every class's documents and every
    token's counts alike (occurrences, or documents holding a token in a model of presence);
    the journal and the mail documents are those of the changes in order."""
    changes = [
        Change(bytes([i % 4]) * 16, before, after, tokens, mail)
        for i, (before, after, tokens, mail) in enumerate(changes)
    ]
    table = CountTable.from_counts(presence, CLASSES, ["w1"], [0.0, 0.0, 0.0], [[0.0], [0.0], [0.0]])
    table.apply(changes)
    ledger = Ledger(classes=CLASSES, presence=presence)
    for change in changes:
        ledger.add(change)
    assert table.class_count.tolist() == ledger.class_count
    for token, column in table.token_columns.items():
        assert table.token_counts[:, column].tolist() == (ledger.delta(token) or [0, 0, 0])
    journal = {}
    for change in changes:
        journal[change.key] = change.after
    assert ledger.journal_over({}) == {key: label for key, label in journal.items() if label is not None}
    assert ledger.mail_documents == sum(c.mail for c in changes if c.before is None) - sum(
        c.mail for c in changes if c.after is None
    )
    for change in changes:
        moved = HeldCounts(CLASSES, presence, 0)
        moved.add(change)
        n = dict.fromkeys(change.tokens, 1) if presence else {t: change.tokens.count(t) for t in change.tokens}
        assert moved.counts == {
            token: [n[token] * sum(sign for label, sign in steps(change) if label == name) for name in CLASSES]
            for token in change.tokens
        }


def _record_of_counts(counts, min_count, unk):
    """The one-document record of `counts` ({token: per class}) by its definition: d the tokens
    kept (a total of at least min_count) and UNK, UNK_k the others' counts, T_k the features'."""
    kept = [c for c in counts.values() if sum(c) >= min_count]
    pruned = [c for c in counts.values() if sum(c) < min_count]
    kept_sums = [sum(column) for column in zip(*kept)] if kept else [0] * len(CLASSES)
    unk_sums = [sum(column) for column in zip(*pruned)] if pruned else [0] * len(CLASSES)
    totals = [k + u for k, u in zip(kept_sums, unk_sums)] if unk else kept_sums
    return {"features": len(kept) + unk, "unk": unk_sums if unk else None, "totals": totals}


@pytest.mark.parametrize("presence", [False, True], ids=["counts", "presence"])
@settings(max_examples=150, deadline=None)
@given(
    start=st.lists(st.tuples(st.sampled_from(CLASSES), _tokens), max_size=5),
    changes=_changes,
    min_count=st.integers(1, 3),
    unk=st.booleans(),
)
def test_every_learner_follows_one_record_after_any_changes(start, changes, presence, min_count, unk):
    """The one-document record (d, UNK_k, T_k by --min-count) after any changes (learned,
    moved, forgotten, tokens crossing min_count both ways) from a model's counts is one record
    by every learner: the online learner's (HeldCounts following it document by document), the
    one-message learner's (the multinomial's record_after of each change in turn, as it appends
    records), the one-message reader's (record_after of the changes' deltas telescoped, as
    PureModel.rederived) and the definition's, of the counts after them. (The online learner
    kept totals of its own, and each path wrote the rule itself.)"""
    from nbtext.stats.changes import CountBelowZero, record_after
    from nbtext.stats.event_models import EVENT_MODELS

    model = HeldCounts(CLASSES, presence, 0.0)  # the counts of the model the changes start from
    for label, tokens in start:
        model.add(Change(b"", None, label, tokens, False))
    first = _record_of_counts(model.counts, min_count, unk)
    online = HeldCounts(CLASSES, presence, 0.0, min_count, unk, model.counts, model.class_count)
    assert online.record == first
    ledger, appended = Ledger(classes=CLASSES, presence=presence), first
    for before, after, tokens, mail in changes:
        change = Change(b"", before, after, tokens, mail)
        moved = HeldCounts(CLASSES, presence, 0)  # what it adds to each of its tokens' counts
        moved.add(change)
        counts_before = {token: list(counts) for token, counts in online.counts.items()}
        zeros = [0.0] * len(CLASSES)
        if any(min(map(sum, zip(counts_before.get(t, zeros), d))) < 0 for t, d in moved.counts.items()):
            with pytest.raises(CountBelowZero):  # forgotten where it was never counted: no learner takes it
                record_after(appended, moved.counts, counts_before.get, min_count)
            continue
        online.add(change)
        ledger.add(change)
        appended = EVENT_MODELS["multinomial"].record_after(appended, moved.counts, counts_before.get, min_count)
        telescoped = record_after(first, ledger.deltas, model.counts.get, min_count)
        assert online.record == appended == telescoped == _record_of_counts(online.counts, min_count, unk)
        assert online.class_count == [a + b for a, b in zip(model.class_count, ledger.class_count)]


def test_only_the_count_table_takes_documents_out():
    """No module but stats/counting.py gives a count table the step its documents take
    (CountTable.add's sign, from changes.moves or changes.LEARNED_STEP): every other way a
    document leaves or joins a class is a Change or a training's batch (training.update,
    forget and replayed each took documents out themselves)."""
    found = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "counting.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add"
        and (len(node.args) == 3 or any(keyword.arg in ("sign", "weight") for keyword in node.keywords))
    ]
    assert found == []


_entries = st.lists(
    st.tuples(st.sampled_from([bytes([i]) * 16 for i in range(4)]), st.sampled_from(CLASSES), st.booleans())
)


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(_entries, max_size=4))
def test_a_training_is_changes_from_no_class_with_every_copy_counted(batches):
    """A training's batches (LearnedBatch) change the journal and the mail documents as the same
    documents would, each copy a Change from no class to its label applied without asking its
    outcome: a key is held under the label it was read under last, and every copy read as
    mail counts. Its count tables' side (changes.LEARNED_STEP: a table's and a -j worker's
    counting) has every copy join its class."""
    learned, one_by_one = Ledger(), Ledger()
    for batch in batches:
        learned.learn(LearnedBatch([(key, label) for key, label, _ in batch], sum(mail for *_, mail in batch)))
        for key, label, mail in batch:
            one_by_one.add(Change(key, None, label, ["w"], mail))
    assert learned.journal_over({}) == one_by_one.journal_over({})
    assert learned.mail_documents == one_by_one.mail_documents == sum(mail for batch in batches for *_, mail in batch)
    last = {}
    for batch in batches:
        last.update((key, label) for key, label, _ in batch)
    assert learned.journal_over({}) == last
    for batch in batches:
        labels = [label for _, label, _ in batch]
        table = CountTable(binary=False)
        table.count([["w"]] * len(labels), labels)
        assert {label: table.class_count[row] for label, row in table.labels.items()} == {
            label: labels.count(label) for label in set(labels)
        }
        exported, _, _ = ColumnCounter(binary=False).count([["w"]] * len(labels), labels)
        assert dict(zip(exported[0], exported[2])) == {label: labels.count(label) for label in set(labels)}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_copy_given_under_two_labels_is_held_under_the_last(tmp_path, jobs):
    """A training counts both copies of a document given under two labels, and its journal
    holds it under the label it was read under last (-j 1 and workers alike); a merge of two
    models that each learned it holds it under the later model's label."""
    import nbtext
    from nbtext.journal import content_hash

    copy = b"the same words given twice under two labels\n"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for i in range(3):
            (tmp_path / name / f"{i}.txt").write_bytes(f"{name} document {i} words here\n".encode())
        (tmp_path / name / "copy.txt").write_bytes(copy)
    held = {}
    for order in (("a", "b"), ("b", "a")):
        path = tmp_path / f"{''.join(order)}.model"
        folders = [f"{name}={tmp_path / name}" for name in order]
        subprocess.run([NBTEXT, "train", "-q", "-j", jobs, "--min-count", "1", "-o", path, *folders], check=True)
        model = nbtext.load(str(path))
        assert model.class_count.tolist() == [4.0, 4.0]  # both copies counted
        held[order] = model.journal[content_hash(copy)]
    assert held == {("a", "b"): "b", ("b", "a"): "a"}
    merged = tmp_path / "merged.model"
    subprocess.run([NBTEXT, "merge", "-o", merged, tmp_path / "ba.model", tmp_path / "ab.model"], check=True)
    assert nbtext.load(str(merged)).journal[content_hash(copy)] == "b"


# --- a record that changes nothing: refused by every reader (it was folded before) ---------------
NBTEXT = Path(sys.executable).with_name("nbtext")
MAIL = Path(__file__).resolve().parent.parent / "corpora" / "mail"


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """A model with one message learned through its pending section: (the file's bytes
    before the section, its one record)."""
    from nbtext.modelfile import pending

    path = tmp_path_factory.mktemp("changes") / "m.model"
    subprocess.run([NBTEXT, "train", "-q", "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham"], check=True)
    before = path.read_bytes()
    message = sorted((MAIL / "test" / "spam").iterdir())[0]
    subprocess.run([NBTEXT, "train", "--update", "-q", "-m", path, f"spam={message}"], check=True)
    (record,) = pending.Log(path.read_bytes()).records
    return before, record


@pytest.mark.parametrize("classes", [(None, None), ("spam", "spam")])
def test_a_pending_record_that_changes_nothing_is_refused_by_both_readers(tmp_path, learned, classes):
    """A record whose document joins the class it leaves (none: it is forgotten without ever
    being learned) is no record nbtext writes. It was folded in: the model loaded whole
    counted one mail document fewer for a record of none to none, and the one-message path
    scored with it; now both readers refuse the file in one line."""
    from nbtext.delivery.judging import OneMessageModel
    from nbtext.errors import NbtextError
    from nbtext.modelfile import pending

    before, record = learned
    one = OneMessageModel(str(_written(tmp_path / "own.model", before, [])))
    crafted = dict(record, **{"from": classes[0], "label": classes[1]}, derived=one.pure.header["one_document"])
    crafted["derived"] = {key: crafted["derived"][key] for key in ("features", "unk", "totals")}
    path = _written(tmp_path / "m.model", before, [crafted])
    assert pending.Log(path.read_bytes()).records == [crafted]
    one = OneMessageModel(str(path))
    assert one.pure is None  # the one-message path hands it to the model loaded whole
    with pytest.raises(NbtextError, match="changes nothing") as refused:
        one.model  # noqa: B018
    assert "\n" not in str(refused.value) and str(path) in str(refused.value)


def _written(path, model, records):
    from nbtext.modelfile import pending

    bodies = [json.dumps(record, separators=(",", ":")).encode() for record in records]
    section = pending.PENDING_MAGIC + b"".join(pending.RECORD.pack(len(b), zlib.crc32(b)) + b for b in bodies)
    path.write_bytes(model + (section if records else b""))
    return path


def test_the_one_message_learner_imports_no_numpy(tmp_path, learned):
    """The pending path (learnone, the record's rule in nbtext.stats.changes) learns a message
    without numpy."""
    before, _ = learned
    path = tmp_path / "m.model"
    path.write_bytes(before)
    message = sorted((MAIL / "test" / "ham").iterdir())[0]
    code = (
        "import sys; from nbtext.cli.oneshot import fast; "
        f"status = fast(['train', '--update', '-q', '-m', {str(path)!r}, 'ham=' + {str(message)!r}]); "
        "print(status, 'numpy' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["0", "False"], result.stderr


# --- one summary (nbtext.report.text.learning_summary), whichever way a command ran -------------
def test_update_says_the_same_whichever_way_it_ran(tmp_path, learned):
    """train --update through the pending section and the full way (another -o) say the same
    things: the documents given and their time. The pending section's line gave no time, and
    the full way's closing line counted the whole model's documents as done ("4,863 documents
    done, 1 skipped" for one message read and one skipped)."""
    import os
    import re

    before, _ = learned
    model = tmp_path / "m.model"
    model.write_bytes(before)
    folder = tmp_path / "new"
    folder.mkdir()
    (folder / "a").write_bytes(sorted((MAIL / "test" / "ham").iterdir())[1].read_bytes())
    os.symlink(tmp_path / "gone", folder / "b")  # skipped by name
    ways = {
        "pending": [NBTEXT, "train", "--update", "-m", model, f"ham={folder}"],
        "full": [NBTEXT, "train", "--update", "-m", model, "-o", tmp_path / "other.model", f"spam={folder}"],
    }
    for way, command in ways.items():
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        lines = result.stderr.splitlines()
        assert result.returncode == 1 and len(lines) == 3, (way, result.stderr)
        assert re.search(r"; \d+\.\d\d s -> ", lines[1]), (way, lines[1])
        assert lines[2] == "nbtext: 1 document done, 1 skipped", (way, lines[2])
    assert (
        "pending at the end of the model file"
        in subprocess.run(
            ways["pending"][:-1] + [f"spam={folder}"], capture_output=True, text=True
        ).stderr.splitlines()[1]
    )


def test_the_one_loop_reads_each_document_once_and_tokenizes_only_what_changes():
    """Ledger.changes_of, the loop of train --update, forget and the one-message learner: each
    document's change asked in order over the changes added so far (a copy later in the batch
    is known), its tokens made only when it changes something, one that cannot be read handed
    to on_error by name and one never learned, given to forget, to on_unknown."""
    from nbtext.errors import NbtextError
    from nbtext.reading.documents import Document, document_key

    tokenized = []

    class Tokenize:
        char_ngrams = None

        def __call__(self, data):
            tokenized.append(data)
            return data.split()

        def reads_as_mail(self, data):
            return False

    documents = [
        Document("known", "old text", "a"),
        Document("new", "new text", "b"),
        Document("copy", "new text", "b"),
        Document("moved", "old text", "c"),
        Document("gone", None, "a", "no such file"),
    ]
    ledger, stats, errors = Ledger({document_key("old text"): "a"}.get), outcome_counts(False), []
    made = []
    for change in ledger.changes_of(documents, Tokenize(), False, stats, lambda doc, e: errors.append((doc.name, e))):
        ledger.add(change)
        made.append((change.before, change.after, list(change.tokens)))
    assert made == [(None, "b", ["new", "text"]), ("a", "c", ["old", "text"])]
    assert tokenized == ["new text", "old text"]  # (the known one and the copy: not tokenized)
    assert stats == {"added": 1, "moved": 1, "duplicates": 2}
    assert errors == [("gone", "cannot read it (no such file)")]
    with pytest.raises(NbtextError, match="^gone: cannot read it"):
        list(Ledger().changes_of(documents[-1:], Tokenize(), False, outcome_counts(False)))
    unknown, stats = [], outcome_counts(True)
    forgotten = list(
        ledger.changes_of(
            documents[:2] + [Document("never", "other", "a")], Tokenize(), True, stats, None, unknown.append
        )
    )
    assert [(c.before, c.after) for c in forgotten] == [("c", None), ("b", None)]
    assert [doc.name for doc in unknown] == ["never"] and stats == {"forgotten": 2, "unknown": 1}
