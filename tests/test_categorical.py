"""Categorical Naive Bayes on the seed's dating table (../shared/seeds/000_*), worked by hand."""

import math

import numpy as np
import pytest

import nbtext

from conftest import ROOT, run

DATING = ROOT / "corpora" / "dating"


def train(tmp_path, table, alpha):
    path = tmp_path / f"{table}-{alpha}.model"
    result = run(
        "train",
        "--model",
        "categorical",
        "--table",
        DATING / table,
        "--label-col",
        "约会",
        "--alpha",
        alpha,
        "-o",
        path,
    )
    assert result.exit_code == 0, result.stderr
    return nbtext.load(path), path


VALUES = (3, 3, 3, 3, 3, 2)  # n_j, each feature's values: 时间 3, 方式 3, 天气 3, 课业 3, 疫情 3, 电视 2


def by_hand(rows, counts, alpha):
    """P(class, row) worked by hand with λ = alpha, for a class of `rows` of the table's 17 and
    `counts`, each of the row's values seen with it: the prior (N_k + λ) / (N + 2λ), each
    feature's (count + λ) / (N_k + n_j·λ)."""
    product = (rows + alpha) / (17 + 2 * alpha)
    for count, values in zip(counts, VALUES, strict=True):
        product *= (count + alpha) / (rows + values * alpha)
    return product


ROW_18 = ("周六", "逛街", "阴天", "适中", "清零", "无聊")
ROW_18_RAIN = ("周六", "逛街", "雨天", "适中", "清零", "无聊")


def test_seed_a_row_18_is_no_with_the_seeds_products(tmp_path):
    model, path = train(tmp_path, "train.tsv", 0)
    jll = dict(zip(model.classes, model.joint_log_likelihood([ROW_18])[0]))
    yes = 8 / 17 * 3 / 8 * 3 / 8 * 2 / 8 * 1 / 8 * 5 / 8 * 2 / 8
    no = 9 / 17 * 3 / 9 * 4 / 9 * 3 / 9 * 4 / 9 * 2 / 9 * 3 / 9
    assert jll["是"] == pytest.approx(math.log(yes), abs=1e-12)
    assert jll["否"] == pytest.approx(math.log(no), abs=1e-12)
    assert yes < no
    assert run("predict", "-m", path, "--table", DATING / "query.tsv").stdout == "否\n"


def test_seed_b_all_yes_table_always_predicts_yes(tmp_path):
    model, path = train(tmp_path, "all-yes.tsv", 0)
    assert model.classes == ["是"]
    out = run("predict", "-m", path, "--table", DATING / "train.tsv").stdout.splitlines()
    assert out == ["是"] * 17
    assert run("predict", "-m", path, "--table", DATING / "query-rain.tsv").stdout == "是\n"


def test_seed_c_a_value_seen_only_in_one_class_rules_the_other_out_without_smoothing(tmp_path):
    model, path = train(tmp_path, "train.tsv", 0)
    jll = dict(zip(model.classes, model.joint_log_likelihood([ROW_18_RAIN])[0]))
    assert jll["是"] == -np.inf  # P(天气=雨天 | 是) = 0/8: the other features do not matter
    proba = dict(zip(model.classes, model.predict_proba([ROW_18_RAIN])[0]))
    assert proba == {"否": 1.0, "是": 0.0}
    # with λ = 1 both classes keep a chance: (count + 1) / (N_k + n_j) with n_j values per feature
    smoothed, _ = train(tmp_path, "train.tsv", 1)
    p = dict(zip(smoothed.classes, smoothed.predict_proba([ROW_18_RAIN])[0]))
    assert 0 < p["是"] < 1 and 0 < p["否"] < 1
    yes = by_hand(8, (3, 3, 0, 1, 5, 2), 1)
    no = by_hand(9, (3, 4, 2, 4, 2, 3), 1)
    assert p["是"] == pytest.approx(yes / (yes + no), rel=1e-12)


def test_unseen_values(tmp_path):
    model, _ = train(tmp_path, "train.tsv", 1)
    unseen = ("周六", "逛街", "下雪", "适中", "清零", "无聊")  # 下雪 never seen
    jll = dict(zip(model.classes, model.joint_log_likelihood([unseen])[0]))
    # λ / (N_k + n_j·λ) in every class for the unseen 天气 (n_j = 3)
    yes = by_hand(8, (3, 3, 0, 1, 5, 2), 1)  # (天气 = 下雪, never seen: a count of 0)
    assert jll["是"] == pytest.approx(math.log(yes), abs=1e-12)
    strict, path = train(tmp_path, "train.tsv", 0)
    with pytest.warns(UserWarning, match="never seen in training are skipped"):
        skipped = strict.joint_log_likelihood([unseen])[0]
    # the seed's products for row 18 without the 天气 factor, in both classes
    yes = math.log(8 / 17 * 3 / 8 * 3 / 8 * 1 / 8 * 5 / 8 * 2 / 8)
    no = math.log(9 / 17 * 3 / 9 * 4 / 9 * 4 / 9 * 2 / 9 * 3 / 9)
    assert dict(zip(strict.classes, skipped)) == pytest.approx({"是": yes, "否": no}, abs=1e-12)


def test_unseen_values_with_lidstone_smoothing(tmp_path):
    """λ = 0.5 (so λ and 1/λ differ): an unseen value gets λ / (N_k + n_j·λ), seen ones
    (B + λ) / (N_k + n_j·λ), the prior (N_k + λ) / (N + 2λ)."""
    model = train(tmp_path, "train.tsv", 1)[0].with_alpha(0.5)
    unseen = ("周六", "逛街", "下雪", "适中", "清零", "无聊")
    jll = dict(zip(model.classes, model.joint_log_likelihood([unseen])[0]))
    a = 0.5
    yes = by_hand(8, (3, 3, 0, 1, 5, 2), a)  # (天气 = 下雪, never seen: a count of 0)
    assert jll["是"] == pytest.approx(math.log(yes), abs=1e-12)


def test_alpha_zero_only_for_categorical(tmp_path):
    result = run(
        "train", "--alpha", "0", "-o", tmp_path / "m", ROOT / "corpora/mail/train/spam", ROOT / "corpora/mail/train/ham"
    )
    assert result.exit_code == 1 and "0 only for --model categorical" in result.stderr
    result = run("train", "--model", "categorical", "-o", tmp_path / "m", ROOT / "corpora/mail/train/spam")
    assert result.exit_code == 1 and "reads a table" in result.stderr


def test_eval_on_a_table(tmp_path):
    _, path = train(tmp_path, "train.tsv", 1)
    import json

    report = json.loads(
        run("eval", "-m", path, "--table", DATING / "train.tsv", "--label-col", "约会", "--format", "json").stdout
    )
    assert report["n"] == 17 and report["classes"] == ["否", "是"]
    assert sum(map(sum, report["confusion"])) == 17


def test_a_categorical_model_is_cross_validated_on_its_tables_rows():
    """eval --folds --model categorical --table reads the table's rows as train does (it
    refused: 'reads a table: give --table FILE --label-col NAME', though both were given)."""
    import json

    from conftest import ROOT, run

    result = run(
        "eval",
        "--folds",
        "3",
        "--format",
        "json",
        "--table",
        ROOT / "corpora" / "dating" / "train.tsv",
        "--label-col",
        "约会",
        "--model",
        "categorical",
    )
    assert result.exit_code == 0, result.stderr
    folds = json.loads(result.stdout)["models"]["categorical"]["folds"]
    rows = len((ROOT / "corpora" / "dating" / "train.tsv").read_text(encoding="utf-8").splitlines()) - 1  # (a header)
    assert len(folds) == 3 and sum(f["n"] for f in folds) == rows == 17


@pytest.mark.filterwarnings("default::UserWarning")  # (every document of all-yes.tsv is of one class)
def test_json_output_is_strict_json_where_numbers_are_infinite(tmp_path):
    """A categorical model with λ = 0 gives infinite evidence and, on a class it rules out,
    an infinite log-loss: JSON wrote Infinity, which RFC 8259 JSON has not; now null."""
    import json

    def strict(line):
        return json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} in JSON output"))

    model = tmp_path / "d.model"
    assert (
        run(
            "train",
            "--model",
            "categorical",
            "--table",
            DATING / "train.tsv",
            "--label-col",
            "约会",
            "--alpha",
            "0",
            "-o",
            model,
        ).exit_code
        == 0
    )
    report = strict(
        run("eval", "-m", model, "--table", DATING / "all-yes.tsv", "--label-col", "约会", "--format", "json").stdout
    )
    assert report["log_loss"] is None
    lines = run(
        "predict", "-m", model, "--table", DATING / "query-rain.tsv", "--explain", "3", "--format", "json"
    ).stdout.splitlines()
    assert lines and any(value is None for line in lines for _, value in strict(line)["explanation"])


def test_what_a_categorical_model_cannot_do_is_said_in_one_line(tmp_path):
    """--compare categorical asked for the --table given; --update and forget skipped every
    row as text; eval --online asked for a --table, then refused the model."""
    import shutil

    from conftest import one_line_error

    table = DATING / "train.tsv"
    model = tmp_path / "d.model"
    assert run("train", "--model", "categorical", "--table", table, "--label-col", "约会", "-o", model).exit_code == 0
    compared = run("eval", "--folds", "3", "--compare", "categorical", "--table", table, "--label-col", "约会")
    assert compared.exit_code == 0 and "categorical" in compared.stdout
    one_line_error(
        run("eval", "--folds", "3", "--compare", "categorical,multinomial", "--table", table, "--label-col", "约会"),
        "compare one kind at a time",
    )
    shutil.copy(model, tmp_path / "c.model")
    one_line_error(
        run("train", "--update", "-m", tmp_path / "c.model", "--table", table, "--label-col", "约会"),
        "cannot --update a model of a table's columns (categorical)",
    )
    one_line_error(run("forget", "-m", tmp_path / "c.model", table), "cannot forget documents of a model of a table's")
    assert (tmp_path / "c.model").read_bytes() == model.read_bytes()
    one_line_error(
        run("eval", "--online", "-m", model, ROOT / "corpora" / "mail" / "train" / "spam"),
        "eval --online runs a multinomial model of counts",
    )
