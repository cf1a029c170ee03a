"""Values that enter a tensor are checked against what its dtype holds (hardening, round 2): QuantizedS1's codes
are 0 and 1 though its storage is an int8, wherever they come from (a borrow, a copy, a narrowing, copy_from),
with the first bad value and its index named; narrowing='wrap' alone lets them through."""
import numpy as np
import pytest

from conftest import mgb_dtype, nbx

Tensor = nbx.Tensor
S1 = mgb_dtype("int8", "QuantizedS1", 1.0)


@pytest.mark.parametrize("policy", ["try_borrow", "must_borrow", "copy"])
def test_quantized_s1_codes_outside_0_1_are_refused(policy):
    with pytest.raises(nbx.ValueRangeError, match=r"QuantizedS1: value 2 at index \(1,\)"):
        Tensor.from_numpy(np.array([1, 2, 0], dtype=S1), policy=policy)
    with pytest.raises(nbx.ValueRangeError, match=r"QuantizedS1: value -5 at index \(0, 1\)"):
        Tensor.from_numpy(np.array([[0, -5]], np.int8), dtype=S1, policy=policy)


def test_quantized_s1_codes_in_range_are_borrowed():
    a = np.array([1, 0, 1], dtype=S1)
    t = Tensor.from_numpy(a, policy="must_borrow")
    assert t.borrowed and t.dtype_name == "QuantizedS1"
    np.testing.assert_array_equal(t.numpy(), a)


def test_narrowing_into_quantized_s1_checks_its_codes():
    with pytest.raises(nbx.ValueRangeError, match="value 3 at index"):
        Tensor.from_numpy(np.array([0, 1, 3]), dtype=S1)
    assert Tensor.from_numpy(np.array([0, 1, 1]), dtype=S1).dtype_name == "QuantizedS1"


def test_wrap_keeps_the_low_bit_of_a_quantized_s1_code():
    t = Tensor.from_numpy(np.array([1, 2], np.int8), dtype=S1, narrowing="wrap")
    np.testing.assert_array_equal(t.numpy(), [1, 0])


def test_copy_from_into_quantized_s1_checks_and_leaves_the_tensor_as_it_was():
    t = Tensor.from_numpy(np.array([1, 0, 1], dtype=S1), policy="copy")
    with pytest.raises(nbx.ValueRangeError, match=r"value 7 at index \(2,\)"):
        t.copy_from(np.array([0, 0, 7], np.int8))
    np.testing.assert_array_equal(t.numpy(), [1, 0, 1])


@pytest.mark.parametrize("narrowing", ["checked", "wrap", "reject"])
@pytest.mark.parametrize("dtype", [None, "Float32"])
def test_none_is_never_a_tensor(narrowing, dtype):
    with pytest.raises(nbx.DTypeError, match="expected an array-like of numbers, got NoneType") as caught:
        Tensor.from_numpy(None, dtype=dtype, narrowing=narrowing)
    assert "wrap" not in str(caught.value)  # no hint that another mode would take it
    with pytest.raises(nbx.DTypeError, match="got str"):
        Tensor.from_numpy("1.5", dtype=dtype, narrowing=narrowing)


def test_copy_from_takes_numbers_only():
    t = Tensor.from_numpy(np.zeros(2, np.float32))
    with pytest.raises(nbx.DTypeError, match="got NoneType"):
        t.copy_from(None)
    np.testing.assert_array_equal(t.numpy(), [0, 0])


@pytest.mark.parametrize("values", [np.array([0.5, -1.25, 3.0]), np.array([1, -2, 3]), [0.5, -1.25, 3.0],
                                    np.array([0.5, -1.25, 3.0], np.float32), np.array([True, False, True])])
def test_quantize_takes_any_real_array_like(values):
    q = nbx.quantize(values, mgb_dtype("int8", "QuantizedS8", 0.25))
    real = np.asarray(values, float)
    # MegDNN's rule: x / scale rounded half away from zero (-1.25 / 0.25 = -5 exactly; 0.5 / 0.25 = 2).
    np.testing.assert_array_equal(q, np.trunc(real / 0.25 + np.copysign(0.5, real)))
    assert q.dtype.metadata["mgb_dtype"]["name"] == "QuantizedS8"


@pytest.mark.parametrize("values,shown", [(np.array([1 + 2j]), "complex128"), (["a"], "list"), (None, "NoneType")])
def test_quantize_refuses_values_that_are_not_real_numbers(values, shown):
    with pytest.raises((nbx.DTypeError, ValueError, TypeError), match=shown if shown != "list" else "real numbers|could not convert|array-like of numbers, got list"):
        nbx.quantize(values, mgb_dtype("int8", "QuantizedS8", 0.25))


def test_dequantize_refuses_codes_outside_the_dtype_naming_them():
    codes = np.array([1, 100, -3], dtype=mgb_dtype("int8", "QuantizedS4", 0.5))
    with pytest.raises(nbx.ValueRangeError, match=r"QuantizedS4: value 100 at index \(1,\)"):
        nbx.dequantize(codes)
    # A tensor whose bytes are not all codes (from raw storage): the library's dequantize names code and index.
    raw = nbx.Tensor.from_storage(bytes([0, 1, 1, 5]), "QuantizedS1", (2, 2), 1.0)
    with pytest.raises(nbx.ValueRangeError, match=r"dequantize: code 5 at index \(1, 1\) is not a QuantizedS1"):
        nbx.dequantize(raw)
    with pytest.raises(nbx.DTypeError, match="dequantize: Float32 is not a quantized dtype"):
        nbx.dequantize(nbx.Tensor.from_numpy(np.zeros(2, np.float32)))
    np.testing.assert_array_equal(nbx.dequantize(np.array([1, 7, -8], dtype=mgb_dtype("int8", "QuantizedS4", 0.5))),
                                  [0.5, 3.5, -4.0])


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


@pytest.mark.parametrize("values,numpy_type,target", [
    ([16777216, -16777216, 2**30, 0], np.int32, "Float32"), ([2048, -2048, 2**15], np.int32, "Float16"),
    ([256, -256, 2**20], np.int64, "BFloat16"), ([2**63], np.uint64, "Float32"),
])
def test_checked_takes_integers_a_float_holds_exactly(values, numpy_type, target):
    t = Tensor.from_numpy(np.array(values, numpy_type), dtype=target)
    np.testing.assert_array_equal(t.numpy().astype(np.float64), np.array(values, np.float64))


def test_wrap_rounds_integers_into_floats_without_a_check():
    t = Tensor.from_numpy(np.array([16777217], np.int32), dtype="Float32", narrowing="wrap")
    assert t.numpy()[0] == 16777216


@pytest.mark.parametrize("target,expected", [("Float16", np.float16), ("Complex64", np.complex64), ("Float32", np.float32)])
def test_bfloat16_goes_into_float_dtypes_as_floats_do(target, expected):
    a = np.array([1.5, -2.0, 65280.0], dtype=nbx.bfloat16)
    t = Tensor.from_numpy(a, dtype=target)
    np.testing.assert_array_equal(t.numpy(), np.array([1.5, -2.0, 65280.0], expected))


def test_bfloat16_beyond_float16_is_named():
    a = np.array([1.0, 131072.0], dtype=nbx.bfloat16)
    with pytest.raises(nbx.ValueRangeError, match=r"value 131072 at index \(1,\) does not fit Float16"):
        Tensor.from_numpy(a, dtype="Float16")


def test_bfloat16_into_integers_follows_the_float_rule():
    with pytest.raises(nbx.ValueRangeError, match=r"narrowing bfloat16 to Int32: value 1\.5 at index \(0,\) is not held"):
        Tensor.from_numpy(np.array([1.5], dtype=nbx.bfloat16), dtype="Int32")
    assert Tensor.from_numpy(np.array([-2.0, 256.0], dtype=nbx.bfloat16), dtype="Int32").numpy().tolist() == [-2, 256]
