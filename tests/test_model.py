import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbtext
from nbtext.errors import NbtextError
from nbtext.stats.counting import CountTable

DOCS = ["cheap pills cheap", "cheap offer now", "lunch at noon", "lunch meeting notes", "notes from noon"]
LABELS = ["spam", "spam", "ham", "ham", "ham"]
GENERAL = {"preset": "general"}  # the general defaults (spam/ham labels would choose a spam filter's)


@pytest.mark.parametrize("model_name", ["multinomial", "bernoulli"])
def test_pruned_and_never_seen_tokens_score_the_same(model_name):
    clf = nbtext.train(DOCS + ["rareword here"], LABELS + ["spam"], model=model_name, min_count=2)
    assert "rareword" in clf.vocabulary.tokens and "rareword" not in clf.feature_names  # seen, then pruned
    pruned, unseen = clf.predict_log_proba(["cheap rareword", "cheap zzzunseen"])
    np.testing.assert_array_equal(pruned, unseen)


def test_unk_probability_is_learned_from_pruned_tokens():
    clf = nbtext.train(DOCS, LABELS, model="multinomial", min_count=2, alpha=1.0, **GENERAL)
    counts = dict(zip(clf.feature_names, clf.feature_sums.T.tolist()))
    ham, spam = clf.classes.index("ham"), clf.classes.index("spam")
    # spam tokens: cheap x3 (kept), pills, offer, now (pruned: seen once) -> UNK 3
    assert counts["<UNK>"][spam] == 3
    # ham: lunch x2, noon x2, notes x2 kept; at, meeting, from pruned -> UNK 3
    assert counts["<UNK>"][ham] == 3
    assert counts["cheap"][spam] == 3 and counts["lunch"][ham] == 2


def test_bernoulli_unk_counts_documents_with_a_pruned_token():
    clf = nbtext.train(DOCS, LABELS, model="bernoulli", min_count=2)
    unk = clf.feature_sums[:, -1]
    # documents with at least one token seen in fewer than 2 documents overall:
    # spam: "cheap pills cheap" (pills), "cheap offer now" -> 2; ham: "lunch at noon" (at),
    # "lunch meeting notes" (meeting), "notes from noon" (from) -> 3
    assert dict(zip(clf.classes, unk.tolist())) == {"ham": 3, "spam": 2}


def test_ignore_drops_unknown_tokens():
    # (the general defaults: the spam preset's character n-grams of unseen words are often known)
    clf = nbtext.train(DOCS, LABELS, unknown="ignore", min_count=1, **GENERAL)
    assert "<UNK>" not in clf.feature_names
    np.testing.assert_array_equal(clf.predict_log_proba(["cheap"]), clf.predict_log_proba(["cheap neverseen tokens"]))


def test_max_features_keeps_the_most_frequent():
    clf = nbtext.train(DOCS, LABELS, min_count=1, max_features=2, **GENERAL)
    assert clf.feature_names == ["cheap", "lunch", "<UNK>"]  # cheap 3; lunch, noon, notes 2: first in order


def test_a_million_tokens_give_finite_probabilities_that_sum_to_one():
    clf = nbtext.train(DOCS, LABELS, **GENERAL)
    long_document = "cheap lunch " * 500_000
    jll = clf.joint_log_likelihood([long_document])
    assert np.all(np.isfinite(jll)) and jll.min() < -1e5  # far below what exp() could represent
    proba = clf.predict_proba([long_document, long_document + "pills"])
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("model_name", ["multinomial", "bernoulli"])
@pytest.mark.parametrize("unknown", ["unk", "ignore"])
def test_single_and_batch_prediction_agree(model_name, unknown):
    clf = nbtext.train(DOCS, LABELS, model=model_name, unknown=unknown, alpha=0.7)
    probes = DOCS + ["cheap cheap unseen words", "", "noon pills"]
    batch = clf.predict_log_proba(probes)
    singles = np.vstack([clf.predict_log_proba([d]) for d in probes])
    np.testing.assert_allclose(batch, singles, rtol=1e-12)


def test_with_alpha_resmooths_without_retraining():
    clf = nbtext.train(DOCS, LABELS, alpha=1.0)
    resmoothed = clf.with_alpha(0.1)
    retrained = nbtext.train(DOCS, LABELS, alpha=0.1)
    np.testing.assert_allclose(resmoothed.feature_log_prob, retrained.feature_log_prob, rtol=1e-12)
    assert not np.allclose(resmoothed.feature_log_prob, clf.feature_log_prob)


def test_a_lambda_given_by_with_alpha_is_kept_when_the_counts_change():
    """A model re-smoothed with with_alpha holds a λ given, as --alpha's: merged with
    documents of text (whose share of mail would choose 1), it keeps that λ, as a merge of
    models given --alpha does; left to the corpus, the merge chooses again."""
    mail = [f"From: a@example.org\nSubject: s\n\ncheap pills {i}\n" for i in range(3)]
    mostly_mail = nbtext.train([*mail, "lunch at noon"], ["spam"] * 3 + ["ham"], preset="general")
    text = nbtext.train([f"lunch notes {i}" for i in range(8)], ["ham", "spam"] * 4, preset="general")
    assert (mostly_mail.alpha, text.alpha, nbtext.merge([mostly_mail, text]).alpha) == (0.1, 1.0, 1.0)
    given = nbtext.train([f"lunch notes {i}" for i in range(8)], ["ham", "spam"] * 4, preset="general", alpha=0.5)
    kept = nbtext.merge([mostly_mail.with_alpha(0.5), given])
    assert kept.alpha == 0.5 and kept.corpus["default_alpha"] is False


@pytest.mark.parametrize(
    "options",
    [
        {"model": "multinomial"},
        {"model": "bernoulli"},
        {"model": "bernoulli", "unknown": "ignore"},
        {"model": "multinomial", "features": "binary"},
        {"model": "multinomial", "features": "tfidf"},
        {"model": "complement"},
        {"model": "gaussian"},
    ],
)
def test_with_alpha_equals_training_with_that_alpha(options, tmp_path):
    """Every event model and feature kind: re-smoothing keeps every stored count (UNK
    documents, tf-idf sums, the journal) and gives what training with λ gives."""
    probes = DOCS + ["cheap cheap unseen words", "noon pills lunch"]
    trained = nbtext.train(DOCS + ["rareword offer"], LABELS + ["spam"], alpha=1.0, **options)
    resmoothed = trained.with_alpha(0.3)
    retrained = nbtext.train(DOCS + ["rareword offer"], LABELS + ["spam"], alpha=0.3, **options)
    np.testing.assert_allclose(
        resmoothed.predict_log_proba(probes), retrained.predict_log_proba(probes), rtol=1e-12, atol=1e-12
    )
    assert resmoothed.journal == trained.journal and len(trained.journal) == len(DOCS) + 1
    resmoothed.save(tmp_path / "m")
    assert (tmp_path / "m").read_bytes() == _saved(retrained, tmp_path / "r")


def _saved(model, path):
    model.save(path)
    return path.read_bytes()


def test_decide_at_the_threshold():
    clf = nbtext.train(DOCS, LABELS)
    assert clf.decide(np.array([0.25, 0.75]), unsure_below=0.75) == ("spam", 0.75)  # not below: decided
    assert clf.decide(np.array([0.25, 0.75]), unsure_below=0.76) == ("unsure", 0.75)


@pytest.mark.parametrize("alpha", [0, -1, float("nan"), float("inf")])
def test_alpha_must_be_positive(alpha):
    with pytest.raises(NbtextError, match="--alpha must be a number > 0"):
        nbtext.train(DOCS, LABELS, alpha=alpha)


def test_one_class_is_refused():
    with pytest.raises(NbtextError, match="need at least two classes"):
        nbtext.train(DOCS[:2], LABELS[:2])


def test_counting_in_batches_or_merged_tables_equals_counting_at_once():
    tokens = [d.split() for d in DOCS]
    whole = CountTable(binary=False)
    whole.count(tokens, LABELS)
    left, right = CountTable(binary=False), CountTable(binary=False)
    left.count(tokens[3:], LABELS[3:])
    right.count(tokens[:3], LABELS[:3])
    left.merge(right.export())
    a, b = whole.sorted_view(), left.sorted_view()
    assert a[0] == b[0] and a[1] == b[1]
    np.testing.assert_array_equal(a[2], b[2])
    np.testing.assert_array_equal(a[3], b[3])
    assert a[3].sum() == sum(len(t) for t in tokens)


def test_log_normalize_when_every_class_is_ruled_out():
    """A row whose every class has log-likelihood −inf (λ = 0 rules them all out) is uniform,
    not NaN; other rows are normalized as usual."""
    from nbtext.stats.formulas import log_normalize

    jll = np.array([[-np.inf, -np.inf, -np.inf], [np.log(2.0), 0.0, -np.inf]])
    log_proba = log_normalize(jll)
    np.testing.assert_allclose(np.exp(log_proba[0]), [1 / 3] * 3)
    np.testing.assert_allclose(np.exp(log_proba[1]), [2 / 3, 1 / 3, 0.0])
    assert np.isfinite(jll[1, :2]).all()  # the input is not modified


@pytest.mark.parametrize("options", [{"min_count": 1}, {"min_count": 2}, {"max_features": 3, "unknown": "ignore"}])
def test_every_features_counts_are_those_of_the_columns_one_by_one(tmp_path, options):
    """feature_counts (one scatter) equals feature_count_columns (a search per column), for a
    model counted here (dense) and the same model loaded from its file (CSR rows)."""
    docs = ["free prize money now", "lunch meeting report", "click free money", "noon lunch report now"] * 3
    labels = ["spam", "ham", "spam", "ham"] * 3
    trained = nbtext.train(docs + ["rare words once"], labels + ["ham"], calibration="none", **options)
    trained.save(tmp_path / "m.model")
    for model in (trained, nbtext.load(tmp_path / "m.model")):
        every = np.arange(model.n_features)
        np.testing.assert_array_equal(model.feature_counts, model.feature_count_columns(every))
        assert model.feature_counts.sum() > 0


MODEL_OPTIONS = [
    {"model": "multinomial"},
    {"model": "multinomial", "features": "binary", "min_count": 1},
    {"model": "multinomial", "unknown": "ignore", "ngrams": 2},
    {"model": "bernoulli", "unknown": "ignore"},
    {"model": "bernoulli", "min_count": 1},
    {"model": "complement"},
    {"model": "gaussian"},
    {"model": "fisher"},
]
VOCABULARY = ["cheap", "pills", "offer", "now", "lunch", "noon", "notes", "meeting", "free", "never", "seen"]
texts = st.lists(st.sampled_from(VOCABULARY), max_size=30).map(" ".join)


@pytest.mark.parametrize("options", MODEL_OPTIONS, ids=lambda o: " ".join(map(str, o.values())))
@settings(max_examples=25, deadline=None)
@given(
    corpus=st.lists(st.tuples(texts, st.sampled_from(["spam", "ham"])), max_size=12),
    queries=st.lists(texts, min_size=2),
)
def test_a_document_alone_scores_to_the_bit_as_in_a_batch(options, corpus, queries):
    """predict printed a document's last bits by the size of its batch: one document alone was
    summed another way (numpy's pairwise .sum) than in a batch (each token in turn, or a CSR
    product's columns). Now every document's jll has the same bits alone as in any batch."""
    model = nbtext.train(DOCS + [t for t, _ in corpus], LABELS + [label for _, label in corpus], **options)
    token_lists = [model.tokenize(text) for text in queries]
    together, _ = model.jll_and_lengths(token_lists)
    for i, tokens in enumerate(token_lists):
        alone, _ = model.jll_and_lengths([tokens])
        assert np.array_equal(alone[0], together[i]), (tokens, alone[0] - together[i])
