"""Feature values (counts, binary, tf-idf) and the models that use them."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.naive_bayes import MultinomialNB

import nbtext
from nbtext.errors import NbtextError
from nbtext.features.matrix import csr_from_ids, scores_of_counts

from conftest import ROOT, read_labelled, run

DEMO = ROOT / "corpora" / "mail"
GENERAL = {"preset": "general"}  # the general defaults (the demo's spam/ham would choose a spam filter's)


def demo():
    texts, labels = read_labelled(DEMO / "train")
    return [t.decode() for t in texts], labels


def test_multinomial_on_binary_counts_equals_sklearn():
    texts, labels = demo()
    ours = nbtext.train(texts, labels, features="binary", unknown="ignore", min_count=1, prior="empirical", **GENERAL)
    vectorizer = CountVectorizer(binary=True)
    peer = MultinomialNB(alpha=1.0).fit(vectorizer.fit_transform(texts), labels)
    np.testing.assert_allclose(ours.feature_log_prob, peer.feature_log_prob_, rtol=1e-12)
    probes = ["free free free prize", "lunch lunch notes"]
    np.testing.assert_allclose(
        ours.predict_log_proba(probes), peer.predict_log_proba(vectorizer.transform(probes)), rtol=1e-9
    )


def test_multinomial_on_tfidf_equals_sklearn_and_l2_rows():
    texts, labels = demo()
    ours = nbtext.train(texts, labels, features="tfidf", min_count=1, prior="empirical", **GENERAL)
    vectorizer = TfidfVectorizer()
    X = vectorizer.fit_transform(texts)
    peer = MultinomialNB(alpha=1.0).fit(X, labels)
    np.testing.assert_allclose(ours.feature_sums, peer.feature_count_, rtol=1e-12)
    ids_indptr = __import__("nbtext.features.matrix", fromlist=["x"]).ids_and_indptr(
        [ours.tokenize(t) for t in texts[:5]], ours.vocabulary.lookup.__getitem__
    )
    rows = ours.feature_values(*ids_indptr)
    np.testing.assert_allclose(np.sqrt(rows.multiply(rows).sum(axis=1)).A.ravel(), 1.0)


def test_log_tf_is_log_one_plus_tf():
    docs = ["aa aa aa bb", "bb cc", "cc dd"]
    clf = nbtext.train(docs, ["x", "x", "y"], model="complement", tf="log", idf=False, length_norm=False, min_count=1)
    x = dict(zip(clf.feature_names, np.asarray(clf.feature_sums).sum(axis=0)))
    assert x["aa"] == pytest.approx(np.log(4)) and x["bb"] == pytest.approx(2 * np.log(2))


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(features="tfidf", unknown="unk"), "an UNK feature has no document frequency"),
        (dict(model="bernoulli", features="counts"), "models token presence"),
        (dict(model="gaussian", features="counts"), "takes --features tfidf"),
    ],
)
def test_refused_combinations(options, message):
    texts, labels = demo()
    with pytest.raises(NbtextError, match=message):
        nbtext.train(texts, labels, **options)


@pytest.mark.parametrize("model_name", ["complement", "gaussian"])
def test_tfidf_models_round_trip_and_cli(tmp_path, model_name):
    folders = [DEMO / "train" / "spam", DEMO / "train" / "ham"]
    result = run("train", "--model", model_name, "-o", tmp_path / "m", *folders)
    assert result.exit_code == 0, result.stderr
    model = nbtext.load(tmp_path / "m")
    assert model.settings["features"] == "tfidf" and model.settings["unknown"] == "ignore"
    texts, labels = read_labelled(DEMO / "test")
    again = nbtext.load(tmp_path / "m")
    np.testing.assert_array_equal(model.predict_log_proba(texts), again.predict_log_proba(texts))
    accuracy = np.mean([p == l for p, l in zip(model.predict(texts), labels)])
    assert accuracy > 0.75  # it learned something (chance is 0.5)
    update = run("train", "--update", "-m", tmp_path / "m", *folders)
    assert update.exit_code == 1 and "tf-idf" in update.stderr


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 6), max_size=12), min_size=1, max_size=8),
    st.lists(st.floats(-50, 50, allow_nan=False), min_size=21, max_size=21),
)
def test_scores_of_counts_are_the_csr_products_to_the_bit(documents, values):
    """The numpy sums that spare a batch scipy's import equal csr_from_ids(...) @ Wᵀ exactly,
    repeated ids and empty documents included."""
    ids = np.array([i for d in documents for i in d], dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum([len(d) for d in documents])]).astype(np.int64)
    weights = np.array(values).reshape(3, 7)
    expected = np.asarray(csr_from_ids(ids, indptr, 7, False) @ weights.T)
    assert np.array_equal(scores_of_counts(ids, indptr, weights), expected)


def test_a_batch_of_a_count_model_is_scored_without_importing_scipy(tmp_path):
    """scipy is imported by what needs it (presence, tf-idf, gaussian, training), not by
    scoring a batch with counts; the probabilities are those of the CSR product."""
    import subprocess
    import sys

    texts, labels = read_labelled(ROOT / "corpora" / "mail" / "train")
    nbtext.train(texts, labels, **GENERAL).save(tmp_path / "m.model")
    test, _ = read_labelled(ROOT / "corpora" / "mail" / "test")
    paths = [tmp_path / f"{i}.txt" for i in range(len(test))]
    for path, text in zip(paths, test):
        path.write_bytes(text)
    script = (
        "import json, sys, nbtext; m = nbtext.load(sys.argv[1]); "
        "p = m.predict_proba([open(path, 'rb').read() for path in sys.argv[2:]]); "
        "print(json.dumps(p.tolist()), any(n.split('.')[0] == 'scipy' for n in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "m.model"), *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    probabilities, imported = result.stdout.rsplit(" ", 1)
    assert imported.strip() == "False" and len(test) > 2
    model = nbtext.load(tmp_path / "m.model")
    W, b, _ = model.linear_form
    ids, indptr = model.vocabulary.ids([model.tokenize(t) for t in test])
    jll = np.asarray(csr_from_ids(ids, indptr, W.shape[1], False) @ W.T) + b + model.prior_term
    expected = np.exp(jll - np.logaddexp.reduce(jll, axis=1, keepdims=True))
    assert np.array_equal(np.array(__import__("json").loads(probabilities)), model.predict_proba(test))
    assert np.allclose(model.predict_proba(test), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("features", ["counts", "binary"])
def test_counting_needs_no_scipy(tmp_path, features):
    """CountTable.add sums Yᵀ X in numpy: a default training imports no scipy, and the counts
    are those of the sparse product (exact: whole numbers)."""
    import os
    import subprocess
    import sys

    from nbtext.features.matrix import one_hot
    from nbtext.stats.counting import CountTable

    script = (
        "import sys, nbtext; from conftest import read_labelled, ROOT; "
        "texts, labels = read_labelled(ROOT / 'corpora' / 'mail' / 'train'); "
        f"nbtext.train(texts, labels, features={features!r}); "
        "print(any(n.split('.')[0] == 'scipy' for n in sys.modules))"
    )
    # run from the project root (where mutmut's copy finds its configuration under `make mutants`)
    path = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert result.stdout.strip() == "False"
    texts, labels = read_labelled(ROOT / "corpora" / "mail" / "train")
    model = nbtext.train(texts, labels, features=features)
    token_lists = [model.tokenize(t) for t in texts]
    table = CountTable(binary=features == "binary")
    _, ids, indptr = table.count(token_lists, labels)
    rows = np.array([table.labels[label] for label in labels])
    expected = (
        one_hot(rows, len(table.labels)).T @ csr_from_ids(ids, indptr, len(table.token_columns), features == "binary")
    ).toarray()
    assert np.array_equal(table.token_counts, expected) and expected.sum() > 0
