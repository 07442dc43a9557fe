"""Memory bounded by bytes: a batch holds at most BATCH_BYTES of documents (and so of their
tokens), whatever their sizes, on every reader and every command (issue 49, part 6).

in_batches is the one rule; the first test drives it with generated sizes, the second runs
every command that reads documents in batches and records what each batch held once read
(nbtext.reading.documents.each_loaded, where every batch's documents are read: in this
process and in forked workers)."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import nbtext.reading.documents as documents
from nbtext.reading.documents import PAUSE, Document, each_loaded, in_batches

from conftest import GENERAL, run
import test_imap

dovecot, spamassassin = test_imap.dovecot, test_imap.spamassassin  # fixtures: the tests' own Dovecot, or a skip

BOUND = 2_000  # bytes a batch may hold, in these tests


def _held(batch):
    return sum(len(doc.data or b"") for doc in each_loaded(batch))


# a document: (kind, size): data in memory, a file still to be read, an mbox file of messages of
# that size still to be read (a folder's file, read where its batch is tokenized), or a stream's pause
kinds = st.sampled_from(["data", "file", "mbox", "pause"])
corpora = st.lists(st.tuples(kinds, st.integers(0, 3 * BOUND), st.integers(1, 4)), max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=corpora, size=st.integers(1, 12))
def test_no_batch_holds_more_than_the_bound_whatever_the_sizes(tmp_path, corpus, size):
    docs = []
    for n, (kind, length, messages) in enumerate(corpus):
        path = str(tmp_path / f"{n}")
        if kind == "pause":
            docs.append(PAUSE)
        elif kind == "data":
            docs.append(Document(f"d{n}", b"x" * length))
        else:
            body = b"x" * length + b"\n"
            with open(path, "wb") as f:
                f.write(
                    b"".join(b"From a@b Sat Jan  1 00:00:00 2000\n" + body for _ in range(messages))
                    if kind == "mbox"
                    else body
                )
            docs.append(Document(path, None, path=path))
    batches = [batch for batch in in_batches(docs, size, max_bytes=BOUND)]
    for batch in batches:
        assert 1 <= len(batch) <= size
        held = _held(batch)
        assert held <= BOUND or len(list(each_loaded(batch))) == 1, (held, len(batch))
    # every document, once, in input order
    read = [doc.name for batch in batches for doc in each_loaded(batch)]
    assert read == [doc.name for doc in each_loaded([doc for doc in docs if doc is not PAUSE])]


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """The bytes each batch held once read, as a list filled by the commands run (forked
    workers write to the same file), with BATCH_BYTES at BOUND."""
    log = tmp_path / "held.log"
    original = documents.each_loaded

    def each_loaded(batch):
        loaded = list(original(batch))
        with open(log, "a") as f:
            f.write(f"{len(loaded)} {sum(len(doc.data or b'') for doc in loaded)}\n")
        return iter(loaded)

    monkeypatch.setattr(documents, "each_loaded", each_loaded)
    monkeypatch.setattr(documents, "BATCH_BYTES", BOUND, raising=False)  # (raising: to fail before it was)

    def held():
        lines = log.read_text().split("\n")[:-1] if log.exists() else []
        log.unlink(missing_ok=True)
        return [tuple(map(int, line.split())) for line in lines]

    return held


WORDS = "cheap pills offer lunch meeting noon report budget friday team".split()


@pytest.fixture
def corpus(tmp_path):
    """spam/ and ham/ of 12 messages of ~700 bytes each (a batch of the bound holds 2), and an
    mbox file of 6 more."""
    root = tmp_path / "corpus"
    for label in ("spam", "ham"):
        (root / label).mkdir(parents=True)
        for n in range(12):
            words = " ".join(WORDS[(n + k + (label == "spam") * 3) % len(WORDS)] for k in range(110))
            (root / label / f"{n}.eml").write_text(f"Subject: {label} {n}\n\n{words}\n")
    mbox = root / "more.mbox"
    mbox.write_text(
        "".join(f"From a@b Sat Jan  1 00:00:00 2000\nSubject: m{n}\n\n{' '.join(WORDS * 11)} {n}\n\n" for n in range(6))
    )
    return root


def _bounded(held, what):
    assert held, f"{what}: no batch was read"
    for count, size in held:
        assert size <= BOUND or count == 1, f"{what}: a batch of {count} documents held {size:,} bytes"


def test_every_command_reads_batches_of_the_bound(corpus, tmp_path, recorded):
    model = tmp_path / "m.model"
    spam, ham, mbox = corpus / "spam", corpus / "ham", corpus / "more.mbox"
    commands = {
        "train -j 1": ["train", *GENERAL, "-j", "1", "-o", model, spam, ham],
        "train -j 2": ["train", *GENERAL, "-j", "2", "-o", tmp_path / "j2.model", spam, ham],
        "train, a TONE pass": ["train", "-j", "1", "-o", tmp_path / "tone.model", spam, ham],
        "train, a TONE pass -j 2": ["train", "-j", "2", "-o", tmp_path / "tone2.model", spam, ham],
        "train, tf-idf": ["train", *GENERAL, "--features", "tfidf", "-o", tmp_path / "idf.model", spam, ham],
        "predict -j 1": ["predict", "-j", "1", "-m", model, spam, ham, mbox],
        "predict -j 2": ["predict", "-j", "2", "-m", model, spam, ham, mbox],
        "eval": ["eval", "-j", "1", "-m", model, spam, ham],
        "eval -j 2": ["eval", "-j", "2", "-m", model, spam, ham],
        "eval --folds": ["eval", *GENERAL, "--folds", "2", "-j", "1", spam, ham],
        "eval --online": ["eval", *GENERAL, "--online", "-j", "1", spam, ham],
        "train --update": ["train", "--update", "-m", model, f"spam={mbox}", ham],
        "forget": ["forget", "-m", model, mbox, spam],
    }
    for what, args in commands.items():
        result = run(*args)
        assert result.exit_code == 0, (what, result.stderr)
        _bounded(recorded(), what)


def test_a_folders_large_mbox_is_read_in_batches_of_the_bound(corpus, tmp_path, recorded):
    """A file of a folder is read where its batch is tokenized; one that is an mbox larger than
    the bound is its messages, each batched as any other document."""
    folder = tmp_path / "folder"
    folder.mkdir()
    os.link(corpus / "more.mbox", folder / "more")
    model = tmp_path / "m.model"
    assert run("train", *GENERAL, "-j", "1", "-o", model, corpus / "spam", corpus / "ham").exit_code == 0
    recorded()
    result = run("predict", "-j", "1", "-m", model, folder)
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 6
    _bounded(recorded(), "predict of a folder holding an mbox")


def test_the_tone_pass_holds_the_corpus_tokens_not_its_bytes():
    """The TONE pass (train's spam preset) keeps every document's tokens for its order and
    calibration; the documents' bytes go with their batch."""
    from nbtext.classifier.settings import make_settings
    from nbtext.jobs.online import tone_chosen

    docs = [
        Document(f"{label}{n}", f"Subject: {label}\n\n{' '.join(WORDS[n % 5 :])} {label} {n}\n".encode(), label)
        for n in range(20)
        for label in ("spam", "ham")
    ]
    settings = make_settings(preset="spam", classes=("spam", "ham"))
    chosen, seen, _ = tone_chosen(lambda: in_batches(docs, 7), settings)
    assert chosen and len(seen[0]) == len(docs)
    assert not [field for read in chosen for field in read if isinstance(field, bytes) and len(field) > 16]


# a class's generated documents: each its words (a small alphabet, so that tokens and character
# n-grams repeat within a document and across documents and batches; none: an empty message)
texts = st.lists(st.lists(st.sampled_from(WORDS[:6] + ["x", "é€"]), max_size=40), min_size=2, max_size=8)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spam=texts, ham=texts, grams=st.booleans(), jobs=st.sampled_from(["1", "2"]))
def test_a_pass_over_the_whole_corpus_holds_each_distinct_token_once(tmp_path, monkeypatch, spam, ham, grams, jobs):
    """What holds every document's tokens for a pass over them all, train's TONE pass and
    eval --folds (of the spam preset, its folds each such a pass), holds each distinct token
    as one string, whatever the documents, their batches (of BOUND bytes) and -j: the lists
    the pass and the folds read are each document's tokens, and equal tokens the same object
    (the corpus held as numbers of its distinct tokens, not a string an occurrence)."""
    import tempfile

    import nbtext.jobs.crossval as crossval
    import nbtext.jobs.online as online
    from nbtext.classifier.settings import make_settings, make_tokenizer

    root = Path(tempfile.mkdtemp(dir=tmp_path))
    for label, texts in (("spam", spam), ("ham", ham)):
        (root / label).mkdir()
        for n, words in enumerate(texts):
            (root / label / f"{n}.eml").write_text(f"Subject: {' '.join(words[:3])}\n\n{' '.join(words)}\n")
    folders = [root / "spam", root / "ham"]
    options = ["--char-ngrams", "3"] if grams else []
    monkeypatch.setattr(documents, "BATCH_BYTES", BOUND, raising=False)
    read = []  # the token lists of the whole corpus each pass read
    tone_learned, held_out = online.tone_learned, crossval.held_out_guesses
    monkeypatch.setattr(
        online, "tone_learned", lambda lists, *rest: read.append(list(lists)) or tone_learned(lists, *rest)
    )
    run("train", "-q", "-j", jobs, *options, "-o", root / "tone.model", *folders)  # (may refuse: one class learned)
    monkeypatch.setattr(online, "tone_learned", tone_learned)  # (a fold's pass reads its training folds)
    monkeypatch.setattr(
        crossval,
        "held_out_guesses",
        lambda s, lists, *rest, **named: read.append(list(lists)) or held_out(s, lists, *rest, **named),
    )
    assert run("eval", "-j", "1", "--folds", "2", *options, *folders).exit_code in (0, 1)
    settings = make_settings(preset="spam", classes=("spam", "ham"), char_ngrams=3 if grams else None)
    tokenize = make_tokenizer(settings["tokenizer"])
    expected = sorted(tuple(tokenize(path.read_bytes())) for folder in folders for path in folder.iterdir())
    assert read
    for lists in read:
        assert sorted(map(tuple, lists)) == expected
        tokens = [token for tokens in lists for token in tokens]
        assert len({id(token) for token in tokens}) == len(set(tokens))  # each distinct token one string


def test_imap_folders_are_read_in_batches_of_the_bound(corpus, tmp_path, recorded, dovecot):
    """predict of an imap:// folder and imap-scan (against the tests' own Dovecot): each batch
    they score holds at most the bound."""
    from dovecot_server import PASSWORD, USER

    dovecot.start()
    dovecot.append("Scan", [f.read_bytes() for label in ("spam", "ham") for f in sorted((corpus / label).iterdir())])
    model = tmp_path / "m.model"
    assert run("train", *GENERAL, "-j", "1", "-o", model, corpus / "spam", corpus / "ham").exit_code == 0
    recorded()
    folder = f"imap://{USER}@127.0.0.1:{dovecot.imap_port}/Scan"
    env = {"NBTEXT_IMAP_PASSWORD": PASSWORD}
    for what, args in {
        "predict imap://": ["predict", "-j", "1", "-m", model, folder],
        "imap-scan": [
            "imap-scan",
            "-m",
            model,
            "--keyword",
            "Junk",
            "--dry-run",
            "--state",
            tmp_path / "scan.state",
            folder,
        ],
    }.items():
        result = run(*args, env=env)
        assert result.exit_code == 0, (what, result.stderr)
        assert len(result.stdout.splitlines()) == 24
        _bounded(recorded(), what)
