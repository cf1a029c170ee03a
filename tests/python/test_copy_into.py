"""copy_into (Tensor.copy_from): what to_tensor makes of the same array, for every source NumPy has a dtype for,
under every narrowing mode; on any error the destination keeps every byte."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import mgb_dtype, nbx


Tensor = nbx.Tensor


try:
    import ml_dtypes
except ImportError:  # the numpy1 suite runs without ml_dtypes (it needs NumPy 2)
    ml_dtypes = None


SOURCES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
           "float64", "longdouble", "complex64", "complex128", np.dtype(nbx.bfloat16), np.dtype(nbx.intb4)]


if ml_dtypes is not None:
    SOURCES += [np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4), np.dtype(ml_dtypes.int2),
                np.dtype(ml_dtypes.float8_e4m3fn)]


TARGETS = {
    "Bool": "Bool", "Int8": "Int8", "Uint8": "Uint8", "Int16": "Int16", "Uint16": "Uint16", "Int32": "Int32",
    "Float16": "Float16", "Float32": "Float32", "BFloat16": "BFloat16", "Complex64": "Complex64",
    "QuantizedS8": mgb_dtype("int8", "QuantizedS8", 0.5),
    "Quantized8Asymm": mgb_dtype("uint8", "Quantized8Asymm", 0.5, 3),
    "QuantizedS1": mgb_dtype("int8", "QuantizedS1", 1.0),
    "QuantizedS4": mgb_dtype("int8", "QuantizedS4", 0.25),
    "IntB4": "IntB4", "IntB2": "IntB2",
}


# Values at the edges of every target: codes, ranges, halves, NaN, infinities, signed zero, subnormals.
VALUES = [0, 1, -1, 2, 3, 5, 7, -3, -8, 15, 127, 128, -128, -129, 255, 256, 65504, 65536, 16777217, 2 ** 31,
          0.5, 1.5, -2.5, -0.0, float("nan"), float("inf"), -float("inf"), 1e-40, 1e30, 3 + 4j, 1 - 0.5j]


def array_of(dtype, values):
    """`values` in `dtype` as NumPy's (or ml_dtypes') own cast makes them: whatever it stores is the source."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        wide = np.array(values, dtype=complex)
        kind = np.dtype(dtype).kind
        plain = wide if kind == "c" else wide.real
        if kind in "iub" or np.dtype(dtype) == np.dtype(nbx.intb4) or "int" in str(dtype):
            plain = np.nan_to_num(plain.real, nan=0, posinf=0, neginf=0)
            lo, hi = (-8, 7) if "int" in str(dtype) and kind == "V" else (-2 ** 63, 2 ** 63 - 1)
            plain = np.clip(plain, lo, hi).astype(np.int64)
        try:
            return plain.astype(dtype)
        except (TypeError, ValueError, OverflowError):
            return np.zeros(len(values), dtype)


@st.composite
def sources(draw):
    dtype = np.dtype(draw(st.sampled_from(SOURCES)))
    values = draw(st.lists(st.sampled_from(VALUES), min_size=0, max_size=6))
    array = array_of(dtype, values)
    view = draw(st.sampled_from(["as is", "reversed", "2-d transposed", "byteswapped"]))
    if view == "reversed":
        array = array[::-1]
    elif view == "2-d transposed" and array.size % 2 == 0 and array.size:
        array = array.reshape(2, -1).T
    elif view == "byteswapped" and dtype.kind in "iufc" and dtype.itemsize > 1:
        array = array.astype(dtype.newbyteorder())
    return array


def destination(target, shape):
    """A tensor of `target` holding ones (a valid code of every target)."""
    return Tensor.from_numpy(np.ones(shape, np.int8), dtype=TARGETS[target], narrowing="wrap")


def outcome(action):
    try:
        return action()
    except nbx.ConversionError as error:
        return type(error)


@settings(max_examples=400, deadline=None)
@given(array=sources(), target=st.sampled_from(sorted(TARGETS)), mode=st.sampled_from(["checked", "wrap", "reject"]))
def test_copy_into_makes_what_to_tensor_makes(array, target, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = outcome(lambda: Tensor.from_numpy(array, dtype=TARGETS[target], narrowing=mode, policy="copy").storage())
        tensor = destination(target, array.shape)
        before = tensor.storage()
        copied = outcome(lambda: (tensor.copy_from(array, narrowing=mode), tensor.storage())[1])
    if isinstance(copied, type):
        assert tensor.storage() == before  # untouched
    assert copied == made, f"{array.dtype} {array!r} into {target} ({mode})"


@pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes")
@pytest.mark.parametrize("source, values, target, expected", [
    ("int4", [1, -3, 7, -8], "Int8", [1, -3, 7, -8]),
    ("int4", [1, -3, 7, -8], "Float32", [1.0, -3.0, 7.0, -8.0]),
    ("int4", [1, -3, 7, -7], "IntB4", [1, -3, 7, -7]),
    ("uint4", [0, 5, 15], "Int16", [0, 5, 15]),
    ("int2", [1, -2, 0], "Int32", [1, -2, 0]),
])
def test_ml_dtypes_sub_byte_arrays_copy_in_as_to_tensor_converts_them(source, values, target, expected):
    array = np.array(values, getattr(ml_dtypes, source))
    tensor = destination(target, array.shape)
    tensor.copy_from(array)
    assert tensor.numpy().astype(np.float64).tolist() == expected
    assert tensor.storage() == Tensor.from_numpy(array, dtype=target).storage()


def test_copy_into_refuses_complex_into_real_dtypes_and_leaves_the_tensor():
    tensor = destination("BFloat16", (2,))
    with pytest.raises(nbx.DTypeError, match="cannot cast numpy complex128 to BFloat16 with narrowing='checked'"):
        tensor.copy_from(np.array([1 + 2j, 3 - 4j]))
    assert tensor.numpy().astype(np.float32).tolist() == [1.0, 1.0]
    tensor.copy_from(np.array([1 + 2j, 3 - 4j]), narrowing="wrap")  # NumPy's cast: the real parts
    assert tensor.numpy().astype(np.float32).tolist() == [1.0, 3.0]


S1 = mgb_dtype("int8", "QuantizedS1", 1.0)


INTS = ["int8", "uint8", "int16", "uint16", "int32", "int64", "float16", "float32", "float64", "bool"]


PLAIN_TARGETS = ["Int8", "Uint8", "Int16", "Int32", "Float16", "Float32", "BFloat16"]


@pytest.mark.hardening
def test_copy_into_a_packed_tensor_refuses_other_quantized_codes():
    destination = Tensor.from_storage(b"\0\0", "QuantizedS4", (3,), scale=0.25)
    codes = np.array([1, 2, -3], np.int8).view(mgb_dtype("i1", "QuantizedS8", 0.5))
    with pytest.raises(nbx.DTypeError, match="requantizing"):
        destination.copy_from(codes)
    assert destination.storage() == b"\0\0"


@pytest.mark.hardening
def test_a_bad_value_leaves_nothing_behind_in_copy_from():
    destination = Tensor.from_numpy(np.zeros(3, np.int32))
    with pytest.raises(nbx.ValueRangeError, match=r"value 1099511627776 at index \(2,\)"):
        destination.copy_from(np.array([1, 2, 2**40]))
    assert destination.numpy().tolist() == [0, 0, 0]
    destination.copy_from(np.array([1, 2, 3]))
    assert destination.numpy().tolist() == [1, 2, 3]


@pytest.mark.hardening
def test_copy_from_into_quantized_s1_checks_and_leaves_the_tensor_as_it_was():
    t = Tensor.from_numpy(np.array([1, 0, 1], dtype=S1), policy="copy")
    with pytest.raises(nbx.ValueRangeError, match=r"value 7 at index \(2,\)"):
        t.copy_from(np.array([0, 0, 7], np.int8))
    np.testing.assert_array_equal(t.numpy(), [1, 0, 1])


@pytest.mark.hardening
def test_copy_from_takes_numbers_only():
    t = Tensor.from_numpy(np.zeros(2, np.float32))
    with pytest.raises(nbx.DTypeError, match="got NoneType"):
        t.copy_from(None)
    np.testing.assert_array_equal(t.numpy(), [0, 0])


@pytest.mark.guarantee
@settings(max_examples=300, deadline=None)
@given(source=st.sampled_from(INTS), target=st.sampled_from(PLAIN_TARGETS),
       narrowing=st.sampled_from(["checked", "reject", "wrap"]),
       values=st.lists(st.integers(-400, 400), min_size=1, max_size=6))
def test_copy_into_converts_exactly_as_to_tensor_does(source, target, narrowing, values):
    with np.errstate(all="ignore"):
        a = np.array(values).astype(source)
    try:
        want = Tensor.from_numpy(a, dtype=target, narrowing=narrowing, policy="copy")
    except nbx.ConversionError as error:
        t = Tensor.from_numpy(np.zeros(len(values), np.int8), dtype=target, narrowing="wrap")
        before = t.storage()
        with pytest.raises(type(error)) as raised:
            t.copy_from(a, narrowing=narrowing)
        assert str(raised.value) == str(error)
        assert t.storage() == before  # untouched
        return
    t = Tensor.from_numpy(np.zeros(len(values), np.int8), dtype=target, narrowing="wrap")
    t.copy_from(a, narrowing=narrowing)
    assert t.storage() == want.storage()
