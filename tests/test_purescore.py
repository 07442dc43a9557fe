"""One message scored without numpy (nbtext.classifier.purescore) gives the numpy model's label and
probabilities to 1e-12 (and each to a relative 1e-9: nbtext.delivery.judging.RELATIVE_AGREEMENT), over
random corpora and settings and over the real SpamAssassin test messages; whatever it does not
serve goes to the numpy path unchanged."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import real_corpus, run
from test_hostile_models import assemble
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbtext
from nbtext.classifier import purescore
from nbtext.delivery.judging import RELATIVE_AGREEMENT
from nbtext.features.vocabindex import (
    TokenIndex,
    build_keys,
    find_many,
    find_one,
    in_sorted_blob,
    token_key,
    token_starts,
)
from nbtext.modelfile.container import split
from nbtext.stats.event_models import EVENT_MODELS

WORDS = ["free", "prize", "lunch", "noon", "click", "meeting", "money", "report", "now", "the", "café", "日本"]
WORDS += ["FREE!!", "$20", "example.com", "10.1.2.3"]  # (what --lexer mail reads apart)
# the general defaults (spam/ham classes would choose a spam filter's, whose own --unsure-below agree() does not
# decide the pure path's label by)
GENERAL = {"preset": "general"}
GENERAL_ARGS = ["--preset", "general"]  # (the command line's)


def pure_model(model, path):
    model.save(path)
    data = Path(path).read_bytes()
    return purescore.of_file(data, str(path))


def agree(model, pure, documents):
    """The pure path serves every document but long ones, with the numpy model's label and
    probabilities (the label wherever the classes are not tied to 1e-12): how many it served."""
    expected = model.predict_proba(documents)
    served = 0
    for document, row in zip(documents, expected):
        got = purescore.probabilities(pure, document)
        if got is None:  # only a long document is left to numpy
            assert len(set(pure.tokenize(document))) > purescore.MAX_DISTINCT_TOKENS
            continue
        served += 1
        np.testing.assert_allclose(got, row, rtol=0, atol=1e-12)
        # and each small one relative to itself (a spam cut-off's ceiling on P(ham) reads them: subnormals apart)
        small = row > 1e-300
        np.testing.assert_allclose(np.array(got)[small], row[small], rtol=RELATIVE_AGREEMENT, atol=0)
        label, _ = purescore.decide(pure.classes, got)
        top_two = np.sort(row)[-2:]
        if top_two[1] - top_two[0] > 1e-12:  # not a tie that rounding may break either way
            assert label == model.decide(row)[0]
    return served


document = st.builds(
    lambda words, mail: ("From: a@b.c\nSubject: " + words[0] + "\n\n" if mail and words else "") + " ".join(words),
    st.lists(st.sampled_from(WORDS + ["unseen", "zzz"]), min_size=0, max_size=40),
    st.booleans(),
)
options = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["multinomial", "bernoulli", "fisher"]),
        "min_count": st.integers(1, 3),
        "max_features": st.sampled_from([None, 1, 3, 6]),
        "ngrams": st.integers(1, 2),
        "alpha": st.sampled_from([None, 0.01, 0.5, 1.0, 3.0]),
        "prior": st.sampled_from(["smoothed", "empirical", "uniform"]),
        "unknown": st.sampled_from(["unk", "ignore"]),
        "features": st.sampled_from([None, "counts", "binary"]),
        "lexer": st.sampled_from([None, "mail"]),
        "char_ngrams": st.sampled_from([None, None, 3]),
        "headers": st.sampled_from([None, "subject,*"]),
        "max_evidence": st.sampled_from([None, None, 1, 3]),  # (the multinomial's alone: dropped for the others)
    }
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    corpus=st.lists(st.tuples(document, st.sampled_from(["spam", "ham", "eggs"])), min_size=2, max_size=30),
    options=options,
    queries=st.lists(document, min_size=1, max_size=5),
)
def test_pure_scores_equal_numpys_over_random_corpora_and_settings(tmp_path, corpus, options, queries):
    docs, labels = [d for d, _ in corpus], [label for _, label in corpus]
    if len(set(labels)) < 2 or (options["model"] == "bernoulli" and options["features"] == "counts"):
        return
    if options["model"] != "multinomial":
        options = {k: v for k, v in options.items() if k != "max_evidence"}
    if options["model"] == "fisher":  # presence features, no prior, no UNK: it refuses those options
        options = {k: v for k, v in options.items() if k not in ("prior", "unknown", "features")}
        labels = ["spam" if label == "spam" else "ham" for label in labels]
        if len(set(labels)) < 2:
            return
    try:
        model = nbtext.train(docs, labels, **GENERAL, **options)
    except nbtext.NbtextError:
        return  # e.g. every token pruned
    pure = pure_model(model, tmp_path / "m.model")
    assert pure is not None
    agree(nbtext.load(tmp_path / "m.model"), pure, queries + docs[:3])


def test_a_calibrated_model_is_scored_with_its_temperature(tmp_path):
    docs = ["free prize money now", "lunch meeting report", "click free money", "noon lunch report"] * 10
    labels = ["spam", "ham", "spam", "ham"] * 10
    model = nbtext.train(docs, labels, min_count=1, calibration="temperature")
    assert model.calibration is not None
    agree(model, pure_model(model, tmp_path / "m.model"), ["free lunch", "money money report", ""])


@pytest.mark.parametrize("unknown", ["unk", "ignore"])
def test_a_temperature_growing_with_length_counts_the_tokens_the_likelihood_reads(tmp_path, unknown):
    """T(x) = T·n^γ: both paths count n alike (unknown tokens too with UNK, not when ignored)."""
    docs = ["free prize money now", "lunch meeting report", "click free money", "noon lunch report"] * 10
    labels = ["spam", "ham", "spam", "ham"] * 10
    model = nbtext.train(docs, labels, min_count=1, unknown=unknown, calibration="none", **GENERAL)
    model.calibration = {"method": "temperature", "temperature": 0.7, "length_exponent": 0.9, "documents": 40}
    queries = ["free lunch", "money money report zebra zebra zebra", "", "zebra", "free " * 50 + "lunch " * 40]
    pure = pure_model(model, tmp_path / "m.model")
    agree(model, pure, queries)
    one = pure.probabilities("money money report zebra zebra zebra")
    n = 6 if unknown == "unk" else 3
    jll = model.joint_log_likelihood(["money money report zebra zebra zebra"])[0] / (0.7 * n**0.9)
    assert one == pytest.approx(list(np.exp(jll - np.logaddexp.reduce(jll))), abs=1e-12)
    # length 0 (nothing, or only ignored tokens): no evidence to temper, the prior as it is;
    # T(1) = 0.7 would have made it sharper
    prior = list(np.exp(model.class_log_prior - np.logaddexp.reduce(model.class_log_prior)))
    for empty in ["", "zebra"] if unknown == "ignore" else [""]:
        assert pure.probabilities(empty) == pytest.approx(prior, abs=1e-12)
        assert list(model.predict_proba([empty])[0]) == pytest.approx(prior, abs=1e-12)
    assert max(pure.probabilities("zebra" if unknown == "unk" else "lunch")) > max(prior)  # one token: T(1)


@pytest.mark.parametrize("floor", [2, 16])
def test_a_length_floor_tempers_short_documents_alike_on_both_paths(tmp_path, floor):
    """T(x) = T·max(n, m)^γ (a file's length_floor): a document shorter than m is tempered as
    one of m tokens by the one-message path and the whole model alike, a longer one as before,
    one of no tokens not at all; and the file is read back with its floor."""
    docs = ["free prize money now", "lunch meeting report", "click free money", "noon lunch report"] * 10
    labels = ["spam", "ham", "spam", "ham"] * 10
    model = nbtext.train(docs, labels, min_count=1, calibration="none", **GENERAL)
    model.calibration = {
        "method": "temperature",
        "temperature": 0.05,
        "length_exponent": 0.9,
        "length_floor": floor,
        "documents": 40,
    }
    queries = ["free", "free lunch money", "", "free " * 20 + "lunch " * 10]
    pure = pure_model(model, tmp_path / "m.model")
    assert nbtext.load(tmp_path / "m.model").calibration["length_floor"] == floor
    agree(model, pure, queries)
    for query in queries[:2]:
        n = len(query.split())
        jll = model.joint_log_likelihood([query])[0] / (0.05 * max(n, floor) ** 0.9)
        assert pure.probabilities(query) == pytest.approx(list(np.exp(jll - np.logaddexp.reduce(jll))), abs=1e-12)


@pytest.mark.parametrize("options", [(), ("--lexer", "mail", "--headers", "subject,from,*")], ids=["words", "mail"])
def test_the_real_spamassassin_test_messages(tmp_path, options):
    folder = real_corpus("spamassassin")
    path = tmp_path / "sa.model"
    trained = run(
        "train", "-q", *GENERAL_ARGS, *options, "-o", path, folder / "train" / "spam", folder / "train" / "ham"
    )
    assert trained.exit_code == 0
    pure = purescore.of_file(path.read_bytes(), str(path))
    model = nbtext.load(path)
    messages = sorted(p for p in (folder / "test").glob("*/*") if p.is_file())
    assert len(messages) > 1000
    documents = [p.read_bytes() for p in messages]
    assert model.calibration["length_exponent"] > 0  # the default: calibrated, T growing with length
    assert agree(model, pure, documents) > 0.98 * len(documents)


@pytest.mark.parametrize(
    "options", [{"model": "complement"}, {"model": "gaussian"}, {"model": "multinomial", "features": "tfidf"}]
)
def test_models_it_does_not_serve_are_left_to_numpy(tmp_path, options):
    model = nbtext.train(
        ["free prize", "lunch noon", "free money", "noon report"], ["s", "h", "s", "h"], min_count=1, **options
    )
    assert pure_model(model, tmp_path / "m.model") is None


def without_record(data):
    """The same model file without its one_document record (as files of older builds)."""
    header, payload = split(data, "m")
    header.pop("sample", None)  # (the sample section is left out too)
    del header["one_document"]
    return assemble(header, bytes(payload), crc=False, version=header["format_version"])


def imported_numpy(model_path, message):
    code = (
        "import sys; from nbtext.cli.oneshot import fast; "
        f"status = fast(['predict', '-m', {str(model_path)!r}]); "
        "print('numpy' in sys.modules, file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], input=message, capture_output=True, text=True)
    return result.stdout, result.stderr.strip()


def test_one_message_never_imports_numpy_and_an_older_file_still_classifies(tmp_path, demo_model):
    label, numpy_loaded = imported_numpy(demo_model, "free prize, click now to claim")
    assert (label, numpy_loaded) == ("spam\n", "False")
    older = tmp_path / "older.model"
    older.write_bytes(without_record(Path(demo_model).read_bytes()))
    assert imported_numpy(older, "free prize, click now to claim") == ("spam\n", "True")


def test_a_changed_record_is_refused_by_the_header_checksum_and_a_bad_one_by_the_schema(tmp_path, demo_model):
    data = Path(demo_model).read_bytes()
    header, payload = split(data, "m")
    header.pop("sample", None)  # (the sample section is left out too)
    header["one_document"]["unk"] = ["x"] * len(header["classes"])
    bad = tmp_path / "bad.model"
    bad.write_bytes(assemble(header, bytes(payload), crc=False, version=header["format_version"]))
    assert purescore.of_file(bad.read_bytes(), str(bad)) is None
    result = run("predict", "-m", bad, input="free prize")
    assert result.exit_code == 1 and "is corrupt: bad unk in the one_document record" in result.stderr


@pytest.mark.parametrize("with_starts", [False, True])
def test_a_token_is_found_only_if_its_bytes_are_in_the_vocabulary(with_starts):
    tokens = sorted(["free", "lunch", "prize", "日本"])
    blob = "\0".join(tokens).encode()
    starts = list(token_starts(blob)) if with_starts else None
    keyed = sorted((token_key(t.encode()), i) for i, t in enumerate(tokens))
    keys, order = [k for k, _ in keyed], [i for _, i in keyed]
    for i, token in enumerate(tokens):
        assert find_one(token.encode(), keys, order, blob, starts) == i
    assert find_one(b"lunc", keys, order, blob, starts) == -1 and not in_sorted_blob(blob, b"lunc")
    # A token whose key another token has (forged) is not that token: its bytes are checked.
    forged_keys = [token_key(b"zzz") if i == order.index(tokens.index("prize")) else k for i, k in enumerate(keys)]
    assert find_one(b"zzz", sorted(forged_keys), order, blob, starts) == -1
    # Two tokens of one key: the numpy path (which compares every candidate) decides.
    twice = sorted(keys + [token_key(b"free")])
    assert find_one(b"free", twice, order + [0], blob, starts) is None


TOKEN_TEXT = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), min_size=1, max_size=6)
# (and tokens past vocabindex.LONG bytes, which a lookup reads by their first bytes: the same token repeated)
ANY_TOKEN = TOKEN_TEXT | st.tuples(TOKEN_TEXT, st.integers(10, 40)).map(lambda made: made[0] * made[1])


@settings(max_examples=300, deadline=None)
@given(st.sets(ANY_TOKEN, min_size=1, max_size=12), st.lists(ANY_TOKEN, max_size=8), st.data())
def test_a_token_is_found_by_its_start_as_the_numpy_path_finds_it(vocabulary, probes, data):
    """find_one with the file's token starts gives TokenIndex.find's answer, and with one
    start forged anywhere that answer too or a ValueError (the loader judges the file); the
    lookups of one file share what they keep of its long tokens (PureModel's)."""
    tokens = sorted(vocabulary)
    keys, order = build_keys(tokens)
    blob = "\0".join(tokens).encode("utf-8", "surrogatepass")
    starts = token_starts(blob)
    index = TokenIndex(blob, len(tokens), keys, order)
    probes += data.draw(st.lists(st.sampled_from(tokens), max_size=4))
    probes += [token[:cut] for token in data.draw(st.lists(st.sampled_from(tokens), max_size=3)) for cut in (-1, 1)]
    probes = [token for token in probes if token]
    expected = index.find(probes).tolist()
    keys, order = keys.tolist(), order.tolist()
    for kept in (None, {}):
        assert [find_one(t.encode(), keys, order, blob, starts.tolist(), kept) for t in probes] == expected
        assert [find_one(t.encode(), keys, order, blob, None, kept) for t in probes] == expected
    forged = starts.tolist()
    where = data.draw(st.integers(0, len(forged) - 1))
    near = sorted({start + d for start in forged for d in (-1, 0, 1)} | {len(blob), len(blob) + 1})
    forged[where] = data.draw(st.one_of(st.sampled_from(near), st.integers(-2, len(blob) + 2)))  # (another token's)
    kept = {}
    for token, answer in zip(probes, expected):
        try:
            assert find_one(token.encode(), keys, order, blob, forged, kept) == answer
        except ValueError:
            pass


@settings(max_examples=300, deadline=None)
@given(st.sets(ANY_TOKEN, min_size=1, max_size=12), st.sets(ANY_TOKEN, max_size=8), st.data())
def test_a_messages_tokens_are_found_at_once_as_each_alone(vocabulary, others, data):
    """find_many (a message's distinct tokens at once, the absent ones searched for between the
    tokens found) gives each token find_one's answer, TokenIndex.find's; with one start forged
    anywhere, those answers or a ValueError (the loader judges the file)."""
    tokens = sorted(vocabulary)
    keys, order = build_keys(tokens)
    blob = "\0".join(tokens).encode("utf-8", "surrogatepass")
    starts = token_starts(blob)
    # distinct probes in any order: tokens of the vocabulary, others, and prefixes of its tokens (absent, next to them)
    probes = set(data.draw(st.lists(st.sampled_from(tokens), max_size=8))) | others
    probes |= {token[:-1] for token in tokens[:3] if len(token) > 1}
    probes = data.draw(st.permutations(sorted(probes)))
    encoded = [t.encode("utf-8", "surrogatepass") for t in probes]
    expected = TokenIndex(blob, len(tokens), keys, order).find(probes).tolist()
    keys, order = keys.tolist(), order.tolist()
    assert [find_one(t, keys, order, blob, starts.tolist()) for t in encoded] == expected
    for kept in (None, {}):
        assert find_many(encoded, keys, order, blob, starts.tolist(), kept) == expected
    forged = starts.tolist()
    near = sorted({start + d for start in forged for d in (-1, 0, 1)} | {len(blob), len(blob) + 1})
    forged[data.draw(st.integers(0, len(forged) - 1))] = data.draw(
        st.one_of(st.sampled_from(near), st.integers(-2, len(blob) + 2))
    )
    try:
        assert find_many(encoded, keys, order, blob, forged, {}) == expected
    except ValueError:
        pass


def test_an_absent_token_is_searched_for_between_the_tokens_found_around_it():
    """Of a message's tokens, one whose key the vocabulary lacks is looked for in its bytes only
    between the two tokens found by their keys that hold it between them: a search of a few
    tokens where they lie near, not of the whole vocabulary (a message of character n-grams
    holds hundreds of absent ones among thousands found)."""
    from nbtext.features import vocabindex

    tokens = [f"t{i:05d}" for i in range(4096)]
    keys, order = build_keys(tokens)
    blob = "\0".join(tokens).encode()
    starts, keys, order = token_starts(blob).tolist(), keys.tolist(), order.tolist()
    found = [tokens[i].encode() for i in range(0, len(tokens), 8)]  # every 8th token, and one absent after each
    absent = [tokens[i].encode() + b"x" for i in range(0, len(tokens), 8)]
    read = []  # the starts read: a token read reads two, its own and the next token's

    class Starts(list):
        def __getitem__(self, i):
            read.append(i)
            return list.__getitem__(self, i)

    answers = vocabindex.find_many(found + absent, keys, order, blob, Starts(starts))
    assert answers == list(range(0, len(tokens), 8)) + [-1] * len(absent)
    searched = len(read) // 2 - len(found)  # (each token found read once, where its key says)
    assert searched <= len(absent) * 4  # (the 7 tokens between two found: 3 halvings; the whole: 12)


@settings(max_examples=300, deadline=None)
@given(
    vocabulary=st.sets(st.text(st.sampled_from("ab\u00e9\u65e5z"), min_size=1, max_size=7), min_size=1, max_size=40),
    others=st.sets(st.text(st.sampled_from("ab\u00e9\u65e5zq"), min_size=1, max_size=8), max_size=20),
    every=st.sampled_from([1, 2, 3, 7, 1024]),
)
def test_tokens_are_found_in_the_vocabulary_at_their_place(vocabulary, others, every):
    """vocabindex.indices_in_sorted_blob (the pending section's lookups) finds a vocabulary's
    tokens at their place in it, and nothing else, whatever the distance between its
    signposts: first, last, long tokens, tokens that begin another."""
    from nbtext.features.vocabindex import indices_in_sorted_blob

    tokens = sorted(vocabulary)
    blob = "\0".join(tokens).encode()
    queries = {t.encode() for t in vocabulary | others}
    expected = {t.encode(): i for i, t in enumerate(tokens)}
    assert indices_in_sorted_blob(blob, queries, every) == expected
    assert indices_in_sorted_blob(b"", queries, every) == {}


def test_a_long_document_goes_to_numpy_with_the_same_answer(tmp_path, demo_model):
    from nbtext.delivery.judging import OneMessageModel

    long = " ".join(f"word{i}" for i in range(purescore.MAX_DISTINCT_TOKENS + 1)) + " free prize"
    one = OneMessageModel(str(demo_model))
    assert one.pure is not None and one.pure_probabilities(long) is None
    assert one.decide(long) == nbtext.load(demo_model).decide(nbtext.load(demo_model).predict_proba([long])[0])


def test_a_document_of_too_many_distinct_tokens_is_left_once_they_pass_the_bound(demo_model):
    """Not after counting all of its tokens: a crafted message of millions of tokens cost the
    one-message path a count of every one before the numpy path scored it again."""
    from nbtext.delivery.judging import OneMessageModel

    class Watched(list):  # the token list, noting how far it was read
        furthest = 0

        def __getitem__(self, where):
            Watched.furthest = max(Watched.furthest, where.stop if isinstance(where, slice) else where + 1)
            return list.__getitem__(self, where)

        def __iter__(self):  # (read whole)
            Watched.furthest = len(self)
            return list.__iter__(self)

    tokens = Watched([f"word{i}" for i in range(10 * purescore.MAX_DISTINCT_TOKENS)] * 100)
    pure = OneMessageModel(str(demo_model)).pure
    with pytest.raises(purescore.Unserved):
        pure.features(tokens)
    assert Watched.furthest <= purescore.MAX_DISTINCT_TOKENS + 2 * purescore._COUNTED_AT_ONCE < len(tokens) // 10


def test_an_updated_model_is_scored_alike(tmp_path):
    from nbtext.jobs.training import update
    from nbtext.reading.documents import Document

    model = nbtext.train(
        ["free prize money", "lunch at noon", "click free", "noon report"],
        ["s", "h", "s", "h"],
        min_count=1,
        max_features=5,
    )
    more, _ = update(
        model, lambda: [[Document("a", "money money now click", "s"), Document("b", "report at the meeting", "h")]]
    )
    agree(more, pure_model(more, tmp_path / "m.model"), ["free money meeting", "noon", "unseen words"])


@pytest.mark.parametrize(
    "name", [name for name, event in EVENT_MODELS.items() if event.flags.default_features is not None]
)
def test_every_text_model_is_served_by_its_own_form_or_left_to_numpy(tmp_path, name):
    """Each event model in the registry either has a form of one document (its own, which
    gives numpy's probabilities) or is scored by numpy: a model added to the registry is
    checked here without a line of its own."""
    event = EVENT_MODELS[name]
    texts = ["free prize now", "lunch at noon", "free money prize", "noon report lunch", "click now free", "the report"]
    model = nbtext.train(texts, ["s", "h", "s", "h", "s", "h"], model=name, min_count=1)
    pure = pure_model(model, tmp_path / "m.model")
    if event.one_document is None:
        assert pure is None
        return
    assert type(pure.form) is event.one_document
    agree(nbtext.load(tmp_path / "m.model"), pure, ["free lunch", "prize report unseen", "noon noon click", ""])


def test_the_pure_path_serves_the_models_it_served():
    """Which models one message is scored for without numpy is the event models' own say, and
    unchanged: the multinomial's, Bernoulli's and the spam filters' (fisher)."""
    assert [name for name, event in EVENT_MODELS.items() if event.one_document is not None] == [
        "multinomial",
        "bernoulli",
        "fisher",
    ]


def test_the_one_message_path_scores_with_the_event_models_own_form(tmp_path, monkeypatch):
    """The pure path asks the event model for its form of one document and scores with it,
    whatever it computes (it used to pick one of its own formulas by a name the model gave,
    so another model's math under that name would have been scored as the multinomial)."""
    model = nbtext.train(["free prize", "lunch noon", "free money", "noon report"], ["s", "h", "s", "h"], min_count=1)
    form = model.event.one_document

    class Shifted(form):
        def joint_log_likelihood(self, log_prior, features, max_evidence=None):
            jll = super().joint_log_likelihood(log_prior, features, max_evidence)
            return [jll[0] + 5.0, *jll[1:]]

    monkeypatch.setattr(type(model.event), "one_document", Shifted)
    pure = pure_model(model, tmp_path / "m.model")
    jll = model.jll_and_lengths([model.tokenize("free lunch")])[0][0] + np.array([5.0, 0.0])
    expected = np.exp(jll - np.logaddexp.reduce(jll))
    np.testing.assert_allclose(purescore.probabilities(pure, "free lunch"), expected, rtol=0, atol=1e-12)


class Counted(bytes):
    """A vocabulary's bytes that count what a search reads of them: each byte indexed, each
    slice's bytes, and the bytes a find or rfind passes over to the byte it finds."""

    def __new__(cls, data):
        made = super().__new__(cls, data)
        made.read = 0
        return made

    def __getitem__(self, at):
        got = super().__getitem__(at)
        self.read += len(got) if isinstance(at, slice) else 1
        return got

    def find(self, sub, start, end):
        at = super().find(sub, start, end)
        self.read += end - start if at < 0 else at - start + 1
        return at

    def rfind(self, sub, start, end):
        at = super().rfind(sub, start, end)
        self.read += end - start if at < 0 else end - at
        return at


@pytest.fixture(scope="module")
def words_model():
    """A small model's state (the general defaults, words alone) to lengthen tokens of."""
    from nbtext.modelfile.container import read_bytes
    from nbtext.modelfile.format import parse_state

    words = [f"{a}{b}{c}" for a in "bcdfg" for b in "aeiou" for c in "klmnp"]
    documents = [" ".join(words[i::4]) for i in range(4)]
    model = nbtext.train(documents, ["spam", "ham"] * 2, preset="general", ngrams=1, min_count=1)
    folder = Path(__import__("tempfile").mkdtemp())
    model.save(folder / "words.model")
    return parse_state(read_bytes(folder / "words.model"), "words.model")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    long=st.dictionaries(st.integers(0, 124), st.integers(1, 20_000), min_size=1, max_size=4),
    probes=st.sets(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12), min_size=1, max_size=60),
    with_starts=st.booleans(),
)
def test_a_vocabulary_of_long_tokens_costs_one_message_no_more_than_its_bytes_once(
    tmp_path, words_model, long, probes, with_starts
):
    """The one-message path (PureModel, what filter and predict of one message score with)
    reads a long token of the vocabulary whole once for a message, and past that, for each
    token of the message, at each step of a binary search the bytes of that token and at
    most 140 more (a short token's bounds): a file whose vocabulary holds tokens of megabytes
    (its checksums right, as anyone who writes a file can make them) cost each lookup of an
    absent token the length of each long token a step read (docs/model-file.md says what
    it cost), with token starts (format 6) and without."""
    import copy
    import math

    from nbtext.modelfile.format import save

    state = copy.copy(words_model)
    tokens = state.tokens.tokens()
    for i, size in long.items():  # (a token + \x01s sorts where the token did)
        tokens[i] += "\x01" * size
    state.tokens = tokens
    save(state, tmp_path / "long.model")
    data = (tmp_path / "long.model").read_bytes()
    if not with_starts:  # (a file of format 5: its starts' bytes left in the payload, unnamed)
        header, payload = split(data, "m")
        del header["arrays"]["token_starts"]
        data = assemble(header, bytes(payload), crc=False, version=5)
    pure = purescore.of_file(data, "long.model")
    assert pure is not None and (pure.starts is not None) == with_starts
    pure.blob = Counted(pure.blob)
    absent = [f"x{probe}" for probe in probes]  # (no token of the vocabulary starts with x)
    pure.probabilities(" ".join(absent + tokens[:3]))
    steps = math.ceil(math.log2(len(tokens))) + 2
    each = sum(steps * (len(token) + 140) for token in absent + tokens[:3])
    assert pure.blob.read <= len(pure.blob) + each, (pure.blob.read, len(pure.blob), each)
