"""An existing model takes a class it does not have only when told to (issue 35): every way
labels enter one (train --update through click or the light learner, a few messages through
the pending section or many the full way, a table, merge into one of its models) refuses a
new class in one line with nothing written, unless --new-classes is given. And a learn job
with nothing to learn still says when its model is missing (a wrong -m in a cron line)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import nbtext

from conftest import ROOT, one_line_error, run

NBTEXT = Path(sys.executable).with_name("nbtext")
MAIL = ROOT / "corpora" / "mail"
needs_executable = pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")


def executable(*args):
    """`nbtext ARGS` as a cron line runs it (stdin and stderr no terminal: the light learner)."""
    result = subprocess.run(
        [NBTEXT, *map(str, args)], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    return result.returncode, result.stderr


def in_process(*args):
    result = run(*args)
    return result.exit_code, result.stderr


WAYS = [pytest.param(in_process, id="click"), pytest.param(executable, id="executable", marks=needs_executable)]


@pytest.fixture(scope="module")
def trained_model(tmp_path_factory):
    """The demo corpus's model (spam and ham), trained once for the module."""
    path = tmp_path_factory.mktemp("trained") / "mail.model"
    assert run("train", "-o", path, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    return path


@pytest.fixture
def model(tmp_path, trained_model):
    """A copy of trained_model (byte for byte a training's file, mode included) in the test's own
    folder, for the test to change."""
    path = tmp_path / "mail.model"
    shutil.copy(trained_model, path)
    return path


def folder_of(tmp_path, name, count, label="ham"):
    """A folder named `name` of `count` of the demo corpus's test messages of `label`."""
    folder = tmp_path / name
    folder.mkdir()
    for source in sorted((MAIL / "test" / label).iterdir())[:count]:
        (folder / source.name).write_bytes(source.read_bytes())
    return folder


def refused(status, stderr, label):
    assert status == 1 and stderr.count("\n") == 1 and stderr.startswith("Error: "), stderr
    assert f"new class {label!r} (the model has ham, spam)" in stderr and "--new-classes" in stderr


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("count", [1, 30], ids=["through the pending section", "the full way"])
@pytest.mark.parametrize("named", [False, True], ids=["folder name", "LABEL=PATH"])
def test_a_new_class_is_refused_with_nothing_written_unless_asked(model, tmp_path, way, count, named):
    """A folder given without LABEL= (here new-spam/) is a class of its own name, the
    mistake the cron line made; LABEL=PATH with a label the model lacks, the same rule."""
    folder = folder_of(tmp_path, "new-spam", count)
    spec, label = (f"eggs={folder}", "eggs") if named else (folder, "new-spam")
    before = model.read_bytes()
    refused(*way("train", "--update", "-m", model, spec), label)
    known = folder_of(tmp_path, "more-spam", 2, "spam")
    refused(*way("train", "--update", "-q", "-m", model, f"spam={known}", spec), label)  # beside a known one
    assert model.read_bytes() == before  # (and no temporary left beside it: only its lock file)
    assert {p.name for p in tmp_path.iterdir()} <= {"mail.model", "mail.model.lock", "new-spam", "more-spam"}
    status, stderr = way("train", "--update", "--new-classes", "-m", model, spec)
    assert status == 0, stderr
    assert nbtext.load(str(model)).classes == sorted(["ham", "spam", label])
    assert way("train", "--update", "-m", model, spec)[0] == 0  # a class it has now: no option needed


def test_a_label_of_a_table_is_held_to_the_rule_too(model, tmp_path):
    table = tmp_path / "more.tsv"
    table.write_text("spam\tfree prize money now\neggs\tscrambled eggs on toast\n")
    before = model.read_bytes()
    one_line_error(run("train", "--update", "-m", model, "--table", table, "--no-header"), "new class 'eggs'")
    assert model.read_bytes() == before
    assert run("train", "--update", "--new-classes", "-m", model, "--table", table, "--no-header").exit_code == 0
    assert nbtext.load(str(model)).classes == ["eggs", "ham", "spam"]


def test_another_output_is_not_written_either(model, tmp_path):
    folder = folder_of(tmp_path, "new-spam", 3)
    one_line_error(run("train", "--update", "-m", model, "-o", tmp_path / "out.model", folder), "new class")
    assert not (tmp_path / "out.model").exists()


def test_merge_into_one_of_its_models_is_held_to_the_rule(model, tmp_path):
    """merge -o A A B adds B's documents to the existing model A: B's classes A lacks need
    --new-classes; a merge into a new file makes a new model of whatever classes it is given."""
    recipes = tmp_path / "recipes.model"
    assert (
        run(
            "train", "-o", recipes, f"spam={MAIL / 'test' / 'spam'}", f"eggs={folder_of(tmp_path, 'eggs', 5)}"
        ).exit_code
        == 0
    )
    before = model.read_bytes()
    result = run("merge", "-o", model, model, recipes)
    one_line_error(result, "new class 'eggs' (the model has ham, spam)")
    assert "--new-classes" in result.stderr and model.read_bytes() == before
    assert run("merge", "-o", tmp_path / "all.model", model, recipes).exit_code == 0
    assert run("merge", "--new-classes", "-o", model, model, recipes).exit_code == 0
    assert model.read_bytes() == (tmp_path / "all.model").read_bytes()


def test_new_classes_goes_with_update(tmp_path):
    result = run("train", "--new-classes", "-o", tmp_path / "m", MAIL / "train" / "spam", MAIL / "train" / "ham")
    assert result.exit_code == 2 and "--new-classes goes with --update" in result.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("wrong", ["missing", "folder", "text file", "truncated model"])
def test_a_wrong_model_is_an_error_even_with_nothing_to_learn(model, tmp_path, way, wrong):
    """The learn-on-error cron line with empty folders (most of its runs) said nothing and
    exited 0 whatever -m named: now the model is checked before 'nothing to learn'."""
    spam, ham = tmp_path / "learn-spam", tmp_path / "learn-ham"
    spam.mkdir()
    ham.mkdir()
    path = {
        "missing": tmp_path / "nosuch.model",
        "folder": tmp_path / "learn-spam",
        "text file": tmp_path / "notes.txt",
        "truncated model": tmp_path / "short.model",
    }[wrong]
    (tmp_path / "notes.txt").write_text("not a model\n")
    (tmp_path / "short.model").write_bytes(model.read_bytes()[:200])
    for quiet in ([], ["-q"]):
        status, stderr = way("train", "--update", *quiet, "-m", path, f"spam={spam}", f"ham={ham}")
        assert status == 1 and stderr.count("\n") == 1 and stderr.startswith("Error: "), stderr
        assert str(path) in stderr
    status, stderr = way("train", "--update", "-m", model, f"spam={spam}", f"ham={ham}")
    assert status == 0 and stderr == "nbtext: nothing to learn: every folder given is empty; model unchanged\n"
    assert way("train", "--update", "-q", "-m", model, f"spam={spam}", f"ham={ham}") == (0, "")


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("named", [False, True], ids=["folder name", "LABEL=PATH"])
def test_a_new_class_is_refused_even_with_nothing_to_learn(model, tmp_path, way, named):
    """The cron line with its learn folders given without LABEL= (each a class of its own
    name) said nothing and exited 0 while they were empty, and failed only on the day mail
    first reached them: a label the model lacks is refused as a wrong -m is, empty or not
    (the README's promise), and taken with --new-classes (still nothing learned)."""
    spam, ham = tmp_path / ".Learn-Spam", tmp_path / ".Learn-Ham"
    for folder in (spam, ham):
        for sub in ("cur", "new", "tmp"):
            (folder / sub).mkdir(parents=True)
    specs, label = ([f"spam={spam}", ham], ".Learn-Ham") if not named else ([f"spam={spam}", f"eggs={ham}"], "eggs")
    before = model.read_bytes()
    for quiet in ([], ["-q"]):
        refused(*way("train", "--update", *quiet, "-m", model, *specs), label)
    assert model.read_bytes() == before
    status, stderr = way("train", "--update", "--new-classes", "-m", model, *specs)
    assert status == 0 and stderr == "nbtext: nothing to learn: every folder given is empty; model unchanged\n"
    assert model.read_bytes() == before


@pytest.mark.parametrize("way", WAYS)
def test_another_output_is_written_with_nothing_to_learn(model, tmp_path, way):
    """train --update -m A -o B writes B, the model with what was learned: with empty
    folders that is A's model (the light path once said 'model unchanged' and wrote no B,
    where a folder of messages A already knew wrote it)."""
    (tmp_path / "learn-spam").mkdir()
    from nbtext.reading.documents import document_key

    known = tmp_path / "known-spam"  # messages the model learned in its training (its TONE pass chose them)
    known.mkdir()
    learned = set(nbtext.load(model).journal)
    for source in [p for p in sorted((MAIL / "train" / "spam").iterdir()) if document_key(p.read_bytes()) in learned][
        :2
    ]:
        (known / source.name).write_bytes(source.read_bytes())
    assert len(list(known.iterdir())) == 2
    for folder, out in ((tmp_path / "learn-spam", "empty.model"), (known, "known.model")):
        status, stderr = way("train", "--update", "-q", "-m", model, "-o", tmp_path / out, f"spam={folder}")
        assert status == 0, stderr
        assert (tmp_path / out).exists(), out
    same = (tmp_path / "empty.model").read_bytes() == (tmp_path / "known.model").read_bytes()
    assert same, "the models differ"  # (a bool: pytest's diff of two model files' bytes took 7 minutes)


SPEC_KINDS = {  # how an argument names its class: (the spec of folder F, its label); a label the model lacks
    "LABEL=PATH": lambda folder: (f"spam={folder}", "spam"),
    "LABEL=PATH, a new class": lambda folder: (f"eggs={folder}", "eggs"),
    "a folder's own name": lambda folder: (str(folder), folder.name),
    "LABEL=- (stdin)": lambda folder: ("ham=-", "ham"),
    "LABEL=- (stdin), a new class": lambda folder: ("eggs=-", "eggs"),
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(  # the cron line of the report: spam=.Learn-Spam holding a spam, .Learn-Ham empty
    kinds=["LABEL=PATH", "a folder's own name"], holding=[True, False, False], way=WAYS[-1].values[0]
)
@given(
    kinds=st.lists(st.sampled_from(sorted(SPEC_KINDS)), min_size=1, max_size=3),
    holding=st.lists(st.booleans(), min_size=3, max_size=3),
    way=st.sampled_from([in_process, executable]),
)
def test_a_label_the_model_lacks_is_refused_whatever_its_folders_hold(model, tmp_path_factory, kinds, holding, way):
    """A cron line `spam=.Learn-Spam .Learn-Ham` (no ham=) exited 0 while .Learn-Ham was empty
    and .Learn-Spam was not, and failed only once a ham landed there: every label the arguments
    name, in each way of naming one, is checked against the model's classes before anything is
    read, whichever folders hold documents (stdin: a message, or none), by click and by the
    light learner. Nothing is learned when one is refused."""
    folder_root = tmp_path_factory.mktemp("learn")
    specs, labels, stdin = [], [], None
    for n, kind in enumerate(kinds):
        if "stdin" in kind and stdin is not None:
            continue  # (one stdin)
        folder = folder_root / f".Learn-{n}"
        for sub in ("cur", "new", "tmp"):
            (folder / sub).mkdir(parents=True)
        if holding[n]:
            source = sorted((MAIL / "test" / "spam").iterdir())[n]
            (folder / "cur" / source.name).write_bytes(source.read_bytes())
        spec, label = SPEC_KINDS[kind](folder)
        if "stdin" in kind:
            stdin = (MAIL / "test" / "ham" / sorted(os.listdir(MAIL / "test" / "ham"))[n]).read_bytes() * holding[n]
        specs.append(spec)
        labels.append(label)
    before = model.read_bytes()
    if way is in_process or not NBTEXT.exists():
        result = run("train", "--update", "-q", "-m", model, *specs, input=stdin)
        status, stderr = result.exit_code, result.stderr
    else:
        done = subprocess.run(
            [NBTEXT, "train", "--update", "-q", "-m", model, *specs],
            input=stdin or b"",
            capture_output=True,
            timeout=120,
        )
        status, stderr = done.returncode, done.stderr.decode()
    new = sorted(set(labels) - {"ham", "spam"})
    if new:
        assert status == 1 and stderr.count("\n") == 1 and stderr.startswith("Error: new class"), stderr
        assert all(repr(label) in stderr for label in new) and "--new-classes" in stderr
        assert model.read_bytes() == before
    else:
        assert status == 0, stderr
    model.write_bytes(before)
