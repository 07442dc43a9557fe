"""Calibrated probabilities (issue 9): `train --calibration temperature` fits T and γ on
out-of-fold predictions; the labels stay those of the raw model, the probabilities are
softmax(jll / (T·n^γ)), n the document's length."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtext
from nbtext.classifier.settings import make_settings
from nbtext.stats.formulas import temperatures
from nbtext.stats.out_of_fold import out_of_fold_jll
from nbtext.stats.event_models import LinearModel
from nbtext.stats.fitting import fit_inverse_temperature, fit_temperature, fit_tempering
from nbtext.stats.tempering import document_temperature
from conftest import ROOT, one_line_error, read_labelled, real_corpus, run

MAIL = ROOT / "corpora" / "mail"
GENERAL = {"preset": "general"}  # the general defaults (spam/ham classes would choose a spam filter's)
GENERAL_ARGS = ["--preset", "general"]  # (the command line's)


def test_the_brier_fit_recovers_a_known_temperature():
    """Labels drawn from softmax(z), scores z·T0: a proper scoring rule gives back 1/T0."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(20000, 3)) * 2.0
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    rows = np.array([rng.choice(3, p=row) for row in p])
    beta = fit_inverse_temperature(z * 7.0, rows)
    assert beta == pytest.approx(1 / 7.0, rel=0.05)


def test_the_fit_recovers_a_temperature_that_grows_with_length():
    """Labels drawn from softmax(z), scores z·T0·n^γ0 for lengths n from 5 to 5,000: the fit
    gives back T0 and γ0; with lengths that tell nothing (all equal) γ stays near the plain fit."""
    rng = np.random.default_rng(1)
    z = rng.normal(size=(20000, 3)) * 2.0
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    rows = np.array([rng.choice(3, p=row) for row in p])
    n = np.exp(rng.uniform(np.log(5), np.log(5000), size=len(rows))).round()
    T, exponent = fit_temperature(z * (3.0 * n[:, None] ** 0.6), rows, n)
    assert exponent == pytest.approx(0.6, abs=0.02) and T == pytest.approx(3.0, rel=0.1)
    T, exponent = fit_temperature(z * 7.0, rows, np.full(len(rows), 40))
    assert T * 40**exponent == pytest.approx(1 / fit_inverse_temperature(z * 7.0, rows), rel=0.01)
    _, exponent = fit_temperature(z * (3.0 * n[:, None] ** 1.5), rows, n)  # beyond the range: its edge
    assert 0.99 <= exponent <= 1.0


def test_the_fit_looks_past_the_soft_end_of_its_range():
    """Scores 3e9 times a calibrated z, as the Gaussian model's variance floor makes them:
    the best 1/T (3.3e-10) lies far below BETA_RANGE, whose every point gives certain
    answers (a plateau, where the one bounded search stopped at 1/T = 20). Both fits find
    it, and a count model's scale is found as before (the range's answer)."""
    from nbtext.stats.fitting import BETA_RANGE

    rng = np.random.default_rng(4)
    z = rng.normal(size=(5000, 3)) * 2.0
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    rows = np.array([rng.choice(3, p=row) for row in p])
    assert fit_inverse_temperature(z * 3e9, rows) == pytest.approx(1 / 3e9, rel=0.05)
    T, exponent = fit_temperature(z * 3e9, rows, np.full(len(rows), 40))
    assert T * 40**exponent == pytest.approx(3e9, rel=0.05)
    assert BETA_RANGE[0] < fit_inverse_temperature(z * 7.0, rows) < BETA_RANGE[1]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(-3, 15), st.integers(2, 5), st.booleans())
def test_looking_past_the_soft_end_never_does_worse_than_the_range(seed, log_scale, n_classes, informative):
    """Scores of any scale (1e-3 to 1e15), labels that follow them or not: the fitted 1/T is
    positive and finite, and its Brier score is no worse than that of the best 1/T the
    bounded search finds within BETA_RANGE alone."""
    from nbtext.stats.fitting import BETA_RANGE, SCALE_TOLERANCE, brier_of_scaled, minimize_bounded

    rng = np.random.default_rng(seed)
    z = rng.normal(size=(300, n_classes)) * 2.0
    rows = z.argmax(axis=1) if informative else rng.integers(0, n_classes, size=300)
    rows = np.where(rng.random(300) < 0.1, rng.integers(0, n_classes, size=300), rows)  # some errors
    jll = z * 10.0**log_scale
    loss = lambda a: brier_of_scaled(jll, rows, a)  # noqa: E731
    beta = fit_inverse_temperature(jll, rows)
    assert 0.0 < beta < np.inf
    in_range = minimize_bounded(loss, *np.log(BETA_RANGE), 1e-6)
    assert loss(np.log(beta)) <= loss(in_range) + 1e-12
    T, exponent = fit_temperature(jll, rows, np.full(300, 50))  # one length: T(x) = T·50^γ for all
    assert 0.0 < T < np.inf
    assert loss(-np.log(T * 50**exponent)) <= loss(minimize_bounded(loss, *np.log(BETA_RANGE), SCALE_TOLERANCE)) + 1e-9


def test_documents_of_length_0_do_not_move_the_fit():
    """They keep their raw posterior whatever T and γ are, so adding them changes nothing."""
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 400, size=600)
    rows = rng.integers(0, 2, size=600)
    evidence = rng.normal(1.0, 1.0, size=600) * lengths * np.where(rows == 1, 1, -1)
    jll = np.stack([-evidence / 2, evidence / 2], axis=1)
    fitted = fit_temperature(jll, rows, lengths)
    empty_jll = np.tile([[0.3, -0.3]], (50, 1))
    with_empty = fit_temperature(
        np.vstack([jll, empty_jll]),
        np.concatenate([rows, np.ones(50, int)]),
        np.concatenate([lengths, np.zeros(50, int)]),
    )
    assert with_empty == fitted


def test_the_bounded_search_finds_what_scipy_finds():
    """nbtext's bounded search (no scipy.optimize import at train time) against scipy's
    minimize_scalar, on shapes with the minimum inside and at an end of the bracket."""
    from scipy.optimize import minimize_scalar

    from nbtext.stats.fitting import minimize_bounded

    for f, low, high in [
        (lambda x: (x - 1.3) ** 2, -9.2, 3.0),
        (lambda x: np.cosh(x + 4.0), -9.2, 3.0),
        (lambda x: np.exp(x), -9.2, 3.0),
        (lambda x: abs(x - 0.5) ** 1.5 + 0.2 * x, -2, 2),
    ]:
        expected = minimize_scalar(f, bounds=(low, high), method="bounded", options={"xatol": 1e-9}).x
        assert minimize_bounded(f, low, high, 1e-6) == pytest.approx(expected, abs=1e-5)


def test_a_fold_model_is_the_counts_without_the_fold():
    """out_of_fold_jll against the multinomial formula worked by hand on the counts minus
    the held-out documents' counts (same vocabulary, λ, prior)."""
    texts, labels = read_labelled(MAIL / "train")
    # the general defaults: every document learned and every feature scoring (the spam preset's TONE pass
    # learns only some documents, and its max_evidence scores each by its most telling features)
    model = nbtext.train(texts, labels, min_count=1, alpha=0.5, preset="general")
    folds = [i % 3 for i in range(len(texts))]
    tokens = [model.tokenize(t) for t in texts]
    jll, lengths = out_of_fold_jll(model, tokens, labels, folds)
    assert lengths.tolist() == [len(t) for t in tokens]  # with UNK every token counts
    X = model.feature_values(*model.vocabulary.ids(tokens)).toarray()
    rows = np.array([model.classes.index(label) for label in labels])
    for f in range(3):
        held = np.array(folds) == f
        B = model.feature_counts - np.array([X[held & (rows == k)].sum(axis=0) for k in range(2)])
        N = model.class_count - np.array([(held & (rows == k)).sum() for k in range(2)])
        d, a = model.n_features, 0.5
        log_theta = np.log(B + a) - np.log(B.sum(axis=1, keepdims=True) + d * a)
        prior = np.log(N + a) - np.log(N.sum() + 2 * a)
        assert np.allclose(jll[held], X[held] @ log_theta.T + prior)


def test_a_calibrated_model_keeps_its_labels_and_softens_its_probabilities(tmp_path):
    texts, labels = read_labelled(MAIL / "train")
    raw = nbtext.train(texts, labels)
    calibrated = nbtext.train(texts, labels, calibration="temperature")
    T, exponent = calibrated.calibration["temperature"], calibrated.calibration["length_exponent"]
    assert T > 0 and 0 <= exponent <= 2 and calibrated.calibration["documents"] == len(texts)
    calibrated.save(tmp_path / "c.model")
    loaded = nbtext.load(tmp_path / "c.model")
    assert loaded.calibration == calibrated.calibration
    test, _ = read_labelled(MAIL / "test")
    assert loaded.predict(test) == raw.predict(test)
    n = np.array([max(len(raw.tokenize(t)), 1) for t in test], dtype=float)
    jll = raw.joint_log_likelihood(test) / (T * n**exponent)[:, None]
    expected = np.exp(jll - jll.max(axis=1, keepdims=True))
    assert np.allclose(loaded.predict_proba(test), expected / expected.sum(axis=1, keepdims=True))


@pytest.mark.parametrize(
    "options",
    [{}, {"features": "binary"}, {"max_features": 20, "prior": "uniform"}, {"unknown": "ignore", "min_count": 1}],
)
def test_the_multinomial_fold_views_on_the_samples_columns_equal_the_whole_tables(monkeypatch, options):
    """out_of_fold_jll's shortcut for the multinomial (only the columns the sample uses) gives
    the very numbers of the fold views built on the whole (classes × features) table (which
    knows no --max-evidence)."""
    texts, labels = read_labelled(MAIL / "train")
    # the general defaults: no cap on the evidence (the capped fold views: test_evidence) and every
    # document learned, so a fold view takes out counts the model holds
    model = nbtext.train(texts, labels, calibration="none", preset="general", **options)
    tokens = [model.tokenize(t) for t in texts]
    folds = [i % 5 for i in range(len(texts))]
    local, lengths = out_of_fold_jll(model, tokens, labels, folds)
    monkeypatch.setattr(type(model.event), "out_of_fold_jll", LinearModel.out_of_fold_jll)  # the whole table's
    whole, same_lengths = out_of_fold_jll(model, tokens, labels, folds)
    assert np.array_equal(local, whole) and np.array_equal(lengths, same_lengths)


def test_the_command_line_fits_shows_keeps_and_refuses(tmp_path):
    spam, ham = MAIL / "train" / "spam", MAIL / "train" / "ham"
    model = tmp_path / "c.model"
    trained = run("train", *GENERAL_ARGS, "--calibration", "temperature", "-o", model, spam, ham)
    assert trained.exit_code == 0 and "; calibrated (T = " in trained.stderr
    auto = run("train", *GENERAL_ARGS, "-o", tmp_path / "auto.model", spam, ham)
    assert "calibrated" not in auto.stderr  # 78 < 100 documents
    shown = run("info", "-m", model).stdout
    assert "calibration    temperature T = " in shown and "(fitted on 78 documents)" in shown
    before = json.loads(run("info", "-m", model, "--format", "json").stdout)["calibration"]
    assert (" · n^" in shown and ", n the document's tokens" in shown) == (before["length_exponent"] > 0)
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "1").write_text("a brand new free prize offer")
    assert run("train", "--update", "-m", model, f"spam={extra}").exit_code == 0
    shown = json.loads(run("info", "-m", model, "--format", "json").stdout)
    assert shown["pending"] == 1 and shown["calibration"] == before  # readers use the file's until the fold
    refit = shown["calibration_after_fold"]
    assert refit != before and refit["documents"] == 79  # fitted again, as a training on all 79 would
    assert (
        run(
            "train",
            *GENERAL_ARGS,
            "--calibration",
            "temperature",
            "-o",
            tmp_path / "all.model",
            f"spam={spam}",
            f"spam={extra}",
            f"ham={ham}",
        ).exit_code
        == 0
    )
    nbtext.load(model, fold=True).save(tmp_path / "folded.model")  # its pending section folded into the file
    assert (tmp_path / "all.model").read_bytes() == (tmp_path / "folded.model").read_bytes()
    raw = run("train", *GENERAL_ARGS, "-o", tmp_path / "raw.model", MAIL / "test" / "spam", MAIL / "test" / "ham")
    assert raw.exit_code == 0
    one_line_error(
        run("merge", "-o", tmp_path / "m", model, tmp_path / "raw.model"), "--calibration auto and temperature"
    )
    dating = ROOT / "corpora" / "dating" / "train.tsv"
    one_line_error(
        run(
            "train",
            "--model",
            "categorical",
            "--calibration",
            "temperature",
            "--table",
            dating,
            "--label-col",
            "约会",
            "-o",
            tmp_path / "d",
        ),
        "is for the text models, not --model categorical",
    )


def test_spamassassin_calibrated_meets_the_issue_targets(tmp_path):
    """The general defaults plus --calibration temperature (the README's calibrated model of
    spam and ham), on the test split: ECE <= 0.02, and at the README's band (0.95) at least
    half of the errors unsure while at most 5% of messages are."""
    data = real_corpus("spamassassin")
    model = tmp_path / "sa.model"
    train = ("train", *GENERAL_ARGS, "--calibration", "temperature", "-o", model)
    assert run(*train, data / "train" / "spam", data / "train" / "ham").exit_code == 0
    report = json.loads(
        run(
            "eval",
            "-m",
            model,
            "--unsure-below",
            "0.95",
            "--format",
            "json",
            data / "test" / "spam",
            data / "test" / "ham",
        ).stdout
    )
    total = report["n"] + report["unsure"]
    assert report["ece"] <= 0.02
    assert report["unsure_errors"] * 2 >= report["errors"] > 0 and report["unsure"] <= 0.05 * total


@pytest.mark.parametrize("corpus, ece", [("spamassassin", 0.03), ("20news", 0.06)])
def test_gaussian_probabilities_are_calibrated_on_real_corpora(tmp_path, corpus, ece):
    """The Gaussian model's jll differences are of order 1e10 (its variance floor), so its
    temperature lies far beyond BETA_RANGE: T ≈ 2.3e9 on SpamAssassin, 2.7e9 on 20
    Newsgroups. Found there, the test split's ECE is 0.020 and 0.047 and its log-loss 0.14
    and 1.12; at BETA_RANGE's soft end they were 0.035 and 0.246, log-loss 8.9e9 and
    225,784."""
    data = real_corpus(corpus)
    model = tmp_path / "g.model"
    classes = sorted((data / "train").iterdir())
    assert run("train", "--model", "gaussian", "-q", "-o", model, *classes).exit_code == 0
    report = json.loads(run("eval", "-m", model, "--format", "json", *sorted((data / "test").iterdir())).stdout)
    assert report["ece"] <= ece and report["log_loss"] < 2.0


def test_the_sample_gathered_while_counting_is_the_one_a_second_pass_takes(tmp_path):
    """-j 1 and -j 2 gather the calibration sample as they count; the model file equals
    the one whose sample a separate pass takes (as a Dask cluster does), byte for byte."""
    from nbtext.jobs.calibration import feature_rows, sample_of, temperature_of
    from nbtext.jobs.training import over_batches, train_corpus
    from nbtext.reading.documents import in_batches
    from nbtext.reading.sources import labelled_input

    data = real_corpus("sms") / "train"
    docs = labelled_input([str(data / "spam"), str(data / "ham")])
    batches = lambda: in_batches(docs(), 1000)  # noqa: E731
    one = train_corpus(batches, make_settings(calibration="temperature"), jobs=1)
    two = train_corpus(batches, make_settings(calibration="temperature"), jobs=2)
    token_lists, labels, hashes = sample_of(one, over_batches(one.settings, batches))
    passed = temperature_of(one, (feature_rows(one.vocabulary, token_lists), labels, hashes))
    one.save(tmp_path / "1.model")
    two.save(tmp_path / "2.model")
    assert (tmp_path / "1.model").read_bytes() == (tmp_path / "2.model").read_bytes()
    assert one.calibration == passed and passed["documents"] > 1000


def test_with_most_documents_unreadable_the_sample_is_taken_in_one_more_pass(monkeypatch):
    """The bound documents are gathered under holds while half the documents read are
    counted; with fewer, the sample comes from one more pass, and is the same sample."""
    from nbtext.jobs import calibration
    from nbtext.jobs.training import over_batches, train_corpus
    from nbtext.reading.documents import Document, in_batches

    monkeypatch.setattr(calibration, "SAMPLE", 40)  # so that the bound falls below 1 here
    readable = [
        Document(
            f"{i}", ("free prize money " if i % 2 else "lunch report noon ") + f"w{i % 17}", "spam" if i % 2 else "ham"
        )
        for i in range(300)
    ]
    broken = [Document(f"x{i}", None, "spam", error="unreadable") for i in range(400)]
    corpus = [d for pair in zip(readable, broken) for d in pair] + broken[300:]
    batches = lambda: in_batches(corpus, 50)  # noqa: E731
    passes = []
    real_sample_of = calibration.sample_of
    monkeypatch.setattr(
        calibration,
        "sample_of",
        lambda model, over, candidates=None, rate=None, **kw: (
            passes.append(
                candidates is not None and candidates.covers(rate or calibration.sample_rate(model.class_count.sum()))
            )
            or real_sample_of(model, over, candidates, rate, **kw)
        ),
    )
    model = train_corpus(
        batches, make_settings(calibration="temperature", min_count=1), on_error=lambda doc, message: None, jobs=1
    )
    assert passes == [False]  # 300 of 700 read were counted: the bound does not cover the final rate
    token_lists, labels, hashes = real_sample_of(model, over_batches(model.settings, batches))
    expected = calibration.temperature_of(
        model, (calibration.feature_rows(model.vocabulary, token_lists), labels, hashes)
    )
    assert model.calibration == expected and expected["documents"] > 20


def test_a_file_with_one_temperature_from_before_the_length_exponent_still_scores(tmp_path):
    """Files written before γ hold {"method", "temperature", "documents"}: softmax(jll / T),
    on both scoring paths (numpy for a batch, pure Python for one message)."""
    from nbtext.classifier import purescore

    texts, labels = read_labelled(MAIL / "train")
    model = nbtext.train(texts, labels, calibration="none")
    model.calibration = {"method": "temperature", "temperature": 3.5, "documents": 78}
    model.save(tmp_path / "old.model")
    loaded = nbtext.load(tmp_path / "old.model")
    test, _ = read_labelled(MAIL / "test")
    jll = model.joint_log_likelihood(test) / 3.5
    expected = np.exp(jll - np.logaddexp.reduce(jll, axis=1, keepdims=True))
    assert np.allclose(loaded.predict_proba(test), expected, rtol=0, atol=1e-12)
    pure = purescore.of_file((tmp_path / "old.model").read_bytes(), str(tmp_path / "old.model"))
    assert purescore.probabilities(pure, test[0]) == pytest.approx(expected[0].tolist(), abs=1e-12)


def test_candidates_give_each_documents_tokens_labels_and_hashes():
    """Candidates.sample(rate) gives back the documents gathered while counting (kept as
    column ids of the count table): each one's tokens, label and hash."""
    from nbtext.jobs.calibration import Candidates
    from nbtext.stats.counting import CountTable, packed_sample, token_hash

    texts, labels = read_labelled(MAIL / "train")
    trained = nbtext.train(texts, labels, calibration="none")
    token_lists = [trained.tokenize(t) for t in texts]
    table = CountTable(binary=False)
    _, ids, indptr = table.count(token_lists, labels)
    candidates = Candidates(table)
    candidates.add(packed_sample(1.0, token_lists, labels, ids, indptr), 1.0)
    vocabulary = sorted(table.token_columns)
    as_tokens, token_labels, token_hashes = candidates.sample(1.0, vocabulary)
    assert (token_labels, token_hashes) == (labels, [token_hash(t) for t in token_lists])
    assert list(as_tokens) == token_lists  # each document's tokens, in its order
    # held as indices into the vocabulary: the model's feature ids and the file's encoding read those
    assert [row.tolist() for row in as_tokens.over(vocabulary)] == [
        [vocabulary.index(t) for t in d] for d in token_lists
    ]
    assert as_tokens.over(list(vocabulary)) is None and as_tokens[1:3] == token_lists[1:3]


@pytest.mark.parametrize("unknown", ["unk", "ignore"])
def test_the_samples_feature_ids_from_token_indices_are_the_vocabularys(unknown):
    """feature_rows of TokenRows (indices, never decoded) equals vocabulary.ids of the same
    documents as token lists: pruned tokens go to UNK, or are left out with --unknown ignore."""
    from nbtext.features.vocabulary import TokenRows
    from nbtext.jobs.calibration import feature_rows

    texts, labels = read_labelled(MAIL / "train")
    # every document learned, so each token read is in the vocabulary (a TONE pass learns some)
    model = nbtext.train(texts, labels, calibration="none", min_count=3, unknown=unknown, learn="all")
    tokens = model.vocabulary.tokens
    index = {t: i for i, t in enumerate(tokens)}
    token_lists = [model.tokenize(t) for t in texts]
    rows = TokenRows([np.array([index[t] for t in d], dtype=np.int64) for d in token_lists], tokens)
    assert model.vocabulary.n_kept < len(tokens)  # some tokens pruned
    by_index, by_name = feature_rows(model.vocabulary, rows), feature_rows(model.vocabulary, token_lists)
    assert [a.tolist() for a in by_index] == [b.tolist() for b in by_name]


def few_tokens_often_wrong(seed, short_share):
    """Out-of-fold scores as on Enron1's training sample: the margin grows with the length n,
    the evidence per token (margin / n) says how often a long document is right, and a share
    of documents of 1 to 7 tokens are wrong a third of the time whatever their evidence (what
    is left of a message whose text was an image or an attachment)."""
    rng = np.random.default_rng(seed)
    m = 3000
    short = rng.random(m) < short_share
    lengths = np.where(short, rng.integers(1, 8, m), np.exp(rng.uniform(np.log(16), np.log(3000), m)).astype(int))
    per_token = rng.uniform(0.2, 1.0, m)
    right = rng.random(m) < np.where(short, 0.65, 1 / (1 + np.exp(-8 * per_token)))
    rows = rng.integers(0, 2, m)
    jll = np.zeros((m, 2))
    jll[np.arange(m), np.where(right, rows, 1 - rows)] = lengths * per_token
    return jll, rows, lengths


def test_documents_of_a_few_tokens_no_longer_pull_the_length_exponent_to_0():
    """T·n^γ with T < 1 makes a short document surer than the raw model; where short ones are
    often wrong, the fit gave up growing with length (γ = 0, Enron1) and long documents'
    probabilities saturated at 1. The length floor m tempers them as documents of m tokens."""
    jll, rows, lengths = few_tokens_often_wrong(0, 0.1)
    assert fit_temperature(jll, rows, lengths)[1] < 0.05  # the cause, reproduced
    temperature, exponent, floor = fit_tempering(jll, rows, lengths)
    without_short = fit_temperature(*few_tokens_often_wrong(0, 0.0))
    assert floor >= 8 and exponent > 0.9 and temperature == pytest.approx(without_short[0], rel=0.1)
    wrong = jll.argmax(axis=1) != rows

    def surest_error(calibration):  # the largest log-odds a mistake is given
        scale = temperatures(calibration, len(jll), lengths)
        return float(np.max(np.abs(jll[wrong, 1] - jll[wrong, 0]) / scale[wrong]))

    plain = dict(zip(("temperature", "length_exponent"), fit_temperature(jll, rows, lengths)))
    floored = {"temperature": temperature, "length_exponent": exponent, "length_floor": floor}
    assert surest_error(floored) < surest_error(plain)  # its mistakes less sure


def test_a_sample_without_short_documents_keeps_no_floor():
    """m = 1 (no length_floor in the file: files of such corpora are those of before)."""
    jll, rows, lengths = few_tokens_often_wrong(1, 0.0)
    assert fit_tempering(jll, rows, lengths) == (*fit_temperature(jll, rows, lengths), 1)


@given(
    st.lists(st.integers(0, 5000), min_size=1, max_size=20),
    st.sampled_from([1, 2, 16, 64]),
    st.floats(0.0, 1.0),
    st.floats(0.01, 50.0),
)
def test_one_documents_temperature_is_the_arrays(lengths, floor, exponent, temperature):
    """The one-message path's T(x) (nbtext.stats.tempering) and the arrays' (formulas.temperatures)."""
    calibration = {
        "temperature": temperature,
        "length_exponent": exponent,
        **({"length_floor": floor} if floor > 1 else {}),
    }
    expected = temperatures(calibration, len(lengths), lengths)
    assert [document_temperature(calibration, n) for n in lengths] == pytest.approx(expected, rel=1e-12)


@given(st.integers(0, 2**32 - 1), st.floats(-12.0, 3.0))
def test_the_two_class_brier_score_of_the_margins_is_the_tables(seed, log_scale):
    """The floors are compared on the margins alone (brier_of_margins): the same score."""
    from nbtext.stats.fitting import brier_of_margins, brier_of_scaled

    rng = np.random.default_rng(seed)
    jll = rng.normal(size=(200, 2)) * rng.uniform(1, 300)
    rows = rng.integers(0, 2, 200)
    margins = ((jll[:, 1] - jll[:, 0]) * (2 * rows - 1))[:, None]
    assert brier_of_margins(margins, rows, log_scale) == pytest.approx(
        brier_of_scaled(jll, rows, log_scale), rel=1e-9, abs=1e-12
    )


def test_calibrating_gives_a_value_and_changes_no_model():
    """calibrate returns what a model's calibration becomes (Calibrated: the fit, the sample,
    its bound, the mode), and the model takes it whole (take_calibration): it wrote four
    attributes onto the model it was given."""
    from nbtext.classifier.model import Calibrated
    from nbtext.jobs.calibration import calibrate

    texts, labels = read_labelled(MAIL / "train")
    model = nbtext.train(texts, labels, **GENERAL)  # 78 documents: auto fits no temperature under 100
    before = (model.calibration, model.calibration_sample, model.sample_bound, model.sample_mode)
    assert before[0] is None and before[3] == "auto"
    again = calibrate(model, model.calibration_sample, model.sample_bound, "temperature")
    assert (model.calibration, model.calibration_sample, model.sample_bound, model.sample_mode) == before
    assert isinstance(again, Calibrated) and again.sample_mode == "temperature"
    assert again.calibration["method"] == "temperature" and again.calibration_sample[1:] == model.calibration_sample[1:]
    assert model.take_calibration(again).calibration is again.calibration
