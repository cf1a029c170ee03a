"""Copies of strided arrays (the tiled copier) against NumPy's own result: every itemsize, every axis
permutation of 2-, 3- and 4-D shapes with extents around the tile edges, negative and sliced strides,
zero-size and size-1 dimensions, byte-swapped sources, narrowing while gathering, and to_array copies."""
import itertools
import re

import numpy as np
import pytest

from conftest import mgb_dtype, nbx


Tensor = nbx.Tensor


# Extents straddle the SIMD blocks (2, 4, 8 elements) and the tiles (16..128 elements).
SHAPES = [(37, 67), (129, 33), (16, 17), (5, 33, 9), (17, 1, 65), (3, 5, 7, 9), (2, 1, 17, 33)]


# int64 / float64 arrive as Int32 / Float32 (narrowed while gathering); complex64 is the 8-byte plain copy.
DTYPES = ["i1", "u1", "?", "i2", ">u2", "<f2", "i4", "<f4", ">f4", ">i4", "<i8", ">i8", "f8", ">f8", "c8", ">c8"]


NARROWED = {"i": np.int32, "f": np.float32}


def values(shape, dtype):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind == "b":
        return (np.arange(n) % 3 == 0).reshape(shape)
    if dtype.kind == "c":
        return (np.arange(n) + 1j * np.arange(n)[::-1]).astype(dtype).reshape(shape)
    info_max = 100 if dtype.kind == "f" else np.iinfo(dtype).max
    return (np.arange(n) * 7919 % max(2, min(info_max, 100003))).astype(dtype).reshape(shape)


def views(base):
    """Every axis permutation, plain, reversed, and stepped (first axis by 2, last by -3)."""
    for perm in itertools.permutations(range(base.ndim)):
        t = base.transpose(perm)
        yield perm, "plain", t
        yield perm, "reversed", t[(slice(None, None, -1),) * t.ndim]
        stepped = (slice(None, None, 2),) + (slice(None),) * (t.ndim - 2) + (slice(None, None, -3),)
        yield perm, "stepped", t[stepped]


def same_bits(a, b):
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    return a.shape == b.shape and a.view(np.uint8).tobytes() == b.astype(a.dtype).view(np.uint8).tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_strided_copy_equals_numpy(dtype, shape):
    base = values(shape, dtype)
    for perm, how, view in views(base):
        t = Tensor.from_numpy(view, policy="copy")
        got = t.numpy()
        native = view.dtype.newbyteorder("=")
        if native.itemsize == 8 and native.kind in NARROWED:
            native = np.dtype(NARROWED[native.kind])
        expected = np.ascontiguousarray(view).astype(native)
        assert got.dtype == expected.dtype, (perm, how)
        assert got.flags.c_contiguous
        assert same_bits(got, expected), (perm, how)


@pytest.mark.parametrize("dtype", ["i2", "f4", ">f8"])
def test_try_borrow_copies_non_native_and_unaligned_views_correctly(dtype):
    base = values((33, 65), dtype)
    if np.dtype(dtype).isnative:
        # An unaligned view: one byte into a buffer.
        raw = np.zeros(base.nbytes + 1, np.uint8)
        unaligned = raw[1:].view(dtype).reshape(base.shape)
        unaligned[...] = base
        view = unaligned.T
    else:
        view = base.T
    t = Tensor.from_numpy(view)
    assert not t.borrowed
    assert same_bits(t.numpy(), view)


def test_zero_size_and_size_one_dimensions():
    for shape in [(0, 5), (5, 0), (3, 0, 4), (1, 1), (1, 37, 1), ()]:
        a = values(shape, "f4") if 0 not in shape else np.zeros(shape, np.float32)
        view = a.T[..., ::-1] if a.ndim else a
        t = Tensor.from_numpy(view, policy="copy")
        assert same_bits(t.numpy().reshape(view.shape), view), shape


def test_quantized_views_copy_their_codes():
    base = np.arange(-60, 60, dtype=np.int8).reshape(8, 15).view(mgb_dtype(np.int8, "QuantizedS8", 0.5))
    t = Tensor.from_numpy(base.T[::-1], policy="copy")
    assert t.dtype_name == "QuantizedS8" and t.scale == 0.5
    assert (t.numpy().view(np.int8) == base.T[::-1].view(np.int8)).all()


@pytest.mark.parametrize("dtype", ["IntB1", "IntB2", "IntB4", "QuantizedS4"])
def test_packers_are_fed_from_strided_views(dtype):
    valid = {"IntB1": [-1, 1], "IntB2": [-3, -1, 1, 3], "IntB4": [-7, -5, -3, -1, 1, 3, 5, 7],
             "QuantizedS4": list(range(-8, 8))}[dtype]
    base = np.array(valid, np.int8)[np.arange(37 * 21) % len(valid)].reshape(37, 21)
    view = base.T[:, ::-1]
    kwargs = {"dtype": dtype}
    t = Tensor.from_numpy(view, **kwargs) if dtype != "QuantizedS4" else Tensor.from_numpy(
        view.view(mgb_dtype(np.int8, "QuantizedS4", 0.25)))
    assert (t.numpy().view(np.int8) == view).all()


@pytest.mark.parametrize("source", ["<f8", ">f8", "<i8", ">i8"])
def test_narrowing_while_gathering_checks_every_value_and_names_the_index_in_the_arrays_coordinates(source):
    to_float = source[-2] == "f"
    x = values((37, 45), source)
    view = x.T[::-1]
    t = Tensor.from_numpy(view)
    assert t.dtype_name == ("Float32" if to_float else "Int32")
    assert (t.numpy() == view.astype(np.float32 if to_float else np.int32)).all()
    # One bad value at view index (20, 11): the message names that index, not a memory-order one.
    bad = x.copy()
    too_big = 1e39 if to_float else 2**40
    bad_view = bad.T[::-1]
    bad_view[20, 11] = too_big
    with pytest.raises(nbx.ValueRangeError, match=r"at index \(20, 11\)"):
        Tensor.from_numpy(bad_view)
    wrapped = Tensor.from_numpy(bad_view, narrowing="wrap").numpy()
    assert wrapped[0, 0] == bad_view[0, 0]


def test_share_policy_copy_of_a_strided_tensor_is_c_ordered():
    a = values((33, 65), "f4")
    t = Tensor.from_numpy(a.T[::2])  # borrowed, strided
    assert t.borrowed
    out = t.numpy(policy="copy")
    assert out.flags.c_contiguous and not np.shares_memory(out, a)
    assert (out == a.T[::2]).all()


def test_transposed_copy_is_c_contiguous_and_equal():
    a = np.arange(20, dtype=np.float32).reshape(4, 5).T
    t = Tensor.from_numpy(a, policy="copy")
    assert t.strides == (4, 1)
    np.testing.assert_array_equal(t.numpy(), a)


# Copies of 4 MiB and more into rows of whole 16-byte units go by streamed tiles (32 source bytes by 256 destination
# bytes, streaming stores): extents leave ragged edges both ways, for each tiled element size and both narrowing
# tiles; a destination row of an odd length takes the plain tiles.
LARGE = [("<f4", (1036, 1531), (1, 0)), ("<i2", (40, 301, 257), (2, 0, 1)), ("<c8", (702, 1003), (1, 0)),
         ("<i8", (1500, 1003), (1, 0)), ("<f8", (1500, 1001), (1, 0)), ("<c16", (702, 1001), (1, 0)),
         ("<f4", (1037, 1531), (1, 0))]
NARROWED_LARGE = {"i8": np.int32, "f8": np.float32, "c16": np.complex64}


@pytest.mark.parametrize("dtype, shape, perm", LARGE, ids=str)
def test_large_transposed_copies_equal_numpy_and_name_the_first_bad_value(dtype, shape, perm):
    base = values(shape, dtype)
    view = base.transpose(perm)
    code = f"{view.dtype.kind}{view.dtype.itemsize}"
    narrowed = code in NARROWED_LARGE
    native = np.dtype(NARROWED_LARGE.get(code, view.dtype))
    got = Tensor.from_numpy(view, dtype="Complex64" if code == "c16" else None, policy="copy").numpy()
    assert got.nbytes >= 4 << 20
    assert same_bits(got, np.ascontiguousarray(view).astype(native))
    existing = Tensor.from_numpy(np.zeros(view.shape, native))
    existing.copy_from(view)
    assert same_bits(existing.numpy(), got)
    if narrowed:  # a bad value inside the streamed tiles and one on a ragged edge
        bad = view.copy(order="K")
        at, edge = (3, 5), (view.shape[0] - 1, view.shape[1] - 2)
        bad[edge] = bad[at] = 2**40 if view.dtype.kind == "i" else 1e39
        with pytest.raises(nbx.ValueRangeError, match=re.escape(f"at index {at}")):
            Tensor.from_numpy(bad.transpose(perm).transpose(perm), dtype="Complex64" if code == "c16" else None)


@pytest.mark.parametrize("dtype", ["<i1", "<i2", "<f4", "<c8"])
@pytest.mark.parametrize("skip", [0, 1, 3, 8])
def test_large_transposes_starting_anywhere_in_a_line_equal_numpy(dtype, skip):
    # Source rows a multiple of 32 bytes apart start alike: the streamed tiles (destination rows of whole 16-byte
    # units) start on a line and the values before it go on their own; `skip` moves the first byte (NumPy's data
    # starts 16 bytes into a line).
    itemsize = np.dtype(dtype).itemsize
    columns = 4096 // itemsize
    base = values((1056, columns + 64), dtype)
    view = base[:, skip: skip + columns].T
    got = Tensor.from_numpy(view, policy="copy").numpy()
    assert got.nbytes >= 4 << 20
    assert same_bits(got, np.ascontiguousarray(view))
    existing = Tensor.from_numpy(np.zeros(view.shape, view.dtype))
    existing.copy_from(view)
    assert same_bits(existing.numpy(), got)
