"""train --max-evidence K (nbtext.stats.evidence): a document is scored on the K features that
favour each class most. Every path that scores computes that one rule: checked against the
rule written out here by brute force, and against the statistics it is made of."""

import json
import math
import random
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nbtext
from nbtext.classifier.settings import make_settings
from nbtext.errors import NbtextError
from nbtext.features.matrix import one_hot
from nbtext.modelfile import container
from nbtext.modelfile.schema import check_settings_record
from nbtext.stats import evidence
from nbtext.stats.evidence import token_key, used_cells_of, used_features

from conftest import ROOT, one_line_error, run

MAIL = ROOT / "corpora" / "mail"
# the general defaults: a spam/ham corpus would choose a spam filter's (its own cap, --learn tone, pairs of words)
GENERAL = {"preset": "general"}
GENERAL_ARGS = ["--preset", "general"]  # (the command line's)


def chosen_by_definition(keys, terms, cap):
    """The rule as docs/math.md writes it: for each class k, the features of lead
    ℓ_kj = t_kj − max_{l≠k} t_lj >= 0, the `cap` largest (equals by key); their union."""
    used = set()
    for k in range(len(terms[0]) if terms else 0):
        leads = [(t[k] - max(t[l] for l in range(len(t)) if l != k), i) for i, t in enumerate(terms)]
        leading = sorted(((lead, i) for lead, i in leads if lead >= 0), key=lambda item: (-item[0], keys[item[1]]))
        used.update(i for _, i in leading[:cap])
    return sorted(used)


VALUES = st.sampled_from([-0.5, -1.0, -2.0, -3.25, -7.0])  # few values: many equal terms and leads
DOCUMENT_TERMS = st.integers(2, 4).flatmap(
    lambda n_classes: st.lists(
        st.lists(st.lists(VALUES, min_size=n_classes, max_size=n_classes), max_size=12), max_size=5
    )
)


@settings(max_examples=300, deadline=None)
@given(documents=DOCUMENT_TERMS, cap=st.integers(1, 5), block=st.integers(1, 40))
def test_both_forms_choose_what_the_definition_chooses(documents, cap, block):
    """used_features (one document, pure Python) and used_cells_of (a batch, numpy, a run of
    whole documents at a time: document_blocks) choose the definition's features, equals in
    key order."""
    documents = [d for d in documents if d]
    if not documents:
        return
    n_classes = len(documents[0][0])
    # keys: the columns, in a random order per document (the one-document form orders by token)
    rng = random.Random(len(documents) * 7 + cap)
    expected, cells = [], []
    for number, terms in enumerate(documents):
        columns = sorted(rng.sample(range(100), len(terms)))
        expected.append(chosen_by_definition(columns, terms, cap))
        assert used_features(columns.__getitem__, terms, cap) == expected[-1]
        cells += [(number, column, t) for column, t in zip(columns, terms)]
    document = np.array([c[0] for c in cells])
    column = np.array([c[1] for c in cells])
    terms = np.array([c[2] for c in cells], dtype=np.float64)
    saved, used = evidence._CELLS_AT_ONCE, np.zeros(len(document), dtype=bool)
    try:
        evidence._CELLS_AT_ONCE = block * n_classes  # runs of about `block` cells, as a batch is chosen
        for start, end in evidence.document_blocks(document, n_classes):
            assert start == 0 or document[start] != document[start - 1]  # (whole documents)
            used[start:end] = used_cells_of(document[start:end], column[start:end], terms[start:end], cap)
    finally:
        evidence._CELLS_AT_ONCE = saved
    first = 0
    for number, terms in enumerate(documents):
        mine = np.flatnonzero(used[first : first + len(terms)]).tolist()
        assert mine == expected[number]
        first += len(terms)


def test_of_two_classes_it_is_the_k_features_pointing_each_way_most():
    # spam-ward leads 3, 2, 1 (columns 0, 1, 2), ham-ward 4, 0.5 (columns 3, 4), a tie at 0 (column 5)
    terms = [[-1.0, -4.0], [-2.0, -4.0], [-3.0, -4.0], [-5.0, -1.0], [-2.5, -2.0], [-2.0, -2.0]]
    assert used_features(lambda i: i, terms, 1) == [0, 3]
    assert used_features(lambda i: i, terms, 2) == [0, 1, 3, 4]
    assert used_features(lambda i: i, terms, 3) == [0, 1, 2, 3, 4, 5]  # (equal terms: where a side has room)
    assert used_features(lambda i: i, terms, 2) == [0, 1, 3, 4]  # (not where both are full)


def test_ties_go_in_token_order_with_unk_last():
    terms = [[-1.0, -2.0]] * 3
    keys = [token_key("zebra"), token_key(None), token_key("apple")]
    assert used_features(keys.__getitem__, terms, 1) == [2]
    assert used_features(keys.__getitem__, terms, 2) == [0, 2]


WORDS = ["free", "prize", "lunch", "noon", "click", "meeting", "money", "report", "now", "the", "win", "cash"]
DOCUMENT = st.lists(st.sampled_from(WORDS + ["unseen"]), min_size=0, max_size=25).map(" ".join)


def trained(corpus, **options):
    texts, labels = zip(*corpus)
    return nbtext.train(list(texts), list(labels), calibration="none", **GENERAL, **options)


def by_definition(model, document, log_theta=None, prior=None):
    """jll_k = log P(k) + Σ over the chosen features of x_j log θ_kj, the sums exact: from the
    model's log θ (or `log_theta`, a fold's), its vocabulary and chosen_by_definition."""
    log_theta = model.feature_log_prob if log_theta is None else log_theta
    prior = model.prior_term if prior is None else prior
    ids = model.vocabulary.ids([model.tokenize(document)])[0]
    columns, counts = np.unique(ids, return_counts=True)
    x = np.ones(len(columns)) if model.binary else counts.astype(float)
    terms = [[x[i] * log_theta[k, c] for k in range(len(model.classes))] for i, c in enumerate(columns)]
    chosen = chosen_by_definition(list(columns), terms, model.settings["max_evidence"])
    return np.array([prior[k] + math.fsum(terms[i][k] for i in chosen) for k in range(len(model.classes))]), [
        int(columns[i]) for i in chosen
    ]


CORPUS = st.lists(st.tuples(DOCUMENT, st.sampled_from(["spam", "ham", "eggs"])), min_size=3, max_size=25)
OPTIONS = st.fixed_dictionaries(
    {
        "max_evidence": st.integers(1, 4),
        "features": st.sampled_from(["counts", "binary"]),
        "min_count": st.integers(1, 2),
        "unknown": st.sampled_from(["unk", "ignore"]),
        "ngrams": st.integers(1, 2),
        "alpha": st.sampled_from([0.1, 1.0]),
    }
)


@settings(max_examples=60, deadline=None)
@given(corpus=CORPUS, options=OPTIONS, queries=st.lists(DOCUMENT, min_size=1, max_size=4))
def test_a_capped_model_scores_by_the_definition_on_every_path(corpus, options, queries):
    """A batch, one document alone (its bits those of its row in the batch) and --explain's
    features are the definition's; a cap no document reaches scores as no cap (every
    feature leads some class)."""
    if len({label for _, label in corpus}) < 2:
        return
    try:
        model = trained(corpus, **options)
    except NbtextError:
        return  # (every token pruned)
    batch = model.joint_log_likelihood(queries)
    for row, document in zip(batch, queries):
        expected, chosen = by_definition(model, document)
        np.testing.assert_allclose(row, expected, rtol=1e-12, atol=1e-9)
        assert (model.joint_log_likelihood([document])[0] == row).all()  # alone: the bits of the batch
        ids, indptr = model.vocabulary.ids([model.tokenize(document)])
        columns, _ = model.event.explanation_terms(model, ids, indptr, 0, 1)
        assert sorted(columns.tolist()) == chosen
    uncapped = trained(corpus, **{**options, "max_evidence": None})
    wide = trained(corpus, **{**options, "max_evidence": 100})
    np.testing.assert_allclose(wide.joint_log_likelihood(queries), uncapped.joint_log_likelihood(queries), atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(corpus=CORPUS, options=OPTIONS, held=st.sets(st.integers(0, 24), min_size=1))
def test_a_fold_view_scores_its_documents_by_the_definition_under_the_folds_statistics(corpus, options, held):
    """What calibration and a budget read (out-of-fold jll): each held-out document by the
    rule, under the statistics without the fold's documents (Statistics.without)."""
    from nbtext.stats.out_of_fold import out_of_fold_jll

    if len({label for _, label in corpus}) < 2:
        return
    try:
        model = trained(corpus, **options)
    except NbtextError:
        return
    texts, labels = [t for t, _ in corpus], [label for _, label in corpus]
    folds = np.array([1 if i in held else 0 for i in range(len(texts))])
    jll, _ = out_of_fold_jll(model, [model.tokenize(t) for t in texts], labels, folds)
    X = model.feature_values(*model.vocabulary.ids([model.tokenize(t) for t in texts]))
    rows = np.array([model.classes.index(label) for label in labels])
    for fold in (0, 1):
        inside = np.flatnonzero(folds == fold)
        if not len(inside):
            continue
        stats = model.statistics.without(one_hot(rows[inside], len(model.classes)), X[inside])
        log_theta, prior = model.event.log_theta(stats), model.event.prior_term(stats)
        for i in inside:
            np.testing.assert_allclose(jll[i], by_definition(model, texts[i], log_theta, prior)[0], atol=1e-9)


def test_the_tone_pass_and_an_online_run_score_under_the_cap():
    """The online protocol's form (the TONE pass, eval --online) takes the model's cap: a
    message of many weak spam words and one strong ham word is ham under a cap of 1 and spam
    without it."""
    from nbtext.jobs.online import OnlineMultinomial

    corpus = [("win cash prize money free click", "spam")] * 3 + [("meeting", "ham")] * 3 + [("report", "ham")]
    for cap, verdict in ((None, "spam"), (1, "ham")):
        online = OnlineMultinomial(["ham", "spam"], 1.0, 1, True, presence=True, max_evidence=cap)
        for text, label in corpus:
            online.learn(text.split(), label)
        probabilities, _ = online.posterior("win cash prize money free click meeting meeting".split())
        assert ["ham", "spam"][int(np.argmax(probabilities))] == verdict
        model = trained(corpus, features="binary", min_count=1, alpha=1.0, max_evidence=cap)
        np.testing.assert_allclose(
            np.exp(model.predict_log_proba(["win cash prize money free click meeting meeting"]))[0],
            probabilities,
            rtol=1e-9,
        )


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    folder = tmp_path_factory.mktemp("capped")
    path = folder / "capped.model"
    result = run("train", "--max-evidence", "5", "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 0, result.stderr
    return path


def test_info_says_it_and_the_file_is_of_a_format_that_holds_it(capped, tmp_path):
    """A build that reads up to format 3 would ignore --max-evidence: the file says a newer
    format (4 without token starts, 6 with them: tests/test_modelfile.py), which it refuses."""
    said = run("info", "-m", capped)
    assert "features that favour each class most (--max-evidence 5)" in said.stdout
    header = container.split(capped.read_bytes(), "capped")[0]
    assert struct.unpack_from("<I", capped.read_bytes(), len(container.MAGIC))[0] == 6
    words_only = {**header["settings"], "tokenizer": {**header["settings"]["tokenizer"]}}
    del words_only["tokenizer"]["char_ngrams"], words_only["tokenizer"]["char_bytes"]  # (the spam preset's: format 5)
    assert container.written_version(words_only, ["vocabulary"]) == 4


@pytest.mark.parametrize(
    "options, says",
    [
        (["--max-evidence", "0"], "--max-evidence"),
        (["--max-evidence", "x"], "--max-evidence"),
        (["--max-evidence", str(2**31)], "--max-evidence"),
        (["--model", "bernoulli", "--max-evidence", "3"], "--max-evidence does nothing here"),
        (["--model", "fisher", "--max-evidence", "3"], "--max-evidence does nothing here"),
        (["--features", "tfidf", "--max-evidence", "3"], "--max-evidence does nothing here"),
    ],
)
def test_train_refuses_what_it_cannot_score_in_one_line(tmp_path, options, says):
    one_line_error(run("train", *options, "-o", tmp_path / "m", MAIL / "train" / "spam", MAIL / "train" / "ham"), says)


def test_update_keeps_it_and_merge_refuses_another(capped, tmp_path):
    one_line_error(
        run("train", "--update", "--max-evidence", "7", "-m", capped, f"spam={MAIL / 'test' / 'spam'}"),
        "--update keeps the model's own settings",
    )
    other = tmp_path / "other.model"
    assert (
        run("train", "--max-evidence", "7", "-o", other, MAIL / "test" / "spam", MAIL / "test" / "ham").exit_code == 0
    )
    one_line_error(run("merge", "-o", tmp_path / "m", capped, other), "max_evidence setting differs (5 and 7)")


@settings(max_examples=60, deadline=None)
@given(
    value=st.one_of(
        st.integers(-2, 2**31),
        st.booleans(),
        st.floats(allow_nan=True),
        st.text(max_size=3),
        st.none(),
        st.lists(st.integers(1, 3), max_size=2),
    ),
    model=st.sampled_from(["multinomial", "bernoulli", "fisher"]),
    features=st.sampled_from([None, "binary", "tfidf"]),
)
def test_the_model_file_validator_takes_a_stored_value_only_as_train_writes_it(value, model, features):
    if model != "multinomial":
        features = None
    options = {"model": model, "features": features, "min_count": 1, "alpha": 1.0}
    if features == "tfidf":
        options["unknown"] = "ignore"
    good = make_settings(**options).stored()
    valid = (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 1 <= value <= 2**30
        and model == "multinomial"
        and features != "tfidf"
    )
    if valid:
        assert check_settings_record({**good, "max_evidence": value})["max_evidence"] == value
    else:
        with pytest.raises(ValueError, match="bad max_evidence"):
            check_settings_record({**good, "max_evidence": value})


@pytest.mark.parametrize("value", ["0", "2.5", "true", '"5"', str(2**40)])
def test_a_model_file_with_a_bad_one_is_one_line_from_predict_and_filter(capped, tmp_path, value):
    import subprocess
    import sys

    from test_hostile_models import assemble, parts

    header, payload = parts(capped.read_bytes())
    header["settings"]["max_evidence"] = json.loads(value)
    bad = tmp_path / "bad.model"
    bad.write_bytes(assemble(header, payload))
    one_line_error(run("predict", "-m", bad, MAIL / "test"), "bad max_evidence")
    message = b"From: a@b.c\nSubject: note\n\nfree money now\n"
    done = subprocess.run(
        [Path(sys.executable).with_name("nbtext"), "filter", "-m", str(bad)], input=message, capture_output=True
    )
    assert done.returncode == 1 and b"X-Nbtext-Class: error" in done.stdout
    assert done.stdout.endswith(b"\n\nfree money now\n")  # (the message went on, whole)
    assert done.stderr.count(b"\n") == 1 and b"bad max_evidence" in done.stderr


def test_the_one_message_path_chooses_the_features_the_model_loaded_whole_chooses(tmp_path):
    """The choice is discrete: both forms must see the same bits of every term. Of these three
    classes the leads of aa (1, 0, 0) and bb (13, 4, 6) for x are equal (2 : 1 over z, λ = 1);
    with libm's log the one-message path took aa where the model loaded whole, with
    nbtext.exactmath's, takes bb, and their probabilities were far apart. Both compute
    each term with exactmath's log under a cap."""
    from nbtext.classifier import purescore

    docs = ["aa " + "bb " * 13 + "pp", "bb " * 4 + "qq qq", "bb " * 6]
    model = trained(list(zip(docs, ["x", "y", "z"])), min_count=1, alpha=1.0, max_evidence=1)
    path = tmp_path / "m.model"
    model.save(path)
    pure = purescore.of_file(path.read_bytes(), path)
    whole = nbtext.load(path)
    np.testing.assert_allclose(
        purescore.probabilities(pure, "aa bb"), whole.predict_proba(["aa bb"])[0], rtol=0, atol=1e-12
    )
    [(token, _)] = purescore.explained(pure, "aa bb", 5)[1]
    assert [token] == [t for t, _ in whole.explain(whole.tokenize("aa bb"), whole.predict_log_proba(["aa bb"])[0], 5)]


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.lists(st.integers(0, 10**6).map(float), min_size=2, max_size=4), min_size=1, max_size=6),
    extra=st.integers(0, 10**7),
    n_features=st.integers(1, 10**6),
    alpha=st.sampled_from([0.01, 0.1, 0.5, 1.0, 3.0]),
    x=st.integers(1, 50),
)
def test_under_a_cap_the_one_document_terms_are_the_numpy_forms_bit_for_bit(counts, extra, n_features, alpha, x):
    """What the choice reads: x_j W_kj of the multinomial's form of one document under a cap (the one-message path,
    the online form) and of Multinomial.log_theta_of (a batch), the same floats."""
    from nbtext.stats.event_models import Multinomial

    n_classes = len(counts[0])
    counts = [(row + row)[:n_classes] for row in counts]  # every feature of the same classes
    totals = [sum(row[k] for row in counts) + extra for k in range(n_classes)]
    form = Multinomial.of_counts(totals, n_features, alpha, None, None)
    features = [(f"t{i}", x, row) for i, row in enumerate(counts)]
    _, columns = form.scoring(features, 100)  # (each class's terms)
    log_theta = Multinomial.log_theta_of(np.ascontiguousarray(np.array(counts).T), alpha, np.array(totals), n_features)
    assert columns == (log_theta * float(x)).tolist()


def test_a_batch_of_many_classes_holds_the_terms_of_one_run_of_documents_at_a_time(monkeypatch):
    """The (cells, classes) terms of a batch are made a run of whole documents at a time
    (evidence.document_blocks), as they are chosen: a batch's memory is its cells and its
    columns' weights, not its cells times its classes. And the jll are the same floats."""
    import tracemalloc

    words = [f"w{i}" for i in range(400)]
    rng = random.Random(5)
    corpus = [(" ".join(rng.sample(words, 30)), f"c{i % 120}") for i in range(360)]
    model = trained(corpus, min_count=1, max_evidence=3)
    queries = [model.tokenize(" ".join(rng.sample(words, 200))) for _ in range(120)]  # 24,000 cells
    monkeypatch.setattr(evidence, "_CELLS_AT_ONCE", 1 << 40)
    whole = model.jll_and_lengths(queries)[0]  # (one run: the terms of every cell at once, 23 MB)
    monkeypatch.setattr(evidence, "_CELLS_AT_ONCE", 1 << 16)  # runs of about 546 cells
    tracemalloc.start()
    try:
        in_runs = model.jll_and_lengths(queries)[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (in_runs == whole).all()
    assert peak < 8_000_000


def test_a_part_of_one_class_scores_on_every_feature(tmp_path):
    """train --shard writes a part whose documents may all be of one class: no feature
    favours it over another class, so every feature scores it (it predicts that class, as
    without the cap), on the one-message path and the model loaded whole, never a traceback."""
    import subprocess
    import sys

    part = tmp_path / "part.model"
    result = run("train", "--shard", "1/2", "--max-evidence", "3", "-o", part, MAIL / "train" / "spam")
    assert result.exit_code == 0, result.stderr
    assert used_features(lambda i: i, [[-1.0], [-2.0], [-3.0]], 1) == [0, 1, 2]
    assert used_cells_of(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([[-1.0], [-2.0], [-3.0]]), 1).all()
    for source in ([MAIL / "test" / "spam"], ["-"]):
        said = run("predict", "--proba", "-m", part, *source, input=b"free money now\n")
        assert said.exit_code == 0, said.stderr
        assert all(line.split("\t")[1:] == ["spam", "1.0000", "1.0000"] for line in said.stdout.splitlines())
    done = subprocess.run(  # (the one-message path, which the executable takes first)
        [Path(sys.executable).with_name("nbtext"), "predict", "--proba", "-m", str(part), "-"],
        input=b"free money now\n",
        capture_output=True,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"-\tspam\t1.0000\t1.0000\n", b"")


def _nbtext_executable():
    import sys

    return Path(sys.executable).with_name("nbtext")


def test_one_message_alone_chooses_what_a_batch_chooses_where_two_logs_differ_in_the_last_bit(tmp_path):
    """Of three classes of equal totals, `bbb` (counts 1, 0, 0) and `aaa` (5, 2, 0) lead for x
    by log 2 and by log 6 − log 3: equal in nbtext.exactmath's logarithm (a tie: `aaa` first, in
    token order), not in libm's, whose log 3 is another last bit. Under --max-evidence 1 the one
    chosen changes every probability, so the one-message path must compare the numpy path's
    bits: predict < FILE prints what predict FILE prints (it printed x 0.5000 0.5000 0.2500 0.2500)."""
    import subprocess

    texts = {"x": "aaa " * 5 + "bbb " + "px " * 34, "y": "aaa " * 2 + "py " * 38, "z": "pz " * 40}
    for label, text in texts.items():
        (tmp_path / label).mkdir()
        (tmp_path / label / "1.txt").write_text(text)
    path, query = tmp_path / "m.model", tmp_path / "query.txt"
    query.write_text("aaa bbb\n")
    options = ["--max-evidence", "1", "--alpha", "1", "--min-count", "1", "--calibration", "none"]
    trained = run("train", "-q", *options, "-o", path, *(tmp_path / label for label in texts))
    assert trained.exit_code == 0, trained.stderr
    nbtext_command = [_nbtext_executable(), "predict", "--proba", "-m", str(path)]
    batch = subprocess.run([*nbtext_command, str(query)], capture_output=True, text=True)
    alone = subprocess.run(nbtext_command, input=query.read_text(), capture_output=True, text=True)
    assert batch.stdout.split("\t")[1:] == ["x", "0.6000", "0.6000", "0.3000", "0.1000\n"]
    assert alone.stdout.split("\t")[1:] == batch.stdout.split("\t")[1:]


@pytest.mark.parametrize("features", ["counts", "binary"])
def test_the_one_document_form_weighs_a_capped_model_with_the_numpy_paths_bits(tmp_path, features):
    """The terms the one-message path's cap compares and adds are the numpy model's x_j log θ_kj
    bit for bit: of every feature of a model of the mail corpus (UNK too), as counts once and
    thrice, λ 1 and 0.1 (libm's logarithm and nbtext.exactmath's differ in the last bit of some)."""
    from nbtext.classifier import purescore

    for alpha in ("1", "0.1"):
        path = tmp_path / f"{features}{alpha}.model"
        options = ["--max-evidence", "3", "--features", features, "--alpha", alpha]
        assert run("train", "-q", *options, "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
        pure, model = purescore.of_file(path.read_bytes(), str(path)), nbtext.load(path)
        vocabulary = model.vocabulary
        names = vocabulary.feature_names[: vocabulary.n_kept]
        rows = [(token, pure.token_counts(token)[1]) for token in names] + [(None, pure.unk)]
        columns = list(range(vocabulary.n_kept)) + [vocabulary.unk_column]
        for x in (1, 3):
            used, terms = pure.form.scoring([(token, x, counts) for token, counts in rows], 10**6)
            assert len(used) == len(columns)
            assert terms == (x * model.feature_log_prob[:, columns]).tolist()  # (each class's terms)
