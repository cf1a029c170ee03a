"""Borrowing and sharing: when a tensor borrows an array's memory, when it copies and why, and what comes back to NumPy
(docs/policies.md).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from conftest import nbx


Tensor = nbx.Tensor


def _read_only_sources(draw_kind, values):
    raw = np.array(values, np.float32).tobytes()
    if draw_kind == "bytes":
        return raw, np.frombuffer(raw, np.float32)
    if draw_kind == "memoryview":
        return raw, np.asarray(memoryview(raw).cast("f"))
    owner = np.array(values, np.float32)
    view = owner[::-1] if draw_kind == "reversed view" else owner.view()
    view.setflags(write=False)
    return owner, view


PLAIN = ["bool", "int8", "uint8", "int16", "uint16", "int32", "float16", "float32", "complex64"]


@st.composite
def strided_views(draw):
    dtype = np.dtype(draw(st.sampled_from(PLAIN)))
    base = draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6),
                           elements=hnp.from_dtype(dtype, allow_nan=False)))
    view = base
    if view.ndim:
        slices = tuple(slice(None, None, draw(st.sampled_from([1, 2, -1, -2]))) for _ in range(view.ndim))
        view = view[slices]
        view = view.transpose(draw(st.permutations(range(view.ndim))))
    return view


@pytest.mark.guarantee
def test_the_array_shared_back_from_a_borrowed_view_has_the_memorys_owner_as_base():
    owner = np.arange(10, dtype=np.float32)
    t = Tensor.from_numpy(owner[2:8:2])
    assert t.borrowed and t.numpy().base is owner
    assert Tensor.from_numpy(owner).numpy().base is owner


@pytest.mark.guarantee
@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["bytes", "memoryview", "read-only view", "reversed view"]),
       values=st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=8),
       route=st.sampled_from(["try_borrow", "must_borrow", "copy", "from_dlpack"]),
       share=st.sampled_from(["try_share", "must_share", "copy"]))
def test_read_only_memory_is_never_written(kind, values, route, share):
    holder, source = _read_only_sources(kind, values)
    before = bytes(holder) if isinstance(holder, bytes) else holder.tobytes()
    if route == "from_dlpack":
        try:
            t = Tensor.from_dlpack(source)
        except BufferError:  # NumPy 1.x exports no read-only memory over DLPack at all
            assert np.lib.NumpyVersion(np.__version__) < "2.0.0"
            return
    else:
        t = Tensor.from_numpy(source, policy=route)
    assert t.writable == (route == "copy")  # npybridge's tensor marks borrowed read-only memory
    try:
        back = t.numpy(policy=share)
    except nbx.ConversionError:
        back = None
    if back is not None and np.shares_memory(back, source):
        assert not back.flags.writeable
    if not t.writable:
        with pytest.raises(nbx.ConversionError, match="read-only"):
            t.copy_from(np.zeros(len(values), np.float32))
    else:
        t.copy_from(np.zeros(len(values), np.float32))
    after = bytes(holder) if isinstance(holder, bytes) else holder.tobytes()
    assert after == before


@pytest.mark.guarantee
@settings(max_examples=300, deadline=None)
@given(view=strided_views(), policy=st.sampled_from(["try_borrow", "must_borrow", "copy"]),
       share=st.sampled_from(["try_share", "must_share", "copy"]))
def test_plain_arrays_round_trip_under_every_policy(view, policy, share):
    t = Tensor.from_numpy(view, policy=policy)
    assert t.borrowed == (policy != "copy")
    assert t.shape == view.shape
    back = t.numpy(policy=share)
    assert back.dtype == view.dtype
    np.testing.assert_array_equal(back, view)
    if t.borrowed and share != "copy" and view.size:
        assert back.__array_interface__["data"][0] == view.__array_interface__["data"][0]


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


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32", "float16", "float32", "complex64"])
def test_every_plain_numpy_dtype_round_trips_without_copy(dtype):
    a = (np.arange(6) % 2 if dtype == "bool" else np.arange(6)).astype(dtype).reshape(2, 3)
    t = Tensor.from_numpy(a)
    assert t.borrowed
    back = t.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)
