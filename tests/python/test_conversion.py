"""The conversion entry points themselves: their arguments, array-likes, shapes and sizes, and what no conversion
takes. Each feature has its own file (test_borrow.py, test_narrowing.py, test_quantized.py, ...)."""
import re

import numpy as np
import pytest
from hypothesis import strategies as st

from conftest import BINDING, mgb_dtype, nbx


Tensor = nbx.Tensor


@pytest.mark.parametrize("value", [np.float32(2.5), np.array(7, dtype=np.int16)])
def test_zero_d_arrays_keep_shape_empty(value):
    t = Tensor.from_numpy(np.asarray(value))
    assert t.shape == ()
    assert t.numpy().shape == () and t.numpy() == value


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 2, 5)])
def test_zero_size_arrays(shape):
    t = Tensor.from_numpy(np.zeros(shape, dtype=np.float32))
    assert t.shape == shape
    assert t.numpy().shape == shape
    assert t.storage() == b""


def test_bad_option_values_are_named():
    a = np.arange(3, dtype=np.float32)
    with pytest.raises(nbx.ConversionError, match="policy must be"):
        Tensor.from_numpy(a, policy="borrow")
    with pytest.raises(nbx.ConversionError, match="narrowing must be"):
        Tensor.from_numpy(a, narrowing="clip")
    with pytest.raises(nbx.ConversionError, match="layout must be"):
        Tensor.from_numpy(a, layout="packed")
    with pytest.raises(nbx.ConversionError, match="policy must be"):
        Tensor.from_numpy(a).numpy(policy="borrow")
    with pytest.raises(nbx.ConversionError, match="narrowing must be a str, got 1"):
        Tensor.from_numpy(a, narrowing=1)


SPELLINGS = {
    "policy": ("try_borrow", "must_borrow", "copy"),
    "narrowing": ("checked", "wrap", "reject"),
    "layout": ("compact", "row_aligned"),
}


@pytest.mark.parametrize("argument", sorted(SPELLINGS))
def test_policies_spelled_as_their_enumerators_and_nothing_else(argument):
    """npybridge's *_from functions (policies.hpp) take each enumerator's name; anything else is a ConversionError
    that names the argument, lists the spellings and shows the value."""
    a = np.arange(4, dtype=np.int8) if argument != "layout" else np.array([1, -1, 3, -3], np.int8)
    extra = {"dtype": "IntB4"} if argument == "layout" else {}
    for spelling in SPELLINGS[argument]:
        Tensor.from_numpy(a, **extra, **{argument: spelling})
    listed = ", ".join(f"'{s}'" for s in SPELLINGS[argument])
    with pytest.raises(nbx.ConversionError, match=re.escape(f"{argument} must be one of {listed}, got 'Copy'")):
        Tensor.from_numpy(a, **extra, **{argument: "Copy"})
    with pytest.raises(nbx.ConversionError, match=re.escape(f"{argument} must be a str, got b'copy'")):
        Tensor.from_numpy(a, **extra, **{argument: b"copy"})


def test_share_policy_and_lowbit_format_spellings():
    t = Tensor.from_numpy(np.array([1, -1, 7], np.int8), dtype="IntB4")
    for policy in ("try_share", "copy"):
        t.numpy(policy=policy)
    t.numpy(lowbit_format="int8")
    with pytest.raises(nbx.ConversionError, match=re.escape("policy must be one of 'try_share', 'must_share', 'copy'")):
        t.numpy(policy="share")
    with pytest.raises(nbx.ConversionError, match=re.escape("lowbit_format must be one of 'int8', 'ml_dtypes'")):
        t.numpy(lowbit_format="int4")


def test_arguments_by_position_and_keyword_mean_the_same():
    a = np.arange(3, dtype=np.int8)
    by_position = Tensor.from_numpy(a, "int32", "try_borrow", "checked", None)
    by_keyword = Tensor.from_numpy(layout=None, narrowing="checked", obj=a, dtype="int32", policy="try_borrow")
    for t in (by_position, by_keyword):
        assert t.dtype_name == "Int32" and not t.borrowed
        np.testing.assert_array_equal(t.numpy(), [0, 1, 2])


# The binding libraries write their own argument errors: the function's name and the signature it takes.
FROM_NUMPY_SIGNATURE = (r"from_numpy\(\): incompatible function arguments.*obj: object( \| None)?, dtype: object.*"
                        r"policy: object = 'try_borrow', narrowing: object = 'checked', layout: object")


NUMPY_SIGNATURE = r"numpy\(\): incompatible function arguments.*policy: object = 'try_share', lowbit_format: object = 'int8'"


@pytest.mark.parametrize("call, message, signature", [
    (lambda a: Tensor.from_numpy(), r"from_numpy\(\) missing required argument 'obj'", FROM_NUMPY_SIGNATURE),
    (lambda a: Tensor.from_numpy(dtype="int8"), r"from_numpy\(\) missing required argument 'obj'", FROM_NUMPY_SIGNATURE),
    (lambda a: Tensor.from_numpy(a, None, None, None, None, None), r"takes at most 5 arguments \(6 given\)",
     FROM_NUMPY_SIGNATURE),
    (lambda a: Tensor.from_numpy(a, polcy="copy"), r"unexpected keyword argument 'polcy'", FROM_NUMPY_SIGNATURE),
    (lambda a: Tensor.from_numpy(a, obj=a), r"multiple values for argument 'obj'", FROM_NUMPY_SIGNATURE),
    (lambda a: Tensor.from_numpy(a, "int8", dtype="int8"), r"multiple values for argument 'dtype'", FROM_NUMPY_SIGNATURE),
    (lambda a: Tensor.from_numpy(a).numpy("copy", "int8", "copy"), r"numpy\(\) takes at most 2 arguments \(3 given\)",
     NUMPY_SIGNATURE),
    (lambda a: Tensor.from_numpy(a).numpy(share="copy"), r"numpy\(\) got an unexpected keyword argument 'share'",
     NUMPY_SIGNATURE),
])
def test_bad_arguments_are_type_errors_naming_the_argument(call, message, signature, refcounts):
    a = np.arange(3, dtype=np.float32)
    with pytest.raises(TypeError, match=message if BINDING == "cpython" else re.compile(signature, re.S)):
        call(a)

    def fails():
        with pytest.raises(TypeError):
            call(a)
    refcounts([a], fails, times=1000)


def test_more_dimensions_than_the_tensor_holds_is_an_error():
    with pytest.raises(nbx.ConversionError, match="has 8 dimensions; the tensor type holds at most 7"):
        Tensor.from_numpy(np.zeros((1,) * 8, dtype=np.float32))
    assert Tensor.from_numpy(np.zeros((1,) * 7, dtype=np.float32)).shape == (1,) * 7


class ArrayLike:
    def __array__(self, dtype=None, copy=None):
        return np.arange(4, dtype=np.int16)


@pytest.mark.parametrize("obj, shape, dtype_name", [
    ([[1, 2], [3, 4]], (2, 2), "Int32"),
    ([1.5, 2.5], (2,), "Float32"),
    (3.0, (), "Float32"),
    (True, (), "Bool"),
    (ArrayLike(), (4,), "Int16"),
    (memoryview(b"abc"), (3,), "Uint8"),
])
def test_array_likes_are_converted_by_numpy_rules_first(obj, shape, dtype_name):
    t = Tensor.from_numpy(obj)
    assert t.shape == shape and t.dtype_name == dtype_name
    np.testing.assert_array_equal(t.numpy(), np.asarray(obj).astype(t.numpy().dtype))


def test_objects_numpy_cannot_convert_are_named():
    with pytest.raises(nbx.DTypeError, match="expected an array-like of numbers, got list"):
        Tensor.from_numpy([object()])


@pytest.mark.hardening
@pytest.mark.parametrize("values,shown", [(np.array(["1.5", "x"]), "numpy <U3 array"),
                                          (np.array([1.5, "x"], dtype=object), "numpy object array")])
@pytest.mark.parametrize("narrowing", ["checked", "wrap", "reject"])
def test_strings_and_objects_are_refused_naming_the_input(values, shown, narrowing):
    with pytest.raises(nbx.DTypeError, match="expected an array of numbers, got a " + shown) as caught:
        Tensor.from_numpy(values, dtype="Float32", narrowing=narrowing)
    assert "no Python error pending" not in str(caught.value)


@pytest.mark.hardening
@pytest.mark.parametrize("dtype_name, shape", [
    ("Float32", (2**32, 2**32)), ("Float32", (2**62 + 1,)), ("Int8", (2**40, 2**40, 2**40)),
    ("IntB1", (2**62, 2)), ("QuantizedS4", (2**61, 2**3)),
])
def test_shapes_beyond_memory_are_refused_before_any_size_is_computed(dtype_name, shape):
    kwargs = {"scale": 1.0} if dtype_name.startswith("Quantized") else {}
    with pytest.raises(nbx.ConversionError, match="spans more elements than memory can hold") as caught:
        Tensor.from_storage(b"", dtype_name, shape, **kwargs)
    assert str(shape[0]) in str(caught.value)


@pytest.mark.hardening
def test_a_wrong_storage_size_is_refused_before_allocating():
    # 64 GiB would be allocated first (a bare MemoryError) if the size were not checked first.
    with pytest.raises(nbx.ConversionError, match=r"Int8 of shape \(68719476736,\) takes 68719476736 bytes, got 0"):
        Tensor.from_storage(b"", "Int8", (2**36,))


@pytest.mark.hardening
@pytest.mark.parametrize("dtype_name", ["IntB1", "IntB2", "IntB4", "Int8", "Float32"])
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5), (2, 0, 3)])
def test_zero_size_tensors_come_back(dtype_name, shape):
    t = Tensor.from_numpy(np.zeros(shape, np.int8), dtype=dtype_name)
    assert t.numpy().shape == shape
    assert t.storage() == b""
    quantized = Tensor.from_numpy(np.zeros(shape, mgb_dtype("i1", "QuantizedS4", 0.5)))
    assert quantized.numpy().shape == shape and quantized.numpy().dtype.metadata["mgb_dtype"]["scale"] == 0.5


@pytest.mark.hardening
@pytest.mark.parametrize("shape", [(0,), (3, 0)])
def test_zero_size_byte_storage(shape):
    assert Tensor.from_storage(b"", "Byte", shape).storage() == b""


@pytest.mark.hardening
@pytest.mark.parametrize("narrowing", ["checked", "wrap", "reject"])
@pytest.mark.parametrize("dtype", [None, "Float32"])
def test_none_is_never_a_tensor(narrowing, dtype):
    with pytest.raises(nbx.DTypeError, match="expected an array-like of numbers, got NoneType") as caught:
        Tensor.from_numpy(None, dtype=dtype, narrowing=narrowing)
    assert "wrap" not in str(caught.value)  # no hint that another mode would take it
    with pytest.raises(nbx.DTypeError, match="got str"):
        Tensor.from_numpy("1.5", dtype=dtype, narrowing=narrowing)


@pytest.mark.guarantee
def test_a_five_byte_float32_stride_is_named_as_a_stride():
    raw = np.zeros(40, np.uint8)
    a = np.lib.stride_tricks.as_strided(raw[:4].view(np.float32), shape=(4,), strides=(5,))
    assert a.ctypes.data % 4 == 0 and not a.flags.aligned
    t = Tensor.from_numpy(a)
    assert t.copy_reason.startswith("strides:")
