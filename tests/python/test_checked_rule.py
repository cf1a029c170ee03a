"""narrowing='checked' lets a value through only unchanged: floats go into integer, bool, quantized and packed
dtypes as whole numbers in range (as MegEngine's own helper takes them), complex numbers only into complex dtypes,
an empty array always converts, and a refusal names exactly what the conversion would store."""
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import mgb_dtype, nbx

Tensor = nbx.Tensor

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

EDGES = [0, 1, -1, 2, 3, 7, -8, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 65535, 65536, 2 ** 31 - 1,
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
        value = dtype.type(draw(st.sampled_from(EDGES))) + dtype.type(offset)
    return dtype, value


def exact(value):
    """The float's value as a Fraction (None for NaN and infinities)."""
    if not np.isfinite(value):
        return None
    return Fraction(*np.longdouble(value).as_integer_ratio())


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


def copied_into(array, wanted):
    tensor = Tensor.from_numpy(np.ones(array.shape, np.int8), dtype=wanted)
    tensor.copy_from(array)
    return tensor


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


SOURCES = ["bool", "int8", "uint64", "float16", "float64", "longdouble", "complex64", "complex128",
           np.dtype(nbx.bfloat16)]


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
