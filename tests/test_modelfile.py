import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbtext
from nbtext.errors import NbtextError
from nbtext.modelfile import container, format as modelfile

DOCS = ["cheap pills cheap", "cheap offer now", "lunch at noon", "lunch meeting notes", "notes from noon"]
LABELS = ["spam", "spam", "ham", "ham", "ham"]
PROBES = ["cheap lunch", "notes", "", "something else entirely"]
# the general defaults: LABELS are a spam filter's, whose preset (tests/test_preset.py) stores a decision and a
# --max-evidence, settings of format 4
GENERAL = {"preset": "general"}


@pytest.mark.parametrize("model_name", ["multinomial", "bernoulli"])
@pytest.mark.parametrize("unknown", ["unk", "ignore"])
def test_round_trip_gives_identical_predictions(tmp_path, model_name, unknown):
    clf = nbtext.train(DOCS, LABELS, model=model_name, unknown=unknown, alpha=0.3, ngrams=2, prior="uniform", **GENERAL)
    clf.save(tmp_path / "m")
    loaded = nbtext.load(tmp_path / "m")
    assert loaded.settings == clf.settings and loaded.classes == clf.classes
    assert loaded.vocabulary.tokens == clf.vocabulary.tokens
    assert loaded.file_info == {
        "format_version": 6,
        "nbtext_version": nbtext.__version__,
        "bytes": (tmp_path / "m").stat().st_size,
    }
    np.testing.assert_array_equal(loaded.predict_log_proba(PROBES), clf.predict_log_proba(PROBES))


def test_non_ascii_tokens_survive(tmp_path):
    clf = nbtext.train(["été café été", "naïve résumé naïve", "日本語 日本語"], ["fr", "fr2", "ja"])
    clf.save(tmp_path / "m")
    assert nbtext.load(tmp_path / "m").vocabulary.tokens == clf.vocabulary.tokens


@pytest.fixture
def model_bytes(tmp_path):
    path = tmp_path / "good.model"
    nbtext.train(DOCS, LABELS).save(path)
    return path.read_bytes()


def refused(tmp_path, data, match):
    path = tmp_path / "bad.model"
    path.write_bytes(data)
    with pytest.raises(NbtextError, match=match) as error:
        nbtext.load(path)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("keep", [0, 5, 20, 200, -1])
def test_truncated_files_are_refused(tmp_path, model_bytes, keep):
    refused(tmp_path, model_bytes[:keep], "truncated|empty file|not an nbtext")


def test_flipped_payload_byte_is_refused(tmp_path, model_bytes):
    damaged = bytearray(model_bytes)
    damaged[-3] ^= 0xFF
    refused(tmp_path, bytes(damaged), "corrupt")


def test_newer_format_version_is_refused(tmp_path, model_bytes):
    magic = len(modelfile.MAGIC)
    newer = model_bytes[:magic] + struct.pack("<I", container.FORMAT_VERSION + 1) + model_bytes[magic + 4 :]
    refused(
        tmp_path,
        newer,
        f"model format version {container.FORMAT_VERSION + 1}, newer than this nbtext .* upgrade nbtext",
    )


def test_text_file_is_refused(tmp_path):
    refused(tmp_path, b"spam\tcheap pills\n", "not an nbtext model file")


class _Payload:
    """Unpickling this would create a marker file: the proof that code ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_is_refused_and_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    data = pickle.dumps(_Payload(str(marker)))
    control = tmp_path / "control"
    pickle.loads(pickle.dumps(_Payload(str(control)))).close()
    assert control.exists()  # the payload does run when unpickled
    refused(tmp_path, data, "pickle")
    assert not marker.exists()
    # a pickle hidden behind a valid magic is still never unpickled: it is just bad data
    refused(tmp_path, modelfile.MAGIC + data, "corrupt|truncated|newer")
    assert not marker.exists()


def test_interrupted_save_keeps_the_old_model(tmp_path, monkeypatch):
    path = tmp_path / "m"
    old = nbtext.train(DOCS, LABELS)
    old.save(path)
    before = path.read_bytes()

    def crash(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        nbtext.train(DOCS, LABELS, alpha=0.5).save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m"]  # no temporary file left behind


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o000])
def test_every_file_of_words_is_written_the_users_alone(tmp_path, monkeypatch, umask):
    """A model holds the words of the mail it learned and a scan's state the names of a user's
    folders: each command that writes one makes a new file 0600 whatever the umask (as a mail
    server keeps the mail), its temporary file 0600 from the first byte to the rename, and a
    file it replaces keeps its mode (one a user opened to a group stays open to it)."""
    from tests.conftest import run

    from nbtext.jobs.imapscan import write_state

    renamed = []  # (the temporary file's mode as it is put in place, the path it replaces)
    real_replace = os.replace
    monkeypatch.setattr(
        os, "replace", lambda src, dst: (renamed.append((os.stat(src).st_mode & 0o777, dst)), real_replace(src, dst))
    )
    train = Path(__file__).resolve().parent.parent / "corpora" / "mail" / "train"
    old = os.umask(umask)
    try:
        model, state = tmp_path / "new.model", tmp_path / "imap-scan.state"
        writes = [  # (what, the file it writes)
            (lambda: run("train", "-o", model, train / "spam", train / "ham"), model),
            (lambda: run("merge", "-o", tmp_path / "merged.model", model), tmp_path / "merged.model"),
            (lambda: run("train", "--update", "-m", model, f"spam={train / 'spam'}"), model),
            (lambda: run("forget", "-m", model, train / "spam"), model),
            (lambda: write_state(str(state), {}), state),
        ]
        for write, path in writes:
            result = write()
            assert result is None or result.exit_code == 0, result.stderr
            assert path.stat().st_mode & 0o777 == 0o600, path
            assert all(mode == 0o600 for mode, _ in renamed), renamed  # (an update appended to the file: none)
            renamed.clear()
        model.rename(tmp_path / "train")
        os.chmod(tmp_path / "train", 0o640)  # replaced: its mode kept
        assert run("train", "--update", "-m", tmp_path / "train", f"ham={train / 'ham'}").exit_code == 0
        assert run("train", "-o", tmp_path / "train", train / "spam", train / "ham").exit_code == 0
        assert (tmp_path / "train").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_a_file_written_is_0600_from_its_first_byte(tmp_path):
    """write_atomically's temporary file, while its bytes are written, is the writer's alone,
    new file or a replacement of a file open to others; a picture (private=False) gets the
    mode the umask gives."""
    seen = []

    def chunks():
        for name in os.listdir(tmp_path):
            if name.endswith(".tmp"):
                seen.append(os.stat(tmp_path / name).st_mode & 0o777)
        yield b"words of a mail"

    container.write_atomically(tmp_path / "m", chunks())
    os.chmod(tmp_path / "m", 0o644)
    container.write_atomically(tmp_path / "m", chunks())
    assert seen == [0o600, 0o600] and (tmp_path / "m").stat().st_mode & 0o777 == 0o644
    umask = os.umask(0)
    os.umask(umask)
    container.write_atomically(tmp_path / "plot.svg", [b"<svg/>"], private=False)
    assert (tmp_path / "plot.svg").stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("unknown", ["unk", "ignore"])
def test_one_document_from_a_file_needs_no_vocabulary_dict(tmp_path, unknown):
    """A loaded model classifies one document through the file's token index and its CSR
    rows; the result equals the in-memory model's, and no dict of the vocabulary is built."""
    from conftest import ROOT, read_labelled

    texts, labels = read_labelled(ROOT / "corpora" / "mail" / "train")
    clf = nbtext.train(texts, labels, unknown=unknown, alpha=0.5)
    clf.save(tmp_path / "m")
    probes, _ = read_labelled(ROOT / "corpora" / "mail" / "test")
    probes += [b"", b"zzz unseen words only", "caf\u00e9 na\u00efve lunch".encode()]
    for probe in probes:
        loaded = nbtext.load(tmp_path / "m")
        np.testing.assert_allclose(loaded.predict_log_proba([probe]), clf.predict_log_proba([probe]), rtol=1e-12)
        # one message: no dict of the vocabulary, the CSR counts never expanded
        assert "lookup" not in loaded.vocabulary.__dict__ and not loaded.token_counts.expanded


def test_token_index_finds_every_token():
    from nbtext.features.vocabindex import TokenIndex, build_keys

    tokens = sorted({"apple", "été", "日本語", "a b", "zz", "url:example.com", "subject:free", "x" * 300})
    keys, order = build_keys(tokens)
    index = TokenIndex("\0".join(tokens).encode(), len(tokens), keys, order)
    assert index.find(tokens).tolist() == list(range(len(tokens)))
    assert index.find(["missing", "appl", "apples", ""]).tolist() == [-1, -1, -1, -1]
    assert index.tokens() == tokens


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(st.characters(blacklist_characters="\0"), min_size=1, max_size=8), unique=True, max_size=40),
    st.lists(st.text(max_size=8), max_size=30),
    st.data(),
)
def test_token_index_finds_each_token_by_its_bytes_whatever_keys_they_share(vocabulary, others, data):
    """TokenIndex.find (whole arrays at once) gives every query, token or not, the index of the
    token its key points to whose bytes are the query's (one by one, below), also where tokens
    share a key (forged: some tokens given another token's or a query's key)."""
    from nbtext.features.vocabindex import TokenIndex, token_key

    tokens = sorted(vocabulary, key=lambda t: t.encode("utf-8", "surrogatepass"))
    blob = "\0".join(tokens).encode("utf-8", "surrogatepass")
    keys = [token_key(t.encode("utf-8", "surrogatepass")) for t in tokens]
    if tokens:  # some tokens' keys forged to another token's (or a query's) key
        for i in data.draw(st.lists(st.integers(0, len(tokens) - 1), max_size=5)):
            keys[i] = token_key(data.draw(st.sampled_from(tokens + others)).encode("utf-8", "surrogatepass"))
    keyed = sorted((k, i) for i, k in enumerate(keys))
    index = TokenIndex(
        blob,
        len(tokens),
        np.array([k for k, _ in keyed], dtype=np.uint64),
        np.array([i for _, i in keyed], dtype=np.int32),
    )
    queries = data.draw(st.permutations(tokens + others))

    def one_by_one(query):
        candidates = [i for k, i in keyed if k == token_key(query.encode("utf-8", "surrogatepass"))]
        return next((i for i in candidates if tokens[i] == query), -1)

    assert index.find(queries).tolist() == [one_by_one(q) for q in queries]
    if keys == [token_key(t.encode("utf-8", "surrogatepass")) for t in tokens]:  # (none forged: each found)
        assert index.find(tokens).tolist() == list(range(len(tokens)))


def test_a_file_says_the_oldest_format_whose_readers_honour_what_it_holds(tmp_path):
    """Format 6: the token starts (every file this build writes whose vocabulary's bytes fit
    them), an array the readers of format 5 call unknown. Without them: 5 for a tokenizer of
    character n-grams (readers of format 4 call it corrupt), 4 for a setting that decides
    (readers of format 3 would ignore it), else 3; each older build refuses the newer format
    with "upgrade nbtext"."""
    docs, labels = ["cheap pills now", "lunch at noon", "win cash prize", "meeting notes"], ["junk", "mail"] * 2
    for options, version in (({}, 3), ({"max_evidence": 5}, 4), ({"char_ngrams": 3}, 5)):
        model = nbtext.train(docs, labels, min_count=1, **options)
        assert container.written_version(model.settings, ["vocabulary", "token_keys"]) == version, options
        path = tmp_path / f"m{version}"
        model.save(str(path))
        data = path.read_bytes()
        assert struct.unpack_from("<I", data, len(container.MAGIC))[0] == 6, options
        assert nbtext.load(str(path)).predict(["cheap prize"]) == nbtext.train(
            docs, labels, min_count=1, **options
        ).predict(["cheap prize"])
