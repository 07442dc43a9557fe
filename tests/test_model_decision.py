"""A model's own --unsure-below (`train --unsure-below P`): every command that decides a label
decides by it as by the command line's --unsure-below P, and a command's own value overrides
it (classifier.purescore.unsure_threshold, asked by every model before it decides)."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import nbtext
from nbtext.classifier.settings import make_settings
from nbtext.delivery.judging import OneMessageModel
from nbtext.errors import NbtextError
from nbtext.modelfile.schema import check_settings_record

from conftest import ROOT, one_line_error, run

NBTEXT = Path(sys.executable).with_name("nbtext")
MAIL = ROOT / "corpora" / "mail"
REFUSED_UNSURE = "the class label 'unsure' is a word nbtext labels with itself"  # (labels.class_problem's)
OWN, GIVEN = "0.999", "0.8"  # the model's own, and another a command gives
# the general defaults: the spam preset would give the demo corpus's spam/ham models an --unsure-below of their own
GENERAL = ["--preset", "general"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(a model trained with --unsure-below OWN, the same trained without it)."""
    folder = tmp_path_factory.mktemp("decision")
    own, plain = folder / "own.model", folder / "plain.model"
    for path, options in ((own, ["--unsure-below", OWN]), (plain, [])):
        result = run("train", *GENERAL, *options, "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham")
        assert result.exit_code == 0, result.stderr
    return own, plain


def nbtext_says(*args, message=None):
    """The installed executable (the one-message path: no click, no numpy where it can)."""
    done = subprocess.run([NBTEXT, *map(str, args)], input=message, capture_output=True)
    return done.returncode, done.stdout, done.stderr


BATCH = [  # (the command line, its model and --unsure-below options put in {})
    ["predict", "{}", MAIL / "test"],
    ["predict", "{}", "--proba", MAIL / "test"],
    ["predict", "{}", "--format", "json", MAIL / "test"],
    ["predict", "{}", "-k", "2", MAIL / "test"],
    ["predict", "{}", "-j", "2", MAIL / "test"],
    ["eval", "{}", "--format", "json", MAIL / "test" / "spam", MAIL / "test" / "ham"],
    ["eval", "{}", MAIL / "test" / "spam", MAIL / "test" / "ham"],
    # an online run from the model (-m): it decides each message as the model's filter would
    ["eval", "{}", "--online", "--format", "json", MAIL / "test" / "spam", MAIL / "test" / "ham"],
    ["eval", "{}", "--online", "--learn", "tone", MAIL / "test" / "spam", MAIL / "test" / "ham"],
]
ONE_MESSAGE = [["predict", "{}"], ["predict", "{}", "--proba"], ["predict", "{}", "--is", "spam"], ["filter", "{}"]]


def with_model(command, model, unsure_below):
    options = ["-m", model] + (["--unsure-below", unsure_below] if unsure_below else [])
    return [part for item in command for part in (options if item == "{}" else [item])]


@pytest.mark.parametrize("command", BATCH, ids=lambda c: " ".join(map(str, c[:4])))
def test_every_command_decides_by_the_models_own_unsure_below_and_the_command_line_overrides_it(models, command):
    own, plain = models
    said = {}
    for name, model, unsure_below in (
        ("own", own, None),
        ("plain, given the same", plain, OWN),
        ("own, given another", own, GIVEN),
        ("plain, given another", plain, GIVEN),
    ):
        result = run(*with_model(command, model, unsure_below))
        assert result.exit_code == 0, result.stderr
        said[name] = result.stdout.replace(str(model), "MODEL")
    assert said["own"] == said["plain, given the same"]
    assert said["own, given another"] == said["plain, given another"]
    assert said["own"] != said["own, given another"]  # (the two thresholds label these differently)


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
@pytest.mark.parametrize("command", ONE_MESSAGE, ids=" ".join)
def test_every_one_message_command_decides_by_it_too(models, command):
    own, plain = models
    unsure = 0
    for path in sorted((MAIL / "test" / "spam").iterdir()) + sorted((MAIL / "test" / "ham").iterdir()):
        message = b"From: a@b.c\nSubject: note\n\n" + path.read_bytes()  # (filter passes on mail alone)
        mine = nbtext_says(*with_model(command, own, None), message=message)
        assert mine == nbtext_says(*with_model(command, plain, OWN), message=message), path
        overridden = nbtext_says(*with_model(command, own, GIVEN), message=message)
        assert overridden == nbtext_says(*with_model(command, plain, GIVEN), message=message), path
        unsure += b"unsure" in mine[1] or (command[-1] == "spam" and mine[0] == 2)
    assert unsure >= 5  # (OWN leaves several unsure: the test compares decisions that differ from the plain ones)


def test_predict_file_decides_by_it(models):
    own, plain = models
    for path in sorted((MAIL / "test" / "spam").iterdir())[:6]:
        assert nbtext_says("predict", "-m", own, path) == nbtext_says(
            "predict", "-m", plain, "--unsure-below", OWN, path
        )


def test_the_one_message_path_near_the_models_own_threshold_agrees_with_the_model_loaded_whole(tmp_path):
    """The one-message path's probabilities and the whole model's differ in their last bits:
    with the model's own threshold between them, every one-message command must hand the
    message to the whole model (clear_of_turns holds the stored threshold as a turn)."""
    from test_hostile_models import assemble, parts, with_key
    from test_one_message_figures import scored_apart

    trained = tmp_path / "plain.model"
    options = ["--calibration", "temperature"]  # (its probabilities' last bits differ more often)
    assert run("train", *options, "-o", trained, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    one, whole = OneMessageModel(str(trained)), nbtext.load(str(trained))
    heads = [b"From: %s\nSubject: %s\n\n" % pair for pair in [(b"a@b.c", b"offer"), (b"x@y.z", b"lunch"), (b"a", b"b")]]
    messages = (head + path.read_bytes() for path in sorted(MAIL.glob("*/*/*")) for head in heads)
    message, light, full = scored_apart(one, whole, messages, max)
    header, payload = parts(trained.read_bytes())
    model = tmp_path / "crafted.model"
    model.write_bytes(assemble(with_key(header, "settings.unsure_below", max(light, full)), payload))
    turn = OneMessageModel(str(model))  # (what makes it so: the stored threshold is a turn of clear_of_turns)
    assert turn.clear([1 - max(light, full), max(light, full)]) is None
    assert turn.clear([0.25, 0.75]) == [0.25, 0.75]
    winner = whole.decide(whole.predict_proba([message])[0])[0]
    expected = winner if full >= max(light, full) else "unsure"  # (below the threshold: unsure)
    message_file = tmp_path / "message.eml"
    message_file.write_bytes(message)
    said = {
        "predict": nbtext_says("predict", "-m", model, message=message)[1].decode().strip(),
        "predict --proba": nbtext_says("predict", "-m", model, "--proba", message=message)[1].decode().split("\t")[1],
        "predict FILE": nbtext_says("predict", "-m", model, message_file)[1].decode().split("\t")[1],
        "filter": nbtext_says("filter", "-m", model, message=message)[1]
        .split(b"\n\n", 1)[0]
        .decode()
        .partition("X-Nbtext-Class: ")[2]
        .split("\n")[0],
    }
    assert said == dict.fromkeys(said, expected), (light, full)


def test_info_says_it_and_update_forget_and_merge_keep_it(models, tmp_path):
    own, _ = models
    text = run("info", "-m", own).stdout
    assert "decision       unsure when the winning class's probability is below 0.999, its log-odds below 6.91" in text
    assert json.loads(run("info", "-m", own, "--format", "json").stdout)["settings"]["unsure_below"] == 0.999
    assert "unsure when" not in run("info", "-m", models[1]).stdout
    copy = tmp_path / "copy.model"
    copy.write_bytes(own.read_bytes())
    assert run("train", "--update", "-q", "-m", copy, f"spam={MAIL / 'test' / 'spam'}").exit_code == 0
    assert nbtext.load(copy).settings["unsure_below"] == 0.999
    assert run("forget", "-q", "-m", copy, MAIL / "test" / "spam").exit_code == 0
    assert nbtext.load(copy).settings == nbtext.load(own).settings
    other = tmp_path / "other.model"  # (a part of other documents, to merge with)
    test = [MAIL / "test" / "spam", MAIL / "test" / "ham"]
    assert run("train", *GENERAL, "--unsure-below", OWN, "-o", other, *test).exit_code == 0
    merged = run("merge", "-o", tmp_path / "merged.model", own, other)
    assert merged.exit_code == 0, merged.stderr
    assert nbtext.load(tmp_path / "merged.model").settings["unsure_below"] == 0.999
    one_line_error(
        run("merge", "-o", tmp_path / "no.model", own, models[1]), "their unsure_below setting differs (0.999 and None)"
    )


def test_train_update_refuses_a_new_one(models):
    result = run("train", "--update", "--unsure-below", "0.5", "-m", models[0], f"spam={MAIL / 'test' / 'spam'}")
    assert result.exit_code == 2 and "--update keeps the model's own settings; drop --unsure-below" in result.stderr


def test_a_model_without_it_is_written_as_before(models):
    """Stored only when given: a model trained without it holds no such setting (today's files
    stay byte for byte: tests/test_golden.py)."""
    assert "unsure_below" not in nbtext.load(models[1]).settings


@pytest.mark.parametrize(
    "value, stored",
    [(0.97, 0.97), (1, 1.0), (0, 0.0), (-0.0, 0.0), (0.5, 0.5), (np.float64(0.97), 0.97), (np.float64(-0.0), 0.0)],
)
def test_the_api_stores_a_probability_as_a_float(value, stored):
    """A plain float, as train's command line gives it (numpy's float64 is one, but said
    np.float64(0.97) in merge's refusal and repr)."""
    kept = make_settings(unsure_below=value).stored()["unsure_below"]
    assert kept == stored and type(kept) is float and math.copysign(1.0, kept) == 1.0


@pytest.mark.parametrize("value", [1.5, -0.1, math.nan, math.inf, "0.9", True, [0.9]])
def test_the_api_refuses_what_is_not_a_probability(value):
    with pytest.raises(NbtextError, match="--unsure-below must be a probability from 0 to 1"):
        make_settings(unsure_below=value)


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-2, 2),
        st.booleans(),
        st.text(max_size=3),
        st.none(),
        st.lists(st.floats(0, 1), max_size=2),
    )
)
def test_the_model_file_validator_takes_a_stored_value_only_as_train_writes_it(value):
    good = make_settings(min_count=1, alpha=1).stored()
    if isinstance(value, float) and 0 <= value <= 1 and math.copysign(1.0, value) == 1.0:
        assert check_settings_record({**good, "unsure_below": value})["unsure_below"] == value
    else:
        with pytest.raises(ValueError, match="bad unsure_below"):
            check_settings_record({**good, "unsure_below": value})


@pytest.mark.parametrize("value", ["2", "-0.5", "nan", '"0.9"', "true"])
def test_a_model_file_with_a_bad_one_is_one_line_from_every_command(models, tmp_path, value):
    from test_hostile_models import assemble, parts

    header, payload = parts(models[1].read_bytes())
    header["settings"]["unsure_below"] = json.loads(value) if value != "nan" else math.nan
    bad = tmp_path / "bad.model"
    bad.write_bytes(assemble(header, payload))
    body = sorted((MAIL / "test" / "spam").iterdir())[0].read_bytes()
    message = b"From: a@b.c\nSubject: note\n\n" + body
    one_line_error(run("predict", "-m", bad, MAIL / "test"), "bad unsure_below")
    status, out, err = nbtext_says("predict", "-m", bad, message=message)
    assert status != 0 and err.count(b"\n") == 1 and b"bad unsure_below" in err, err
    status, out, err = nbtext_says("filter", "-m", bad, message=message)
    assert status == 1 and b"X-Nbtext-Class: error" in out and err.count(b"\n") == 1 and b"bad unsure_below" in err
    assert out.endswith(b"\n\n" + body)  # the message went on, whole


def test_an_online_run_from_the_model_decides_by_its_own_and_learns_by_its_own_margin(models, tmp_path):
    """eval --online -m MODEL decides as the model does (its spam cut-off did, its own
    --unsure-below did not), and --learn tone's margin is the model's own when it has one
    (it took the event model's default)."""
    own, plain = models
    folders = [MAIL / "test" / "spam", MAIL / "test" / "ham"]

    def online(model, *options):
        result = run("eval", "--online", "--format", "json", "-m", model, *options, *folders)
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    mine = online(own)
    assert mine == online(plain, "--unsure-below", OWN) and mine["unsure"]["threshold"] == 0.999
    assert online(own, "--unsure-below", GIVEN) == online(plain, "--unsure-below", GIVEN) != mine
    tone = tmp_path / "tone.model"
    options = ["--learn", "tone", "--tone-margin", "7", "--features", "binary", "--min-count", "1"]
    assert run("train", *options, "-o", tone, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    assert online(tone, "--learn", "tone")["tone_margin"] == 7.0
    assert online(tone, "--learn", "tone", "--tone-margin", "3")["tone_margin"] == 3.0


def test_a_model_holding_its_own_is_refused_by_the_readers_that_would_decide_without_it(models, tmp_path):
    """Readers of format 3 (builds before train --unsure-below) take a setting they do not know
    and decide without it: a filter of such a build would deliver as spam or ham what the
    model's own threshold leaves unsure. Every file that holds one (train, update and forget
    the full way, merge) says format 4 or newer (6: every file this build writes holds the
    token starts, tests/test_modelfile.py), which they refuse in one line ("upgrade nbtext": a
    newer format's refusal); a file of format 3 that holds one still reads."""
    import struct

    from nbtext.modelfile import container

    own, plain = models

    def version(path):
        return struct.unpack_from("<I", Path(path).read_bytes(), len(container.MAGIC))[0]

    updated, other, merged = tmp_path / "updated.model", tmp_path / "other.model", tmp_path / "merged.model"
    updated.write_bytes(own.read_bytes())
    test = [MAIL / "test" / "spam", MAIL / "test" / "ham"]  # (more than the pending section takes: the full way)
    assert run("train", "--update", "-q", "-m", updated, *(f"{path.name}={path}" for path in test)).exit_code == 0
    forgotten = updated.with_name("forgotten.model")
    forgotten.write_bytes(updated.read_bytes())
    assert run("forget", "-q", "-m", forgotten, *test).exit_code == 0
    assert run("train", *GENERAL, "--unsure-below", OWN, "-o", other, *test).exit_code == 0
    assert run("merge", "-o", merged, own, other).exit_code == 0
    for path in (own, updated, forgotten, other, merged):
        assert version(path) == 6 and nbtext.load(path).file_info["format_version"] == 6, path
    assert version(plain) == 6
    from test_hostile_models import assemble, parts  # (f74fa07 wrote it as format 3: such a file still reads)

    header, payload = parts(own.read_bytes())
    third = tmp_path / "format3.model"
    third.write_bytes(assemble(header, payload, version=3))
    assert version(third) == 3 and nbtext.load(third).settings["unsure_below"] == float(OWN)


def test_the_line_train_and_merge_write_says_it(models, tmp_path):
    """train's summary says how the model decides (as it says a --max-ham-flagged cut-off):
    one who trained with --unsure-below sees it was kept; a model without it says nothing."""
    said = "decision: unsure when the winning class's probability is below 0.999; "
    folders = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    trained = run("train", *GENERAL, "--unsure-below", OWN, "-o", tmp_path / "m", *folders)
    assert trained.exit_code == 0 and said in trained.stderr, trained.stderr
    merged = run("merge", "-o", tmp_path / "merged.model", models[0])
    assert merged.exit_code == 0 and said in merged.stderr, merged.stderr
    plain = run("train", *GENERAL, "-o", tmp_path / "p", *folders)
    assert plain.exit_code == 0 and "decision" not in plain.stderr and "unsure" not in plain.stderr


def _normalized(weights):
    total = sum(weights)
    return [w / total for w in weights]


WEIGHTS = st.lists(st.floats(0, 1), min_size=2, max_size=4).filter(lambda w: sum(w) > 0)


@settings(max_examples=300, deadline=None)
@given(WEIGHTS, st.floats(0, 1), st.lists(st.floats(-1, 1), min_size=4, max_size=4))
def test_the_one_message_path_serves_a_message_only_where_the_model_loaded_whole_decides_the_same(
    weights, threshold, noise
):
    """clear_of_turns, of any probabilities and --unsure-below (the command's or the model's
    own): where it lets the one-message path decide, figures as far from its own as the whole
    model's may be (AGREEMENT) get the same label."""
    from nbtext.classifier.purescore import decide
    from nbtext.delivery.judging import AGREEMENT, _LabelAlone, clear_of_turns

    probabilities = _normalized(weights)
    classes = [f"c{k}" for k in range(len(probabilities))]
    if clear_of_turns(probabilities, _LabelAlone(threshold), None):
        whole = [p + AGREEMENT / 2 * n for p, n in zip(probabilities, noise)]
        assert decide(classes, whole, threshold)[0] == decide(classes, probabilities, threshold)[0]


@settings(max_examples=300, deadline=None)
@given(WEIGHTS, st.floats(0, 1))
@example([1.0, 1e-13], 0.0)  # (a sure message, and --unsure-below 0: how a command sets a model's own aside)
def test_a_threshold_no_winner_falls_below_sends_no_message_to_the_model_loaded_whole(weights, share):
    """Only the winner's probability is held to --unsure-below (purescore.decide), and it is
    at least 1/K: a threshold below that (0, as a command sets a model's own aside, or a model
    trained with --unsure-below 0) turns no label, and the one-message path serves what it
    serves without one. It was a turn of every class's probability, so a sure message (its
    loser's probability within AGREEMENT of 0) went to the model loaded whole: numpy, about
    2.5 times the time, for most of the mail of the README's spam model."""
    from nbtext.delivery.judging import AGREEMENT, _LabelAlone, clear_of_turns

    probabilities = _normalized(weights)
    threshold = share * (1 / len(probabilities) - 2 * AGREEMENT)
    assert clear_of_turns(probabilities, _LabelAlone(threshold), None) == clear_of_turns(
        probabilities, _LabelAlone(None), None
    )


@pytest.mark.parametrize(
    "options",
    [
        ["filter"],
        ["predict"],
        ["predict", "--proba"],
        ["predict", "--unsure-below", "0"],
        ["filter", "--unsure-below", "0"],
    ],
    ids=" ".join,
)
def test_a_sure_message_under_a_threshold_of_0_stays_on_the_one_message_path(models, tmp_path, options):
    """A model trained with --unsure-below 0, or the model's own set aside with --unsure-below 0
    on the command line: a message whose loser's probability is below AGREEMENT is scored and
    decided without numpy, as under no threshold."""
    from nbtext.delivery.judging import AGREEMENT, OneMessageModel

    zero = tmp_path / "zero.model"
    folders = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    assert run("train", *GENERAL, "--unsure-below", "0", "-o", zero, *folders).exit_code == 0
    model = zero if "--unsure-below" not in options else models[0]  # (the model's own, 0.999, set aside)
    spam = sorted((MAIL / "train" / "spam").iterdir())[0].read_bytes()
    message = b"From: a@b.c\nSubject: offer\n\n" + spam * 5
    assert min(OneMessageModel(str(model)).pure_probabilities(message)) < AGREEMENT  # (sure: what is tested)
    argv = [options[0], "-m", str(model), *options[1:]]
    code = (
        "import atexit, sys; atexit.register(lambda: print('numpy' in sys.modules, file=sys.stderr)); "
        f"sys.argv = ['nbtext', *{argv!r}]; from nbtext.cli.entry import main; main()"
    )
    done = subprocess.run([sys.executable, "-c", code], input=message, capture_output=True)
    assert done.returncode == 0 and b"spam" in done.stdout, done.stderr
    assert done.stderr.splitlines()[-1] == b"False", done.stderr


def test_a_class_named_as_nbtext_labels_undecided_documents_is_refused(models, tmp_path):
    """A class 'unsure' could not be told from a document left unsure: eval counted every
    document it predicted as unsure, and predict --is unsure said 2. Any way a class comes
    into a model written now is refused in one line; a file that holds one is still read."""
    from test_hostile_models import assemble, parts

    folder = tmp_path / "unsure"
    folder.mkdir()
    (folder / "a.txt").write_text("cheap pills now")
    one_line_error(run("train", "-o", tmp_path / "m", MAIL / "train" / "spam", folder), REFUSED_UNSURE)
    result = run("train", "-o", tmp_path / "m", "spam=" + str(MAIL / "train" / "spam"), f"unsure={folder}")
    one_line_error(result, REFUSED_UNSURE)
    table = tmp_path / "t.tsv"
    table.write_text("spam\tcheap pills now\nunsure\tlunch at noon\n")
    one_line_error(
        run("train", "-o", tmp_path / "m", "--table", table, "--label-col", "1", "--text-col", "2"), REFUSED_UNSURE
    )
    copy = tmp_path / "copy.model"
    copy.write_bytes(models[1].read_bytes())
    one_line_error(run("train", "--update", "--new-classes", "-m", copy, f"unsure={folder}"), REFUSED_UNSURE)
    header, payload = parts(models[1].read_bytes())  # an older build's model of such a class: read as it was
    header["classes"] = ["unsure", header["classes"][1]]
    older = tmp_path / "older.model"
    older.write_bytes(assemble(header, payload))
    assert run("predict", "-m", older, MAIL / "test").exit_code == 0


def test_the_reports_say_the_threshold_they_decided_by(models):
    """eval's table did not say which threshold left its documents unsure (the model's own
    is not on the command line); an online run said 0.9999999 as 'p < 1' and '1 documents'."""
    own, _ = models
    table = run("eval", "-m", own, MAIL / "test" / "spam", MAIL / "test" / "ham").stdout
    assert "unsure below\t0.999\n" in table
    online = run("eval", "--online", "-m", own, "--unsure-below", "0.9999999", MAIL / "test" / "spam")
    assert "unsure (p < 0.9999999)" in online.stdout, online.stdout
    from nbtext.report.text import online_table

    online = run(
        "eval", "--online", "--format", "json", "--unsure-below", "0.9", MAIL / "train" / "spam", MAIL / "train" / "ham"
    )
    report = json.loads(online.stdout)
    report["unsure"].update(n=1, errors=0)
    assert " 1 document, 0 of the" in online_table(report)


@pytest.mark.parametrize("given", ["0.9999999999999999", "1", "0.999"])
def test_every_report_says_a_threshold_as_given(tmp_path, given):
    """train's summary and info said a model's own threshold by repr (1 as 1.0), eval and an
    online run by 15 digits (0.9999999999999999 as 1, which it is not): each now says it
    by report.text.threshold_said, as given."""
    model, folders = tmp_path / "m", [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    trained = run("train", "--unsure-below", given, "-o", model, *folders)
    assert f"decision: unsure when the winning class's probability is below {given}; " in trained.stderr
    assert f"probability is below {given}{',' if float(given) < 1 else ' ('}" in run("info", "-m", model).stdout
    assert f"unsure below\t{given}\n" in run("eval", "-m", model, *folders).stdout
    assert f"unsure (p < {given})" in run("eval", "--online", "-m", model, *folders).stdout


def older_model_with_a_pending_record(plain, folder):
    """(an older build's model file of the classes ham and unsure (`plain`'s spam renamed), with
    a pending record of a ham document, in `folder`; the class ham, the document's folder)."""
    from test_hostile_models import assemble, sample_parts

    from nbtext.modelfile.container import PENDING_MAGIC

    renamed, kept = "spam", "ham"  # (the classes stay in order: ham, unsure)
    learned = folder / "learned.model"
    learned.write_bytes(plain.read_bytes())
    first = folder / "first"
    first.mkdir()
    (first / "a.txt").write_text("cheap pills now, cheaper pills")
    result = run("train", "--update", "-m", learned, f"{kept}={first}")
    assert result.exit_code == 0, result.stderr
    header, payload, rest = sample_parts(learned.read_bytes())
    assert PENDING_MAGIC in rest  # (the document went to the pending section)
    header["classes"] = ["unsure" if label == renamed else label for label in header["classes"]]
    assert header["classes"] == sorted(header["classes"])
    older = folder / "older.model"
    older.write_bytes(assemble(header, payload, version=3) + rest)
    return older, kept, first


def test_an_older_model_of_such_a_class_is_read_with_its_pending_records(models, tmp_path):
    """Loading a model file with pending records counts them in (classifier.counted) through
    model_of_table, which refused a class named unsure: an older build's file of
    such a class failed to load ("is corrupt") once it held a pending record, where the same
    file without one was read."""
    older, kept, _ = older_model_with_a_pending_record(models[1], tmp_path)
    result = run("predict", "-m", older, MAIL / "test")
    assert result.exit_code == 0, result.stderr
    assert "\tunsure\t" in result.stdout and f"\t{kept}\t" in result.stdout


def test_an_older_model_of_such_a_class_is_changed_by_no_way(models, tmp_path):
    """Changing an older build's model of a class named unsure was taken in place
    by its pending section (a record appended) but refused the full way (to another file,
    or once the section is due to be folded): the same command, refused weeks later. Now
    refused either way, in one line, the file left as it was."""
    older, kept, first = older_model_with_a_pending_record(models[1], tmp_path)
    second = tmp_path / "second"
    second.mkdir()
    (second / "a.txt").write_text("free offer of pills")
    written = older.read_bytes()
    for output in ([], ["-o", tmp_path / "other.model"]):  # (in place: the pending section's way)
        one_line_error(run("train", "--update", "-m", older, *output, f"{kept}={second}"), REFUSED_UNSURE)
        assert older.read_bytes() == written
    one_line_error(run("forget", "-m", older, first), REFUSED_UNSURE)
    empty = tmp_path / "empty"  # (a learn-on-error job's folder: refused on its first run, not weeks later)
    empty.mkdir()
    one_line_error(run("train", "--update", "-m", older, f"{kept}={empty}"), REFUSED_UNSURE)
    assert older.read_bytes() == written
    assert not (tmp_path / "other.model").exists()


def test_a_new_class_named_unsure_is_refused_before_anything_is_learned(models, tmp_path):
    """train --update --new-classes of an empty learn folder unsure=DIR said 'nothing to
    learn' (exit 0) where the first message in it is refused: labels.new_classes_refused says
    it (the rule of every change that takes labels into a model: update, merge into one of
    them), on the first run and before anything is counted."""
    copy = tmp_path / "copy.model"
    copy.write_bytes(models[1].read_bytes())
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(run("train", "--update", "--new-classes", "-m", copy, f"unsure={empty}"), REFUSED_UNSURE)
    assert copy.read_bytes() == models[1].read_bytes()


def test_a_class_named_error_is_taken(tmp_path):
    """Only filter says X-Nbtext-Class: error (a message it could not classify); a class
    'error' (of log lines, say) is a common one, and every other command tells it apart."""
    for label, text in (("error", "disk failed to mount"), ("info", "service started fine")):
        (tmp_path / label).mkdir()
        for i in range(3):
            (tmp_path / label / f"{i}.txt").write_text(f"{text} {i}")
    result = run("train", "--min-count", "1", "-o", tmp_path / "m", tmp_path / "error", tmp_path / "info")
    assert result.exit_code == 0, result.stderr
    assert run("predict", "-m", tmp_path / "m", input="the disk failed again").stdout.strip() == "error"


def test_an_online_run_refuses_a_class_named_unsure_as_a_training_does(models, tmp_path):
    """eval --online from nothing makes a class of each label, as a training does: a class
    'unsure' was counted with the messages the run left unsure. From a model, a new class
    'unsure' too; a model's own classes are its own."""
    folder = tmp_path / "unsure"
    folder.mkdir()
    for i in range(3):
        (folder / f"{i}.txt").write_text(f"maybe pills maybe lunch {i}")
    one_line_error(run("eval", "--online", MAIL / "train" / "spam", folder), REFUSED_UNSURE)
    one_line_error(run("eval", "--online", "-m", models[1], MAIL / "train" / "spam", folder), REFUSED_UNSURE)
    assert run("eval", "--online", "-m", models[1], MAIL / "test" / "spam", MAIL / "test" / "ham").exit_code == 0


@pytest.mark.parametrize(
    "command",
    [
        ["train", "-o", "{model}"],
        ["eval", "--folds", "2"],
        ["eval", "--online"],
        ["eval", "--online", "-m", "{plain}"],
    ],
    ids=["train", "eval --folds", "eval --online from nothing", "eval --online from a model"],
)
def test_every_command_that_makes_classes_refuses_unsure_before_it_reads_a_document(
    models, tmp_path, monkeypatch, command
):
    """Refused once the whole corpus had been counted (train, on a cluster too; eval --folds,
    which trains a model of them in each fold): the labels of CLASS_DIR arguments are known
    before anything is read, and are checked then (reading.sources.class_sources,
    classes_made). An online run makes a class of each label its model lacks, and checks
    them before a document is read."""
    from nbtext.reading import documents

    def read(*args, **kwargs):
        raise AssertionError("a document was read")

    monkeypatch.setattr(documents, "read_cut", read)
    folder = tmp_path / "unsure"
    folder.mkdir()
    (folder / "a.txt").write_text("maybe")
    args = [arg.format(model=tmp_path / "m", plain=models[1]) for arg in command]
    one_line_error(run(*args, "-j", "1", MAIL / "train" / "spam", folder), REFUSED_UNSURE)
    if command[0] == "train":
        from nbtext.errors import NbtextError
        from nbtext.jobs.cluster import train_on_cluster

        with pytest.raises(NbtextError, match=REFUSED_UNSURE):  # (a cluster's: before its client is asked)
            train_on_cluster(None, [str(MAIL / "train" / "spam"), f"unsure={folder}"], make_settings())
