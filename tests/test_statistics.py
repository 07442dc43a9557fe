"""The sufficient statistics are what event models read (nbtext.stats.sufficient): every
path that scores - the model's own fast paths, the one scoring function, a calibration
fold - agrees with the event model's form of one Statistics record."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtext
from nbtext.classifier.settings import make_settings
from nbtext.features.matrix import one_hot
from nbtext.stats.event_models import EVENT_MODELS
from nbtext.stats.sufficient import Statistics, linear_scores

WORDS = st.sampled_from(["free", "prize", "lunch", "notes", "meeting", "money", "now"])
DOCUMENTS = st.lists(WORDS, max_size=12).map(" ".join)
TEXT_MODELS = [(name, ()) for name in ("multinomial", "bernoulli", "complement", "gaussian")] + [
    ("multinomial", (("features", "binary"),)),
    ("multinomial", (("features", "tfidf"), ("tf", "log"))),
    ("bernoulli", (("min_count", 2),)),
    ("multinomial", (("min_count", 2), ("unknown", "ignore"))),
]


FIRST = [("free prize free prize", "spam"), ("lunch notes lunch notes", "ham")]  # two classes, kept tokens


def _trained(pairs, name, options):
    texts, labels = zip(*pairs)
    return nbtext.train(
        list(texts), list(labels), **{"model": name, "calibration": "none", "min_count": 1, **dict(options)}
    )


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(st.tuples(DOCUMENTS, st.sampled_from(["ham", "spam", "other"])), min_size=3, max_size=20),
    unseen=st.lists(DOCUMENTS, min_size=1, max_size=4),
    which=st.sampled_from(TEXT_MODELS),
)
def test_every_path_scores_the_event_models_form_of_the_statistics(pairs, unseen, which):
    """The model's joint log-likelihoods (one document, a batch: its count fast paths
    included) are linear_scores of the event model's form of its Statistics, plus the prior."""
    name, options = which
    model = _trained(FIRST + pairs, name, options)
    stats, event = model.statistics, model.event
    for documents in ([unseen[0]], unseen):
        token_lists = [model.tokenize(d) for d in documents]
        X = model.feature_values(*model.vocabulary.ids(token_lists))
        expected = linear_scores(X, event.linear_form(stats)) + event.prior_term(stats)
        np.testing.assert_allclose(model.joint_log_likelihood(documents), expected, rtol=1e-12, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    pairs=st.lists(st.tuples(DOCUMENTS, st.sampled_from(["ham", "spam"])), min_size=4, max_size=20),
    held=st.sets(st.integers(0, 19), min_size=1),
    which=st.sampled_from(TEXT_MODELS[:4]),
)
def test_a_fold_is_the_statistics_without_its_documents(pairs, held, which):
    """Statistics.without(fold) is the record of the other documents, computed from their
    feature values alone: N_k, Σ x and Σ x² over them (the vocabulary and idf the model's)."""
    name, options = which
    pairs = FIRST + pairs
    model = _trained(pairs, name, options)
    held = sorted(i for i in held if i < len(pairs))
    rest = [i for i in range(len(pairs)) if i not in held]
    X = model.feature_values(*model.vocabulary.ids([model.tokenize(text) for text, _ in pairs]))
    rows = np.array([model.classes.index(label) for _, label in pairs])
    fold = model.statistics.without(one_hot(rows[held], len(model.classes)), X[held])
    Y_rest = one_hot(rows[rest], len(model.classes))
    X_rest = X[rest]
    np.testing.assert_allclose(fold.class_count, np.bincount(rows[rest], minlength=len(model.classes)))
    np.testing.assert_allclose(fold.feature_sums, (Y_rest.T @ X_rest).toarray(), atol=1e-9)
    if name == "gaussian":
        np.testing.assert_allclose(fold.feature_squares, (Y_rest.T @ X_rest.multiply(X_rest)).toarray(), atol=1e-9)
    else:
        assert fold.feature_squares is None


def test_a_hand_made_record_is_all_an_event_model_reads():
    """The forms of the seeds' formulas from a record written by hand, with no model:
    multinomial θ_kj = (B_kj + λ) / (Σ_j B_kj + dλ), Bernoulli θ_kj = (D_kj + λ) / (N_k + 2λ)
    and its absent term Σ_j log(1 − θ_kj), the smoothed prior (N_k + λ) / (N + cλ)."""
    sums = np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 2.0]])
    stats = Statistics(np.array([2.0, 3.0]), sums, None, 1.0, {"prior": "smoothed"})
    W, b, W2 = EVENT_MODELS["multinomial"].linear_form(stats)
    np.testing.assert_allclose(np.exp(W), [[4 / 7, 1 / 7, 2 / 7], [1 / 7, 3 / 7, 3 / 7]], rtol=1e-15)
    assert b.tolist() == [0.0, 0.0] and W2 is None
    np.testing.assert_allclose(np.exp(EVENT_MODELS["multinomial"].prior_term(stats)), [3 / 7, 4 / 7], rtol=1e-15)
    presence = Statistics(np.array([3.0, 3.0]), np.array([[3.0, 0.0], [1.0, 2.0]]), None, 1.0, {"prior": "smoothed"})
    W, b, _ = EVENT_MODELS["bernoulli"].linear_form(presence)
    theta = np.array([[4 / 5, 1 / 5], [2 / 5, 3 / 5]])
    np.testing.assert_allclose(W, np.log(theta) - np.log(1 - theta), rtol=1e-14)
    np.testing.assert_allclose(b, np.log(1 - theta).sum(axis=1), rtol=1e-14)
    assert EVENT_MODELS["complement"].prior_term(stats).tolist() == [0.0, 0.0]  # as Rennie et al.


@pytest.mark.parametrize("name", ["multinomial", "bernoulli", "complement"])
def test_info_weighs_each_class_against_the_others_pooled(name):
    model = _trained(
        [("free prize", "spam"), ("free money", "spam"), ("lunch notes", "ham"), ("meeting notes", "other")], name, ()
    )
    k = model.classes.index("spam")
    others = model.statistics.others_than(k)
    assert others.class_count.tolist() == [2.0]
    np.testing.assert_allclose(others.feature_sums[0], np.delete(model.feature_sums, k, axis=0).sum(axis=0))


@settings(max_examples=25, deadline=None)
@given(
    pairs=st.lists(st.tuples(DOCUMENTS, st.sampled_from(["ham", "spam", "other"])), min_size=1, max_size=40),
    unreadable=st.sets(st.integers(0, 41), max_size=5),
    batch=st.integers(1, 7),
    jobs=st.integers(2, 3),
    which=st.sampled_from([("multinomial", "temperature"), ("bernoulli", "temperature"), ("multinomial", "none")]),
)
def test_workers_count_what_one_process_counts(tmp_path_factory, pairs, unreadable, batch, jobs, which):
    """Workers keep their token columns from chunk to chunk and send only the tokens new to
    them (ColumnCounter); whichever worker counts which chunk, the model file is the one
    process's, byte for byte: counts, vocabulary, journal, calibration sample and T."""
    from nbtext.errors import NbtextError
    from nbtext.jobs.training import train_corpus
    from nbtext.reading.documents import Document, in_batches

    name, calibration = which
    corpus = [
        Document(f"d{i}", text, label, error="unreadable" if i in unreadable else None)
        for i, (text, label) in enumerate(pairs + FIRST)
    ]
    saved = []
    for n in (1, jobs):
        try:
            model = train_corpus(
                lambda: in_batches(corpus, batch),
                make_settings(model=name, calibration=calibration, min_count=1, unknown="ignore"),
                on_error=lambda doc, message: None,
                jobs=n,
            )
        except NbtextError as e:  # (too few documents to fit T on): the same refusal
            saved.append(str(e))
            continue
        path = tmp_path_factory.mktemp("workers") / f"{n}.model"
        model.save(path)
        saved.append(path.read_bytes())
    assert saved[0] == saved[1]
