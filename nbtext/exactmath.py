"""log, exp and power over numpy arrays whose every bit is the same on every CPU.

numpy picks its `np.log` and `np.exp` by the processor it runs on (with AVX-512 it uses
vector routines whose last bit differs from the scalar ones), and libm's differ between
builds with and without fused multiply-add. The numbers a model file stores (tf-idf sums,
the calibration's T and γ, the one-document record) and the probabilities printed come
through logarithms and exponentials, so those are computed here from additions,
multiplications, divisions and exact scalings only: IEEE 754 rounds each of them
correctly, whatever the vector width, so the result is a function of the input alone.

The algorithms are fdlibm's (Sun's freely distributable libm, as used by Java's
StrictMath): argument reduction by ln 2, then a minimax polynomial; error below one unit
in the last place. Each costs some 20 array operations, done in blocks that stay in cache.

`scalar_log` is `log` of one Python float, bit for bit, without numpy (the one-message path
imports none): the same steps, each rounded alike (a Python float operation is the IEEE 754
one numpy applies elementwise). numpy is imported by the array functions alone.
"""

import math

_BLOCK = 1 << 15  # elements per pass: a few arrays of this size stay in the L2 cache

# ln 2 split so that k · LN2_HI is exact for |k| < 2**11 (fdlibm's constants)
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
INV_LN2 = 1.44269504088896338700e00
SQRT_HALF = 0.70710678118654752440

# log(1 + f) = f − f²/2 + s·(f²/2 + R(s²)), s = f / (2 + f)
LG1, LG2, LG3, LG4 = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
)
LG5, LG6, LG7 = 1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01

# exp(r) = 1 + r + r·c(r) / (2 − c(r)), c(r) = r − r²·P(r²)
P1, P2, P3 = 1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05
P4, P5 = -1.65339022054652515390e-06, 4.13813679705723846039e-08
EXP_OVERFLOW = 7.09782712893383973096e02  # exp(x) = inf above
EXP_UNDERFLOW = -7.45133219101941108420e02  # exp(x) = 0 below


def log(x, out=None):
    """The natural logarithm, elementwise: log 0 = −inf, log of a negative number or NaN is
    NaN, log inf = inf. A Python number gives a float; `out` (an array of x's shape, x
    itself too) receives the result."""
    return _blockwise(_log_block, x, out)


def exp(x, out=None):
    """e**x, elementwise (inf above about 709.78, 0 below about −745.13, NaN for NaN)."""
    return _blockwise(_exp_block, x, out)


def power(base, exponent):
    """base**exponent for base > 0 (0**y = 0 for y > 0), as exp(y · log base): within a few
    units in the last place, the same on every CPU."""
    import numpy as np

    base = np.asarray(base, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return exp(np.multiply(exponent, log(base)))


def scalar_log(x):
    """log(x) of one float, in pure Python: the bits `log` gives it (log 0 = −inf, log of a
    negative number or NaN is NaN, log inf = inf)."""
    if not 0 < x < math.inf:
        return -math.inf if x == 0 else math.inf if x == math.inf else math.nan
    m, e = math.frexp(x)  # x = m · 2**e, m in [0.5, 1) (exact, subnormals included)
    if m < SQRT_HALF:
        m, e = m + m, e - 1  # 1 + f in [√½, √2)
    return _log_of_reduced(m - 1.0, float(e))


def _log_of_reduced(f, k):
    """log((1 + f) · 2**k) for 1 + f in [√½, √2), by fdlibm's polynomial: additions,
    multiplications and a division alone, so a float and an array give the same bits."""
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7))) + w * (LG2 + w * (LG4 + w * LG6))
    half_f2 = 0.5 * f * f
    return k * LN2_HI - ((half_f2 - (s * (half_f2 + r) + k * LN2_LO)) - f)


def _blockwise(function, x, out=None):
    import numpy as np

    scalar = np.ndim(x) == 0 and out is None
    x = np.ascontiguousarray(x, dtype=np.float64)
    if out is None:
        out = np.empty(x.shape)
    elif not out.flags.c_contiguous or out.shape != x.shape:
        raise ValueError("out must be a contiguous array of x's shape")
    flat, result = x.reshape(-1), out.reshape(-1)  # views, not copies
    with np.errstate(all="ignore"):
        for start in range(0, len(flat), _BLOCK):
            result[start : start + _BLOCK] = function(flat[start : start + _BLOCK])
    return float(out.reshape(-1)[0]) if scalar else out


def _log_block(x):
    import numpy as np

    m, e = np.frexp(x)  # x = m · 2**e, m in [0.5, 1) (exact, subnormals included)
    low = m < SQRT_HALF
    m = np.where(low, m + m, m)  # 1 + f in [√½, √2)
    y = _log_of_reduced(m - 1.0, (e - low).astype(np.float64))  # (m − 1: exact)
    y = np.where(x > 0, y, np.where(x == 0, -np.inf, np.nan))
    return np.where(np.isinf(x) & (x > 0), np.inf, y)


def _exp_block(x):
    import numpy as np

    clipped = np.clip(x, EXP_UNDERFLOW - 1.0, EXP_OVERFLOW + 1.0)
    clipped = np.where(np.isnan(clipped), 0.0, clipped)
    k = np.rint(clipped * INV_LN2)
    hi = clipped - k * LN2_HI  # exact
    lo = k * LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    y = np.ldexp(y, k.astype(np.int32))  # exact scaling (one rounding into the subnormals)
    y = np.where(x > EXP_OVERFLOW, np.inf, np.where(x < EXP_UNDERFLOW, 0.0, y))
    return np.where(np.isnan(x), np.nan, y)
