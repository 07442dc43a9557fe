"""predict --proba / -k / --format fasttext of one message on stdin (issue 35): served by the
one-message path (nbtext.cli.oneshot, classifier.purescore) without numpy or click when its
line is, to the digit, the line of the model loaded whole; --format json, whose
probabilities are written whole, is the whole model's (their last bits differ)."""

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbtext.delivery.judging import AGREEMENT, RELATIVE_AGREEMENT, OneMessageModel, clear_of_turns
from nbtext.report.text import Output

from conftest import ROOT, real_corpus, run

NBTEXT = Path(sys.executable).with_name("nbtext")
MAIL = ROOT / "corpora" / "mail"
MESSAGES = sorted(p for part in ("train", "test") for label in ("spam", "ham") for p in (MAIL / part / label).iterdir())
OPTIONS = [
    ["--proba"],
    ["--proba", "--column-names"],
    ["--proba", "--unsure-below", "0.9"],
    ["-k", "2"],
    ["--threshold", "0.3"],
    ["--format", "fasttext"],
    ["--format", "fasttext", "-k", "2"],
    ["--format", "json"],
]


@pytest.fixture(
    scope="module",
    params=[
        ["--calibration", "none"],
        ["--calibration", "temperature", "--max-ham-flagged", "5%"],
        ["--calibration", "temperature", "--min-count", "1", "--ngrams", "2"],
    ],
    ids=["uncalibrated", "calibrated with a spam cut-off", "calibrated, bigrams"],
)
def model(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("figures") / "m.model"
    result = run("train", *request.param, "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 0, result.stderr
    return path


def whole_models_lines(monkeypatch, args, message):
    """What predict prints when the model loaded whole scores the message."""
    with monkeypatch.context() as patched:
        patched.setattr(OneMessageModel, "printed_lines", lambda self, document, output: None)
        return run("predict", *args, input=message)


@pytest.mark.parametrize("options", OPTIONS, ids=" ".join)
def test_the_light_path_prints_the_whole_models_line(model, monkeypatch, options):
    served = 0
    for path in MESSAGES:
        message = path.read_bytes()
        light, whole = (
            run("predict", "-m", model, *options, input=message),
            whole_models_lines(monkeypatch, ["-m", model, *options], message),
        )
        assert (light.exit_code, light.stdout, light.stderr) == (whole.exit_code, whole.stdout, whole.stderr), path
        output = Output("json" if "json" in options else "tsv", "--proba" in options)
        served += OneMessageModel(str(model)).printed_lines(message, output) is not None
    # (the demo's cut-off, 1 + 2**-52, leaves its saturated probabilities to the whole model)
    assert served == 0 if "json" in options else served > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.sampled_from(
            ["free", "prize", "money", "meeting", "lunch", "notes", "click", "now", "zzz", "Subject:", "win", "\n"]
        ),
        max_size=30,
    ).map(" ".join)
)
def test_any_text_prints_alike(model, monkeypatch, text):
    for options in (["--proba"], ["-k", "2", "--format", "fasttext"]):
        light, whole = (
            run("predict", "-m", model, *options, input=text),
            whole_models_lines(monkeypatch, ["-m", model, *options], text),
        )
        assert (light.exit_code, light.stdout) == (whole.exit_code, whole.stdout)


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
def test_the_executable_serves_them_without_numpy_or_click(model):
    """The start-up contract of one message (tests/test_structure.py): --proba and
    --format fasttext import neither numpy nor click; json still needs numpy, not click."""
    message = (MAIL / "test" / "spam").iterdir().__next__().read_bytes()
    for options, output in (
        (["--proba"], Output("tsv", True)),
        (["--format", "fasttext"], Output("fasttext")),
        (["--format=json"], Output("json")),
    ):
        served = OneMessageModel(str(model)).printed_lines(message, output) is not None  # (json: never)
        heavy = [] if served else ["numpy"]
        code = (
            "import sys; from nbtext.cli.oneshot import fast; "
            f"status = fast(['predict', '-m', {str(model)!r}, *{options!r}]); sys.stdout.flush(); "
            "print(status, sorted(m for m in ('click', 'scipy', 'numpy') if m in sys.modules))"
        )
        result = subprocess.run([sys.executable, "-c", code], input=message, capture_output=True)
        assert result.returncode == 0, result.stderr
        *lines, last = result.stdout.decode().splitlines()
        assert last == f"0 {heavy}"
        same = subprocess.run([NBTEXT, "predict", "-m", str(model), *options], input=message, capture_output=True)
        assert (
            same.stdout.decode().splitlines()
            == lines
            == run("predict", "-m", model, *options, input=message).stdout.splitlines()
        )


def test_figures_near_a_turn_are_left_to_the_whole_model():
    plain = Output("tsv", True)
    assert clear_of_turns([0.25, 0.75], plain, None)
    assert not clear_of_turns([0.12345, 0.87655], plain, None)  # the fourth decimal rounds here
    assert not clear_of_turns([0.12345 + AGREEMENT / 2, 0.87655 - AGREEMENT / 2], plain, None)
    assert clear_of_turns([0.12345 + 3 * AGREEMENT, 0.87655 - 3 * AGREEMENT], plain, None)
    assert not clear_of_turns([0.5, 0.5], plain, None)  # a tie: which wins is the whole model's
    assert clear_of_turns([0.9, 0.1, 1e-20, 1e-20], plain, None)  # ties below the ranked ones print alike
    assert not clear_of_turns([0.6, 0.2, 0.2, 0.0], Output("tsv", False, None, 2), None)  # -k 2: which second
    assert not clear_of_turns([0.3, 0.7], Output("tsv", True, 0.7), None)  # at --unsure-below
    assert not clear_of_turns([0.3, 0.7], Output("tsv", False, None, 2, 0.3), None)  # at --threshold
    assert not clear_of_turns([0.2, 0.8], plain, {"spam_cutoff": 0.8 + AGREEMENT / 2})  # at an older build's floor
    # at a spam cut-off's ceiling on P(ham), tiny: within it relatively, not by AGREEMENT (which every such
    # probability is, and would send every message to the whole model)
    ceiling = {"other_ceiling": 2.6e-20}
    assert not clear_of_turns([2.6e-20 * (1 + RELATIVE_AGREEMENT / 2), 1.0], plain, ceiling)
    assert not clear_of_turns([2.6e-20 * (1 - RELATIVE_AGREEMENT / 2), 1.0], plain, ceiling)
    assert clear_of_turns([2.6e-20 * (1 + 3 * RELATIVE_AGREEMENT), 1.0], plain, ceiling)
    assert clear_of_turns([1e-30, 1.0], plain, ceiling) and clear_of_turns([0.25, 0.75], plain, ceiling)


@pytest.mark.parametrize("calibration", ["none", "temperature"])
def test_real_mail_prints_alike(tmp_path, calibration):
    """SpamAssassin's test split trains the model, 100 of its train split's messages are
    classified both ways, as predict prints them (the lines compared, not the floats)."""
    import nbtext
    from nbtext.reading.documents import Document
    from nbtext.report.text import prediction_lines

    corpus = real_corpus("spamassassin")
    model = tmp_path / "sa.model"
    assert (
        run(
            "train", "-q", "--calibration", calibration, "-o", model, corpus / "test" / "spam", corpus / "test" / "ham"
        ).exit_code
        == 0
    )
    one, whole = OneMessageModel(str(model)), nbtext.load(str(model), sample=False)
    messages = [p for label in ("spam", "ham") for p in sorted((corpus / "train" / label).iterdir())[:50]]
    for output in (Output("tsv", True), Output("tsv", False, 0.99, 2), Output("fasttext", False, None, None, 0.2)):
        served = 0
        for path in messages:
            message = path.read_bytes()
            light = one.printed_lines(message, output)
            served += light is not None
            assert light in (
                None,
                prediction_lines(whole, [Document("-", message)], whole.predict_proba([message]), None, output),
            ), path
        assert served >= 90


def scored_apart(one, whole, messages, figure, wanted=lambda light, full: True):
    """(message, the one-message path's figure, the model loaded whole's): the first of
    `messages` whose `figure` (of its probabilities) the two paths give apart in the last
    bits (and `wanted`), or a skip when none is."""
    for message in messages:
        light, full = figure(one.pure_probabilities(message)), float(figure(whole.predict_proba([message])[0]))
        if light != full and wanted(light, full):
            return message, light, full
    pytest.skip("the two paths agree to the bit on every message here")


def test_every_one_message_command_decides_at_a_spam_cut_off_as_the_model_loaded_whole(tmp_path):
    """The one-message path's P(ham) and the whole model's differ in their last bits: with the
    ceiling q between them, predict --proba handed the message to the whole model (unsure),
    but predict's label, predict FILE, --is and filter decided by the one-message path's
    (spam), the same message two ways. Each hands a message within RELATIVE_AGREEMENT of q
    to the whole model now (docs/calibration.md), so each says what it says."""
    import nbtext
    from test_hostile_models import assemble, parts, with_key

    trained = tmp_path / "cut.model"
    options = ["--calibration", "temperature", "--max-ham-flagged", "5%"]
    assert run("train", *options, "-o", trained, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    one, whole = OneMessageModel(str(trained)), nbtext.load(str(trained))
    ham = whole.classes.index("ham")
    message, light, full = scored_apart(  # one whose two P(ham), spam's winner, differ
        one,
        whole,
        (b"From: a@b.c\nSubject: offer\n\n" + path.read_bytes() for path in MESSAGES),
        lambda probabilities: probabilities[ham],
        lambda light, full: max(light, full) < 0.5,
    )
    header, payload = parts(trained.read_bytes())
    model = tmp_path / "crafted.model"
    model.write_bytes(assemble(with_key(header, "calibration.other_ceiling", max(light, full)), payload))
    expected = "spam" if full < max(light, full) else "unsure"  # (strictly under q: spam)
    message_file = tmp_path / "message.eml"
    message_file.write_bytes(message)

    def nbtext_says(*args):
        return subprocess.run([NBTEXT, *args, "-m", model], input=message, capture_output=True)

    filtered = nbtext_says("filter").stdout.split(b"\n\n", 1)[0].decode()
    said = {
        "predict": nbtext_says("predict").stdout.decode().strip(),
        "predict --proba": nbtext_says("predict", "--proba").stdout.decode().split("\t")[1],
        "predict FILE": nbtext_says("predict", message_file).stdout.decode().split("\t")[1],
        "predict --is spam": {0: "spam", 2: "unsure"}.get(nbtext_says("predict", "--is", "spam").returncode),
        "filter": filtered.partition("X-Nbtext-Class: ")[2].split("\n")[0],
    }
    assert said == dict.fromkeys(said, expected), (light, full)
