"""Insight: eval's log-loss and ROC AUC, nbtext info (--top), predict --explain."""

import json

import numpy as np
import pytest
from sklearn.metrics import log_loss, roc_auc_score

import nbtext
from nbtext.stats.metrics import roc_auc

from conftest import ROOT, evaluated_on_mail, read_labelled, run

DEMO = ROOT / "corpora" / "mail"


@pytest.fixture(scope="module")
def demo_model(general_demo_model):
    """conftest's demo model by the general defaults: these tests are not about a spam filter's."""
    return general_demo_model


def test_log_loss_and_roc_auc_match_sklearn(demo_model):
    report = json.loads(
        run("eval", "-m", demo_model, "--format", "json", DEMO / "test" / "spam", DEMO / "test" / "ham").stdout
    )
    model = nbtext.load(demo_model)
    texts, labels = read_labelled(DEMO / "test")
    proba = model.predict_proba(texts)
    assert report["log_loss"] == pytest.approx(log_loss(labels, proba, labels=model.classes), rel=1e-9)
    assert report["roc_auc"] == pytest.approx(roc_auc_score([l == "spam" for l in labels], proba[:, 1]), rel=1e-12)


def test_roc_auc_with_ties_counts_one_half():
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == 0.75
    assert roc_auc([1, 1, 1, 1], [False, True, False, True]) == 0.5
    scores = np.random.default_rng(0).integers(0, 5, 200).tolist()
    positives = (np.random.default_rng(1).random(200) < 0.4).tolist()
    assert roc_auc(scores, positives) == pytest.approx(roc_auc_score(positives, scores), rel=1e-12)


def test_info_reports_counts_and_the_most_indicative_tokens(demo_model):
    result = run("info", "-m", demo_model, "--top", "3", "--format", "json")
    summary = json.loads(result.stdout)
    model = nbtext.load(demo_model)
    assert summary["documents"] == 78 and summary["classes"]["spam"]["documents"] == 39
    assert summary["classes"]["ham"]["count"] == model.token_counts.dense[0].sum()
    assert summary["vocabulary"] == model.vocabulary.n_kept and summary["format_version"] == 6
    unk = model.feature_sums[:, -1].sum() / model.token_counts.dense.sum()
    assert summary["unk_share"] == pytest.approx(unk)
    for label, top in summary["top"].items():
        k = model.classes.index(label)
        other = 1 - k
        theta = np.exp(model.feature_log_prob)
        for token, score in top:
            j = model.feature_names.index(token)
            # two classes: "all the other classes" is the other class
            assert score == pytest.approx(np.log(theta[k, j]) - np.log(theta[other, j]))
        scores = [s for _, s in top]
        assert scores == sorted(scores, reverse=True) and len(top) == 3
    text = run("info", "-m", demo_model, "--top", "3")
    assert "classes" in text.stdout and "top spam:" in text.stdout
    assert "only 39 training documents" not in text.stderr  # 39 >= 20: no warning


def test_info_warns_about_small_classes(tmp_path):
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        (tmp_path / label / "1").write_text(f"{label}{label} words")
    run("train", "--min-count", "1", "-o", tmp_path / "m", tmp_path / "a", tmp_path / "b")
    assert "class 'a' has only 1 training document" in run("info", "-m", tmp_path / "m").stderr


def test_explain_gives_log_odds_contributions(demo_model):
    doc = "free prize free money, click now for lunch"
    result = run("predict", "-m", demo_model, "--explain", "3", "--format", "json", "-", input=doc)
    record = json.loads(result.stdout)
    model = nbtext.load(demo_model)
    theta = model.feature_log_prob
    win, lose = model.classes.index(record["label"]), 1 - model.classes.index(record["label"])
    counts = {t: model.tokenize(doc).count(t) for t in set(model.tokenize(doc))}
    expected = sorted(
        (
            (t, n * (theta[win, model.feature_names.index(t)] - theta[lose, model.feature_names.index(t)]))
            for t, n in counts.items()
            if t in model.feature_names
        ),
        key=lambda pair: (-round(pair[1], 9), model.feature_names.index(pair[0])),
    )[:3]  # ties: column order
    assert [t for t, _ in record["explanation"]] == [t for t, _ in expected]
    assert [v for _, v in record["explanation"]] == pytest.approx([v for _, v in expected])
    tsv = run("predict", "-m", demo_model, "--explain", "3", "-", input=doc).stdout.rstrip("\n").split("\t")
    assert tsv[3].split(" ")[0] == f"{expected[0][0]}:{expected[0][1]:+.2f}"


def test_indicative_tokens_are_seen_in_their_class_and_never_unk():
    """A class's top tokens occur in it, and UNK is no token: class c holds only pruned
    tokens (UNK), so it has no indicative token at all."""
    docs = ["apple apple banana", "apple cherry zzz1", "date date fig", "fig grape zzz2", "kiwi zzz3 zzz4"]
    clf = nbtext.train(docs, ["a", "a", "b", "b", "c"], min_count=2, alpha=0.5)
    top = clf.indicative(10)
    assert top["c"] == [] and clf.feature_counts[2, -1] > 0
    for k, label in enumerate(clf.classes[:2]):
        assert top[label] and "<UNK>" not in dict(top[label])
        assert all(clf.feature_counts[k, clf.feature_names.index(t)] > 0 for t, _ in top[label])


def test_explain_with_three_classes_compares_winner_and_runner_up():
    docs = ["apple apple banana", "apple cherry", "date date fig", "fig grape date", "kiwi lemon", "lemon lemon"]
    clf = nbtext.train(docs, ["a", "a", "b", "b", "c", "c"], min_count=1, unknown="ignore")
    doc = "apple lemon lemon date"
    log_proba = clf.predict_log_proba([doc])[0]
    order = np.argsort(log_proba)
    winner, runner_up = order[-1], order[-2]
    W = clf.feature_log_prob
    expected = {
        t: doc.split().count(t) * (W[winner, clf.feature_names.index(t)] - W[runner_up, clf.feature_names.index(t)])
        for t in set(doc.split())
    }
    explanation = clf.explain(clf.tokenize(doc), log_proba, 4)
    assert dict(explanation) == pytest.approx(expected)
    assert [v for _, v in explanation] == sorted(expected.values(), reverse=True)


def test_expected_calibration_error_by_hand():
    from nbtext.stats.metrics import expected_calibration_error

    # bins [0.5, 0.6): 0.55 right, 0.55 wrong -> |0.5 - 0.55| = 0.05, weight 2/5
    # bin [0.9, 1.0]: 0.95, 1.0, 0.92 all right -> |1 - 0.9567| = 0.0433, weight 3/5
    ece = expected_calibration_error([0.55, 0.55, 0.95, 1.0, 0.92], [True, False, True, True, True])
    assert ece == pytest.approx(2 / 5 * 0.05 + 3 / 5 * (1 - (0.95 + 1.0 + 0.92) / 3))


def test_eval_reports_ece_and_the_errors_the_unsure_band_catches(demo_model):
    from nbtext.stats.metrics import expected_calibration_error

    report = evaluated_on_mail(demo_model, "--unsure-below", "0.9")
    model = nbtext.load(demo_model)
    texts, labels = read_labelled(DEMO / "test")
    proba = model.predict_proba(texts)
    best = [model.classes[k] for k in proba.argmax(axis=1)]
    right = [b == t for b, t in zip(best, labels)]
    assert report["ece"] == pytest.approx(expected_calibration_error(proba.max(axis=1).tolist(), right))
    assert report["errors"] == right.count(False)
    assert report["unsure_errors"] == sum(1 for p, r in zip(proba.max(axis=1), right) if p < 0.9 and not r)
    table = run("eval", "-m", demo_model, "--unsure-below", "0.9", DEMO / "test" / "spam", DEMO / "test" / "ham")
    assert f"ECE\t{report['ece']:.4f}" in table.stdout
    wrong, unsure = report["errors"], report["unsure_errors"]
    assert f"most probable wrong\t{wrong} ({unsure} left unsure, {wrong - unsure} decided)" in table.stdout


def explained_as_filtered(tmp_path, train_options, message):
    """predict --format json --explain 20's row of `message` by a model of the demo corpus
    trained with `train_options` (tmp_path/m), after checking that filter gives the message
    the row's class and spam probability."""
    trained = run("train", *train_options, "-o", tmp_path / "m", DEMO / "train" / "spam", DEMO / "train" / "ham")
    assert trained.exit_code == 0, trained.stderr
    (tmp_path / "msg.eml").write_bytes(message)
    row = json.loads(
        run("predict", "-m", tmp_path / "m", "--format", "json", "--explain", "20", tmp_path / "msg.eml").stdout
    )
    filtered = run("filter", "-m", tmp_path / "m", input=message).stdout
    assert f"X-Nbtext-Class: {row['label']}\nX-Nbtext-Probability: {row['probabilities']['spam']:.4f}" in filtered
    return row


def test_info_and_explain_say_the_mail_lexers_tokens(tmp_path):
    """info names a lexer other than words (a words model's text is as before: the golden
    files); filter scores a message as predict does, --explain naming the lexer's tokens."""
    message = b"Subject: FREE!! money\nFrom: x@shop.example\n\nBuy now at example.com $20 now\n"
    row = explained_as_filtered(tmp_path, ["--lexer", "mail"], message)
    assert "tokenizer      lexer mail, input auto," in run("info", "-m", tmp_path / "m").stdout
    tokens = nbtext.load(tmp_path / "m").tokenize(message)
    assert "Buy" in tokens and "example.com" in tokens and "subject:FREE!!" in tokens
    assert row["explanation"] and {token for token, _ in row["explanation"]} <= set(tokens)


def test_a_model_of_character_ngrams_reloads_and_says_its_tokens(tmp_path):
    """train --char-ngrams stores them in the model's tokenizer: info says them, predict,
    --explain and filter score a message by them as the model loaded in Python does."""
    message = b"Subject: FREE money\nFrom: x@shop.example\n\nBuy now\x00 at example.com now\n"
    row = explained_as_filtered(tmp_path, ["--char-ngrams", "3"], message)
    assert ", character 3-grams of the first 3000 bytes" in run("info", "-m", tmp_path / "m").stdout
    model = nbtext.load(tmp_path / "m")
    assert row["probabilities"]["spam"] == pytest.approx(model.predict_proba([message])[0][model.classes.index("spam")])
    tokens = model.tokenize(message)
    assert "«Buy»" in tokens and "«w  »" in tokens and "buy" in tokens
    assert row["explanation"] and {token for token, _ in row["explanation"]} <= set(tokens)


@pytest.mark.parametrize("calibrated", [False, True], ids=["uncalibrated", "calibrated"])
def test_info_says_a_temperature_is_fitted_at_the_fold_only_of_a_calibrated_model(demo_model, calibrated):
    """A model's pending changes are folded in at the COMPACT_AFTER-th: info said the
    temperature would then be fitted again of a model that has none (--calibration none, or
    too few documents to fit one)."""
    from nbtext.report.text import model_summary
    from nbtext.stats.event_models import EVENT_MODELS

    model = nbtext.load(demo_model)
    summary = {**model.summary(), "pending": 3, "pending_fold": 50}
    summary["calibration"] = (
        {"method": "temperature", "temperature": 2.0, "length_exponent": 0.0, "documents": 60} if calibrated else None
    )
    lines, _ = model_summary(summary, "m.model", EVENT_MODELS[model.event_model])
    (line,) = [line for line in lines if line.startswith("pending")]
    assert line.endswith("folds them into it, the temperature then fitted again") == calibrated, line
    assert line.endswith("folds them into it") != calibrated
