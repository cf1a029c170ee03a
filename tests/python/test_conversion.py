"""ndarray <-> tensor through the example module: policies, dtypes, layouts, errors (docs/policies.md)."""
import gc
import re
import sys
import threading
import weakref

import numpy as np
import pytest

from conftest import BINDING, mgb_dtype, nbx

Tensor = nbx.Tensor


# ---- try_borrow: zero copy when possible -------------------------------------------------------

def test_contiguous_float32_is_borrowed_at_the_same_address():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = Tensor.from_numpy(a)
    assert t.borrowed and t.copy_reason is None
    assert t.data_address == a.ctypes.data
    assert t.shape == (3, 4) and t.strides == (4, 1)
    a[1, 2] = 100
    assert t.numpy()[1, 2] == 100  # same memory both ways


@pytest.mark.parametrize("make, strides", [
    (lambda a: a.T, (1, 4)),
    (lambda a: a[::-1], (-4, 1)),
    (lambda a: a[:, ::2], (4, 2)),
    (lambda a: np.broadcast_to(a[0], (5, 4)), (0, 1)),
])
def test_strided_views_are_borrowed_with_element_strides(make, strides):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    view = make(base)
    t = Tensor.from_numpy(view)
    assert t.borrowed
    assert t.strides == strides
    np.testing.assert_array_equal(t.numpy(), view)


def test_strides_of_size_one_dimensions_are_ignored():
    a = np.arange(4, dtype=np.int16)[:, None][::1]
    odd = np.lib.stride_tricks.as_strided(a, shape=(4, 1), strides=(2, 1000))
    t = Tensor.from_numpy(odd)
    assert t.borrowed and t.strides == (1, 1)


def test_read_only_arrays_are_borrowed_read_only():
    a = np.arange(5, dtype=np.int32)
    a.flags.writeable = False
    t = Tensor.from_numpy(a)
    assert t.borrowed and not t.writable
    back = t.numpy()
    assert not back.flags.writeable
    with pytest.raises(ValueError):
        back[0] = 1


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


# ---- copies and their reasons ----------------------------------------------------------------

@pytest.mark.parametrize("make, reason", [
    (lambda: np.arange(3, dtype=np.int64), "int64 must be narrowed to Int32"),
    (lambda: np.arange(3, dtype=np.float64), "float64 must be narrowed to Float32"),
    (lambda: np.arange(3, dtype=">i4"), "byte order"),
    (lambda: np.frombuffer(b"\0" + np.arange(4, dtype=np.float32).tobytes(), dtype=np.float32, offset=1), "alignment"),
    (lambda: np.lib.stride_tricks.as_strided(np.zeros(8, np.complex64), shape=(3,), strides=(12,)), "strides"),
])
def test_try_borrow_copies_and_says_why(make, reason):
    a = make()
    t = Tensor.from_numpy(a)
    assert not t.borrowed
    assert reason in t.copy_reason
    np.testing.assert_array_equal(t.numpy(), a.astype(t.numpy().dtype))


@pytest.mark.parametrize("make, reason", [
    (lambda: np.arange(3, dtype=np.int64), "dtype: int64 must be narrowed to Int32"),
    (lambda: np.arange(3, dtype=">f4"), "byte order"),
    (lambda: np.frombuffer(b"\0" + np.arange(4, dtype=np.int32).tobytes(), dtype=np.int32, offset=1), "alignment"),
    (lambda: np.lib.stride_tricks.as_strided(np.zeros(8, np.complex64), shape=(3,), strides=(12,)), "strides: (12,)"),
])
def test_must_borrow_fails_saying_why(make, reason):
    a = make()
    with pytest.raises(nbx.ConversionError) as error:
        Tensor.from_numpy(a, policy="must_borrow")
    message = str(error.value)
    assert "must_borrow" in message and reason in message
    assert str(a.shape) in message or "shape" in message


def test_must_borrow_of_a_packed_dtype_says_packed():
    with pytest.raises(nbx.ConversionError, match="IntB4 is packed"):
        Tensor.from_numpy(np.array([1, 3], dtype=np.int8), dtype="IntB4", policy="must_borrow")


def test_copy_policy_always_copies():
    a = np.arange(4, dtype=np.float32)
    t = Tensor.from_numpy(a, policy="copy")
    assert not t.borrowed and t.copy_reason == "copy requested"
    assert t.data_address != a.ctypes.data
    a[0] = 42
    assert t.numpy()[0] == 0


def test_transposed_copy_is_c_contiguous_and_equal():
    a = np.arange(20, dtype=np.float32).reshape(4, 5).T
    t = Tensor.from_numpy(a, policy="copy")
    assert t.strides == (4, 1)
    np.testing.assert_array_equal(t.numpy(), a)


# ---- narrowing -----------------------------------------------------------------------------------

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


# ---- dtypes ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32", "float16", "float32", "complex64"])
def test_every_plain_numpy_dtype_round_trips_without_copy(dtype):
    a = (np.arange(6) % 2 if dtype == "bool" else np.arange(6)).astype(dtype).reshape(2, 3)
    t = Tensor.from_numpy(a)
    assert t.borrowed
    back = t.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("dtype", ["uint32", "uint64", "complex128", "U2", "S3", "O", [("a", "i4"), ("b", "f4")]])
def test_numpy_dtypes_without_a_tensor_dtype_are_named(dtype):
    a = np.zeros((2, 4), dtype=dtype)[:, ::2]  # strided: odd itemsizes (S3) reach the layout pass too
    with pytest.raises(nbx.DTypeError) as error:
        Tensor.from_numpy(a)
    assert str(a.dtype) in str(error.value) or "structured" in str(error.value)


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


def test_dtype_argument_accepts_names_numpy_types_and_strings():
    a = np.arange(3, dtype=np.uint8)
    for dtype in ("Uint8", np.uint8, "uint8", np.dtype("u1")):
        t = Tensor.from_numpy(a, dtype=dtype)
        assert t.dtype_name == "Uint8" and t.borrowed
    with pytest.raises(nbx.DTypeError, match="QuantizedS8 needs its params"):
        Tensor.from_numpy(a, dtype="QuantizedS8")
    with pytest.raises(nbx.DTypeError, match="not a numpy dtype"):
        Tensor.from_numpy(a, dtype="no such dtype")


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


# ---- quantized ------------------------------------------------------------------------------------

@pytest.mark.parametrize("base, name, scale, zero_point", [
    ("uint8", "Quantized8Asymm", 0.25, 128),
    ("int8", "QuantizedS8", 0.5, None),
    ("int16", "QuantizedS16", 2.0, None),
    ("int32", "QuantizedS32", 1e-3, None),
    ("int8", "QuantizedS1", 1.0, None),
])
def test_quantized_arrays_are_borrowed_and_keep_their_params(base, name, scale, zero_point):
    dtype = mgb_dtype(base, name, scale, zero_point)
    a = np.array([0, 1, 1, 0], dtype=dtype)
    t = Tensor.from_numpy(a)
    assert t.borrowed and t.dtype_name == name
    assert t.scale == np.float32(scale) and t.zero_point == zero_point
    back = t.numpy()
    assert back.dtype.metadata == {"mgb_dtype": {"name": name, "scale": float(np.float32(scale)),
                                                 **({"zero_point": zero_point} if zero_point is not None else {})}}
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("make", [
    lambda: np.arange(6, dtype=mgb_dtype("int8", "QuantizedS8", 0.5)),
    lambda: np.arange(6, dtype=mgb_dtype("int8", "QuantizedS8", 0.5))[::2],
    lambda: np.arange(6, dtype=mgb_dtype("int8", "QuantizedS8", 0.5)).astype(">i1").view(
        mgb_dtype("int8", "QuantizedS8", 0.5)),
    lambda: np.array([1, -1, 0], dtype=mgb_dtype("int8", "QuantizedS4", 0.5)),
    lambda: np.array([1, 0, 1], dtype=mgb_dtype("int8", "QuantizedS1", 1.0)),
    lambda: np.arange(4, dtype=mgb_dtype("uint8", "Quantized8Asymm", 0.25, 3)),
])
def test_the_second_conversion_of_a_dtype_decides_like_the_first(make):
    # The first conversion parses the metadata and caches the dtype; later ones take
    # a fast path through that cache, which must reach the same decision.
    a = make()
    first, second = Tensor.from_numpy(a), Tensor.from_numpy(a)
    assert (first.borrowed, first.copy_reason, first.dtype_name, first.scale, first.zero_point) == \
        (second.borrowed, second.copy_reason, second.dtype_name, second.scale, second.zero_point)
    assert first.storage() == second.storage()
    np.testing.assert_array_equal(second.numpy(), a)


QUANTIZE_CASES = [  # base, name, scale, zero_point, code range (the clamp), the low-bit ones unpacked one per byte
    ("uint8", "Quantized8Asymm", 0.25, 128, 0, 255),
    ("int8", "QuantizedS8", 0.5, None, -128, 127),
    ("int16", "QuantizedS16", 0.125, None, -32768, 32767),
    ("int32", "QuantizedS32", 2**-10, None, -2**31, 2147483520),  # the largest float32 below 2^31
    ("uint8", "Quantized4Asymm", 0.5, 3, 0, 15),
    ("int8", "QuantizedS4", 0.25, None, -8, 7),
    ("int8", "QuantizedS1", 1.0, None, 0, 1),
]


@pytest.mark.parametrize("base, name, scale, zero_point, lo, hi", QUANTIZE_CASES, ids=[c[1] for c in QUANTIZE_CASES])
def test_quantize_rounds_half_away_from_zero_and_clamps_and_dequantize_inverts_it(base, name, scale, zero_point,
                                                                                   lo, hi):
    # MegDNN's rule (dtype.h): q = clamp(round_half_away(x / scale) + zero_point), all in float32; NaN -> lo.
    dtype = mgb_dtype(base, name, scale, zero_point)
    zp = zero_point or 0
    steps = np.arange(max(lo - zp, -400) - 3, min(hi - zp, 400) + 4, dtype=np.float64)
    quotients = np.concatenate([steps, steps + 0.5, steps - 0.5, steps + 0.49, [1e12, -1e12]])
    x = (quotients * scale).astype(np.float32)
    codes = nbx.quantize(np.append(x, np.float32("nan")).astype(np.float32), dtype)
    assert codes.dtype == dtype and codes.dtype.metadata == dtype.metadata
    q = (x / np.float32(scale)).astype(np.float64)  # the float32 quotient, exactly
    expected = np.clip(np.sign(q) * np.floor(np.abs(q) + 0.5) + zp, lo, hi)
    np.testing.assert_array_equal(codes[:-1].astype(np.int64), expected.astype(np.int64))
    assert codes[-1] == lo
    assert codes.astype(np.int64).min() == lo and codes.astype(np.int64).max() == hi
    inside = codes[:-1][(expected > lo) & (expected < hi)]
    np.testing.assert_array_equal(nbx.dequantize(inside),
                                  (inside.astype(np.float64) - zp).astype(np.float32) * np.float32(scale))


def test_a_plain_array_becomes_quantized_codes_when_asked():
    a = np.array([1, 2, 3], dtype=np.int8)
    t = Tensor.from_numpy(a, dtype=mgb_dtype("int8", "QuantizedS8", 0.5))
    assert t.borrowed and t.dtype_name == "QuantizedS8" and t.scale == 0.5


def test_requantizing_is_refused():
    a = np.array([1, 2], dtype=mgb_dtype("int8", "QuantizedS8", 0.5))
    with pytest.raises(nbx.DTypeError, match="requantizing is not supported"):
        Tensor.from_numpy(a, dtype=mgb_dtype("int8", "QuantizedS8", 0.25))


def test_bad_metadata_is_a_metadata_error_naming_the_key():
    a = np.zeros(2, dtype=mgb_dtype("uint8", "Quantized8Asymm", 1.0, 300))
    with pytest.raises(nbx.MetadataError, match="Quantized8Asymm: zero_point 300 is outside"):
        Tensor.from_numpy(a)


# ---- packed low-bit dtypes ------------------------------------------------------------------------

def test_int4_tensor_packs_on_the_way_in_and_unpacks_on_the_way_out():
    qs4 = mgb_dtype("int8", "QuantizedS4", 0.5)
    a = np.array([[-8, -7, 7], [0, 1, -1], [3, 2, 1]], dtype=qs4)
    t = Tensor.from_numpy(a)
    assert t.dtype_name == "QuantizedS4" and not t.borrowed and "packed" in t.copy_reason
    assert t.storage() == bytes([0x98, 0x07, 0x10, 0x0F, 0x23, 0x01])  # row-aligned: 2 bytes per row of 3
    back = t.numpy()
    assert back.dtype.metadata["mgb_dtype"]["name"] == "QuantizedS4"
    np.testing.assert_array_equal(back, a)
    compact = Tensor.from_numpy(a, layout="compact")
    assert len(compact.storage()) == 5
    np.testing.assert_array_equal(compact.numpy(), a)


def test_from_storage_reads_packed_bytes():
    t = Tensor.from_storage(bytes([0xE4, 0x1B]), "IntB2", (7,))
    np.testing.assert_array_equal(t.numpy(), [-3, -1, 1, 3, 3, 1, -1])
    q = Tensor.from_storage(bytes(18), "QuantizedS4", (3, 3, 3), scale=0.25)
    assert q.shape == (3, 3, 3) and q.scale == 0.25
    with pytest.raises(nbx.ConversionError, match="takes 18 bytes, got 14"):
        Tensor.from_storage(bytes(14), "QuantizedS4", (3, 3, 3), scale=0.25)
    with pytest.raises(nbx.MetadataError, match="zero_point is missing"):
        Tensor.from_storage(bytes(2), "Quantized4Asymm", (3,), scale=1.0)


def test_packed_values_outside_the_set_are_named_by_index():
    with pytest.raises(nbx.ValueRangeError, match=r"IntB2: value 2 at index \(1, 0\)"):
        Tensor.from_numpy(np.array([[1, 3], [2, -1]], dtype=np.int8), dtype="IntB2")
    with pytest.raises(nbx.ValueRangeError, match=r"IntB4: value 300 at index \(2,\)"):
        Tensor.from_numpy([1, 3, 300], dtype="IntB4")
    assert Tensor.from_numpy([1.0, 3.0], dtype="IntB4").numpy().tolist() == [1, 3]  # whole floats are codes
    with pytest.raises(nbx.ValueRangeError, match=r"IntB4: value 1\.5 at index \(1,\) is not valid"):
        Tensor.from_numpy([1.0, 1.5], dtype="IntB4")
    with pytest.raises(nbx.DTypeError, match="IntB4 takes integer values, got numpy float64"):
        Tensor.from_numpy([1.0, 3.0], dtype="IntB4", narrowing="wrap")


def test_packed_tensors_cannot_be_shared():
    t = Tensor.from_numpy(np.array([1, -1], dtype=np.int8), dtype="IntB1")
    with pytest.raises(nbx.ConversionError, match="must_share: IntB1 is packed"):
        t.numpy(policy="must_share")
    np.testing.assert_array_equal(t.numpy(), [1, -1])
    np.testing.assert_array_equal(t.numpy(policy="copy"), [1, -1])


# ---- shapes and array-likes -----------------------------------------------------------------------

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


# ---- lifetimes and references ---------------------------------------------------------------------

def test_a_borrowed_tensor_keeps_the_array_alive():
    a = np.arange(1000, dtype=np.float32)
    expected = a.copy()
    t = Tensor.from_numpy(a)
    ref = weakref.ref(a) if hasattr(a, "__weakref__") else None
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), expected)
    del t
    gc.collect()
    if ref is not None:
        assert ref() is None


def test_a_shared_array_keeps_the_tensor_storage_alive():
    t = Tensor.from_numpy(np.arange(1000, dtype=np.int32), policy="copy")
    b = t.numpy()
    assert b.base is not None
    del t
    gc.collect()
    np.testing.assert_array_equal(b, np.arange(1000, dtype=np.int32))


def test_a_shared_array_of_cpp_memory_has_an_npybridge_owner_as_base():
    t = Tensor.from_numpy(np.arange(1000, dtype=np.int32), policy="copy")
    arrays = [t.numpy() for _ in range(200)]  # more than the owner objects kept for reuse
    owner_type = type(arrays[0].base)
    assert owner_type.__name__ == "owner" and owner_type.__module__ == "npybridge"
    assert all(type(b.base) is owner_type for b in arrays)
    assert len({id(b.base) for b in arrays}) == len(arrays)  # one owner per array
    with pytest.raises(TypeError, match="cannot create 'npybridge.owner' instances"):
        owner_type()
    del t
    for i, b in enumerate(arrays):  # each owner keeps the storage alive on its own
        np.testing.assert_array_equal(b, np.arange(1000, dtype=np.int32))
        arrays[i] = None
    gc.collect()
    again = Tensor.from_numpy(np.arange(4, dtype=np.int32), policy="copy").numpy()  # a recycled owner object
    assert type(again.base) is owner_type and again.tolist() == [0, 1, 2, 3]


def test_a_borrowed_tensor_shares_back_with_the_original_array_as_base():
    a = np.arange(6, dtype=np.float32)
    t = Tensor.from_numpy(a)
    b = t.numpy()
    assert b.base is a and np.shares_memory(a, b)  # no owner object in between
    del a, t
    gc.collect()
    b[0] = 7  # the memory is still alive (b keeps the array)
    assert b[0] == 7
    view = np.arange(12, dtype=np.float32)[::2]
    shared = Tensor.from_numpy(view).numpy()
    assert shared.base is view.base and shared.strides == view.strides  # numpy collapses to the owner


def test_the_refcount_check_sees_a_kept_reference_and_lets_collected_cycles_go(refcounts):
    # The check freezes what is alive before its loop: a reference a call keeps must still fail it, also when
    # it is kept by an object that was alive (and so frozen) before; garbage cycles the calls make must not.
    class Node:
        pass

    a = np.arange(4)
    kept = []
    with pytest.raises(AssertionError):
        refcounts([a], lambda: kept.append(a), times=10)
    holder = Node()
    holder.self, holder.items = holder, []
    with pytest.raises(AssertionError):
        refcounts([a], lambda: holder.items.append(a), times=10)

    def cycle():
        node = Node()
        node.self, node.array = node, a

    refcounts([a], cycle, times=1000)


def test_refcounts_are_stable_across_10000_conversions_each_way(refcounts):
    a = np.arange(64, dtype=np.float32)
    q = np.zeros(8, dtype=mgb_dtype("uint8", "Quantized8Asymm", 0.5, 3))
    t = Tensor.from_numpy(a, policy="copy")
    refcounts([a, a.dtype], lambda: Tensor.from_numpy(a))
    refcounts([q, q.dtype], lambda: Tensor.from_numpy(q).numpy())
    refcounts([t], lambda: t.numpy())
    refcounts([a], lambda: Tensor.from_numpy(a, dtype="float32", policy="copy"))


def test_failed_conversions_leak_nothing(refcounts):
    a = np.array([2**40], dtype=np.int64)
    bad = np.zeros(2, dtype=mgb_dtype("uint8", "Quantized8Asymm", 1.0, 300))

    def fail(obj, **kwargs):
        with pytest.raises(nbx.ConversionError):
            Tensor.from_numpy(obj, **kwargs)
    refcounts([a], lambda: fail(a), times=2000)
    refcounts([bad, bad.dtype], lambda: fail(bad), times=2000)
    refcounts([a], lambda: fail(a, policy="must_borrow"), times=2000)


def test_conversions_run_on_other_threads():
    results, errors = [], []

    def work(seed):
        try:
            for i in range(200):
                a = np.full((16, 16), seed + i, dtype=np.float32)
                t = Tensor.from_numpy(a)
                c = Tensor.from_numpy(a.astype(np.float64))
                assert (t.numpy() == seed + i).all() and (c.numpy() == seed + i).all()
            results.append(seed)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and sorted(results) == [0, 1, 2, 3]


def test_tensor_released_on_another_thread_releases_the_array():
    a = np.arange(10, dtype=np.float32)
    before = sys.getrefcount(a)
    holder = [Tensor.from_numpy(a)]
    assert sys.getrefcount(a) == before + 1
    th = threading.Thread(target=holder.clear)
    th.start()
    th.join()
    assert sys.getrefcount(a) == before


def test_error_classes_form_the_documented_hierarchy():
    assert issubclass(nbx.ConversionError, TypeError) and issubclass(nbx.ConversionError, ValueError)
    assert issubclass(nbx.DTypeError, nbx.ConversionError)
    assert issubclass(nbx.MetadataError, nbx.DTypeError)
    assert issubclass(nbx.ValueRangeError, nbx.ConversionError)


def test_dtype_table_lists_every_dtype():
    table = nbx.dtype_table()
    assert len(table) == 22
    by_name = {row["name"]: row for row in table}
    assert by_name["QuantizedS4"] == {"name": "QuantizedS4", "enum": 100004, "bits": 4, "category": "quantized",
                                      "packed": True, "numpy": "int8"}
    assert by_name["Byte"]["numpy"] is None and by_name["UintB4"]["numpy"] is None
    assert by_name["Float16"]["numpy"] == "float16"
