"""The model file's bytes and the printed numbers are a function of the documents and the
settings alone, whatever SIMD path numpy and OpenBLAS take on this CPU (the numbers come
through nbtext.exactmath, which uses only correctly rounded arithmetic)."""

import decimal
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import example, given, settings, strategies as st

from nbtext import exactmath

ROOT = Path(__file__).resolve().parent.parent
# numpy's narrowest SIMD path (its x86-64 baseline only) and an old OpenBLAS kernel: on a
# machine with AVX-512 these differ from the default path in np.log, np.exp and products
NARROW = {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Prescott"}
_DECIMAL = decimal.Context(prec=60)


def _units_in_last_place(value, exact):
    """|value − exact| in units of the last place of the double nearest `exact` (a Decimal),
    divided as Decimals (a difference under 5e-324 made a float first rounds to 0 or 1 ulp)."""
    return float(abs(decimal.Decimal(value) - exact) / decimal.Decimal(math.ulp(float(exact))))


@settings(max_examples=400, deadline=None)
@given(st.floats(min_value=5e-324, allow_infinity=False, allow_nan=False))
@example(1.0)
@example(5e-324)
@example(2.2250738585072014e-308)
@example(1.7976931348623157e308)
@example(0.7071)
def test_log_is_within_one_unit_in_the_last_place(x):
    exact = _DECIMAL.ln(decimal.Decimal(x))
    got = exactmath.log(np.array([x]))[0]
    if exact == 0:
        assert got == 0.0
    else:
        assert _units_in_last_place(got, exact) < 1.0
    assert exactmath.log(x) == got  # a Python number gives the same float
    assert exactmath.scalar_log(x) == got  # and the one without numpy (the one-message path's, under a cap)


@settings(max_examples=400, deadline=None)
@given(st.floats(min_value=-745.0, max_value=709.7, allow_nan=False))
@example(0.0)
@example(1e-300)
@example(-1e-300)
@example(0.34657359027997264)
@example(709.7)
@example(-708.4)
@example(-708.0078125)  # 0.57 ulp, which a float difference made 1.0
def test_exp_is_within_one_unit_in_the_last_place(x):
    exact = _DECIMAL.exp(decimal.Decimal(x))
    got = exactmath.exp(np.array([x]))[0]
    if float(exact) < 2.2250738585072014e-308:  # subnormal results: one rounding of the scaled value
        assert abs(got - float(exact)) <= 5e-324
    else:
        assert _units_in_last_place(got, exact) < 1.0


def test_the_edges_of_log_and_exp():
    assert list(exactmath.log(np.array([0.0, np.inf, 1.0]))) == [-np.inf, np.inf, 0.0]
    assert np.isnan(exactmath.log(np.array([-1.0, np.nan]))).all()
    assert [exactmath.scalar_log(x) for x in (0.0, math.inf, 1.0)] == [-math.inf, math.inf, 0.0]
    assert all(math.isnan(exactmath.scalar_log(x)) for x in (-1.0, -math.inf, math.nan))
    assert list(exactmath.exp(np.array([-np.inf, -800.0, 800.0, np.inf, 0.0]))) == [0.0, 0.0, np.inf, np.inf, 1.0]
    assert np.isnan(exactmath.exp(np.array([np.nan])))[0]
    x = np.linspace(0.5, 3, 12).reshape(3, 4)
    out = x.copy()
    assert exactmath.log(out, out=out) is out and np.array_equal(out, exactmath.log(x))
    assert abs(exactmath.power(np.array([8.0]), 1.0 / 3.0)[0] - 2.0) <= 4 * math.ulp(2.0)
    assert exactmath.power(np.array([5.0, 1.0]), 0.0).tolist() == [1.0, 1.0]


def _in_narrow_process(code):
    """What `code` (which prints a pickle's hex) computes in a Python whose numpy and
    OpenBLAS take their narrowest paths."""
    result = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **NARROW}, cwd=ROOT, capture_output=True, text=True, check=True
    )
    return pickle.loads(bytes.fromhex(result.stdout.strip()))


def test_log_and_exp_give_the_same_bits_on_every_simd_path():
    code = (
        "import numpy as np, pickle; from nbtext import exactmath as m\n"
        "x = np.random.default_rng(7).uniform(-700, 700, 100_003)\n"
        "print(pickle.dumps((m.log(np.abs(x)), m.exp(x))).hex())"
    )
    log_narrow, exp_narrow = _in_narrow_process(code)
    x = np.random.default_rng(7).uniform(-700, 700, 100_003)
    assert exactmath.log(np.abs(x)).tobytes() == log_narrow.tobytes()
    assert exactmath.exp(x).tobytes() == exp_narrow.tobytes()


def test_every_golden_model_and_output_is_the_same_bytes_on_every_simd_path(tmp_path):
    """Every golden case (15 trainings and updates of every event model and feature kind,
    calibrated, and 131 outputs of predict, eval and info) produced here and in a process
    on numpy's and OpenBLAS's narrowest paths: byte for byte the same."""
    sys.path.insert(0, str(ROOT / "tests"))
    from golden_cases import produce

    code = (
        "import sys, pickle, tempfile; sys.path[:0] = ['tests']\n"
        "from golden_cases import produce\n"
        "d = tempfile.mkdtemp(); print(pickle.dumps(produce(d)).hex())"
    )
    narrow = _in_narrow_process(code)
    here = produce(tmp_path)
    assert sorted(narrow) == sorted(here)
    assert [name for name in here if here[name] != narrow[name]] == []
