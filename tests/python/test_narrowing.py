"""Narrowing: the checked, wrap and reject modes, and the checked rule that decides by values (docs/policies.md).
"""
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from conftest import bf16_value, exact, finite_floats, mgb_dtype, nbx


Tensor = nbx.Tensor


NARROWER = [
    (np.array([2**40, 300]), "Int8", "1099511627776", "(0,)"),
    (np.array([5, 300]), "Int8", "300", "(1,)"),
    (np.array([5, 70000], np.int32), "Int16", "70000", "(1,)"),
    (np.array([5, -1], np.int16), "Uint8", "-1", "(1,)"),
    (np.array([5, 2**64 - 1], np.uint64), "Int32", "18446744073709551615", "(1,)"),
    (np.array([5, 65536], np.uint32), "Uint16", "65536", "(1,)"),
    (np.array([1.0, 1e39]), "Float16", "1e+39", "(1,)"),
    (np.array([1.0, 70000.0], np.float32), "Float16", "70000.0", "(1,)"),
    (np.array([1.0, 1e39]), "BFloat16", "1e+39", "(1,)"),
    (np.array([[1, 2], [3, 100000]]), "Float16", "100000", "(1, 1)"),
    (np.array([1 + 1j, 1e39 + 0j]), "Complex64", "(1e+39+0j)", "(1,)"),
]


bf = np.dtype(nbx.bfloat16)


FLOAT_FORMATS = {"Float16": (11, -14, 15), "BFloat16": (8, -126, 127), "Float32": (24, -126, 127)}


INT_RANGES = {"Int8": (-128, 127), "Uint8": (0, 255), "Int16": (-32768, 32767), "Uint16": (0, 65535),
              "Int32": (-2 ** 31, 2 ** 31 - 1)}


def round_fraction(x, digits, emin, emax):
    """x rounded once to `digits` significant bits, ties to even, exponents in [emin, emax] (subnormals below):
    a Fraction, or None when the result is infinite."""
    if x == 0:
        return Fraction(0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - digits + 1)
    n, rest = divmod(a / quantum, 1)
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    result = n * quantum
    if result >= Fraction(2) ** (emax + 1):
        return None
    return result if x > 0 else -result


def _stored_values(tensor, target):
    raw = tensor.storage()
    if target == "BFloat16":
        return [Fraction(float(v)) for v in (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)]
    numpy_type = {"Float16": np.float16, "Float32": np.float32}.get(target) or np.dtype(target.lower())
    return [Fraction(*np.longdouble(v).as_integer_ratio()) for v in np.frombuffer(raw, numpy_type)]


@st.composite
def sources_at_the_edges(draw):
    source = draw(st.sampled_from(["float16", "float32", "float64", "longdouble", "int8", "uint8", "int16",
                                   "int32", "int64", "uint32"]))
    dtype = np.dtype(source)
    if dtype.kind == "f":
        return dtype, draw(finite_floats(dtype))
    info = np.iinfo(dtype)
    edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 65535, 65536, 2 ** 24 + 1,
             2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1, 16777216, 33554435]
    value = draw(st.one_of(st.integers(info.min, info.max),
                           st.sampled_from(edges).map(lambda v: v + draw(st.integers(-2, 2)))))
    return dtype, dtype.type(min(max(value, info.min), info.max))


CODE_TARGETS = {  # quantized and packed targets: their codes, by name
    "QuantizedS8": (mgb_dtype("int8", "QuantizedS8", 0.5), lambda v: -128 <= v <= 127),
    "QuantizedS16": (mgb_dtype("int16", "QuantizedS16", 0.5), lambda v: -32768 <= v <= 32767),
    "Quantized8Asymm": (mgb_dtype("uint8", "Quantized8Asymm", 0.5, 3), lambda v: 0 <= v <= 255),
    "IntB4": ("IntB4", lambda v: -15 <= v <= 15 and v % 2 == 1),
    "IntB2": ("IntB2", lambda v: -3 <= v <= 3 and v % 2 == 1),
}


# Each target: what from_numpy is given, its valid codes, and how its stored values read back.
TARGETS = {
    "Int8": ("Int8", lambda v: -128 <= v <= 127),
    "Uint8": ("Uint8", lambda v: 0 <= v <= 255),
    "Int16": ("Int16", lambda v: -32768 <= v <= 32767),
    "Uint16": ("Uint16", lambda v: 0 <= v <= 65535),
    "Int32": ("Int32", lambda v: -2 ** 31 <= v <= 2 ** 31 - 1),
    "Bool": ("Bool", lambda v: v in (0, 1)),
    "QuantizedS8": (mgb_dtype("int8", "QuantizedS8", 0.5), lambda v: -128 <= v <= 127),
    "QuantizedS1": (mgb_dtype("int8", "QuantizedS1", 1.0), lambda v: v in (0, 1)),
    "Quantized8Asymm": (mgb_dtype("uint8", "Quantized8Asymm", 0.5, 3), lambda v: 0 <= v <= 255),
    "QuantizedS4": (mgb_dtype("int8", "QuantizedS4", 0.25), lambda v: -8 <= v <= 7),
    "IntB4": ("IntB4", lambda v: -15 <= v <= 15 and v % 2 == 1),
    "IntB2": ("IntB2", lambda v: -3 <= v <= 3 and v % 2 == 1),
}


WHOLE_EDGES = [0, 1, -1, 2, 3, 7, -8, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 65535, 65536, 2 ** 31 - 1,
         2 ** 31, -2 ** 31, -2 ** 31 - 1, 2 ** 53, 2 ** 63, -2 ** 63, 2 ** 64]


@st.composite
def floats_near_whole_numbers(draw):
    """A float of each NumPy width at or next to a target's edge: whole, half-way, a quarter off, or special."""
    dtype = np.dtype(draw(st.sampled_from(["float16", "float32", "float64", "longdouble"])))
    special = draw(st.sampled_from([None] * 8 + ["nan", "inf", "-inf", "-0.0", "1e-40", "5e-324"]))
    if special is not None:
        with np.errstate(all="ignore"):
            return dtype, dtype.type(special)
    offset = draw(st.sampled_from([0, 0, 0, 0.5, -0.5, 0.25, 1, -1]))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = dtype.type(draw(st.sampled_from(WHOLE_EDGES))) + dtype.type(offset)
    return dtype, value


def copied_into(array, wanted):
    tensor = Tensor.from_numpy(np.ones(array.shape, np.int8), dtype=wanted)
    tensor.copy_from(array)
    return tensor


SOURCES = ["bool", "int8", "uint64", "float16", "float64", "longdouble", "complex64", "complex128",
           np.dtype(nbx.bfloat16)]


@pytest.mark.hardening
@pytest.mark.parametrize("values, target, shown, index", NARROWER)
def test_checked_names_every_value_that_does_not_fit_a_narrower_dtype(values, target, shown, index):
    with pytest.raises(nbx.ValueRangeError) as caught:
        Tensor.from_numpy(values, dtype=target, narrowing="checked")
    message = str(caught.value)
    assert f"value {shown} at index {index}" in message and target in message


@pytest.mark.hardening
def test_checked_keeps_values_that_round_but_stay_finite():
    # 65519 rounds to float16's largest value 65504; 65520 would be infinite.
    assert Tensor.from_numpy(np.array([65519.0]), dtype="Float16").numpy().tolist() == [65504.0]
    with pytest.raises(nbx.ValueRangeError, match="65520"):
        Tensor.from_numpy(np.array([65520.0]), dtype="Float16")
    with pytest.raises(nbx.ValueRangeError, match="65520"):
        Tensor.from_numpy(np.array([3, 65520]), dtype="Float16")
    # Non-finite values are values too, and NaN stays NaN.
    out = Tensor.from_numpy(np.array([np.inf, -np.inf, np.nan]), dtype="Float16").numpy()
    assert np.isinf(out[:2]).all() and np.isnan(out[2])
    assert Tensor.from_numpy(np.array([-128, 127]), dtype="Int8").numpy().tolist() == [-128, 127]


@pytest.mark.hardening
@pytest.mark.parametrize("values, target, shown, index", NARROWER)
def test_reject_refuses_every_cast_that_can_lose_values(values, target, shown, index):
    with pytest.raises(nbx.DTypeError, match="narrowing='reject' allows no cast that can lose values"):
        Tensor.from_numpy(values, dtype=target, narrowing="reject")
    # Even when this array's values would fit.
    with pytest.raises(nbx.DTypeError, match=target):
        Tensor.from_numpy(values[:1], dtype=target, narrowing="reject")


@pytest.mark.hardening
def test_reject_takes_casts_that_lose_nothing():
    assert Tensor.from_numpy(np.array([1, -2], np.int8), dtype="Int32", narrowing="reject").numpy().tolist() == [1, -2]
    assert Tensor.from_numpy(np.array([1.5], np.float16), dtype="Float32", narrowing="reject").numpy().tolist() == [1.5]


EXACT_TEXT_CASES = [
    # (values, dtype, target, the value named): never a value the target holds, never inf for a finite value.
    ([1.000000000001], np.float64, "Int8", "1.000000000001"),
    ([123456789.5], np.float64, "Int32", "123456789.5"),
    ([1e-05 + 1], np.float64, "Int8", "1.00001"),
    ([300.0], np.float64, "Int8", "300.0"),
    ([0.1], np.float32, "Int8", "0.1"),
    ([0.1], np.float16, "Int8", "0.099975586"),  # float16 as its value
    ([70000.0], np.float32, "Float16", "70000.0"),
    ([3 - 1e300j], np.complex128, "Complex64", "(3-1e+300j)"),
]


@pytest.mark.hardening
@pytest.mark.parametrize("values, dtype, target, shown", EXACT_TEXT_CASES)
def test_a_refusal_names_the_value_exactly_as_the_source_holds_it(values, dtype, target, shown):
    with pytest.raises(nbx.ValueRangeError, match=r": value %s at index \(0,\)" % re.escape(shown)):
        Tensor.from_numpy(np.array(values, dtype), dtype=target)


@pytest.mark.hardening
def test_a_long_double_is_named_with_the_digits_it_needs():
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("long double is double here")
    near = np.longdouble(127) + np.longdouble(2) ** -55
    with pytest.raises(nbx.ValueRangeError) as caught:
        Tensor.from_numpy(np.array([near]), dtype="Int8")
    named = re.search(r": value (\S+) at index", str(caught.value)).group(1)
    assert np.longdouble(named) == near and named != "127" and named != "127.0"
    with pytest.raises(nbx.ValueRangeError, match=r": value 1e\+600 at index"):  # finite: never "inf"
        Tensor.from_numpy(np.array([np.longdouble("1e600")]), dtype="Float32")


@pytest.mark.hardening
@pytest.mark.guarantee
@settings(max_examples=200, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float16, bf.type, np.float32, np.float64, np.longdouble,
                                              np.complex64, np.complex128]),
       target=st.sampled_from(["Int8", "Int16", "Int32", "Uint8", "Uint16", "Bool", "Float16", "BFloat16", "Float32",
                               "QuantizedS8", "Quantized8Asymm", "QuantizedS32"]),
       step=st.sampled_from([1, 2]))
def test_the_value_named_reads_back_as_the_refused_value_in_its_own_type(data, dtype, target, step):
    # The text is the shortest that reads back as the source value in the source's type (laid out as Python's repr;
    # float16 and bfloat16 as float32 writes their value), whatever kernel or widening named it.
    if target.startswith("Quantized"):
        target = mgb_dtype(np.int32 if target == "QuantizedS32" else np.int8 if target == "QuantizedS8" else np.uint8,
                           target, 0.5, 3 if target == "Quantized8Asymm" else None)
    real = bf if dtype is bf.type else np.dtype(dtype).type(0).real.dtype
    if np.dtype(dtype).kind == "c":
        target = "Complex64"
    bits = data.draw(st.integers(0, 2 ** (8 * real.itemsize) - 1)) if real.itemsize <= 8 else None
    if bits is None:
        value = np.longdouble(data.draw(st.floats(allow_nan=False, allow_infinity=False))) * np.longdouble(
            data.draw(st.sampled_from([1, 1.1, 3.3, 1e300])))
    else:
        value = np.array([bits], np.dtype("u%d" % real.itemsize)).view(real)[0]
    assume(np.isfinite(value))
    values = np.zeros(6, dtype)
    values[2 * step] = value * (1 + 1j) if np.dtype(dtype).kind == "c" else value
    try:
        with np.errstate(all="ignore"):
            Tensor.from_numpy(values[::step], dtype=target)
        return
    except nbx.ValueRangeError as error:
        named = re.search(r": value (.+) at index \(2,\)", str(error)).group(1)
    held = values[2 * step]
    part = np.float32 if real in (np.float16, bf) else real.type  # 16-bit floats as their value, as float32
    if np.dtype(dtype).kind == "c":
        parsed = complex(named)  # Python's complex repr: "(a+bj)"
        assert named.startswith("(") and part(parsed.real) == held.real and part(parsed.imag) == held.imag, named
    else:
        assert part(named) == part(held), (named, held)
        # The shortest such text: one digit fewer does not read back.
        digits = re.sub(r"e.*|[-.]", "", named).strip("0")
        assert len(digits) <= {np.float16: 9, bf.type: 9, np.float32: 9, np.float64: 17}.get(real.type, 40), named


def quantized_numpy_dtype(row):
    """A table row's numpy dtype, quantized ones with params (scale 0.5, zero point 3 where they take one)."""
    if row["category"] != "quantized":
        return None if row["numpy"] is None else (bf if row["numpy"] == "bfloat16" else row["numpy"])
    base = np.uint8 if row["name"].startswith("Quantized8") or row["name"].startswith("Quantized4") else (
        np.int32 if row["name"] == "QuantizedS32" else np.int16 if row["name"] == "QuantizedS16" else np.int8)
    return mgb_dtype(base, row["name"], 0.5, 3 if "Asymm" in row["name"] else None)


@pytest.mark.hardening
@pytest.mark.guarantee
@settings(max_examples=150, deadline=None)
@given(data=st.data(), mode=st.sampled_from(["checked", "wrap", "reject"]),
       shape=st.sampled_from([(0,), (0, 3), (2, 0), (3, 0, 2)]))
def test_an_empty_array_passes_every_value_rule_but_not_the_dtype_rules(data, mode, shape):
    # docs/policies.md: an empty array has no value to refuse; strings and objects are not numbers, and quantized
    # codes go only into their own dtype, empty or not.
    rows = nbx.dtype_table()
    source = data.draw(st.sampled_from(reject_sources() + ["U3", "S2", object] +
                                       [quantized_numpy_dtype(r) for r in rows if r["category"] == "quantized"]))
    target_row = data.draw(st.sampled_from(rows))
    target = quantized_numpy_dtype(target_row) if target_row["category"] == "quantized" else target_row["name"]
    array = np.zeros(shape, source)
    quantized_source = array.dtype.metadata is not None
    refused = array.dtype.kind in "USO" or (quantized_source and not (
        target_row["category"] == "quantized" and np.dtype(target) == array.dtype and
        np.dtype(target).metadata == array.dtype.metadata))
    if refused:
        with pytest.raises(nbx.DTypeError):
            Tensor.from_numpy(array, dtype=target, narrowing=mode)
    else:
        tensor = Tensor.from_numpy(array, dtype=target, narrowing=mode)
        assert tensor.dtype_name == target_row["name"] and tuple(tensor.shape) == shape


def reject_sources():
    """Every NumPy number type, npybridge's own bfloat16 and intbN, and ml_dtypes' types where it is installed."""
    sources = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
               np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128, np.clongdouble,
               nbx.bfloat16, nbx.intb1, nbx.intb2, nbx.intb4]
    try:
        import ml_dtypes
    except ImportError:
        return sources
    return sources + [getattr(ml_dtypes, name) for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "int4",
                                                             "uint4", "int2", "uint2") if hasattr(ml_dtypes, name)]


# The targets NumPy has an answer for: every unpacked MegDNN dtype with a NumPy form, quantized ones aside.
REJECT_TARGETS = {row["name"]: (nbx.bfloat16 if row["numpy"] == "bfloat16" else np.dtype(row["numpy"]))
                  for row in nbx.dtype_table()
                  if not row["packed"] and row["numpy"] and row["category"] not in ("quantized", "other")}


@pytest.mark.hardening
@pytest.mark.guarantee
@settings(max_examples=400, deadline=None)
@given(source=st.sampled_from(reject_sources()), target=st.sampled_from(sorted(REJECT_TARGETS)),
       order=st.sampled_from(["=", "byteswapped"]), step=st.sampled_from([1, 2]))
def test_reject_converts_exactly_the_casts_numpy_calls_safe(source, target, order, step):
    # NumPy's answer for the caller's dtype decides, also where npybridge reads a stand-in (ml_dtypes' int4 / uint4
    # / int2 / uint2 unpacked to bytes, intbN viewed as int8).
    dtype = np.dtype(source)
    odd = dtype.type in (nbx.intb1, nbx.intb2, nbx.intb4)
    values = np.array([1, -1, 1, 1] if odd else [0, 1, 1, 0], dtype=dtype)
    if order == "byteswapped" and dtype.isbuiltin:
        values = values.astype(dtype.newbyteorder())
    values = values[::step]
    safe = np.can_cast(values.dtype, REJECT_TARGETS[target], "safe")
    if safe:
        tensor = Tensor.from_numpy(values, dtype=target, narrowing="reject")
        assert tensor.dtype_name == target
        assert np.array_equal(tensor.numpy().astype(np.float64), values.astype(np.float64))
    else:
        with pytest.raises(nbx.DTypeError, match=r"cannot cast numpy %s to %s with casting='safe'"
                                                  % (re.escape(str(values.dtype)), target)):
            Tensor.from_numpy(values, dtype=target, narrowing="reject")


@pytest.mark.hardening
@pytest.mark.parametrize("values, target, shown, index", NARROWER)
def test_wrap_casts_anyway(values, target, shown, index):
    with np.errstate(all="ignore"):
        Tensor.from_numpy(values, dtype=target, narrowing="wrap")


@pytest.mark.hardening
@pytest.mark.parametrize("values,numpy_type,target,shown,index", [
    ([1, 16777217], np.int32, "Float32", "16777217 (not held exactly: it would become 16777216)", "(1,)"),
    ([2**53 + 1], np.int64, "Float32", "9007199254740993", "(0,)"),
    ([3, 2**62 + 1], np.uint64, "Complex64", "4611686018427387905", "(1,)"),
    ([2049], np.int16, "Float16", "2049 (not held exactly: it would become 2048)", "(0,)"),
    ([[256, 257]], np.int32, "BFloat16", "257 (not held exactly: it would become 256)", "(0, 1)"),
])
def test_checked_never_changes_an_integer_it_lets_into_a_float(values, numpy_type, target, shown, index):
    with pytest.raises(nbx.ValueRangeError) as caught:
        Tensor.from_numpy(np.array(values, numpy_type), dtype=target)
    assert f"value {shown}" in str(caught.value) and f"at index {index}" in str(caught.value), str(caught.value)


@pytest.mark.hardening
@pytest.mark.parametrize("values,numpy_type,target", [
    ([16777216, -16777216, 2**30, 0], np.int32, "Float32"), ([2048, -2048, 2**15], np.int32, "Float16"),
    ([256, -256, 2**20], np.int64, "BFloat16"), ([2**63], np.uint64, "Float32"),
])
def test_checked_takes_integers_a_float_holds_exactly(values, numpy_type, target):
    t = Tensor.from_numpy(np.array(values, numpy_type), dtype=target)
    np.testing.assert_array_equal(t.numpy().astype(np.float64), np.array(values, np.float64))


@pytest.mark.hardening
def test_wrap_rounds_integers_into_floats_without_a_check():
    t = Tensor.from_numpy(np.array([16777217], np.int32), dtype="Float32", narrowing="wrap")
    assert t.numpy()[0] == 16777216


@pytest.mark.guarantee
@settings(max_examples=300, deadline=None)
@given(case=sources_at_the_edges(), target=st.sampled_from(sorted(CODE_TARGETS)))
def test_checked_integers_into_codes_change_no_value(case, target):
    """Integers into quantized and packed dtypes: the code as it is, or a refusal exactly when it is not one."""
    dtype, value = case
    assume(dtype.kind in "iu")
    wanted, valid = CODE_TARGETS[target]
    array = np.array([value], dtype)
    try:
        tensor = Tensor.from_numpy(array, dtype=wanted)
    except nbx.ValueRangeError as error:
        assert not valid(int(value)) and "at index (0,)" in str(error)
        return
    assert valid(int(value))
    stored = tensor.numpy()
    assert int(np.asarray(stored).astype(np.int64)[0]) == int(value)


@pytest.mark.guarantee
@settings(max_examples=200, deadline=None)
@given(bits=st.integers(0, 0xFFFF).filter(lambda b: b & 0x7F80 != 0x7F80),
       target=st.sampled_from(["Float16", "Float32", "BFloat16"]))
def test_checked_bfloat16_sources_round_once(bits, target):
    """bfloat16 arrays (npybridge's, ml_dtypes' or MegEngine's: the same bits) into the float dtypes."""
    array = np.array([bits], np.uint16).view(bf)
    x = bf16_value(bits) if bits & 0x7FFF else Fraction(0)
    try:
        stored = _stored_values(Tensor.from_numpy(array, dtype=target), target)[0]
    except nbx.ValueRangeError:
        assert round_fraction(x, *FLOAT_FORMATS[target]) is None
        return
    assert stored == round_fraction(x, *FLOAT_FORMATS[target])


@pytest.mark.guarantee
@settings(max_examples=600, deadline=None)
@given(case=sources_at_the_edges(), target=st.sampled_from(sorted(FLOAT_FORMATS) + sorted(INT_RANGES)))
def test_checked_narrowing_changes_no_value_beyond_one_rounding(case, target):
    dtype, value = case
    x = Fraction(*np.longdouble(value).as_integer_ratio()) if dtype.kind == "f" else Fraction(int(value))
    array = np.array([value], dtype)
    try:
        stored = _stored_values(Tensor.from_numpy(array, dtype=target), target)[0]
    except nbx.ValueRangeError as error:
        assert "at index (0,)" in str(error) and target in str(error)
        if target in INT_RANGES:
            lo, hi = INT_RANGES[target]
            assert not (lo <= x <= hi and x.denominator == 1)  # refused: out of range, or not a whole number
        else:
            rounded = round_fraction(x, *FLOAT_FORMATS[target])
            # Refused: it would overflow, or it is an integer the float does not hold exactly.
            assert rounded is None or (dtype.kind in "iu" and rounded != x)
        return
    if target in INT_RANGES:
        assert stored == x
    else:
        assert stored == round_fraction(x, *FLOAT_FORMATS[target])
        if dtype.kind in "iu":
            assert stored == x  # checked takes an integer into a float only when it is held exactly


@settings(max_examples=500, deadline=None)
@given(case=floats_near_whole_numbers(), target=st.sampled_from(sorted(TARGETS)))
def test_floats_convert_exactly_when_whole_and_valid_else_are_refused_by_index(case, target):
    dtype, value = case
    wanted, valid = TARGETS[target]
    x = exact(value)
    holds = x is not None and x.denominator == 1 and valid(int(x))
    array = np.array([1, value], dtype)  # the first value is valid everywhere: the second is named by index
    for convert in (lambda: Tensor.from_numpy(array, dtype=wanted),
                    lambda: copied_into(array, wanted)):
        try:
            stored = convert().numpy()
        except nbx.ValueRangeError as error:
            assert not holds, f"{value!r} ({dtype}) into {target}: {error}"
            assert "at index (1,)" in str(error)
            continue
        assert holds, f"{value!r} ({dtype}) into {target} was taken"
        assert int(np.asarray(stored).astype(np.int64)[1]) == int(x)


@pytest.mark.parametrize("value, index", [(float("nan"), "(2,)"), (float("inf"), "(2,)"), (2.5, "(2,)"),
                                          (128.0, "(2,)"), (2.0 ** 63, "(2,)")])
def test_the_refusal_names_the_value_the_index_and_the_way_out(value, index):
    array = np.array([0.0, -0.0, value])
    with pytest.raises(nbx.ValueRangeError) as plain:
        Tensor.from_numpy(array, dtype="Int8")
    text = str(plain.value)
    assert f"narrowing float64 to Int8: value {np.float64(value)!s}".lower()[:30] in text.lower()
    assert f"at index {index} is not held exactly by Int8" in text and "'wrap' casts as NumPy does" in text
    with pytest.raises(nbx.ValueRangeError, match=r"quantize\(\) converts real values"):
        Tensor.from_numpy(array, dtype=mgb_dtype("int8", "QuantizedS8", 0.5))


def test_negative_zero_becomes_zero_and_whole_floats_are_megengines_codes():
    # MegEngine: tensor(np.arange(6).astype('float32'), dtype=qint8(0.5)) stores the codes 0..5.
    t = Tensor.from_numpy(np.arange(6).astype("float32"), dtype=mgb_dtype("int8", "QuantizedS8", 0.5))
    assert t.numpy().view(np.int8).tolist() == [0, 1, 2, 3, 4, 5]
    assert Tensor.from_numpy(np.array([-0.0, 1.0]), dtype="Bool").numpy().tolist() == [False, True]
    assert Tensor.from_numpy(np.array([-0.0]), dtype="Int16").storage() == b"\0\0"


@pytest.mark.parametrize("source", SOURCES, ids=str)
@pytest.mark.parametrize("target", sorted(TARGETS) + ["Float32", "BFloat16", "Float16", "Complex64"])
def test_an_empty_array_always_converts(source, target):
    wanted = TARGETS[target][0] if target in TARGETS else target
    empty = np.zeros((0, 3), source)
    t = Tensor.from_numpy(empty, dtype=wanted)
    assert t.shape == (0, 3)
    destination = Tensor.from_numpy(np.zeros((0, 3), np.int8), dtype=wanted)
    destination.copy_from(empty)


@pytest.mark.parametrize("target", ["BFloat16", "Float32", "Float16", "Int8", "Bool"])
@pytest.mark.parametrize("source", ["complex64", "complex128"])
def test_complex_numbers_go_only_into_complex_dtypes(source, target):
    array = np.array([1 + 2j, 3 - 4j], source)
    with pytest.raises(nbx.DTypeError, match=f"cannot cast numpy {source} to {target} with narrowing='checked': "
                                             "complex numbers go only into complex dtypes"):
        Tensor.from_numpy(array, dtype=target)
    assert Tensor.from_numpy(array, dtype="Complex64").numpy().tolist() == [1 + 2j, 3 - 4j]


@pytest.mark.parametrize("value, target, stored", [
    (2 ** 60 + 2 ** 36 + 1, "Float32", "1.15292164e+18"),   # 2**60 + 2**37: what astype(float32) gives
    (2 ** 60 + 2 ** 52 + 1, "BFloat16", "1.1619287e+18"),   # 2**60 + 2**53
    (-(2 ** 40) - 2 ** 16 - 1, "Float32", "-1.09951176e+12"),  # -(2**40 + 2**17)
    (2 ** 63 + 2 ** 40 + 1, "Float32", "9.22337314e+18"),  # uint64: 2**63 + 2**40
])
def test_an_inexact_integer_is_refused_naming_what_the_conversion_stores(value, target, stored):
    array = np.array([value], np.uint64 if value >= 2 ** 63 else np.int64)
    with pytest.raises(nbx.ValueRangeError, match=re.escape(f"value {value} (not held exactly: it would become {stored})")):
        Tensor.from_numpy(array, dtype=target)
    wrapped = Tensor.from_numpy(array, dtype=target, narrowing="wrap").numpy().astype(np.float64)[0]
    assert f"{wrapped:.9g}" == stored


def test_checked_narrowing_names_the_first_bad_index_and_value():
    a = np.zeros((2, 3), dtype=np.int64)
    a[1, 2] = 2**31
    a[1, 1] = -(2**31) - 1
    with pytest.raises(nbx.ValueRangeError) as error:
        Tensor.from_numpy(a)
    assert "value -2147483649 at index (1, 1)" in str(error.value)
    assert isinstance(error.value, ValueError) and isinstance(error.value, nbx.ConversionError)


def test_checked_float_narrowing_rejects_overflow_but_keeps_inf_and_nan():
    ok = np.array([1.5, np.inf, -np.inf, np.nan, 3.4e38])
    back = Tensor.from_numpy(ok).numpy()
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, ok.astype(np.float32))
    with pytest.raises(nbx.ValueRangeError, match=r"value 1e\+39 at index \(2,\)"):
        Tensor.from_numpy(np.array([0.0, 1.0, 1e39]))


def test_wrap_narrowing_casts_like_c():
    a = np.array([2**31, -1, 2**32 + 5], dtype=np.int64)
    np.testing.assert_array_equal(Tensor.from_numpy(a, narrowing="wrap").numpy(), a.astype(np.int32))


def test_reject_narrowing_refuses_64_bit_input():
    with pytest.raises(nbx.DTypeError, match="numpy dtype int64 has no MegBrain dtype.*reject"):
        Tensor.from_numpy(np.arange(3), narrowing="reject")


def test_explicit_dtype_converts_values_held_exactly_and_refuses_the_rest():
    t = Tensor.from_numpy(np.arange(3, dtype=np.int16), dtype="float32")
    assert t.dtype_name == "Float32" and not t.borrowed
    assert Tensor.from_numpy(np.array([-3.0, 127.0]), dtype="Int8").numpy().tolist() == [-3, 127]
    with pytest.raises(nbx.ValueRangeError, match=r"narrowing float64 to Int8: value 1\.5 at index \(1,\) is not "
                                                  r"held exactly by Int8 .*'wrap' casts as NumPy does"):
        Tensor.from_numpy(np.array([2.0, 1.5]), dtype="Int8")
    with pytest.raises(nbx.DTypeError, match="cannot cast numpy complex128 to Float32 with narrowing='checked'"):
        Tensor.from_numpy(np.array([1 + 2j]), dtype="Float32")
    assert Tensor.from_numpy(np.array([1.5, 300.0]), dtype="Int8", narrowing="wrap").dtype_name == "Int8"


BLOCK_SOURCES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]


def _one_bad_value(source, lo, hi, draw):
    """A value of `source` that INT_RANGES' (lo, hi) does not hold, or None when every value of it fits."""
    dtype = np.dtype(source)
    candidates = []
    if dtype.kind == "f":
        candidates += [np.nan, np.inf, -np.inf, 0.5, hi - 0.5, lo + 0.25]
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    # Past the range by one; and past 32 bits with low halves in it (lost by a check on those alone).
    candidates += [v for v in (lo - 1, hi + 1, 2 ** 32 + 5, 5 - 2 ** 32, 2 ** 40 + hi) if info.min <= v <= info.max]
    def held(v):  # the value as the source dtype stores it (float32 rounds hi - 0.5 and the like)
        x = exact(v)
        return x is not None and x.denominator == 1 and lo <= x <= hi
    with np.errstate(all="ignore"):
        candidates = [dtype.type(v) for v in candidates if dtype.kind == "f" or float(v).is_integer()]
    candidates = [v for v in candidates if not held(v)]
    return draw(st.sampled_from(candidates)) if candidates else None


@settings(max_examples=300, deadline=None)
@given(data=st.data(), source=st.sampled_from(BLOCK_SOURCES), target=st.sampled_from(sorted(INT_RANGES)),
       n=st.integers(1, 2600))
def test_checked_narrowing_of_long_arrays_tests_every_value_as_it_stores_it(data, source, target, n):
    """Into integer dtypes the check and the store are one pass over blocks: a value not held anywhere (a vector
    lane, a block's tail) is named by its own index; with none, the values are stored unchanged."""
    lo, hi = INT_RANGES[target]
    dtype = np.dtype(source)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    inside = (max(lo, int(max(info.min, -2 ** 24))), min(hi, int(min(info.max, 2 ** 24))))
    values = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))).integers(*inside, n, endpoint=True)
    array = values.astype(dtype)
    bad = _one_bad_value(source, lo, hi, data.draw)
    at = data.draw(st.integers(0, n - 1))
    if bad is not None and data.draw(st.booleans()):
        array[at] = bad
        with pytest.raises(nbx.ValueRangeError, match=re.escape(f"at index ({at},)")):
            Tensor.from_numpy(array, dtype=target)
        return
    stored = np.frombuffer(Tensor.from_numpy(array, dtype=target).storage(), np.dtype(target.lower()))
    assert (stored.astype(np.int64) == values).all()



VIEWS = {  # rows of 64+ stepping least (read row by row), and the rest (slabs gathered into cache, then tested)
    "every other row": lambda b: b.reshape(150, 90)[::2], "reversed rows": lambda b: b.reshape(150, 90)[::-1],
    "a column slice": lambda b: b.reshape(150, 90)[:, 10:], "3-d, rows reversed": lambda b: b.reshape(6, 25, 90)[::-1, ::2],
    "every other value, to the end": lambda b: b.reshape(-1)[1::2],
    "long rows, every other column": lambda b: b.reshape(50, 270)[:, ::2],
    "long rows, every third column reversed": lambda b: b.reshape(6, 10, 225)[:, ::3, ::-3],
    "every other column": lambda b: b.reshape(300, 45)[:, ::2], "transposed": lambda b: b.reshape(300, 45).T,
    "columns reversed": lambda b: b.reshape(300, 45)[:, ::-1], "short rows": lambda b: b.reshape(-1, 3)[::2],
    "3-d permuted": lambda b: b.transpose(2, 0, 1),
}


@settings(max_examples=250, deadline=None)
@given(data=st.data(), source=st.sampled_from(BLOCK_SOURCES), target=st.sampled_from(sorted(INT_RANGES)),
       layout=st.sampled_from(sorted(VIEWS)))
def test_checked_narrowing_of_views_names_the_first_bad_value(data, source, target, layout):
    """Any view is tested as stored, in one pass: the values arrive in C order, and among several bad values the
    first in C order is named by its index in the view."""
    lo, hi = INT_RANGES[target]
    dtype = np.dtype(source)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    inside = (max(lo, int(max(info.min, -2 ** 24))), min(hi, int(min(info.max, 2 ** 24))))
    base = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))).integers(
        *inside, (6, 50, 45), endpoint=True).astype(dtype)
    view = VIEWS[layout](base)
    assert not view.flags.c_contiguous
    bad = _one_bad_value(source, lo, hi, data.draw)
    if bad is not None and data.draw(st.booleans()):
        for _ in range(data.draw(st.integers(1, 3))):
            view[tuple(data.draw(st.integers(0, extent - 1)) for extent in view.shape)] = bad
        first = next(i for i, v in enumerate(view.reshape(-1)) if not (exact(v) is not None and
                                                                         exact(v).denominator == 1 and
                                                                         lo <= exact(v) <= hi))
        index = np.unravel_index(first, view.shape)
        with pytest.raises(nbx.ValueRangeError, match=re.escape(f"at index {tuple(int(i) for i in index)}")):
            Tensor.from_numpy(view, dtype=target)
        return
    stored = np.frombuffer(Tensor.from_numpy(view, dtype=target).storage(), np.dtype(target.lower()))
    assert (stored.astype(np.int64) == view.reshape(-1).astype(np.int64)).all()


@settings(max_examples=30, deadline=None)
@given(data=st.data(), source=st.sampled_from(BLOCK_SOURCES), target=st.sampled_from(sorted(INT_RANGES)))
def test_checked_narrowing_of_a_large_transpose_tests_every_block_and_names_the_first_bad_value(data, source, target):
    """A transpose into narrower storage goes by blocks one destination line wide (64, 32, 16 values into 1-, 2-,
    4-byte storage) by runs of up to 8192 rows, into storage of the source's width by blocks of 64 rows by 1024
    values; ragged ones here on both edges: every value stored as it was, or the first bad one in C order named
    by its index."""
    lo, hi = INT_RANGES[target]
    dtype = np.dtype(source)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    inside = (max(lo, int(max(info.min, -2 ** 24))), min(hi, int(min(info.max, 2 ** 24))))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    view = rng.integers(*inside, data.draw(st.sampled_from([(2100, 130), (70, 8300)])), endpoint=True).astype(dtype).T
    bad = _one_bad_value(source, lo, hi, data.draw)
    if bad is not None and data.draw(st.booleans()):
        places = [tuple(data.draw(st.integers(0, extent - 1)) for extent in view.shape) for _ in range(data.draw(
            st.integers(1, 3)))]
        for place in places:
            view[place] = bad
        first = min(places)  # C order of the view: rows first
        with pytest.raises(nbx.ValueRangeError, match=re.escape(f"at index {first}")):
            Tensor.from_numpy(view, dtype=target)
        return
    stored = np.frombuffer(Tensor.from_numpy(view, dtype=target).storage(), np.dtype(target.lower()))
    assert (stored.astype(np.int64) == view.reshape(-1).astype(np.int64)).all()
