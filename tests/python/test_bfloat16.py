"""npybridge's own bfloat16 as a number: ufunc loops in bfloat16, promotion, casts, can_cast, construction and
scalars (docs/dtypes.md, "bfloat16 arithmetic").

The type under test is npybridge's own, which a module registers when ml_dtypes cannot be imported. Where
ml_dtypes is installed (the NumPy 2 venvs), this file runs again in a fresh interpreter that imports the
example module with ml_dtypes hidden and imports ml_dtypes only afterwards: both types then live side by
side, and ml_dtypes' bfloat16 is a second oracle beside the float32 references computed here.
"""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLE_MODULE, nbx

OWN = not nbx.register_user_dtypes()["bfloat16_from_ml_dtypes"]
NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
bf = nbx.bfloat16

if OWN:
    try:  # only in the fresh interpreter below, where ml_dtypes was hidden while the module registered
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
else:
    ml_dtypes = None

own_type_only = pytest.mark.skipif(not OWN, reason="bfloat16 here is ml_dtypes' (the fresh-interpreter run tests ours)")

HIDE_ML_DTYPES = """
import importlib, os, sys
sys.modules["ml_dtypes"] = None  # the module registers npybridge's own bfloat16
importlib.import_module(os.environ["NPYBRIDGE_EXAMPLE_MODULE"])
del sys.modules["ml_dtypes"]
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[1]]))
"""


@pytest.mark.skipif(OWN, reason="this interpreter has npybridge's own bfloat16: the tests below run here")
def test_the_own_bfloat16_in_an_interpreter_where_ml_dtypes_was_hidden_at_registration():
    env = dict(os.environ, NPYBRIDGE_EXAMPLE_MODULE=EXAMPLE_MODULE,
               PYTHONPATH=os.pathsep.join([os.path.dirname(nbx.__file__), os.path.dirname(__file__)]))
    result = subprocess.run([sys.executable, "-c", HIDE_ML_DTYPES, __file__], env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    summary = result.stdout.strip().split("\n")[-1]
    assert " passed" in summary and "1 skipped" in summary and "failed" not in summary, result.stdout[-2000:]


# ---- references ------------------------------------------------------------------------------------------

def bits_of(array):
    return np.ascontiguousarray(array).view(np.uint16)


def from_bits(bits):
    return np.asarray(bits, np.uint16).view(bf)


def exact_float32(bits):
    """The float32 each bfloat16 bit pattern stands for, without npybridge's casts."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_to_bf16_bits(values):
    """float32 -> bfloat16 bits, to nearest with ties to even (MegDNN's and ml_dtypes' rounding); NaN quiet."""
    u = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    rounded[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


ALL_BITS = np.arange(1 << 16, dtype=np.uint16)
ALL = from_bits(ALL_BITS)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 3.5, 1e-40, -1e-40, 3e38, -3e38, np.inf, -np.inf, np.nan]


def sample_bits(n, seed):
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    return np.concatenate([round_to_bf16_bits(np.array(SPECIAL, np.float32)), picked])


def assert_same_bits(got, expected_bits, what):
    got_bits = bits_of(got)
    same = (got_bits == expected_bits) | (np.isnan(exact_float32(got_bits)) & np.isnan(exact_float32(expected_bits)))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{what}: {bad.size} differ, first at {bad[0]}: got {got_bits.ravel()[bad[0]]:#06x}, " \
                          f"expected {np.asarray(expected_bits).ravel()[bad[0]]:#06x}"


# ---- arithmetic and math ufuncs ------------------------------------------------------------------------------

@own_type_only
def test_the_issue_reproducer_divides_in_bfloat16():
    out = np.array([2.0], bf) / np.array([3.5], bf)
    assert out.dtype == np.dtype(bf)
    assert float(out[0]) == 0.5703125 and float(bf(2) / bf(3.5)) == 0.5703125  # 4/7 rounded to 8 bits


EXACT_BINARY = {
    np.add: np.add, np.subtract: np.subtract, np.multiply: np.multiply, np.divide: np.divide,
    np.maximum: np.maximum, np.minimum: np.minimum, np.fmax: np.fmax, np.fmin: np.fmin,
    np.copysign: np.copysign, np.fmod: np.fmod, np.hypot: np.hypot, np.heaviside: np.heaviside,
    np.floor_divide: np.floor_divide, np.remainder: np.remainder,
}
ZERO_TIES_GIVE_THE_SECOND = {np.maximum, np.minimum, np.fmax, np.fmin}


@own_type_only
@pytest.mark.parametrize("ufunc", list(EXACT_BINARY), ids=lambda u: u.__name__)
def test_binary_ufuncs_compute_in_float32_and_round_once_to_bfloat16(ufunc):
    bits = sample_bits(500, seed=7)
    x, y = np.meshgrid(bits, bits)
    with np.errstate(all="ignore"):
        got = ufunc(from_bits(x), from_bits(y))
        expected = round_to_bf16_bits(EXACT_BINARY[ufunc](exact_float32(x), exact_float32(y)))
    if ufunc in ZERO_TIES_GIVE_THE_SECOND:
        # +0 against -0: the second operand on every machine, as NumPy's float32 on x86-64 gives (NumPy on AArch64
        # orders -0 below +0; the same bits everywhere is npybridge's promise, not that machine's float32).
        expected = np.where(((x & 0x7FFF) == 0) & ((y & 0x7FFF) == 0), y, expected)
    assert got.dtype == np.dtype(bf)
    assert_same_bits(got, expected, ufunc.__name__)
    if ml_dtypes is not None:
        with np.errstate(all="ignore"):
            oracle = ufunc(x.view(ml_dtypes.bfloat16), y.view(ml_dtypes.bfloat16))
        assert_same_bits(got, bits_of(oracle), f"{ufunc.__name__} against ml_dtypes")


# (np.sign keeps the sign of a zero, as ml_dtypes' does, where NumPy's float32 gives +0: tested below.)
EXACT_UNARY = [np.negative, np.positive, np.absolute, np.fabs, np.rint, np.floor, np.ceil, np.trunc, np.sqrt,
               np.square, np.reciprocal, np.conjugate, np.deg2rad, np.rad2deg]
# libm's float functions against NumPy's own float32 loops (their own SIMD code): one bfloat16 step apart
# at most, where a float32 result sits on a rounding boundary.
APPROXIMATE_UNARY = [np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.cbrt, np.sin, np.cos,
                     np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh,
                     np.arctanh]


@own_type_only
@pytest.mark.parametrize("ufunc", EXACT_UNARY + APPROXIMATE_UNARY, ids=lambda u: u.__name__)
def test_unary_ufuncs_give_bfloat16_for_every_bfloat16_value(ufunc):
    with np.errstate(all="ignore"):
        got = ufunc(ALL)
        expected = round_to_bf16_bits(ufunc(exact_float32(ALL_BITS)))
    assert got.dtype == np.dtype(bf)
    if ufunc in EXACT_UNARY:
        assert_same_bits(got, expected, ufunc.__name__)
    else:
        got_f = exact_float32(bits_of(got))
        want_f = exact_float32(expected)
        both_nan = np.isnan(got_f) & np.isnan(want_f)
        step = np.abs(bits_of(got).astype(np.int32) - expected.astype(np.int32))
        assert np.all(both_nan | (got_f == want_f) | (step <= 1)), ufunc.__name__
    if ml_dtypes is not None:
        with np.errstate(all="ignore"):
            oracle = ufunc(ALL_BITS.view(ml_dtypes.bfloat16))
        assert_same_bits(got, bits_of(oracle), f"{ufunc.__name__} against ml_dtypes")


@own_type_only
def test_power_logaddexp_and_arctan2_round_libms_float_result():
    bits = sample_bits(200, seed=3)
    x, y = np.meshgrid(bits, bits)
    for ufunc in (np.power, np.logaddexp, np.logaddexp2, np.arctan2):
        with np.errstate(all="ignore"):
            got = ufunc(from_bits(x), from_bits(y))
        assert got.dtype == np.dtype(bf), ufunc.__name__
        if ml_dtypes is not None:
            with np.errstate(all="ignore"):
                oracle = ufunc(x.view(ml_dtypes.bfloat16), y.view(ml_dtypes.bfloat16))
            assert_same_bits(got, bits_of(oracle), f"{ufunc.__name__} against ml_dtypes")
    # Values anyone can check: 2**10, logaddexp(0, 0) = log 2, arctan2(1, 1) = pi/4, both rounded to bfloat16.
    assert float(np.power(bf(2), bf(10))) == 1024.0
    assert float(np.logaddexp(bf(0), bf(0))) == 0.69140625
    assert float(np.arctan2(bf(1), bf(1))) == 0.78515625
    assert float(np.logaddexp(bf(np.inf), bf(np.inf))) == np.inf


@own_type_only
def test_bit_level_ufuncs_follow_ieee_on_zeros_infinities_and_nan():
    zero, neg_zero, inf, nan = bf(0.0), bf(-0.0), bf(np.inf), bf(np.nan)
    tiny = from_bits([0x0001])[0]  # the smallest subnormal, 2**-133
    assert bits_of(np.array([np.nextafter(zero, bf(1))], bf))[0] == 0x0001
    assert bits_of(np.array([np.nextafter(zero, bf(-1))], bf))[0] == 0x8001
    assert float(np.nextafter(bf(1), bf(2))) == 1.0078125  # 1 + 2**-7
    assert float(np.nextafter(bf(1), bf(0))) == 0.99609375  # 1 - 2**-8
    assert np.isnan(np.nextafter(nan, bf(1))) and np.nextafter(tiny, zero) == zero
    assert float(np.spacing(bf(1))) == 2.0 ** -7 and float(np.spacing(bf(-1))) == -(2.0 ** -7)
    with np.errstate(invalid="ignore"):  # inf - inf, as for float32
        assert np.isnan(np.spacing(inf))
    assert bits_of(np.array([np.copysign(bf(1), neg_zero)], bf))[0] == 0xBF80
    assert bits_of(np.array([np.sign(neg_zero)], bf))[0] == 0x8000 and np.isnan(np.sign(nan))
    assert float(np.heaviside(bf(0), bf(0.5))) == 0.5 and float(np.heaviside(bf(-2), bf(0.5))) == 0.0
    assert bits_of(np.array([-zero], bf))[0] == 0x8000 and bits_of(np.array([abs(neg_zero)], bf))[0] == 0
    assert list(np.signbit(np.array([neg_zero, zero, -inf, nan], bf))) == [True, False, True, False]
    assert list(np.isnan(np.array([nan, inf, zero], bf))) == [True, False, False]
    assert list(np.isinf(np.array([nan, -inf, zero], bf))) == [False, True, False]
    assert list(np.isfinite(np.array([nan, inf, tiny], bf))) == [False, False, True]


@own_type_only
def test_maximum_and_minimum_propagate_nan_while_fmax_and_fmin_ignore_it():
    a = np.array([1.0, np.nan, np.nan, 2.0], bf)
    b = np.array([np.nan, 1.0, np.nan, 3.0], bf)
    # NaNs are compared quietly, as NumPy's float32 loops compare (ml_dtypes' warn "invalid value").
    with np.errstate(invalid="raise"):
        assert np.array_equal(np.maximum(a, b).astype(np.float32), [np.nan, np.nan, np.nan, 3.0], equal_nan=True)
        assert np.array_equal(np.minimum(a, b).astype(np.float32), [np.nan, np.nan, np.nan, 2.0], equal_nan=True)
        assert list(np.less(a, b)) == [False, False, False, True] and not bool(bf(np.nan) >= bf(1))
    assert np.array_equal(np.fmax(a, b).astype(np.float32), [1.0, 1.0, np.nan, 3.0], equal_nan=True)
    assert np.array_equal(np.fmin(a, b).astype(np.float32), [1.0, 1.0, np.nan, 2.0], equal_nan=True)
    assert float(np.array([3, 1, 2], bf).max()) == 3.0 and np.array([3, 1, 2], bf).sum().dtype == np.dtype(bf)


@own_type_only
def test_floored_division_modulus_and_two_output_ufuncs_match_pythons_float_rules():
    values = [7.0, -7.0, 2.5, -2.5, 0.5, 3.0, -3.0]
    for x in values:
        for y in values:
            q, r = np.divmod(bf(x), bf(y))
            assert (float(q), float(r)) == divmod(x, y), (x, y)  # exact: small integers and halves
            assert q.dtype == np.dtype(bf) and r.dtype == np.dtype(bf)
            assert float(bf(x) // bf(y)) == x // y and float(bf(x) % bf(y)) == x % y
    with np.errstate(all="ignore"):
        q, r = np.divmod(bf(1), bf(0))
    assert float(q) == np.inf and np.isnan(r)
    fraction, whole = np.modf(np.array([2.5, -1.25], bf))
    assert fraction.dtype == whole.dtype == np.dtype(bf)
    assert list(fraction.astype(float)) == [0.5, -0.25] and list(whole.astype(float)) == [2.0, -1.0]
    mantissa, exponent = np.frexp(np.array([8.0, 0.375], bf))
    assert mantissa.dtype == np.dtype(bf) and exponent.dtype == np.dtype(np.intc)
    assert list(mantissa.astype(float)) == [0.5, 0.75] and list(exponent) == [4, -1]
    out = np.ldexp(np.array([0.75], bf), np.array([4], np.intc))
    assert out.dtype == np.dtype(bf) and float(out[0]) == 12.0


@own_type_only
def test_comparison_and_logical_loops_give_numpy_bools():
    a = np.array([0.0, 1.0, np.nan, -2.0], bf)
    b = np.array([0.0, 2.0, np.nan, -3.0], bf)
    for ufunc, expected in [(np.equal, [1, 0, 0, 0]), (np.not_equal, [0, 1, 1, 1]), (np.less, [0, 1, 0, 0]),
                            (np.less_equal, [1, 1, 0, 0]), (np.greater, [0, 0, 0, 1]),
                            (np.greater_equal, [1, 0, 0, 1]), (np.logical_and, [0, 1, 1, 1]),
                            (np.logical_or, [0, 1, 1, 1]), (np.logical_xor, [0, 0, 0, 0])]:
        out = ufunc(a, b)
        assert out.dtype == np.bool_ and list(out) == [bool(e) for e in expected], ufunc.__name__
    assert list(np.logical_not(a)) == [True, False, False, False]


@own_type_only
def test_dot_matmul_and_arange_compute_in_float_and_round_once():
    a = np.array([1.0, 2.0, 3.0], bf)
    assert a.dot(a).dtype == np.dtype(bf) and float(a.dot(a)) == 14.0
    assert float(a @ a) == 14.0
    r = np.arange(0, 1, 0.25, dtype=bf)
    assert r.dtype == np.dtype(bf) and list(r.astype(float)) == [0.0, 0.25, 0.5, 0.75]
    assert list(np.arange(3, dtype=bf).astype(float)) == [0.0, 1.0, 2.0]
    assert list(np.arange(256, 264, 2, dtype=bf).astype(float)) == [256.0, 258.0, 260.0, 262.0]


# ---- promotion: the result dtypes ml_dtypes' bfloat16 gives on the same NumPy --------------------------------
# Measured with ml_dtypes 0.6.0 on NumPy 2.4 and ml_dtypes 0.5.4 on NumPy 1.26 on this machine. On NumPy 2 Python
# floats promote bfloat16 to float32 (bfloat16 is no "float kind" to NumPy's legacy promotion), Python ints
# keep it; on NumPy 1 promotion is value-based.

B, F32, F64, C64, C128, BOOL = "bfloat16", "float32", "float64", "complex64", "complex128", "bool"
PROMOTION = [  # expression, result on NumPy 2, result on NumPy 1
    ("a + a", B, B), ("a + 2", B, B), ("a + 2.0", F32, F32), ("a + np.int8(1)", B, B),
    ("a + np.int32(1)", F64, B), ("a + np.float16(1)", F32, F32), ("a + np.float32(2)", F32, F32),
    ("a + np.float64(2)", F64, F32), ("a + np.array([1], np.int16)", F32, F32), ("a * 1j", C64, C64),
    ("bf(1) + bf(2)", B, B), ("bf(1) * 2", B, F64), ("bf(1) - 1", B, F64), ("1 - bf(1)", B, F64),
    ("bf(1) + 2.0", F32, F64), ("bf(3) ** 2", B, F64), ("bf(7) // 2", B, F64), ("bf(7) % 2", B, F64),
    ("bf(1) + 1j", C64, C128), ("-bf(1)", B, B), ("+bf(1)", B, B), ("abs(bf(-1))", B, B),
    ("bf(1) < bf(2)", BOOL, BOOL), ("np.ldexp(a, np.array([1, 2]))", F32, F32), ("np.sqrt(a)", B, B),
    ("np.float_power(a, a)", F64, F64), ("np.mean(a)", B, B), ("a.sum()", B, B),
]


@own_type_only
@pytest.mark.parametrize("expression,numpy2,numpy1", PROMOTION, ids=[p[0] for p in PROMOTION])
def test_results_have_the_dtype_ml_dtypes_bfloat16_gives(expression, numpy2, numpy1):
    a = np.array([1.0, 2.0], bf)  # noqa: F841 (used by the expressions)
    got = np.asarray(eval(expression)).dtype
    expected = np.dtype(bf) if (numpy2 if NUMPY2 else numpy1) == B else np.dtype(numpy2 if NUMPY2 else numpy1)
    assert got == expected
    if ml_dtypes is not None:
        oracle = eval(expression, {"np": np, "bf": ml_dtypes.bfloat16, "a": np.array([1.0, 2.0], ml_dtypes.bfloat16)})
        oracle_dtype = np.asarray(oracle).dtype
        assert (got == np.dtype(bf)) == (oracle_dtype == np.dtype(ml_dtypes.bfloat16))
        assert got == np.dtype(bf) or got == oracle_dtype


# ---- casts ----------------------------------------------------------------------------------------------------

NUMERIC = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.intc, np.uintc, np.int_, np.uint, np.longlong,
           np.ulonglong, np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128,
           np.clongdouble]


@own_type_only
@pytest.mark.parametrize("other", NUMERIC, ids=lambda t: np.dtype(t).name)
def test_casts_both_ways_with_every_numpy_number_type(other):
    values = np.array([0.0, 1.0, 2.5, -3.0, 100.0], np.float32)
    if np.dtype(other).kind == "u":
        values = np.abs(values)
    as_bf = values.astype(bf)
    out = as_bf.astype(other)
    assert out.dtype == np.dtype(other)
    assert np.array_equal(out, values.astype(other))
    back = values.astype(other).astype(bf)
    assert back.dtype == np.dtype(bf) and np.array_equal(back.astype(np.float32), values.astype(other).real.astype(np.float32))


@own_type_only
def test_complex_gives_its_real_part_and_wide_values_round_once():
    assert float(np.array([1.5 + 2j], np.complex128).astype(bf)[0]) == 1.5
    assert np.array([1.5], bf).astype(np.clongdouble)[0] == 1.5
    # 2**24 + 2**16 + 1 is just above the midpoint of 2**24 and 2**24 + 2**17: rounded once it is the latter.
    # Through float32 (MegDNN's bfloat16 is made from float, ml_dtypes casts through float32) it would first
    # become the midpoint 2**24 + 2**16, then 2**24 (to even): npybridge rounds once (docs/dtypes.md).
    big = np.array([(1 << 24) + (1 << 16) + 1], np.int64)
    assert float(big.astype(bf)[0]) == float((1 << 24) + (1 << 17))
    assert float(np.array([(1 << 24) + (1 << 16) + 1], np.float64).astype(bf)[0]) == float((1 << 24) + (1 << 17))
    assert float(np.array([1.00390625], np.longdouble).astype(bf)[0]) == 1.0  # a tie: to even
    assert float(np.array([1.00390625 + 2 ** -20], np.float64).astype(bf)[0]) == 1.0078125
    # Just below the overflow bound: float32 would round it to 2**128 (inf), once it is the largest bfloat16.
    assert np.array([3.3961775e38, -3.3961775e38], np.float64).astype(bf).view(np.uint16).tolist() == [0x7F7F, 0xFF7F]


CAN_CAST = [  # from, to, ml_dtypes' answer
    (np.bool_, "bf", True), (np.int8, "bf", True), (np.uint8, "bf", True), (np.int16, "bf", False),
    (np.float16, "bf", False), (np.float32, "bf", False), ("bf", np.float32, True), ("bf", np.float64, True),
    ("bf", np.longdouble, True), ("bf", np.complex64, True), ("bf", np.complex128, True),
    ("bf", np.clongdouble, True), ("bf", np.float16, False), ("bf", np.int64, False), ("bf", np.bool_, False),
]


@own_type_only
@pytest.mark.parametrize("source,target,safe", CAN_CAST, ids=[f"{s}-{t}" for s, t, _ in CAN_CAST])
def test_can_cast_is_safe_where_ml_dtypes_says_so(source, target, safe):
    source, target = (bf if source == "bf" else source), (bf if target == "bf" else target)
    assert np.can_cast(source, target) is safe
    if ml_dtypes is not None:
        swap = lambda t: ml_dtypes.bfloat16 if t is bf else t  # noqa: E731
        assert np.can_cast(swap(source), swap(target)) is safe


# ---- construction and the type's names -----------------------------------------------------------------------

@own_type_only
def test_the_type_is_named_bfloat16_and_carries_its_dtype():
    assert bf.dtype == np.dtype(bf) and np.dtype(bf).name == "bfloat16" and np.dtype(bf).itemsize == 2
    assert np.dtype(bf).char == "E" and np.dtype(bf).kind == "V"  # as ml_dtypes' (kind 'f' is NumPy's own floats)
    if ml_dtypes is None:  # once ml_dtypes is imported, the name is its type's (it registers the name last)
        assert np.dtype("bfloat16") == np.dtype(bf) and np.zeros(2, "bfloat16").dtype == np.dtype(bf)


@own_type_only
def test_constructing_from_arrays_strings_and_numpy_scalars():
    out = bf(np.array([1.0, 2.0]))
    assert isinstance(out, np.ndarray) and out.dtype == np.dtype(bf) and list(out.astype(float)) == [1.0, 2.0]
    same = np.array([1.0], bf)
    assert bf(same) is same
    assert float(bf("1.5")) == 1.5 and float(bf(np.float32(3.3))) == 3.296875 and float(bf(np.int64(3))) == 3.0
    assert float(bf(np.array(2.5))) == 2.5 and type(bf(np.array(2.5))) is bf
    with pytest.raises(TypeError, match="list"):
        bf([1.0, 2.0])


# ---- scalars ---------------------------------------------------------------------------------------------------

@own_type_only
def test_item_and_tolist_give_python_floats_and_indexing_gives_the_scalar():
    a = np.array([1.5, -2.0], bf)
    assert type(bf(0).item()) is float and bf(0).item() == 0.0
    assert a.tolist() == [1.5, -2.0] and all(type(v) is float for v in a.tolist())
    assert type(a[0]) is bf and float(a[0]) == 1.5
    swapped = a.astype(np.dtype(bf).newbyteorder(">")) if NUMPY2 else a.byteswap().view(np.dtype(bf).newbyteorder(">"))
    assert swapped.tolist() == [1.5, -2.0] and float(swapped[1]) == -2.0


# What ml_dtypes 0.6.0 prints for these (C++ float output: %g, six significant digits; NaN without a sign).
TEXT = [(0.0, "0"), (-0.0, "-0"), (3.0, "3"), (0.1, "0.100098"), (1e10, "9.99922e+09"), (1e-40, "9.18355e-41"),
        (float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan"), (float("-nan"), "nan")]


@own_type_only
@pytest.mark.parametrize("value,text", TEXT, ids=[t for _, t in TEXT])
def test_repr_and_str_print_as_ml_dtypes_prints(value, text):
    assert repr(bf(value)) == text and str(bf(value)) == text
    if ml_dtypes is not None:
        assert repr(ml_dtypes.bfloat16(value)) == text


@own_type_only
def test_format_is_the_format_of_the_float_held():
    assert f"{bf(1.5):.2f}" == "1.50" and f"{bf(0)}" == "0.0" and f"{bf(0.1):e}" == "1.000977e-01"
    assert format(bf(-2.5), ">8") == "    -2.5"
    with pytest.raises(TypeError, match="must be str, not int"):
        bf(1).__format__(3)


@own_type_only
def test_hash_is_floats_hash_and_a_nan_hashes_by_identity():
    for v in [0.0, -0.0, 1.5, -3.0, 1e10, float("inf")]:
        assert hash(bf(v)) == hash(float(bf(v)))
    assert {bf(1.5): "x"}[1.5] == "x"
    n1, n2 = bf(float("nan")), bf(float("nan"))
    assert hash(n1) == object.__hash__(n1) and hash(n1) != hash(n2)


@own_type_only
def test_scalar_comparisons_give_numpy_bools_and_broadcast_against_sequences():
    assert type(bf(1) < bf(2)) is np.bool_ and type(bf(1) == bf(1)) is np.bool_
    assert (bf(1) < bf(2)) and not (bf(np.nan) == bf(np.nan)) and (bf(np.nan) != bf(np.nan))
    assert list(bf(1.0) < [1.0, 2.0]) == [False, True]
    assert list(bf(1.0) == (1.0, 2.0)) == [True, False]
    assert list(bf(2.0) >= np.array([1.0, 3.0], bf)) == [True, False]
    assert (bf(1) == "a") is False and (bf(1) != "a") is True and (bf(1) == None) is False  # noqa: E711
    assert bf(1) == 1.0 and bf(0.5) < 1


@own_type_only
def test_scalar_arithmetic_rounds_to_bfloat16():
    assert type(bf(1) + bf(2)) is bf and float(bf(1) + bf(2 ** -8)) == 1.0  # the tie rounds to even
    assert float(bf(1) + bf(3 * 2 ** -8)) == 1.015625
    assert float(bf(3) * bf(1 / 3)) == 1.0  # 3 * 0.333984375 = 1.0019..., nearer 1 than 1 + 2**-7 and float(bf(1) - bf(2)) == -1.0
    assert type(-bf(1)) is bf and float(-bf(1)) == -1.0


# ---- references ------------------------------------------------------------------------------------------------

@own_type_only
def test_loops_and_scalar_methods_leak_no_references(refcounts):
    a = np.array([1.0, 2.0], bf)
    b = np.array([3.0, 0.5], bf)
    s, t = bf(1.5), bf(2.5)
    ints = np.array([1, 2], np.intc)
    descr = np.dtype(bf)
    ufuncs = {getattr(np, name) for name in dir(np) if isinstance(getattr(np, name), np.ufunc)}
    checked = 0
    for ufunc in sorted(ufuncs, key=lambda u: u.__name__):
        if ufunc.nin not in (1, 2) or ufunc.signature is not None:  # gufuncs (matmul, ...) have other tests
            continue
        args = (a,) if ufunc.nin == 1 else (a, ints if ufunc is np.ldexp else b)
        with np.errstate(all="ignore"):
            try:
                result = ufunc(*args)
            except TypeError:
                continue
        results = result if isinstance(result, tuple) else (result,)
        if not all(r.dtype in (descr, np.dtype(np.bool_), np.dtype(np.intc)) for r in results):
            continue  # not one of bfloat16's loops (NumPy promoted to another dtype)
        # 10^5 calls of one ufunc per loop signature (bf16 -> bf16, (bf16, bf16) -> bf16 / bool, two results,
        # an int argument), 10^4 of every other: the loops share their code and NumPy's dispatch per signature.
        times = 100_000 if ufunc in (np.negative, np.add, np.less, np.isnan, np.divmod, np.frexp, np.ldexp) else 10_000
        with np.errstate(all="ignore"):
            refcounts([a, b, ints, descr, bf], lambda: ufunc(*args), times=times)
        checked += 1
    assert checked >= 60  # every loop bfloat16 registers (70) but the few taking other types
    for action in (lambda: s + t, lambda: s < t, lambda: hash(s), lambda: format(s, ".1f"), lambda: repr(s),
                   lambda: a.tolist(), lambda: a[0], lambda: bf(a), lambda: a.astype(np.complex64)):
        refcounts([a, s, t, descr, bf], action, times=100_000)


# ---- one rounding on every route ----------------------------------------------------------------------------

def bf16_bits_of_fraction(value):
    """The bfloat16 bits nearest to an exact rational (ties to even; subnormals kept, overflow to infinity)."""
    from fractions import Fraction
    value = Fraction(value)
    if value == 0:
        return 0
    sign = 0x8000 if value < 0 else 0
    magnitude = abs(value)
    exponent = max(magnitude.numerator.bit_length() - magnitude.denominator.bit_length(), -126)
    while exponent > -126 and magnitude < Fraction(2) ** exponent:
        exponent -= 1
    while magnitude >= Fraction(2) ** (exponent + 1):
        exponent += 1
    scaled = magnitude / Fraction(2) ** (exponent - 7)  # [128, 256) for normals, below for subnormals
    whole, rest = divmod(scaled, 1)
    whole = int(whole)
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole & 1):
        whole += 1
    if whole == 256:
        whole, exponent = 128, exponent + 1
    if exponent > 127:
        return sign | 0x7F80
    if whole < 128:  # subnormal (exponent -126)
        return sign | whole
    return sign | ((exponent + 127) << 7) | (whole - 128)


def routes_of(value):
    """The bits each route into the own bfloat16 gives for one value: scalar constructor, array from a list,
    item assignment, an object array's astype."""
    a = np.zeros(1, dtype=bf)
    a[0] = value
    return {
        "scalar": int(np.array(bf(value)).view(np.uint16)),
        "list": int(bits_of(np.array([value], dtype=bf))[0]),
        "setitem": int(bits_of(a)[0]),
        "object astype": int(bits_of(np.array([value], dtype=object).astype(bf))[0]),
    }


@own_type_only
def test_the_issues_values_round_once_on_every_route():
    n = 2**60 + 2**52 + 1
    for value in (n, np.int64(n), np.uint64(n)):
        assert set(routes_of(value).values()) == {0x5D81}, (value, routes_of(value))
    assert int(bits_of(np.array([n]).astype(bf))[0]) == 0x5D81
    if np.finfo(np.longdouble).nmant > 52:
        tiny = np.longdouble(1) + np.longdouble(2) ** -8 + np.longdouble(2) ** -60
        assert set(routes_of(tiny).values()) == {0x3F81}
        assert int(bits_of(np.array([tiny]).astype(bf))[0]) == 0x3F81


from hypothesis import given, settings, strategies as st  # noqa: E402


def near_ties(draw_bits):
    """Integers just around a bfloat16 tie: a 9-bit head ending in 1, then a tail of zeros or small noise."""
    return st.builds(lambda head, shift, noise, negative: (-1 if negative else 1) * (((head | 1) << shift) + noise),
                     st.integers(256, 511), st.integers(0, draw_bits), st.integers(-2, 2), st.booleans())


@own_type_only
@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(-(2**200), 2**200), near_ties(190), near_ties(55)))
def test_python_ints_of_any_size_round_once_on_every_route(n):
    expected = bf16_bits_of_fraction(n)
    assert set(routes_of(n).values()) == {expected}, (n, hex(expected), routes_of(n))
    if -(2**63) <= n < 2**64:
        numpy_int = np.int64(n) if n < 2**63 else np.uint64(n)
        assert set(routes_of(numpy_int).values()) == {expected}
        assert int(bits_of(np.array([numpy_int]).astype(bf))[0]) == expected


@own_type_only
@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="long double is double here")
@settings(max_examples=300, deadline=None)
@given(st.integers(256, 511), st.integers(-140, 140), st.integers(-(2**8), 2**8), st.booleans())
def test_long_doubles_round_once_on_every_route(head, exponent, noise, negative):
    # A 63-bit significand: a tie for bfloat16 (9-bit head ending in 1) moved by a noise below double's 53 bits.
    value = (np.longdouble((head | 1) * 2**54) + np.longdouble(noise)) * np.longdouble(2) ** (exponent - 62)
    value = -value if negative else value
    numerator, denominator = value.as_integer_ratio()
    from fractions import Fraction
    expected = bf16_bits_of_fraction(Fraction(numerator, denominator))
    assert set(routes_of(value).values()) == {expected}, (value, hex(expected), routes_of(value))
    assert int(bits_of(np.array([value]).astype(bf))[0]) == expected
