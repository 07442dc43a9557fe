import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import nbtext
from nbtext.cli.commands import cli

from conftest import GENERAL, ROOT, one_line_error, read_labelled, run, trained_on_mail

DEMO = ROOT / "corpora" / "mail"
NBTEXT = Path(sys.executable).with_name("nbtext")


@pytest.fixture(scope="module")
def demo_model(general_demo_model):
    """conftest's demo model by the general defaults: these tests are not about a spam filter's."""
    return general_demo_model


def test_train_writes_a_model_and_a_summary(tmp_path):
    result = run("train", "-o", tmp_path / "m", "junk=" + str(DEMO / "train" / "spam"), DEMO / "train" / "ham")
    assert result.exit_code == 0
    assert "39 documents" not in result.stdout and result.stdout == ""
    learned = nbtext.load(tmp_path / "m").class_count.astype(int).tolist()  # (by the spam preset's TONE pass)
    said = f"{sum(learned)} documents (ham {learned[0]}, junk {learned[1]}) learned by a TONE pass of the 78 it read"
    assert said in result.stderr
    assert nbtext.load(tmp_path / "m").classes == ["ham", "junk"]


def test_default_model_path_and_env_var(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("train", DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    assert (tmp_path / "nbtext.model").exists()
    env_model = tmp_path / "env.model"
    assert (
        run("train", DEMO / "train" / "spam", DEMO / "train" / "ham", env={"NBTEXT_MODEL": str(env_model)}).exit_code
        == 0
    )
    assert env_model.exists()
    result = run("predict", input="free prize click now", env={"NBTEXT_MODEL": str(env_model)})
    assert result.stdout == "spam\n"


def test_predict_stdin_prints_the_label_alone(demo_model):
    result = run("predict", "-m", demo_model, input="Claim your free prize now, click the link")
    assert result.exit_code == 0 and result.stdout == "spam\n"
    result = run("predict", "-m", demo_model, "-", input="Meeting notes for Thursday lunch")
    assert result.stdout == "ham\n"


def test_empty_stdin_gets_the_prior_label(tmp_path):
    spam, ham = tmp_path / "spam", tmp_path / "ham"
    spam.mkdir(), ham.mkdir()
    (spam / "1").write_text("win money")
    for i in range(3):
        (ham / str(i)).write_text("hello friend")
    run("train", *GENERAL, "-o", tmp_path / "m", spam, ham)
    assert run("predict", "-m", tmp_path / "m", input="").stdout == "ham\n"


def test_predict_paths_in_input_order(demo_model, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("Free cash prize, click now")
    folder = DEMO / "test" / "ham"
    result = run("predict", "-m", demo_model, note, folder)
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    assert [l[0] for l in lines] == [str(note)] + sorted(str(p) for p in folder.iterdir())
    assert lines[0][1] == "spam" and all(len(l) == 3 and 0.5 <= float(l[2]) <= 1 for l in lines)


def test_predict_json_and_proba(demo_model):
    files = sorted((DEMO / "test" / "spam").iterdir())[:3]
    result = run("predict", "-m", demo_model, "--format", "json", *files)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["path"] for r in rows] == [str(f) for f in files]
    for r in rows:
        assert set(r["probabilities"]) == {"ham", "spam"}
        assert sum(r["probabilities"].values()) == pytest.approx(1.0)
        assert r["label"] == max(r["probabilities"], key=r["probabilities"].get)
    assert not run("predict", "-m", demo_model, "--proba", *files).stdout.startswith("#")  # pipelines stay clean
    assert (
        run("predict", "-m", demo_model, "--proba", "--header", *files).stdout
        == run("predict", "-m", demo_model, "--proba", "--column-names", *files).stdout
    )  # --header, as it used to
    result = run("predict", "-m", demo_model, "--proba", "--column-names", *files)
    header, *lines = result.stdout.splitlines()
    assert header == "#path\tlabel\tprobability\tham\tspam"
    for line in lines:
        _, label, p, ham, spam = line.split("\t")
        assert p == (spam if label == "spam" else ham)


def test_eval_matches_a_hand_count(demo_model):
    result = run("eval", "-m", demo_model, "--format", "json", DEMO / "test" / "spam", DEMO / "test" / "ham")
    report = json.loads(result.stdout)
    model = nbtext.load(demo_model)
    texts, labels = read_labelled(DEMO / "test")
    guesses = model.predict(texts)
    assert report["n"] == len(labels) == 26
    assert report["accuracy"] == pytest.approx(sum(g == t for g, t in zip(guesses, labels)) / 26)
    assert report["classes"] == ["ham", "spam"]
    truth_spam = [t == "spam" for t in labels]
    guess_spam = [g == "spam" for g in guesses]
    tp = sum(a and b for a, b in zip(truth_spam, guess_spam))
    assert report["per_class"]["spam"]["precision"] == pytest.approx(tp / sum(guess_spam))
    assert report["per_class"]["spam"]["recall"] == pytest.approx(tp / sum(truth_spam))
    assert report["confusion"][1][1] == tp and sum(map(sum, report["confusion"])) == 26
    table = run("eval", "-m", demo_model, DEMO / "test" / "spam", DEMO / "test" / "ham").stdout
    assert f"accuracy\t{report['accuracy']:.4f}" in table and "confusion" in table


def test_predict_alpha_override_changes_probabilities(demo_model):
    doc = sorted((DEMO / "test" / "spam").iterdir())[0]
    default = run("predict", "-m", demo_model, doc).stdout
    smoothed = run("predict", "-m", demo_model, "--alpha", "5", doc).stdout
    assert default != smoothed
    one_line_error(run("predict", "-m", demo_model, "--alpha", "0", doc), "--alpha must be a number > 0")


def test_hidden_files_are_skipped_and_bad_bytes_survive(tmp_path):
    for label, text in (("spam", b"cheap \xff\xfe pills"), ("ham", b"lunch at noon")):
        (tmp_path / label).mkdir()
        (tmp_path / label / "a").write_bytes(text)
        (tmp_path / label / ".hidden").write_bytes(b"x" * 10)
    assert run("train", "--min-count", "1", "-o", tmp_path / "m", tmp_path / "spam", tmp_path / "ham").exit_code == 0
    model = nbtext.load(tmp_path / "m")
    assert model.class_count.tolist() == [1, 1] and "xxxxxxxxxx" not in model.vocabulary.tokens


def test_errors_are_one_line(tmp_path, demo_model):
    spam = DEMO / "train" / "spam"
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(run("train", "-o", tmp_path / "m", spam, tmp_path / "nope"), "does not exist")
    one_line_error(run("train", "-o", tmp_path / "m", spam, empty), "class 'empty' has no documents")
    one_line_error(run("train", "-o", tmp_path / "m", spam), "need at least two classes")
    one_line_error(run("train", "-o", tmp_path / "no" / "m", spam, empty), "does not exist")
    one_line_error(run("train", "-o", tmp_path, spam, empty), "is a folder; give a file name with -o")
    one_line_error(run("train", "--model", "gaussianx", spam, empty), "see 'nbtext train --help'")
    assert run("train", "--model", "gaussianx", spam, empty).exit_code == 2
    one_line_error(run("train", "--alpha", "-1", "-o", tmp_path / "m", spam, DEMO / "train" / "ham"), "--alpha")
    one_line_error(run("predict", "-m", tmp_path / "missing.model", input="x"), "does not exist")
    (tmp_path / "corrupt.model").write_bytes(b"NBTEXT-MODEL\n\x01\x00")
    one_line_error(run("predict", "-m", tmp_path / "corrupt.model", input="x"), "truncated")
    other = tmp_path / "other"
    other.mkdir()
    (other / "1").write_text("x")
    one_line_error(run("eval", "-m", demo_model, other), "no document has a label the model knows (labels other")


def test_output_is_checked_before_reading_the_corpus(tmp_path):
    result = run("train", "-o", tmp_path / "missing" / "m", tmp_path / "also-missing-class")
    one_line_error(result, "cannot write")


def test_every_command_help_has_an_example():
    """Each command's --help shows at least two example command lines of its own (indented
    lines that start with `nbtext COMMAND`, which the Usage line is not)."""
    for command in ("train", "predict", "eval", "info", "filter"):
        result = run(command, "--help")
        examples = [
            line
            for line in result.stdout.splitlines()
            if line.lstrip().startswith(f"nbtext {command} ") and line.startswith("  ")
        ]
        assert result.exit_code == 0 and len(examples) >= 2, (command, result.stdout)
    assert run("--version").stdout.strip().endswith(nbtext.__version__)


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
def test_installed_executable_with_stdin_and_a_closed_pipe(demo_model, tmp_path):
    result = subprocess.run(
        [NBTEXT, "predict", "-m", demo_model],
        input=b"Cheap replica watches, order now",
        capture_output=True,
        check=True,
    )
    assert result.stdout == b"spam\n" and result.stderr == b""
    # a reader that goes away early: quiet, no traceback
    pipeline = subprocess.run(
        f"'{NBTEXT}' predict -m '{demo_model}' '{DEMO}' | head -1",
        shell=True,
        capture_output=True,
    )
    assert len(pipeline.stdout.splitlines()) == 1 and pipeline.stderr == b""
    result = subprocess.run([sys.executable, "-m", "nbtext", "--version"], capture_output=True, check=True)
    assert nbtext.__version__ in result.stdout.decode()


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
@pytest.mark.parametrize(
    "args",
    [
        ["predict", "-m", "{model}"],
        ["predict", "--model-file={model}", "-"],
        ["predict", "-m", "{missing}"],
        ["predict", "-m", "{corrupt}"],
        ["filter", "-m", "{model}"],
        ["filter", "-m", "{missing}"],
        ["predict", "-m", "{model}", "--is", "spam"],
        ["predict", "--is=ham", "-v", "--model-file", "{model}", "-"],
        ["predict", "-m", "{model}", "--is", "nosuchclass", "-v"],
        ["predict", "-m", "{missing}", "--is", "spam"],
    ],
)
@pytest.mark.parametrize("stdin", [b"Subject: win\n\nfree prize money now\n", b"lunch notes", b""])
def test_the_fast_start_path_answers_as_the_full_command_line(demo_model, tmp_path, args, stdin):
    """`nbtext predict` of stdin (also --is) and `nbtext filter` skip click when their
    arguments are plain (nbtext.cli.oneshot); they must answer exactly as the click commands do."""
    (tmp_path / "corrupt").write_bytes(b"NBTEXT-MODEL\n\x01")
    args = [a.format(model=demo_model, missing=tmp_path / "missing", corrupt=tmp_path / "corrupt") for a in args]
    fast = subprocess.run([NBTEXT, *args], input=stdin, capture_output=True)
    full = CliRunner().invoke(cli, args, input=stdin)
    assert fast.returncode == full.exit_code
    assert fast.stdout == full.stdout_bytes
    assert fast.stderr.decode() == full.stderr


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
@pytest.mark.parametrize(
    "shape",
    [
        "message",
        "envelope",
        "mbox of two",
        "empty",
        "tab\tname",
        "folder",
        "missing",
        "not utf-8 \udcff",
        "corrupt model",
    ],
)
def test_predict_of_one_file_answers_as_the_full_command_line(demo_model, tmp_path, shape):
    """`nbtext predict FILE` of one message takes the one-message path (no click, no numpy);
    whatever FILE is (an mbox of one or of two, a folder, a name to escape), the
    output, messages and exit status are those of the full command line."""
    message = b"Subject: win\n\nfree prize money now\n"
    envelope = b"From a@b.example Mon Jun 24 17:54:30 2002\n"
    path, model = tmp_path / shape, demo_model
    if shape == "folder":
        path.mkdir()
        (path / "m").write_bytes(message)
    elif shape != "missing":
        path.write_bytes(
            {
                "empty": b"",
                "envelope": envelope + message,
                "mbox of two": envelope + message + b"\n" + envelope + b"Subject: lunch\n\nat noon\n",
            }.get(shape, message)
        )
    if shape == "corrupt model":
        model = tmp_path / "corrupt.model"
        model.write_bytes(b"NBTEXT-MODEL\n\x01")
    args = ["predict", "-m", str(model), str(path)]
    fast = subprocess.run([NBTEXT, *args], capture_output=True, timeout=60)
    full = subprocess.run([NBTEXT, *args[:1], "-j", "1", *args[1:]], capture_output=True, timeout=60)  # click's path
    assert (fast.returncode, fast.stdout, fast.stderr) == (full.returncode, full.stdout, full.stderr)
    # served by the one-message path (not the empty document: the prior alone, a tie under this balanced
    # model, which the model loaded whole decides, as every one-message command hands it ties)
    if shape in ("message", "envelope", "tab\tname"):
        code = (
            "import sys; from nbtext.cli.oneshot import fast; "
            f"fast({args!r}[:]); print(sorted(m for m in ('click', 'numpy') if m in sys.modules))"
        )
        served = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert served.stdout.splitlines()[-1] == "[]", served.stderr


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
def test_shell_completion_of_commands_and_paths():
    import os

    def complete(words, cword):
        env = {**os.environ, "_NBTEXT_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
        return subprocess.run([NBTEXT], env=env, capture_output=True, text=True).stdout.split()

    assert complete("nbtext pre", 1) == ["plain,predict"]
    assert complete("nbtext predict -m te", 3) == ["file,te"]  # a path: the shell completes it
    assert complete("nbtext train --model ber", 3) == ["plain,bernoulli"]


@pytest.mark.filterwarnings("default::UserWarning")  # the command line prints them as one line each
def test_eval_warns_about_one_class_and_unknown_labels(demo_model, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "1").write_text("free prize")
    (other / "2").write_text("lunch")
    result = run("eval", "-m", demo_model, "--format", "json", other, DEMO / "test" / "spam")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        "nbtext: warning: 2 documents with labels the model does not know (other; its classes: ham, spam) left out "
        "of the report",
        "nbtext: warning: every document is of one class (spam): the other classes' recall and the ROC AUC say nothing",
    ]
    assert json.loads(result.stdout)["n"] == len(list((DEMO / "test" / "spam").iterdir()))


def test_fasttext_habits(demo_model, tmp_path):
    """-k N, --threshold P, --format fasttext, and --fasttext FILE (labels ignored)."""
    import numpy as np

    model = nbtext.load(demo_model)
    texts = ["claim your free prize now", "meeting notes for lunch", ""]
    probabilities = model.predict_proba(texts)
    lines = tmp_path / "test.txt"
    lines.write_text("__label__spam claim your free prize now\nmeeting notes for lunch __label__ham\n\n")
    out = run("predict", "-m", demo_model, "-k", "2", "--format", "fasttext", "--fasttext", lines).stdout.splitlines()
    assert len(out) == 3  # a line for every line, the empty one included (the prior decides it)
    for line, row in zip(out, probabilities):
        order = np.argsort(-row)
        assert line == " ".join(f"__label__{model.classes[k]} {row[k]:.4f}" for k in order)
    top = run("predict", "-m", demo_model, "-k", "2", "--threshold", "0.5", "--fasttext", lines).stdout.splitlines()
    for i, (line, row) in enumerate(zip(top, probabilities)):
        kept = [
            value
            for k in np.argsort(-row, kind="stable")
            if row[k] >= 0.5
            for value in (model.classes[k], f"{row[k]:.4f}")
        ]
        decided = model.classes[int(np.argmax(row))]
        assert line.split("\t") == [f"{lines}:{i + 1}", decided] + kept and kept  # the empty line: a tie, both at 0.5
    one = run("predict", "-m", demo_model, "--threshold", "0.99999999", input=texts[1])
    decided = model.classes[int(np.argmax(probabilities[1]))]
    assert one.exit_code == 0 and one.stdout == f"-\t{decided}\n"  # no label reaches the threshold: the decision alone
    unsure = run("predict", "-m", demo_model, "--unsure-below", "0.9999999", "-k", "2", input=texts[1])
    assert unsure.stdout.split("\t")[1] == "unsure"  # column 2 is the decision, -k or not
    record = json.loads(run("predict", "-m", demo_model, "-k", "1", "--format", "json", input=texts[0]).stdout)
    assert record["top"] == [[model.classes[int(probabilities[0].argmax())], pytest.approx(probabilities[0].max())]]


def test_counts_of_one_are_singular(tmp_path):
    """'1 document', 'merged 1 model' (they said '1 documents', 'merged 1 models')."""
    from nbtext.report.text import counted

    assert [counted(n, "document") for n in (0, 1, 2, 1185)] == [
        "0 documents",
        "1 document",
        "2 documents",
        "1,185 documents",
    ]
    model = tmp_path / "m"
    trained_on_mail(model)
    merged = run("merge", "-o", tmp_path / "all", model)
    assert merged.stderr.startswith("merged 1 model: "), merged.stderr


def test_predict_of_nothing_says_so(demo_model, tmp_path):
    """An empty folder (or an empty line stream) is no error, but not silence either."""
    (tmp_path / "empty").mkdir()
    for args, stdin in (([tmp_path / "empty"], None), (["--lines", "-"], "")):
        result = run("predict", "-m", demo_model, *args, input=stdin)
        assert result.exit_code == 0 and result.stdout == ""
        assert result.stderr == "nbtext: no documents to classify: the input given holds none\n"


def test_a_tables_header_row_and_the_column_names_line_are_two_options(demo_model, tmp_path):
    """`predict --table sms.tsv --proba --header` dropped the first SMS: --header named both
    the table's first row and the #path line. With a table it is the table's; --column-names
    is the line's."""
    table = tmp_path / "sms.tsv"
    table.write_text("ham\tsee you at lunch\nspam\tWIN a free prize now\nham\tlunch at noon?\n")
    rows = run("predict", "-m", demo_model, "--table", table, "--proba", "--no-header").stdout.splitlines()
    assert len(rows) == 3
    named = run("predict", "-m", demo_model, "--table", table, "--proba", "--column-names").stdout.splitlines()
    assert named[0].startswith("#path\t") and named[1:] == rows
    headed = run("predict", "-m", demo_model, "--table", table, "--proba", "--header").stdout.splitlines()
    assert headed == rows[1:]  # the first row named the columns: two documents, no #path line


def test_eval_with_an_unsure_band_names_what_it_counts(demo_model):
    """`documents` is every document; `decided` those the scores are of (it said
    `documents 1136` for a test set of 1,185 when 49 were unsure)."""
    test = ROOT / "corpora" / "mail" / "test"
    text = run("eval", "-m", demo_model, "--unsure-below", "0.9", test / "spam", test / "ham").stdout
    fields = dict(line.split("\t", 1) for line in text.splitlines()[:8] if "\t" in line)
    assert int(fields["documents"]) == 26 == int(fields["decided"]) + int(fields["unsure"])


def test_the_eval_report_lines_up_on_a_terminal_and_stays_tsv_in_a_pipe():
    """20 classes of long names: on a terminal, padded columns (numbered in the confusion
    matrix); in a pipe, the tab-separated table as before."""
    from nbtext.report.text import format_report

    classes = [f"comp.sys.group{k}.misc" for k in range(20)]
    report = {
        "n": 400,
        "accuracy": 0.8,
        "classes": classes,
        "macro_precision": 0.8,
        "macro_recall": 0.8,
        "macro_f1": 0.8,
        "per_class": {c: {"precision": 0.8, "recall": 0.8, "f1": 0.8, "support": 20} for c in classes},
        "confusion": [[18 if i == j else (2 if j == (i + 1) % 20 else 0) for j in range(20)] for i in range(20)],
    }
    shown = format_report(report, terminal=True)
    assert "\t" not in shown
    matrix = shown.split("numbered as the rows)\n")[1].splitlines()
    assert len({len(line) for line in matrix}) == 1  # numbers right-aligned, every row as wide: columns line up
    assert matrix[1].startswith("1 comp.sys.group0.misc")
    assert "\t" in format_report(report) and "1 comp.sys" not in format_report(report)


def test_predict_goes_on_past_a_path_that_does_not_exist(tmp_path, demo_model):
    """As cat and ls: a missing PATH (a typo, a dangling link, a message moved away) is
    named on stderr and skipped, the others are classified in order, the exit status is 1.
    (train and forget refuse before reading: a partial corpus must not become a model.)"""
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    spam, ham = DEMO / "test" / "spam" / "spam-040.txt", DEMO / "test" / "ham" / "ham-040.txt"
    result = run("predict", "-m", demo_model, spam, tmp_path / "nope", tmp_path / "dangling", ham)
    assert result.exit_code == 1
    assert [line.split("\t")[:2] for line in result.stdout.splitlines()] == [[str(spam), "spam"], [str(ham), "ham"]]
    assert result.stderr.splitlines() == [
        f"nbtext: skipped {tmp_path / 'nope'}: cannot read it (No such file or directory)",
        f"nbtext: skipped {tmp_path / 'dangling'}: cannot read it (No such file or directory)",
        "nbtext: 2 documents done, 2 skipped",
    ]
    one_line_error(run("forget", "-m", demo_model, tmp_path / "nope"), "does not exist")


def test_every_command_takes_the_same_class_for_positive(tmp_path):
    """eval's ROC (its line and its picture's axes) names the positive class as eval
    --online and the spam cut-off do (labels.positive_class): with classes 'spam' and
    'zzz', spam, though it sorts first (it was the second class, zzz)."""
    import json

    spam, other = tmp_path / "spam", tmp_path / "zzz"
    shutil.copytree(DEMO / "train" / "spam", spam)
    shutil.copytree(DEMO / "train" / "ham", other)
    model = tmp_path / "m"
    assert run("train", "-o", model, spam, other).exit_code == 0
    table = run("eval", "-m", model, spam, other)
    assert "ROC AUC (spam)" in table.stdout
    online = run("eval", "--online", "--format", "json", spam, other)
    assert json.loads(online.stdout)["positive"] == "spam"
    # the same documents with the other class named ham (spam sorts second then): spam again, and the same
    # area (which two classes give whichever is positive: the names above are what tell the rule)
    ham = tmp_path / "ham"
    shutil.copytree(other, ham)
    assert run("train", "-o", tmp_path / "h", spam, ham).exit_code == 0
    assert "ROC AUC (spam)" in run("eval", "-m", tmp_path / "h", spam, ham).stdout
    as_ham = json.loads(run("eval", "-m", tmp_path / "h", "--format", "json", spam, ham).stdout)["roc_auc"]
    assert (
        json.loads(run("eval", "-m", model, "--format", "json", spam, other).stdout)["roc_auc"]
        == pytest.approx(as_ham, abs=1e-12)
        and 0.5 < as_ham <= 1
    )


def test_documents_without_tokens_train_a_model_of_the_prior_and_no_temperature(tmp_path):
    """Documents that hold no token (--max-bytes 1, punctuation only): the model is its
    prior, left uncalibrated (a temperature was fitted on nothing, and numpy's 'Mean of
    empty slice' warnings leaked out)."""
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        for i in range(60):
            (tmp_path / label / str(i)).write_text("!!! ?? --")
    result = run("train", "-o", tmp_path / "m", tmp_path / "a", tmp_path / "b")
    assert result.exit_code == 0 and "warning" not in result.stderr and "calibrated" not in result.stderr
    assert nbtext.load(tmp_path / "m").calibration is None
    refused = run("train", "--calibration", "temperature", "-o", tmp_path / "t", tmp_path / "a", tmp_path / "b")
    assert refused.exit_code == 1 and "with tokens" in refused.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval", "--folds", "3", "-m", "MODEL"], "-m/--model-file goes with eval of a model"),
        (
            ["eval", "--folds", "3", *GENERAL, "--unsure-below", "0.9"],
            "--unsure-below on its folds' models' own probabilities",
        ),
        (
            ["eval", "--folds", "3", "--compare", "multinomial,bernoulli", "--model", "bernoulli"],
            "--model does not go with --compare",
        ),
        (["train", "--label-col", "2", "-o", "OUT"], "--label-col goes with --table"),
        (["eval", "--folds", "3", "--text-col", "2"], "--text-col goes with --table"),
        (["train", "--no-header", "-o", "OUT"], "--no-header goes with --table"),
    ],
)
def test_an_option_that_would_do_nothing_is_refused(tmp_path, demo_model, args, message):
    """Options accepted and then ignored without a word (a model -m that --folds never read,
    a --model that --compare replaced, a column of a table with class folders) are refused."""
    args = [str(demo_model) if a == "MODEL" else str(tmp_path / "m") if a == "OUT" else a for a in args]
    result = run(*args, DEMO / "train" / "spam", DEMO / "train" / "ham")
    one_line_error(result, message)
    assert result.exit_code == 2  # a usage error


def test_eval_tables_in_a_pipe_are_tab_separated_fields_as_they_are(demo_model):
    """usage.md: a tab-separated table in a pipe. Class names and the cross-validation
    table's headings were padded with spaces, so awk -F'\\t' '$1=="spam"' found nothing."""
    folders = [ROOT / "corpora" / "mail" / "test" / "spam", ROOT / "corpora" / "mail" / "test" / "ham"]
    for args in (["eval", "-m", demo_model], ["eval", "--folds", "2", "--compare", "multinomial,gaussian"]):
        out = run(*args, *folders).stdout
        fields = [field for line in out.splitlines() if "\t" in line for field in line.split("\t")]
        assert fields and all(field == field.strip() for field in fields), out
    assert "spam\t" in run("eval", "-m", demo_model, *folders).stdout


def test_no_number_option_takes_negative_zero():
    """-0 given to any float option of any command is 0 (it compares equal, but was said: an
    unsure band "p < -0", "--alpha ... not -0.0"), and written to a model file as 0.0; an
    option whose range leaves 0 out refuses it as 0 (imap-scan --time-limit said "-0.0 is not
    in the range")."""
    import math

    import click

    from nbtext.cli.options import Number

    found = [
        (command.name, param.name)
        for command in cli.commands.values()
        for param in command.params
        if isinstance(param.type, Number)
    ]
    assert ("eval", "unsure_below") in found and ("train", "alpha") in found
    for name, option in found:
        param = next(p for p in cli.commands[name].params if p.name == option)
        try:
            assert math.copysign(1.0, param.type.convert("-0", param, None)) == 1.0, (name, option)
        except click.BadParameter as refused:
            assert refused.message.startswith("0.0 is not in the range"), (name, option, refused.message)


def test_an_unsure_band_of_negative_zero_is_said_as_zero():
    train = ROOT / "corpora" / "mail" / "train"
    result = run("eval", "--online", "--unsure-below", "-0", train / "spam", train / "ham")
    assert result.exit_code == 0 and "unsure (p < 0) " in result.stdout and "-0" not in result.stdout


def test_a_document_forget_does_not_know_is_named_on_one_line(tmp_path, demo_model):
    """Its name as every line on stderr names a document (report.text.shown_name): a line
    feed in a file name cut the line in two."""
    model = tmp_path / "m.model"
    shutil.copyfile(demo_model, model)
    folder = tmp_path / "new"
    folder.mkdir()
    (folder / "a\nb.txt").write_text("words never learned\n")
    result = run("forget", "-m", model, folder)
    assert result.exit_code == 0
    assert f"nbtext: not learned, left alone: {folder}/a\\nb.txt\n" in result.stderr
