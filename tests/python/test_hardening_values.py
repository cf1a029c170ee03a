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


def test_wrap_lets_codes_through_unchecked():
    t = Tensor.from_numpy(np.array([1, 2], np.int8), dtype=S1, narrowing="wrap")
    np.testing.assert_array_equal(t.numpy(), [1, 2])


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
