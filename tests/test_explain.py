"""--explain: evidence in the units of the probability printed beside it (each token's share
of the tempered log-odds log P(winner | x) / P(runner-up | x)), UNK never given as a reason,
one number format, and the same evidence from the one-message path as from the model
loaded whole."""

import math
import re

import numpy as np
import pytest

import nbtext
from nbtext.classifier.purescore import explained, of_file
from nbtext.modelfile.container import read_bytes
from nbtext.reading.documents import file_documents

from conftest import ROOT, run

DEMO = ROOT / "corpora" / "mail"
GENERAL = ["--preset", "general"]  # the general defaults: these tests are not about a spam filter's
MESSAGES = sorted((ROOT / "tests" / "golden" / "mail").rglob("*.eml")) + sorted((DEMO / "test").rglob("*.txt"))


@pytest.fixture(
    scope="module",
    params=[[], ["--model", "bernoulli"], ["--alpha", "0.1", "--min-count", "3"]],
    ids=["multinomial", "bernoulli", "pruned"],
)
def calibrated(request, tmp_path_factory):
    """A model trained on the demo corpus with a temperature that grows with length."""
    path = tmp_path_factory.mktemp("explain") / "m.model"
    result = run(
        "train",
        "-o",
        path,
        *GENERAL,
        "--calibration",
        "temperature",
        *request.param,
        DEMO / "train" / "spam",
        DEMO / "train" / "ham",
    )
    assert result.exit_code == 0, result.stderr
    model = nbtext.load(path)
    assert model.calibration["temperature"] != 1.0
    return path, model


def test_the_evidence_adds_up_to_the_printed_log_odds(calibrated):
    """Every token's value, plus UNK's and the prior's (divided by the same T(x)), is the
    log-odds of the two probabilities printed."""
    _, model = calibrated
    weights, bias, _ = model.linear_form
    for path in MESSAGES:
        tokens = model.tokenize(path.read_bytes())
        log_proba = model.posterior(*model.jll_and_lengths([tokens]))[0]
        runner_up, winner = np.argsort(log_proba, kind="stable")[-2:]
        evidence = model.explain(tokens, log_proba, 10_000)
        ids, _ = model.vocabulary.ids([tokens])
        temperature = model.temperatures(1, [len(ids)])[0]
        rest = bias[winner] - bias[runner_up] + model.prior_term[winner] - model.prior_term[runner_up]
        if model.vocabulary.unk_column is not None:
            x = np.count_nonzero(ids == model.vocabulary.unk_column)
            if model.binary:
                x = min(x, 1)
            rest += x * (weights[winner, -1] - weights[runner_up, -1])
        total = math.fsum(value for _, value in evidence) + rest / temperature
        assert total == pytest.approx(log_proba[winner] - log_proba[runner_up], rel=1e-9, abs=1e-9), path.name
        assert "<UNK>" not in [token for token, _ in evidence]


def test_the_one_message_path_gives_the_same_evidence(calibrated):
    path, model = calibrated
    pure = of_file(read_bytes(path), str(path))
    assert pure is not None
    for message in MESSAGES:
        data = next(file_documents(str(message))).data
        probabilities, evidence = explained(pure, data, 4)
        tokens = model.tokenize(data)
        log_proba = model.posterior(*model.jll_and_lengths([tokens]))[0]
        expected = model.explain(tokens, log_proba, 4)
        assert [t for t, _ in evidence] == [t for t, _ in expected], message.name
        assert [v for _, v in evidence] == pytest.approx([v for _, v in expected], rel=1e-9, abs=1e-12)
        assert probabilities == pytest.approx(np.exp(log_proba).tolist(), rel=1e-9, abs=1e-12)


EVIDENCE = re.compile(r"^\S+:[+-]\d+\.\d\d$")


def test_one_number_format_in_predict_and_filter(calibrated):
    path, _ = calibrated
    predicted = run("predict", "-m", path, "--explain", "3", "--proba", DEMO / "test" / "spam")
    assert predicted.exit_code == 0
    for line in predicted.stdout.splitlines():
        for item in line.split("\t")[-1].split(" "):
            assert EVIDENCE.match(item), line
    message = (ROOT / "tests" / "golden" / "mail" / "spam").glob("*.eml").__next__().read_bytes()
    filtered = run("filter", "-m", path, "--explain", "3", input=message)
    evidence = [line for line in filtered.stdout.splitlines() if line.startswith("X-Nbtext-Evidence: ")]
    assert len(evidence) == 1
    for item in evidence[0].split(": ", 1)[1].split("; "):
        assert EVIDENCE.match(item), evidence


def test_filter_explain_takes_the_one_message_path(calibrated, monkeypatch):
    """`filter --explain N` is served without click and numpy (its start-up is per message)."""
    import subprocess
    import sys

    path, _ = calibrated
    code = (
        "import sys; sys.argv = ['nbtext', 'filter', '-m', sys.argv[1], '--explain', '3']\n"
        "from nbtext.cli.oneshot import fast\n"
        "status = fast(sys.argv[1:])\n"
        "assert 'numpy' not in sys.modules and 'click' not in sys.modules, sorted(sys.modules)\n"
        "sys.exit(status)"
    )
    message = b"Subject: free prize\n\nclaim your free prize now\n"
    result = subprocess.run([sys.executable, "-c", code, str(path)], input=message, capture_output=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert b"X-Nbtext-Evidence: " in result.stdout
