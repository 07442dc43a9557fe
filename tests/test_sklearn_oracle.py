"""scikit-learn as an independent oracle, where the settings match exactly:
--unknown ignore --min-count 1 --prior empirical --alpha 1 is CountVectorizer() + MultinomialNB /
CountVectorizer(binary=True) + BernoulliNB."""

import numpy as np
import pytest
from hypothesis import assume, example, given, settings, strategies as st
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.naive_bayes import BernoulliNB, MultinomialNB

import nbtext

from conftest import read_labelled

EXACT = dict(unknown="ignore", min_count=1, prior="empirical", alpha=1.0, input="text", calibration="none")


def decode(texts):
    return [t.decode("utf-8", errors="replace") if isinstance(t, bytes) else t for t in texts]


def compare(model_name, train_texts, train_labels, test_texts, alpha=1.0):
    ours = nbtext.train(train_texts, train_labels, model=model_name, **{**EXACT, "alpha": alpha})
    vectorizer = CountVectorizer(binary=model_name == "bernoulli")
    X = vectorizer.fit_transform(decode(train_texts))
    peer = (BernoulliNB if model_name == "bernoulli" else MultinomialNB)(alpha=alpha)
    peer.fit(X, train_labels)
    # same vocabulary, same column order (both sorted), same classes
    assert ours.feature_names == list(vectorizer.get_feature_names_out())
    assert ours.classes == list(peer.classes_)
    np.testing.assert_allclose(ours.feature_log_prob, peer.feature_log_prob_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ours.class_log_prior, peer.class_log_prior_, rtol=0, atol=1e-12)
    X_test = vectorizer.transform(decode(test_texts))
    log_proba = ours.predict_log_proba(test_texts)
    np.testing.assert_allclose(log_proba, peer.predict_log_proba(X_test), rtol=1e-9, atol=1e-6)
    # Where two classes tie exactly (in exact arithmetic), rounding picks the winner:
    # compare the predictions of documents with a clear winner.
    top_two = np.sort(log_proba, axis=1)[:, -2:] if log_proba.shape[1] > 1 else None
    clear = np.ones(len(test_texts), dtype=bool) if top_two is None else top_two[:, 1] - top_two[:, 0] > 1e-9
    ours_predicted, theirs = ours.predict(test_texts), list(peer.predict(X_test))
    return [p for p, c in zip(ours_predicted, clear) if c], [p for p, c in zip(theirs, clear) if c]


@pytest.mark.parametrize("model_name", ["multinomial", "bernoulli"])
def test_20newsgroups_equals_sklearn(news20, model_name):
    train_texts, train_labels = read_labelled(news20 / "train")
    test_texts, _ = read_labelled(news20 / "test")
    ours, theirs = compare(model_name, train_texts, train_labels, test_texts)
    assert len(ours) == 7532  # no exact ties on this corpus: every prediction is compared
    assert ours == theirs


words = st.sampled_from("alpha beta gamma delta epsilon zeta eta theta Iota KAPPA".split())
documents = st.lists(words, max_size=12).map(" ".join)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(documents, st.sampled_from(["x", "y", "z"])), min_size=3, max_size=30),
    st.lists(documents, min_size=2, max_size=5),
    st.sampled_from(["multinomial", "bernoulli"]),
    st.sampled_from([0.1, 0.5, 1.0, 2.5]),
)
def test_random_corpora_equal_sklearn(pairs, test_texts, model_name, alpha):
    texts = [t for t, _ in pairs]
    labels = [label for _, label in pairs]
    assume(len(set(labels)) >= 2 and any(texts))  # both tools refuse the others
    ours, theirs = compare(model_name, texts, labels, test_texts, alpha)
    assert ours == theirs


def test_complement_on_tfidf_equals_sklearn(news20):
    """--model complement --tf raw (idf, L2 length, no weight normalization) is
    TfidfVectorizer() + ComplementNB(norm=False). (Our --tf log is log(1 + tf), where
    scikit-learn's sublinear_tf is 1 + log(tf): no oracle for that one.)"""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.naive_bayes import ComplementNB

    train_texts, train_labels = read_labelled(news20 / "train")
    test_texts, _ = read_labelled(news20 / "test")
    ours = nbtext.train(
        train_texts,
        train_labels,
        model="complement",
        tf="raw",
        min_count=1,
        alpha=1.0,
        calibration="none",
        input="text",
    )
    vectorizer = TfidfVectorizer()
    peer = ComplementNB(alpha=1.0, norm=False).fit(vectorizer.fit_transform(decode(train_texts)), train_labels)
    assert ours.feature_names == list(vectorizer.get_feature_names_out())
    np.testing.assert_allclose(ours.idf, vectorizer.idf_, rtol=1e-12)
    np.testing.assert_allclose(-ours.linear_form[0], -peer.feature_log_prob_, rtol=1e-9)
    jll = ours.joint_log_likelihood(test_texts)
    np.testing.assert_allclose(jll, vectorizer.transform(decode(test_texts)) @ peer.feature_log_prob_.T, rtol=1e-9)
    assert ours.predict(test_texts) == list(peer.predict(vectorizer.transform(decode(test_texts))))


def test_weight_normalization_is_rennies():
    docs = ["apple apple banana", "banana cherry", "cherry cherry date", "date apple"]
    labels = ["a", "a", "b", "b"]
    clf = nbtext.train(
        docs, labels, model="complement", weight_norm=True, min_count=1, features="counts", unknown="ignore"
    )
    W = clf.linear_form[0]
    np.testing.assert_allclose(np.abs(W).sum(axis=1), 1.0)  # each class's weights, L1-normalized
    # class a's weights come from class b's counts: θ̃ = (B_b + 1) / (Σ B_b + d)
    counts_b = np.array([1, 0, 2, 2])  # apple, banana, cherry, date in class b
    log_theta = np.log((counts_b + 1) / (counts_b.sum() + 4))
    np.testing.assert_allclose(W[0], -log_theta / np.abs(log_theta).sum())


def test_gaussian_on_tfidf_equals_sklearn():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.naive_bayes import GaussianNB

    from conftest import real_corpus

    folder = real_corpus("sms")
    train_texts, train_labels = read_labelled(folder / "train")
    test_texts, _ = read_labelled(folder / "test")
    ours = nbtext.train(
        train_texts, train_labels, model="gaussian", min_count=5, prior="empirical", input="text", calibration="none"
    )
    vocabulary = ours.feature_names
    vectorizer = TfidfVectorizer(vocabulary=vocabulary)
    X = vectorizer.fit_transform(decode(train_texts)).toarray()
    peer = GaussianNB().fit(X, train_labels)
    # the idf: ours from the training documents' frequencies, as the vectorizer's
    np.testing.assert_allclose(ours.idf, vectorizer.idf_, rtol=1e-12)
    X_test = vectorizer.transform(decode(test_texts)).toarray()
    np.testing.assert_allclose(ours.joint_log_likelihood(test_texts), peer.predict_joint_log_proba(X_test), rtol=1e-7)
    assert ours.predict(test_texts) == list(peer.predict(X_test))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(documents, st.sampled_from(["x", "y", "z"])), min_size=4, max_size=30),
    st.lists(documents, min_size=1, max_size=5),
)
# class z's documents all alike: its variances are 0, which E[x²] − μ² once left as rounding
# residue (a jll 4.8e-7 off GaussianNB's, amplified by the variance floor)
@example([("", "x"), ("", "x")] + [("alpha alpha beta beta gamma", "z")] * 3, [""])
def test_random_corpora_gaussian_equals_sklearn(pairs, test_texts):
    """The Gaussian event model's joint log-likelihoods, not only its posteriors (a constant
    per feature, such as log 2π, cancels between the classes), are GaussianNB's on the same
    tf-idf matrix; on small random corpora, so that it holds without the real corpora too."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.naive_bayes import GaussianNB

    texts, labels = [t for t, _ in pairs], [label for _, label in pairs]
    assume(len(set(labels)) >= 2 and any(texts))
    ours = nbtext.train(
        texts, labels, model="gaussian", min_count=1, prior="empirical", input="text", calibration="none"
    )
    vectorizer = TfidfVectorizer(vocabulary=ours.feature_names)
    X = vectorizer.fit_transform(texts).toarray()
    assume(X.var(axis=0).max() > 0)  # GaussianNB's variance floor is 0 then: it divides by zero
    peer = GaussianNB().fit(X, labels)
    np.testing.assert_allclose(
        ours.joint_log_likelihood(test_texts),
        peer.predict_joint_log_proba(vectorizer.transform(test_texts).toarray()),
        rtol=1e-7,
    )
