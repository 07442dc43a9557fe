"""Feature values (counts, binary, tf-idf) and the models that use them."""

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.naive_bayes import MultinomialNB

import nbtext
from nbtext.errors import NbtextError

from conftest import ROOT, read_labelled, run

DEMO = ROOT / "corpora" / "mail"


def demo():
    texts, labels = read_labelled(DEMO / "train")
    return [t.decode() for t in texts], labels


def test_multinomial_on_binary_counts_equals_sklearn():
    texts, labels = demo()
    ours = nbtext.train(texts, labels, features="binary", unknown="ignore", min_count=1, prior="empirical")
    vectorizer = CountVectorizer(binary=True)
    peer = MultinomialNB(alpha=1.0).fit(vectorizer.fit_transform(texts), labels)
    np.testing.assert_allclose(ours.feature_log_prob, peer.feature_log_prob_, rtol=1e-12)
    probes = ["free free free prize", "lunch lunch notes"]
    np.testing.assert_allclose(ours.predict_log_proba(probes), peer.predict_log_proba(vectorizer.transform(probes)),
                               rtol=1e-9)


def test_multinomial_on_tfidf_equals_sklearn_and_l2_rows():
    texts, labels = demo()
    ours = nbtext.train(texts, labels, features="tfidf", min_count=1, prior="empirical")
    vectorizer = TfidfVectorizer()
    X = vectorizer.fit_transform(texts)
    peer = MultinomialNB(alpha=1.0).fit(X, labels)
    np.testing.assert_allclose(ours.feature_sums, peer.feature_count_, rtol=1e-12)
    ids_indptr = __import__("nbtext.features", fromlist=["x"]).ids_and_indptr(
        [ours.tokenize(t) for t in texts[:5]], ours.vocabulary.lookup.__getitem__)
    rows = ours.feature_values(*ids_indptr)
    np.testing.assert_allclose(np.sqrt(rows.multiply(rows).sum(axis=1)).A.ravel(), 1.0)


def test_log_tf_is_log_one_plus_tf():
    docs = ["aa aa aa bb", "bb cc", "cc dd"]
    clf = nbtext.train(docs, ["x", "x", "y"], model="complement", tf="log", idf=False, length_norm=False, min_count=1)
    x = dict(zip(clf.feature_names, np.asarray(clf.feature_sums).sum(axis=0)))
    assert x["aa"] == pytest.approx(np.log(4)) and x["bb"] == pytest.approx(2 * np.log(2))


@pytest.mark.parametrize("options, message", [
    (dict(features="tfidf", unknown="unk"), "an UNK feature has no document frequency"),
    (dict(model="bernoulli", features="counts"), "models token presence"),
    (dict(model="gaussian", features="counts"), "takes --features tfidf"),
])
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
