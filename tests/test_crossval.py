import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import nbtext
from nbtext.jobs.crossval import stratified_folds

from conftest import ROOT, read_labelled, run

DEMO = ROOT / "corpora" / "mail"
GENERAL = ["--preset", "general"]  # the general defaults (spam/ham folders would train the spam preset)


def test_folds_are_stratified_and_seeded():
    labels = ["a"] * 50 + ["b"] * 20 + ["c"] * 7
    fold = stratified_folds(labels, 5, seed=1)
    for f in range(5):
        share = Counter(l for l, g in zip(labels, fold) if g == f)
        assert share["a"] == 10 and share["b"] == 4 and share["c"] in (1, 2)
    assert np.array_equal(fold, stratified_folds(labels, 5, seed=1))
    assert not np.array_equal(fold, stratified_folds(labels, 5, seed=2))


def test_small_classes_are_spread_over_the_folds():
    """Each class is dealt on from where the last one stopped: ten classes of three
    documents fill five folds with six each (dealt from fold 0 every time, folds 0-2 would
    get ten and folds 3-4 none)."""
    labels = [f"class{c}" for c in range(10) for _ in range(3)]
    for seed in range(3):
        sizes = np.bincount(stratified_folds(labels, 5, seed), minlength=5)
        assert sizes.tolist() == [6, 6, 6, 6, 6]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["ham", "spam", "b", "é", "日本", "a b", ""]), max_size=60),
    st.integers(2, 6),
    st.integers(0, 2**32 - 1),
)
def test_folds_are_those_of_the_class_by_class_definition(labels, k, seed):
    """The folds are computed with one sort (a scan of every label per class was quadratic
    in the classes); they are still the definition's: classes in sorted order, each one's
    members in document order, shuffled, dealt on round-robin from where the last stopped."""
    rng, expected, offset = np.random.default_rng(seed), np.empty(len(labels), dtype=np.intp), 0
    for label in sorted(set(labels)):
        members = np.array([i for i, l in enumerate(labels) if l == label], dtype=np.intp)
        rng.shuffle(members)
        expected[members] = (np.arange(len(members)) + offset) % k
        offset += len(members)
    assert stratified_folds(labels, k, seed).tolist() == expected.tolist()


def test_each_fold_equals_training_on_the_other_folds(tmp_path):
    folders = [DEMO / "train" / "spam", DEMO / "train" / "ham"]
    result = json.loads(run("eval", "--folds", "3", "--seed", "7", "--format", "json", *folders).stdout)
    texts, labels = read_labelled(DEMO / "train")
    # read_labelled walks classes in sorted order (ham, spam); the CLI reads them as given
    order = [i for i, l in enumerate(labels) if l == "spam"] + [i for i, l in enumerate(labels) if l == "ham"]
    texts, labels = [texts[i] for i in order], [labels[i] for i in order]
    fold = stratified_folds(labels, 3, seed=7)
    folds = result["models"]["multinomial"]["folds"]
    for f in range(3):
        train = [i for i in range(len(labels)) if fold[i] != f]
        test = [i for i in range(len(labels)) if fold[i] == f]
        clf = nbtext.train([texts[i] for i in train], [labels[i] for i in train])
        accuracy = np.mean([p == labels[i] for p, i in zip(clf.predict([texts[i] for i in test]), test)])
        assert folds[f]["n"] == len(test) and folds[f]["accuracy"] == pytest.approx(accuracy)
    accuracies = [f["accuracy"] for f in folds]
    assert result["models"]["multinomial"]["accuracy_mean"] == pytest.approx(np.mean(accuracies))
    assert result["models"]["multinomial"]["accuracy_std"] == pytest.approx(np.std(accuracies))


def test_compare_runs_every_model_on_the_same_folds():
    folders = [DEMO / "train" / "spam", DEMO / "train" / "ham"]
    table = run("eval", "--folds", "4", "--compare", "multinomial,bernoulli", *folders)
    assert table.exit_code == 0
    rows = table.stdout.splitlines()[2:]
    assert [r.split()[0] for r in rows[:2]] == ["multinomial", "bernoulli"]
    assert [r.split()[0] for r in rows[-2:]] == ["multinomial", "bernoulli"]  # (of two classes: spam missed, ...)
    result = json.loads(
        run("eval", "--folds", "4", "--compare", "multinomial,bernoulli", "--format", "json", *folders).stdout
    )
    assert [f["n"] for f in result["models"]["multinomial"]["folds"]] == [
        f["n"] for f in result["models"]["bernoulli"]["folds"]
    ]


def test_crossval_errors(tmp_path):
    folders = [DEMO / "train" / "spam", DEMO / "train" / "ham"]
    assert "fewer than --folds 50" in run("eval", "--folds", "50", *folders).stderr
    assert "unknown model 'nope'" in run("eval", "--folds", "3", "--compare", "multinomial,nope", *folders).stderr
    assert "--seed goes with --folds" in run("eval", "--seed", "3", *folders).stderr


def test_folds_on_workers_give_the_same_report(monkeypatch):
    """-j 1, -j 2 and the default (here handing over to 2 workers after the first fold)
    report the same folds, for every compared model; the folds are announced as they start."""
    import nbtext.jobs.parallel as parallel

    args = (
        "eval",
        "--folds",
        "4",
        "--compare",
        "multinomial,bernoulli",
        "--format",
        "json",
        DEMO / "train" / "spam",
        DEMO / "train" / "ham",
    )
    one = run(*args, "-j", "1")
    pools, ordered = [], parallel._ordered
    monkeypatch.setattr(parallel, "_ordered", lambda *a: pools.append(a[2]) or ordered(*a))
    two = run(*args, "-j", "2")
    monkeypatch.setattr(parallel, "AUTO_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
    auto = run(*args)
    assert one.exit_code == two.exit_code == auto.exit_code == 0
    assert json.loads(one.stdout) == json.loads(two.stdout) == json.loads(auto.stdout)
    assert len(json.loads(one.stdout)["models"]["multinomial"]["folds"]) == 4
    assert pools == [2, 2, 2, 2]  # -j 2: both models' folds; the default: both models' last three
    table = run("eval", "--folds", "4", "-j", "2", DEMO / "train" / "spam", DEMO / "train" / "ham")
    assert table.exit_code == 0 and table.stdout.startswith("4-fold stratified cross-validation")


def test_eval_s_work_runs_from_the_library_without_click():
    """eval's orchestration (which kind of evaluation, its inputs, its refusals) is the jobs'
    (nbtext.jobs.eval_command); the command line only parses, loads and draws."""
    import subprocess
    import sys

    from nbtext.choices import DEFAULT_MAX_BYTES
    from nbtext.jobs.eval_command import evaluation
    from nbtext.report.text import Skipped

    train = DEMO / "train"
    inputs = {"class_dirs": [str(train / "spam"), str(train / "ham")], "table": None, "fasttext": None}
    inputs.update(label_col="1", text_col=None, header=None, max_bytes=DEFAULT_MAX_BYTES)
    folds_done = []
    kind, result, curves, done = evaluation(
        None,
        None,
        inputs,
        {"model": "multinomial"},
        None,
        1,
        3,
        0,
        None,
        None,
        Skipped(),
        on_fold=lambda *told: folds_done.append(told),
    )
    assert (kind, done, curves) == ("crossval", 78, None)
    assert [fold for name, fold, scores in folds_done] == [0, 1, 2]
    printed = json.loads(
        run("eval", "--folds", "3", *GENERAL, "--format", "json", train / "spam", train / "ham").stdout
    )  # (the settings given above hold no classes: the general defaults)
    assert printed["models"]["multinomial"]["folds"] == result["models"]["multinomial"]["folds"]
    imported = "import sys, nbtext.jobs.eval_command; print('click' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", imported], capture_output=True, text=True).stdout == "False\n"


# the spam preset's settings, typed (all but its --unsure-below, which eval takes as its own)
RECIPE = [
    *("--features", "binary", "--learn", "tone", "--tone-margin", "20", "--min-count", "1", "--alpha", "1"),
    *("--ngrams", "2", "--char-ngrams", "3", "--max-evidence", "40"),
    *("--headers", "subject,from,to,content-type,received,x-mailer,return-path,reply-to,message-id"),
]
BINARY = ["--features", "binary", "--min-count", "1", "--alpha", "1"]
_mail_flags = st.lists(st.booleans(), min_size=2, max_size=5)


@settings(max_examples=15, deadline=None)
@given(spam=_mail_flags, ham=_mail_flags, k=st.sampled_from([2, 3]))
@example(spam=[True, True, True, False], ham=[True, False, False, False], k=2)  # (4 of 8: λ 1; a fold's 3 of 4: 0.1)
def test_a_fold_s_lambda_left_to_the_corpus_is_a_training_s_of_its_documents(tmp_path_factory, spam, ham, k):
    """eval --folds with λ left to the corpus: each fold's model smooths by the λ `train` of
    the other folds' documents chooses (0.1 when most of them are e-mail, else 1), not the
    λ of the whole corpus, and holds out what that training predicts, as mail shares on
    either side of one half fall in the folds."""
    import nbtext.jobs.crossval as crossval

    if min(len(spam), len(ham)) < k:
        return
    root = tmp_path_factory.mktemp("folds")
    paths = []
    for label, flags in (("spam", spam), ("ham", ham)):
        (root / label).mkdir()
        for i, mail in enumerate(flags):
            body = f"{label} words of {label} note{i}\n".encode()
            path = root / label / f"{i}.eml"
            path.write_bytes(b"From: a@example.org\nSubject: note\n\n" + body if mail else body)
            paths.append((path, label))
    fit_tokens, alphas = crossval.fit_tokens, []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(crossval, "fit_tokens", lambda *a: alphas.append((m := fit_tokens(*a)).alpha) or m)
        result = run("eval", "-j", "1", "--folds", k, "--format", "json", *GENERAL, root / "spam", root / "ham")
    assert result.exit_code == 0, result.stderr
    folds = stratified_folds([label for _, label in paths], k, 0)
    report = json.loads(result.stdout)["models"]["multinomial"]
    for f in range(k):
        train = [i for i in range(len(paths)) if folds[i] != f]
        test = [i for i in range(len(paths)) if folds[i] == f]
        data = [paths[i][0].read_bytes() for i in train]
        clf = nbtext.train(data, [paths[i][1] for i in train], preset="general")
        assert alphas[f] == clf.alpha
        predicted = clf.predict([paths[i][0].read_bytes() for i in test])
        assert report["folds"][f]["accuracy"] == pytest.approx(
            np.mean([p == paths[i][1] for p, i in zip(predicted, test)])
        )
    assert (
        report["alpha"]
        == nbtext.train([p.read_bytes() for p, _ in paths], [l for _, l in paths], preset="general").alpha
    )


BAND = "0.9999"  # (a band that leaves spam and ham unsure in each setting below)


@pytest.mark.parametrize(
    "options",
    [BINARY, [*BINARY, "--learn", "tone", "--tone-margin", "6"], RECIPE, ["--model", "fisher", "--learn", "tone"]],
    ids=["learn all", "learn tone", "the spam preset, typed", "fisher tone"],
)
def test_the_spam_figures_of_the_folds_are_those_of_train_then_predict_on_each_split(tmp_path, options):
    """eval --folds --unsure-below of two classes: per fold, the spam missed (unsure among
    them) and ham flagged are those of `train` (--calibration none) on the other folds' files,
    then `predict --unsure-below` of the fold's files: the command line's own path, files on
    disk, each split's model written and read back."""
    options = [*options, "--calibration", "none"]
    folders = [DEMO / "train" / "spam", DEMO / "train" / "ham"]
    paths = [(path, folder.name) for folder in folders for path in sorted(folder.iterdir())]  # as eval reads them
    folds = stratified_folds([label for _, label in paths], 3, 0)
    result = run("eval", "--folds", "3", "--format", "json", *options, "--unsure-below", BAND, *folders)
    assert result.exit_code == 0, result.stderr
    ((name, report),) = json.loads(result.stdout)["models"].items()
    assert report["positive"] == "spam" and report["negative"] == "ham"
    for f, fold in enumerate(report["folds"]):
        split = tmp_path / str(f)
        for (path, label), g in zip(paths, folds):
            target = split / ("test" if g == f else "train") / label / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
        model = split / "m.model"
        assert (
            run("train", "-q", *options, "-o", model, split / "train" / "spam", split / "train" / "ham").exit_code == 0
        )
        decided = {}
        for label in ("spam", "ham"):
            lines = run("predict", "-m", model, "--unsure-below", BAND, split / "test" / label).stdout.splitlines()
            decided[label] = Counter(line.split("\t")[1] for line in lines)
        assert fold["missed"] == decided["spam"]["ham"] + decided["spam"]["unsure"]
        assert fold["missed_unsure"] == decided["spam"]["unsure"]
        assert fold["unsure"] == decided["spam"]["unsure"] + decided["ham"]["unsure"]
        assert fold["flagged"] == decided["ham"]["spam"]
    assert sum(fold["unsure"] for fold in report["folds"]) > 0  # (the band decided something)
    text = run("eval", "--folds", "3", *options, "--unsure-below", BAND, *folders).stdout
    missed, of_them, flagged, unsure = (
        sum(fold[key] for fold in report["folds"]) for key in ("missed", "missed_unsure", "flagged", "unsure")
    )
    assert of_them < unsure  # (ham left unsure too: delivered, not an error)
    assert text.splitlines()[-1].split("\t") == [
        name,
        f"{missed} ({of_them})",
        f"{flagged}",
        f"{missed + flagged}",
        f"{unsure}",
    ]


def test_the_folds_decide_by_unsure_below_only_uncalibrated(tmp_path):
    """A calibrated model's probabilities are not its folds' (they are never calibrated):
    --unsure-below without --calibration none is refused in one line."""
    result = run(
        "eval", "--folds", "3", *GENERAL, "--unsure-below", "0.9", DEMO / "train" / "spam", DEMO / "train" / "ham"
    )  # (the general --calibration auto)
    assert result.exit_code == 2 and "give --calibration none" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("given", ["folders", "table", "fasttext"])
def test_unsure_below_of_more_than_two_classes_is_refused_whatever_the_input(tmp_path, given):
    """The folds' decisions are reported of two classes only (the positive class's missed,
    the other's flagged): --unsure-below of three classes would change nothing printed, so it
    is refused in one line, however the documents are given (each input kind reaches
    cross_validate); without it, the same documents are cross-validated."""
    texts = {label: [f"{label} word{i} common text {label}{i}" for i in range(4)] for label in ("ant", "bee", "cow")}
    if given == "folders":
        for label, docs in texts.items():
            (tmp_path / label).mkdir()
            for i, text in enumerate(docs):
                (tmp_path / label / f"{i}.txt").write_text(text)
        source = [tmp_path / label for label in texts]
    elif given == "table":
        (tmp_path / "t.tsv").write_text("".join(f"{l}\t{t}\n" for l, docs in texts.items() for t in docs))
        source = ["--table", tmp_path / "t.tsv"]
    else:
        (tmp_path / "t.txt").write_text("".join(f"__label__{l} {t}\n" for l, docs in texts.items() for t in docs))
        source = ["--fasttext", tmp_path / "t.txt"]
    options = ["eval", "--folds", "2", "--calibration", "none", *source]
    assert run(*options).exit_code == 0
    for extra in (["--unsure-below", "0.9"], ["--unsure-below", "0.9", "--format", "json"]):
        result = run(*options, *extra)
        assert result.exit_code != 0 and result.stdout == "", result.stdout
        assert "--unsure-below does nothing here" in result.stderr and result.stderr.count("\n") == 1, result.stderr


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3_000_000), min_size=8, max_size=8), st.booleans())
def test_the_summed_counts_line_up_on_a_terminal_whatever_their_size(counts, band):
    """On a terminal each column of the summed block is a column of numbers, right-aligned
    under its heading, counts of thousands (1,234) and a count with those of it left unsure
    (1,234 (56)) as small ones."""
    from nbtext.report.text import crossval_table

    def result(missed, flagged, missed_unsure, unsure):
        fold = {"n": 9, "accuracy": 0.9, "macro_f1": 0.9, "missed": missed, "flagged": flagged}
        if band:
            fold.update(missed_unsure=min(missed_unsure, missed), unsure=unsure)
        spread = {"accuracy_mean": 0.9, "accuracy_std": 0.0, "macro_f1_mean": 0.9, "macro_f1_std": 0.0}
        sides = {"positive": "spam", "negative": "ham", **({"unsure_below": 0.9} if band else {})}
        return {"alpha": 1, "smooths": True, **sides, "folds": [fold], **spread}

    results = {"multinomial": result(*counts[:4]), "fisher": result(*counts[4:])}
    text = crossval_table(5, 0, results, terminal=True)
    lines = text.split("\n\n")[1].splitlines()[1:]
    tabbed = [line.split("\t") for line in crossval_table(5, 0, results).split("\n\n")[1].splitlines()[1:]]
    widths = [max(len(cells[i]) for cells in tabbed) for i in range(len(tabbed[0]))]
    for line, cells in zip(lines, tabbed):
        start = len(cells[0].ljust(widths[0])) + 2
        for cell, width in zip(cells[1:], widths[1:]):
            padded = cell.ljust(width) if line is lines[0] else cell.rjust(width)  # (headings are text)
            assert (line + " " * width)[start : start + width] == padded, (text, cell)
            start += width + 2


@settings(max_examples=15, deadline=None)
@given(st.integers(max_value=-1) | st.integers(min_value=2**64, max_value=2**200))
def test_any_seed_of_the_folds_is_a_shuffle_or_a_one_line_error(seed):
    """--seed is any integer on the command line: numpy's generator takes none below 0 (a
    traceback, ValueError), so that is said in one line; a large one shuffles."""
    result = run("eval", "--folds", "3", "--seed", seed, DEMO / "train" / "spam", DEMO / "train" / "ham")
    if seed < 0:
        assert result.exit_code == 1 and result.stderr.startswith("Error: --seed") and "Traceback" not in result.stderr
        assert result.stderr.count("\n") == 1 and result.stdout == "", result.stderr
    else:
        assert result.exit_code == 0 and f"(seed {seed})" in result.stdout, result.stderr


def test_compare_says_whose_defaults_each_model_took():
    """eval --compare ran the multinomial row by the spam preset and the others by the general
    defaults without saying so: each row names its defaults, and a mix is said under the table."""
    args = ["eval", "--folds", "3", DEMO / "train" / "spam", DEMO / "train" / "ham"]
    result = run(*args[:3], "--compare", "multinomial,bernoulli", *args[3:])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "model\tdefaults\tλ\taccuracy\tmacro F1"
    assert lines[2].startswith("multinomial\tspam preset\t") and lines[3].startswith("bernoulli\tgeneral\t")
    assert lines[4].startswith("(the spam preset is a multinomial's: --preset general")
    same = run(*args[:3], "--preset", "general", "--compare", "multinomial,bernoulli", *args[3:]).stdout.splitlines()
    assert same[2].startswith("multinomial\tgeneral\t") and not same[4].startswith("(")
    folds = json.loads(run(*args[:3], "--format", "json", "--compare", "multinomial,bernoulli", *args[3:]).stdout)
    assert [m["preset"] for m in folds["models"].values()] == ["spam", "general"]


def test_folds_say_each_fold_when_stderr_is_no_terminal(tmp_path):
    """eval --folds drew its progress on a terminal only: in a log (cron, `2> log`) it said nothing
    for the minutes the folds took. A line per fold as it finishes, terminal or not; none with -q."""
    import subprocess
    import sys
    from pathlib import Path

    nbtext_executable = Path(sys.executable).with_name("nbtext")
    args = [nbtext_executable, "eval", "--folds", "3", DEMO / "train" / "spam", DEMO / "train" / "ham"]
    with open(tmp_path / "log", "w") as log:
        assert subprocess.run(args, stdout=subprocess.DEVNULL, stderr=log, timeout=300).returncode == 0
    said = (tmp_path / "log").read_text().splitlines()
    assert [line.split(":")[1] for line in said] == [f" fold {k}/3 done" for k in (1, 2, 3)], said
    quiet = subprocess.run([*args[:2], "-q", *args[2:]], capture_output=True, timeout=300)
    assert quiet.returncode == 0 and quiet.stderr == b""


def test_the_unsure_errors_line_says_what_it_counts(demo_model):
    """`errors unsure 1 of 1` read as one error: the line says the most probable class was wrong
    for N documents, so many of them left unsure and the rest decided wrong."""
    from nbtext.report.text import format_report

    args = ["eval", "-m", demo_model, "--unsure-below", "0.999", DEMO / "test" / "spam", DEMO / "test" / "ham"]
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    report = json.loads(run(*args[:5], "--format", "json", *args[5:]).stdout)
    wrong, unsure = report["errors"], report["unsure_errors"]
    assert f"most probable wrong\t{wrong} ({unsure} left unsure, {wrong - unsure} decided)" in result.stdout
    assert "errors unsure" not in format_report(report)
