"""Train settings are a value (classifier.settings.TrainSettings): made once per command from
the options, holding everything that changes the model (λ once resolved, the calibration as
it applies, the budget of ham flagged), and changed by nobody: λ left to the corpus gives a
new value (`resolved`), never a changed one."""

import json
import math
import pickle

import pytest

import nbtext

from nbtext.classifier import settings as settings_module
from nbtext.choices import TRAIN_DEFAULTS
from nbtext.classifier.settings import MAIL_ALPHA, TEXT_ALPHA, make_settings
from nbtext.errors import NbtextError

from conftest import ROOT, run

MAIL = ROOT / "corpora" / "mail" / "train"
GENERAL = ["--preset", "general"]  # the general defaults: these tests are not about a spam filter's


def test_nothing_changes_a_train_settings_value():
    settings = make_settings(headers="subject,from")
    with pytest.raises(TypeError):
        settings["alpha"] = 0.5
    with pytest.raises(AttributeError):
        settings.calibration = "none"
    with pytest.raises(TypeError):
        settings["tokenizer"]["ngrams"] = 2
    with pytest.raises(AttributeError):
        settings["tokenizer"]["headers"].append("to")
    assert settings["tokenizer"]["headers"] == ("subject", "from")
    assert settings.stored()["tokenizer"]["headers"] == ["subject", "from"]  # as a model file reads it back


@pytest.mark.parametrize(
    "model, mail_documents, alpha", [("multinomial", 6, MAIL_ALPHA), ("multinomial", 5, TEXT_ALPHA)]
)
def test_lambda_left_to_the_corpus_is_a_new_value(model, mail_documents, alpha):
    settings = make_settings(model=model)
    resolved = settings.resolved(mail_documents, 10)
    assert (settings["alpha"], resolved["alpha"]) == (None, alpha)
    assert resolved.default_alpha and settings.default_alpha
    given = make_settings(model=model, alpha=0.5)
    assert given.resolved(10, 10) is given and not given.default_alpha


def test_the_calibration_and_the_budget_are_in_the_value():
    assert make_settings().calibration == "auto"
    assert make_settings(model="categorical", columns=["colour"]).calibration == "none"  # auto: none for rows
    assert make_settings(calibration="temperature").calibration == "temperature"
    assert make_settings(max_ham_flagged="0.2%").budget == 0.002
    assert make_settings().budget is None


def test_a_value_travels_whole():
    """Pickled (a cluster's workers get it so), it is the same value; its stored settings
    are the JSON a model file holds."""
    settings = make_settings(max_ham_flagged="1%", ngrams=2).resolved(3, 4)
    assert pickle.loads(pickle.dumps(settings)) == settings
    assert json.loads(json.dumps(settings.stored())) == settings.stored()


def test_a_training_makes_its_settings_once(tmp_path, monkeypatch):
    made = []
    make = settings_module.make_settings
    monkeypatch.setattr(settings_module, "make_settings", lambda **options: made.append(options) or make(**options))
    for extra in ([], ["--features", "tfidf", "--model", "complement"], ["--shard", "1/2", "--calibration", "none"]):
        made.clear()
        result = run(
            "train", "-q", "-j", "1", *GENERAL, *extra, "-o", tmp_path / "m.model", MAIL / "spam", MAIL / "ham"
        )
        assert result.exit_code == 0, result.output
        assert len(made) == 1, extra


@pytest.mark.parametrize(
    "way, args",
    [
        ("train --update", ["train", "--update", "-m", "{model}", "--tf", "log"]),
        ("eval", ["eval", "--max-ham-flagged", "1%"]),
        ("eval -m", ["eval", "-m", "{model}", "--seed", "3"]),
        ("eval --compare", ["eval", "--folds", "2", "--compare", "multinomial,bernoulli", "--model", "bernoulli"]),
        ("eval --online -m", ["eval", "--online", "-m", "{model}", "--min-count", "1"]),
    ],
)
def test_each_way_of_running_refuses_the_train_options_its_table_row_names(tmp_path, way, args):
    """The train options train and eval refuse come from one table (cli.options.REFUSED)."""
    from nbtext.cli.options import REFUSED

    from conftest import one_line_error

    model = tmp_path / "m.model"
    assert run("train", "-q", "-o", model, MAIL / "spam", MAIL / "ham").exit_code == 0
    names, message = REFUSED[way].options, REFUSED[way].says
    typed = args[-2]
    assert typed[2:].replace("-", "_") in names
    result = run(*[a.format(model=model) for a in args], MAIL / "spam", MAIL / "ham")
    assert result.exit_code == 2
    one_line_error(result, message.format(typed))


def _signed_zeros(value):
    """The -0.0 anywhere in a stored settings value."""
    if isinstance(value, dict):
        return [z for item in value.values() for z in _signed_zeros(item)]
    if isinstance(value, (list, tuple)):
        return [z for item in value for z in _signed_zeros(item)]
    return [value] if isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0 else []


@pytest.mark.parametrize("option", sorted(TRAIN_DEFAULTS))
@pytest.mark.parametrize("context", [{}, {"learn": "tone"}, {"model": "categorical", "columns": ["colour"]}])
def test_no_train_option_stores_a_negative_zero(option, context):
    """-0.0 given to any train option through the Python API is stored as 0.0, as the command
    line's float options take it: a model file that said "-0" and differed from the CLI's."""
    try:
        settings = make_settings(**{**context, option: -0.0})
    except (NbtextError, TypeError, AttributeError):
        return  # refused: nothing stored
    assert _signed_zeros([settings.stored(), settings.budget]) == []


def test_the_python_api_writes_a_margin_of_minus_zero_as_the_command_line(tmp_path):
    documents = [f"w{i} w{i + 1} w{i + 2}".encode() for i in range(40)]  # (a pass errs on both classes)
    labels = ["spam" if i // 3 % 2 else "ham" for i in range(40)]
    for name, margin in (("minus", -0.0), ("plus", 0.0)):
        nbtext.train(documents, labels, min_count=1, learn="tone", tone_margin=margin).save(str(tmp_path / name))
    assert (tmp_path / "minus").read_bytes() == (tmp_path / "plus").read_bytes()
