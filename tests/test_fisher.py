"""--model fisher (nbtext.stats.fisher, nbtext.stats.event_models.Fisher): Robinson's f(w) and
Fisher's inverse chi-square combining. Checked against an independent implementation written
here with plain loops and scipy's chi-square, and its forms against each other: the batch, one
message without numpy, out of fold, online."""

import math
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import one_line_error, read_labelled, run
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

import nbtext
from nbtext.classifier import purescore
from nbtext.jobs.online import OnlineMultinomial
from nbtext.stats import fisher
from nbtext.stats.event_models import EVENT_MODELS
from nbtext.stats.out_of_fold import out_of_fold_jll

MAIL = Path(__file__).resolve().parent.parent / "corpora" / "mail"
FISHER = EVENT_MODELS["fisher"]


def spam_probability(model, documents):
    return model.predict_proba(documents)[:, model.classes.index("spam")]


# --- the chi-square tails --------------------------------------------------------------------------
GRID = [(n, m) for n in (1, 2, 3, 7, 20, 64, 149, 150) for m in (1e-9, 1e-3, 0.2, 1, 3, n / 2, n - 0.5, n, 2 * n, 300)]


def test_the_chi_square_tails_are_scipys():
    for n, m in GRID:
        log_q, log_p = fisher.log_chi_square_tails(n, m)
        assert log_q == pytest.approx(chi2.logsf(2 * m, 2 * n), rel=1e-12, abs=1e-12), (n, m)
        assert math.exp(log_q) == pytest.approx(chi2.sf(2 * m, 2 * n), rel=1e-11, abs=1e-300), (n, m)
        assert math.exp(log_p) == pytest.approx(chi2.cdf(2 * m, 2 * n), rel=1e-11, abs=1e-300), (n, m)


def test_the_batch_tails_are_the_pure_ones():
    n, m = np.array([g[0] for g in GRID]), np.array([g[1] for g in GRID])
    log_q, log_p = fisher.log_chi_square_tails_of(n, m, block=7)  # blocks of uneven widths
    for i, (ni, mi) in enumerate(GRID):
        q, p = fisher.log_chi_square_tails(ni, mi)
        assert log_q[i] == pytest.approx(q, rel=1e-12, abs=1e-12)
        assert log_p[i] == pytest.approx(p, rel=1e-12, abs=1e-12)


def test_far_messages_keep_their_rank():
    """I itself rounds to 1 for both, yet ln(1 − I) still orders them (the ROC ranks by it)."""
    surer = fisher.log_spam_probability([(j, 0.999, 0.001) for j in range(150)])
    sure = fisher.log_spam_probability([(j, 0.99, 0.01) for j in range(150)])
    assert math.exp(surer[0]) == math.exp(sure[0]) == 1.0
    assert surer[1] < sure[1] < -300 and math.isfinite(surer[1])


# --- an independent implementation -----------------------------------------------------------------
def oracle(train_tokens, labels, query_tokens, s):
    """The probability of spam of each query, by the formulas written out with loops and scipy."""
    n_spam = sum(label == "spam" for label in labels)
    n_ham = len(labels) - n_spam
    b, g = {}, {}
    for tokens, label in zip(train_tokens, labels):
        for token in set(tokens):
            table = b if label == "spam" else g
            table[token] = table.get(token, 0) + 1
    result = []
    for tokens in query_tokens:
        scored = []
        for token in sorted(set(tokens)):
            bw, gw = b.get(token, 0), g.get(token, 0)
            if bw + gw == 0:
                continue  # never seen: f = x, never deviant
            p = (bw / n_spam) / (bw / n_spam + gw / n_ham)
            f = (s * 0.5 + (bw + gw) * p) / (s + bw + gw)
            if abs(f - 0.5) >= 0.1:
                scored.append((abs(f - 0.5), token, f))
        scored.sort(key=lambda item: (-item[0], item[1]))
        used = [f for _, _, f in scored[:150]]
        if not used:
            result.append(0.5)
            continue
        H = chi2.sf(-2 * sum(math.log(f) for f in used), 2 * len(used))
        S = chi2.sf(-2 * sum(math.log(1 - f) for f in used), 2 * len(used))
        result.append((1 + H - S) / 2)
    return result


@pytest.mark.parametrize("s", [0.45, 1.0, 3.0])
def test_the_model_is_the_formulas_written_out(s):
    texts, labels = read_labelled(MAIL / "train")
    model = nbtext.train(texts, labels, model="fisher", min_count=1, alpha=s, calibration="none")
    queries, _ = read_labelled(MAIL / "test")
    queries += [b"free lunch", b"", b"unseen words only"]
    tokens = [model.tokenize(t) for t in texts]
    expected = oracle(tokens, labels, [model.tokenize(q) for q in queries], s)
    got = spam_probability(model, queries)
    assert 0 < sum(0.01 < p < 0.99 for p in expected)  # some not certain: the test can tell
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_at_most_150_tokens_ties_in_token_order():
    """A message of 300 tokens each as deviant as the next: the first 150 in token order are used."""
    spam_words = [f"s{i:03d}" for i in range(300)]
    texts = [" ".join(spam_words), "lunch meeting", "noon report"]
    labels = ["spam", "ham", "ham"]
    model = nbtext.train(texts, labels, model="fisher", min_count=1, calibration="none")
    ids, indptr = model.vocabulary.ids([model.tokenize(" ".join(reversed(spam_words)))])
    columns, terms = FISHER.explanation_terms(model, ids, indptr, model.classes.index("spam"), 0)
    assert sorted(model.feature_names[c] for c in columns) == spam_words[:150]
    assert len(set(terms.tolist())) == 1


# --- its forms agree -------------------------------------------------------------------------------
@pytest.mark.parametrize("calibration", ["none", "temperature"])
def test_one_message_is_scored_as_the_batch_scores_it(tmp_path, calibration):
    """The real messages of corpora/mail, each by the pure path (no numpy) and by the model."""
    texts, labels = read_labelled(MAIL / "train")
    model = nbtext.train(texts * 2, labels * 2, model="fisher", calibration=calibration)
    model.save(tmp_path / "m.model")
    pure = purescore.of_file((tmp_path / "m.model").read_bytes(), "m.model")
    assert type(pure.form) is FISHER.one_document
    loaded = nbtext.load(tmp_path / "m.model")
    queries = read_labelled(MAIL / "test")[0] + texts
    expected = loaded.predict_proba(queries)
    assert 0 < sum(0.001 < row[0] < 0.999 for row in expected)
    for query, row in zip(queries, expected):
        got = purescore.probabilities(pure, query)
        assert got == pytest.approx(row.tolist(), rel=0, abs=1e-9)
        _, explained = purescore.explained(pure, query, 5)
        reasons = loaded.explain(loaded.tokenize(query), np.log(row), 5)
        assert [token for token, _ in explained] == [token for token, _ in reasons]
        assert [term for _, term in explained] == pytest.approx([term for _, term in reasons], rel=1e-9)


def test_a_fold_is_scored_by_the_model_trained_without_it():
    texts, labels = read_labelled(MAIL / "train")
    model = nbtext.train(texts, labels, model="fisher", min_count=1, alpha=0.5, calibration="none")
    folds = [i % 3 for i in range(len(texts))]
    jll, _ = out_of_fold_jll(model, [model.tokenize(t) for t in texts], labels, folds)
    for fold in range(3):
        rest = [i for i in range(len(texts)) if folds[i] != fold]
        held = [i for i in range(len(texts)) if folds[i] == fold]
        without = nbtext.train([texts[i] for i in rest], [labels[i] for i in rest], **dict(model_options(0.5)))
        expected = without.joint_log_likelihood([texts[i] for i in held])
        np.testing.assert_allclose(jll[held], expected, rtol=1e-12, atol=1e-12)


def model_options(alpha):
    return {"model": "fisher", "min_count": 1, "alpha": alpha, "calibration": "none"}


def test_each_online_step_is_the_model_of_the_messages_learned():
    texts, labels = read_labelled(MAIL / "train")
    pairs = list(zip(texts, labels))
    random.Random(1).shuffle(pairs)
    model = nbtext.train(["aa bb", "cc dd"], ["ham", "spam"], **model_options(1.0))  # (its tokenizer)
    online = OnlineMultinomial(["ham", "spam"], 1.0, 1, False, form=FISHER.online, presence=True)
    queries = read_labelled(MAIL / "test")[0]
    for n, (text, label) in enumerate(pairs, 1):
        online.learn(model.tokenize(text), label)
        if n in (10, len(pairs)):
            trained = nbtext.train([t for t, _ in pairs[:n]], [lab for _, lab in pairs[:n]], **model_options(1.0))
            for query, row in zip(queries, trained.predict_proba(queries)):
                assert online.posterior(model.tokenize(query))[0] == pytest.approx(row.tolist(), rel=0, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    corpus=st.lists(
        st.tuples(
            st.lists(st.sampled_from(["free", "prize", "lunch", "noon", "now", "the"]), max_size=8), st.booleans()
        ),
        min_size=2,
        max_size=20,
    ),
    strength=st.sampled_from([0.01, 0.45, 1.0, 10.0]),
)
def test_generated_corpora_equal_the_formulas(corpus, strength):
    texts = [" ".join(words) for words, _ in corpus]
    labels = ["spam" if is_spam else "ham" for _, is_spam in corpus]
    if len(set(labels)) < 2 or not any(texts):
        return
    model = nbtext.train(texts, labels, **model_options(strength))
    tokens = [model.tokenize(t) for t in texts]
    queries = texts + ["free lunch now", ""]
    expected = oracle(tokens, labels, [model.tokenize(q) for q in queries], strength)
    np.testing.assert_allclose(spam_probability(model, queries), expected, rtol=0, atol=1e-12)


# --- the command line ------------------------------------------------------------------------------
def test_train_predict_eval_info_on_the_command_line(tmp_path):
    path = tmp_path / "f.model"
    result = run("train", "--model", "fisher", "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 0, result.stderr
    test_spam = sorted((MAIL / "test" / "spam").iterdir())[0]
    predicted = run("predict", "-m", path, "--proba", test_spam)
    assert predicted.exit_code == 0 and predicted.stdout.split("\t")[1] == "spam", predicted.stderr
    evaluated = run("eval", "-m", path, MAIL / "test" / "spam", MAIL / "test" / "ham")
    assert evaluated.exit_code == 0 and "accuracy" in evaluated.stdout, evaluated.stderr
    info = run("info", "-m", path, "--top", "3")
    assert info.exit_code == 0 and "fisher" in info.stdout, info.stderr


def test_three_classes_are_refused_in_one_line(tmp_path):
    for name, text in (("spam", "free prize"), ("ham", "lunch noon"), ("eggs", "boiled eggs")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "1").write_text(text + " " + text)
    result = run(
        "train",
        "--model",
        "fisher",
        "--min-count",
        "1",
        "-o",
        tmp_path / "m",
        *(tmp_path / n for n in ("spam", "ham", "eggs")),
    )
    one_line_error(result, "takes 2 classes at most, got 3")
    folders = [tmp_path / n for n in ("spam", "ham", "eggs")]
    one_line_error(
        run("eval", "--online", "--model", "fisher", "--min-count", "1", *folders), "takes 2 classes at most"
    )


@pytest.mark.parametrize("option", [("--unknown", "unk"), ("--features", "counts"), ("--prior", "empirical")])
def test_what_it_does_not_read_is_refused(tmp_path, option):
    result = run(
        "train", "--model", "fisher", *option, "-o", tmp_path / "m", MAIL / "train" / "spam", MAIL / "train" / "ham"
    )
    assert result.exit_code != 0 and "Traceback" not in result.stderr and result.stderr.count("\n") == 1


def test_eval_online_runs_the_fisher_form(tmp_path):
    """eval --online --model fisher scores each message by the Fisher combining of the messages
    learned before it (each step's equality: test_each_online_step_is_the_model_of_the_messages_learned);
    its run is not the presence multinomial's."""
    import json

    folders = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    args = ("eval", "--online", "--format", "json", "--learn", "all", "--min-count", "1")
    result = run(*args, "--model", "fisher", *folders)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["learned"] == report["n"] == 78 and 0 <= report["roca_percent"] < 50
    presence = json.loads(run(*args, "--features", "binary", "--unknown", "ignore", *folders).stdout)
    assert presence["roca_percent"] != report["roca_percent"]


@pytest.mark.parametrize("command", ["predict", "filter"])
def test_one_message_of_a_fisher_model_imports_no_numpy(tmp_path, command):
    """predict and filter of one message (a mail pipeline's start-up) score a fisher model
    without numpy, scipy or click, as they do the multinomial's."""
    import subprocess
    import sys

    path = tmp_path / "f.model"
    assert run("train", "--model", "fisher", "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    code = (
        "import sys; from nbtext.cli.oneshot import fast; sys.argv = ['nbtext']; "
        f"fast([{command!r}, '-m', {str(path)!r}]); "
        "print(sorted(m for m in ('numpy', 'scipy', 'click') if m in sys.modules), file=sys.stderr)"
    )
    message = b"From: a@example.com\nSubject: prize\n\n" + sorted((MAIL / "test" / "spam").iterdir())[0].read_bytes()
    result = subprocess.run([sys.executable, "-c", code], input=message, capture_output=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.decode().strip().splitlines()[-1] == "[]"
    assert b"spam" in result.stdout


def test_eval_on_workers(tmp_path):
    """-j 2 scores on worker processes, what the model derives once derived first by its event
    model (it asked every model for the linear models' form: an AttributeError here)."""
    path = tmp_path / "f.model"
    assert run("train", "--model", "fisher", "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    one = run("eval", "-m", path, "--format", "json", MAIL / "test" / "spam", MAIL / "test" / "ham")
    workers = run("eval", "-j", "2", "-m", path, "--format", "json", MAIL / "test" / "spam", MAIL / "test" / "ham")
    assert workers.exit_code == 0, workers.stderr
    assert workers.stdout == one.stdout
