"""DLPack both ways (Tensor.__dlpack__, Tensor.from_dlpack), the buffer protocol and ml_dtypes int4 / uint4,
against NumPy (DLPack 1.x under NumPy 2, the legacy capsule under NumPy 1.26) and JAX (a second real library,
in the NumPy 2 suite)."""
import ctypes
import gc
import os

import numpy as np
import pytest

from conftest import mgb_dtype, nbx


Tensor = nbx.Tensor


NUMPY2 = int(np.__version__.split(".")[0]) >= 2


PLAIN = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.float16, np.float32, np.complex64]


def sample(dtype, shape=(3, 4)):
    n = int(np.prod(shape))
    if np.dtype(dtype) == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) * 3 % 17).astype(dtype).reshape(shape)


class Codes:
    """What a user writes to hand a quantized tensor's codes to another library."""
    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **kwargs):
        return self.tensor.__dlpack__(codes=True, **kwargs)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


@pytest.mark.parametrize("dtype", PLAIN, ids=lambda d: np.dtype(d).name)
def test_every_plain_dtype_crosses_both_ways_sharing_memory(dtype):
    if dtype == np.bool_ and tuple(map(int, np.__version__.split(".")[:2])) < (1, 25):
        pytest.skip("NumPy before 1.25 neither exports nor imports bool through DLPack")
    a = sample(dtype)
    t = Tensor.from_numpy(a)
    b = np.from_dlpack(t)  # npybridge exports, numpy imports
    assert b.dtype == a.dtype and (b == a).all() and np.shares_memory(a, b)
    # NumPy 1.x marks what it imports read-only (its DLPack had no flag for it)
    # and then refuses to export it again; NumPy 2 keeps it writable.
    assert b.flags.writeable == NUMPY2
    if not NUMPY2:
        b = a
    back = Tensor.from_dlpack(b)  # numpy exports, npybridge imports
    assert back.borrowed and back.copy_reason is None
    assert back.data_address == a.ctypes.data and back.dtype_name == t.dtype_name
    direct = Tensor.from_dlpack(a)
    assert direct.borrowed and (direct.numpy() == a).all()


def test_bfloat16_crosses_npybridge_both_ways():
    bf = Tensor.from_numpy(np.array([1.5, -2.0, 3.25], dtype=np.float32), dtype=nbx.bfloat16)
    assert bf.dtype_name == "BFloat16"
    back = Tensor.from_dlpack(bf)
    assert back.borrowed and back.data_address == bf.data_address and back.dtype_name == "BFloat16"
    assert (back.numpy().astype(np.float32) == [1.5, -2.0, 3.25]).all()


@pytest.mark.parametrize("source, target", [(np.int64, "Int32"), (np.float64, "Float32")])
def test_int64_and_float64_narrow_as_from_numpy_does(source, target):
    a = np.arange(6, dtype=source).reshape(2, 3)
    t = Tensor.from_dlpack(a)
    assert t.dtype_name == target and not t.borrowed and "narrowed" in t.copy_reason
    bad = a.copy()
    bad[1, 2] = 2**40 if source == np.int64 else 1e39
    with pytest.raises(nbx.ValueRangeError, match=r"at index \(1, 2\)"):
        Tensor.from_dlpack(bad)
    with pytest.raises(nbx.DTypeError, match="narrowing='reject'"):
        Tensor.from_dlpack(a, narrowing="reject")


def test_policies_and_requested_dtypes_apply():
    a = np.arange(6, dtype=np.int8)
    assert not Tensor.from_dlpack(a, policy="copy").borrowed
    q = Tensor.from_dlpack(a, dtype=mgb_dtype(np.int8, "QuantizedS8", 0.5))
    assert q.borrowed and q.dtype_name == "QuantizedS8" and q.scale == 0.5
    with pytest.raises(nbx.ConversionError, match="must_borrow"):
        Tensor.from_dlpack(a, dtype="Int16", policy="must_borrow")
    packed = Tensor.from_dlpack(np.array([1, -1, 3, -3], np.int8), dtype="IntB2")
    assert packed.dtype_name == "IntB2" and (packed.numpy().view(np.int8) == [1, -1, 3, -3]).all()


@pytest.mark.parametrize("make", [
    lambda a: a.T,
    lambda a: a[::-1],
    lambda a: a[:, ::-2],
    lambda a: a[1:2],
    lambda a: a[:0],
    lambda a: a[0, 0, ...],
], ids=["transposed", "reversed", "negative-step", "slice", "zero-size", "0-d"])
def test_strided_negative_zero_size_and_0d_views_share_both_ways(make):
    base = np.arange(20, dtype=np.float32).reshape(4, 5)
    view = make(base)
    t = Tensor.from_dlpack(view)
    assert t.borrowed and t.shape == view.shape
    b = np.from_dlpack(t)
    assert b.shape == view.shape and b.strides == view.strides and (b == view).all()
    if NUMPY2:
        assert Tensor.from_dlpack(b).data_address == t.data_address
    if view.size:
        assert np.shares_memory(b, base)


def read_only(a):
    a.flags.writeable = False
    return a


def test_read_only_arrays_give_read_only_tensors():
    ro = read_only(np.arange(4, dtype=np.float32))
    if NUMPY2:
        t = Tensor.from_dlpack(ro)  # DLPack 1.x: READ_ONLY flag
        assert t.borrowed and not t.writable
        assert not t.numpy().flags.writeable
    else:
        with pytest.raises(BufferError):  # NumPy 1.26 will not export a read-only array as a legacy capsule
            Tensor.from_dlpack(ro)


def test_read_only_tensors_export_read_only_or_not_at_all():
    t = Tensor.from_numpy(read_only(np.arange(4, dtype=np.float32)))
    assert not t.writable
    with pytest.raises(nbx.DLPackError, match="read-only") as error:
        t.__dlpack__()  # a legacy capsule cannot say read-only
    assert isinstance(error.value, BufferError)
    copied = Tensor.from_dlpack(t.__dlpack__(copy=True))
    assert copied.writable and copied.data_address != t.data_address
    versioned = Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1)))
    assert not versioned.writable and versioned.data_address == t.data_address
    if NUMPY2:
        b = np.from_dlpack(t)
        assert not b.flags.writeable and b.ctypes.data == t.data_address
    else:
        with pytest.raises(BufferError, match="read-only"):
            np.from_dlpack(t)


def test_copy_argument():
    t = Tensor.from_numpy(np.arange(6, dtype=np.int16))
    copied = Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1), copy=True))
    assert copied.data_address != t.data_address and (copied.numpy() == t.numpy()).all()
    shared = Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1), copy=False))
    assert shared.data_address == t.data_address


def test_capsule_kinds_follow_max_version():
    t = Tensor.from_numpy(np.arange(3, dtype=np.int32))
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))
    assert '"dltensor"' in repr(t.__dlpack__())
    assert t.__dlpack_device__() == (1, 0)


def test_other_devices_and_streams_are_refused_naming_them():
    t = Tensor.from_numpy(np.arange(3, dtype=np.int32))
    with pytest.raises(nbx.DLPackError, match="CUDA:0") as error:
        t.__dlpack__(dl_device=(2, 0))
    assert isinstance(error.value, BufferError)
    assert t.__dlpack__(dl_device=(1, 0)) is not None
    with pytest.raises(nbx.DLPackError, match="stream must be None"):
        t.__dlpack__(stream=1)
    # (A producer's GPU memory is refused by the capsule's own device: tests/dlpack_test.cpp.)
    with pytest.raises(nbx.ConversionError, match="has no __dlpack__"):
        Tensor.from_dlpack(5)


def test_a_legacy_producer_without_max_version_still_works():
    source = Tensor.from_numpy(np.arange(4, dtype=np.float32))

    class Old:
        def __dlpack__(self, stream=None):  # DLPack < 1.0: no max_version
            return source.__dlpack__()

    t = Tensor.from_dlpack(Old())
    assert t.borrowed and t.data_address == source.data_address


def test_a_consumed_capsule_is_refused():
    capsule = Tensor.from_numpy(np.arange(3, dtype=np.int8)).__dlpack__(max_version=(1, 1))
    Tensor.from_dlpack(capsule)
    with pytest.raises(nbx.DLPackError, match="already consumed"):
        Tensor.from_dlpack(capsule)


def test_refcounts_stay_put_over_round_trips(refcounts):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    refcounts([a], lambda: np.from_dlpack(Tensor.from_dlpack(a)))
    t = Tensor.from_numpy(a)
    refcounts([a, t], lambda: Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1))))
    refcounts([a, t], lambda: t.__dlpack__(max_version=(1, 1)))  # capsules nobody consumed


def test_the_exported_memory_outlives_the_tensor():
    t = Tensor.from_storage(bytes(range(8)), "Uint8", (8,))
    b = np.from_dlpack(t)
    del t
    gc.collect()
    assert list(b) == list(range(8))


def test_quantized_tensors_refuse_to_lose_their_params_unless_codes_are_asked_for():
    q = Tensor.from_storage(b"\x01\xfe", "QuantizedS8", (2,), scale=0.5)
    with pytest.raises(nbx.DTypeError, match=r"QuantizedS8\(scale=0.5\).*scale would be lost.*codes=True"):
        np.from_dlpack(q)
    assert list(np.from_dlpack(Codes(q))) == [1, -2]
    a = Tensor.from_storage(b"\x01\xfe", "Quantized8Asymm", (2,), scale=0.5, zero_point=128)
    with pytest.raises(nbx.DTypeError, match="scale and zero_point would be lost"):
        a.__dlpack__()


PACKED = [
    ("IntB1", np.int8, [-1, 1]),
    ("IntB2", np.int8, [-3, -1, 1, 3]),
    ("IntB4", np.int8, list(range(-15, 16, 2))),
    ("QuantizedS4", mgb_dtype(np.int8, "QuantizedS4", 0.25), list(range(-8, 8))),
    ("Quantized4Asymm", mgb_dtype(np.uint8, "Quantized4Asymm", 0.5, 3), list(range(16))),
]


@pytest.mark.parametrize("name, dtype, valid", PACKED, ids=[p[0] for p in PACKED])
@pytest.mark.parametrize("shape", [(3, 5), (2, 8), (7,), (0, 3)], ids=str)
@pytest.mark.parametrize("layout", ["compact", "row_aligned"])
def test_packed_dtypes_cross_as_packed_codes(name, dtype, valid, shape, layout):
    values = np.array(valid, np.int8 if name != "Quantized4Asymm" else np.uint8)[np.arange(int(np.prod(shape))) % len(valid)]
    values = values.reshape(shape)
    kwargs = {"dtype": name} if name.startswith("IntB") else {}
    source = values if name.startswith("IntB") else values.view(dtype)
    t = Tensor.from_numpy(source, layout=layout, **kwargs)
    with pytest.raises(nbx.DTypeError, match="codes"):
        t.__dlpack__(max_version=(1, 1))
    for wanted in ("compact", "row_aligned"):
        back = Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1), codes=True), dtype=dtype if not name.startswith("IntB") else name,
                                  layout=wanted)
        assert back.dtype_name == name and not back.borrowed
        assert (back.numpy().view(values.dtype) == values).all()
        if wanted == layout:
            assert back.storage() == t.storage()  # the same packed bits
    with pytest.raises(nbx.DTypeError, match=name):
        Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1), codes=True))  # packed data needs its dtype named
    with pytest.raises(nbx.ConversionError, match="must_borrow"):
        Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1), codes=True), dtype=dtype if not name.startswith("IntB") else name,
                           policy="must_borrow")


@pytest.mark.parametrize("dtype, code", [(np.bool_, "?"), (np.int8, "b"), (np.uint8, "B"), (np.int16, "h"),
                                         (np.uint16, "H"), (np.int32, "i"), (np.float16, "e"), (np.float32, "f"),
                                         (np.complex64, "Zf")])
def test_buffers_of_plain_dtypes(dtype, code):
    a = sample(dtype)
    t = Tensor.from_numpy(a)
    m = memoryview(t)
    assert m.format == code and m.itemsize == a.itemsize and m.shape == a.shape and m.strides == a.strides
    assert not m.readonly and m.obj is t
    assert (np.asarray(m) == a).all()
    view = memoryview(Tensor.from_numpy(a.T))
    assert view.strides == a.T.strides and (np.asarray(view) == a.T).all()


def test_buffers_are_read_only_for_read_only_tensors_and_write_through_otherwise():
    a = np.zeros(4, np.int32)
    m = memoryview(Tensor.from_numpy(a))
    m[1] = 7
    assert a[1] == 7
    ro = memoryview(Tensor.from_numpy(read_only(np.zeros(4, np.int32))))
    assert ro.readonly
    with pytest.raises(TypeError):
        ro[0] = 1


@pytest.mark.parametrize("make, why", [
    (lambda: Tensor.from_storage(b"\x01", "QuantizedS8", (1,), scale=0.5), "quantization params"),
    (lambda: Tensor.from_numpy(np.array([1, -1], np.int8), dtype="IntB2"), "packed"),
    (lambda: Tensor.from_numpy(np.array([1.0], np.float32), dtype=nbx.bfloat16), "no format"),
])
def test_dtypes_a_buffer_cannot_describe_are_refused_by_name(make, why):
    t = make()
    with pytest.raises(BufferError, match=f"{t.dtype_name}.*{why}"):
        memoryview(t)


def test_ml_dtypes_int4_and_uint4_convert_into_the_4bit_quantized_dtypes_and_back():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    qs4 = mgb_dtype(np.int8, "QuantizedS4", 0.25)
    q4a = mgb_dtype(np.uint8, "Quantized4Asymm", 0.5, 3)
    signed = np.array([[-8, 7, -1], [0, 3, -5]], ml_dtypes.int4)
    t = Tensor.from_numpy(signed, dtype=qs4)
    assert t.dtype_name == "QuantizedS4" and (t.numpy().view(np.int8) == signed.astype(np.int8)).all()
    out = t.numpy(lowbit_format="ml_dtypes")
    assert out.dtype == np.dtype(ml_dtypes.int4) and out.dtype.metadata == {"mgb_dtype": {"name": "QuantizedS4", "scale": 0.25}}
    assert (out.view(np.uint8) < 16).all()  # upper bits zero, as ml_dtypes writes them
    assert (out.astype(np.int8) == signed.astype(np.int8)).all()
    again = Tensor.from_numpy(out)  # the metadata says QuantizedS4
    assert again.dtype_name == "QuantizedS4" and again.storage() == t.storage()
    assert t.numpy().dtype == np.int8  # the default stays MegEngine's form

    unsigned = np.array([0, 15, 3], ml_dtypes.uint4)
    u = Tensor.from_numpy(unsigned, dtype=q4a)
    assert list(u.numpy().view(np.uint8)) == [0, 15, 3]
    assert u.numpy(lowbit_format="ml_dtypes").dtype == np.dtype(ml_dtypes.uint4)
    with pytest.raises(nbx.ValueRangeError, match=r"QuantizedS4: value 15 at index \(1,\)"):
        Tensor.from_numpy(unsigned, dtype=qs4)
    with pytest.raises(nbx.DTypeError, match=r"IntB4: lowbit_format='ml_dtypes' holds 4-bit integers \(int4 / uint4: Quantized4Asymm, QuantizedS4\)"):
        Tensor.from_numpy(np.array([1, -1], np.int8), dtype="IntB4").numpy(lowbit_format="ml_dtypes")
    with pytest.raises(nbx.ConversionError, match="lowbit_format must be one of"):
        t.numpy(lowbit_format="int4")


@pytest.fixture(scope="module")
def jnp():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    pytest.importorskip("jax")
    import jax.numpy
    return jax.numpy


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "float16", "float32", "bool", "bfloat16"])
def test_jax_arrays_cross_both_ways(jnp, dtype):
    x = (jnp.arange(12) % 5).astype(dtype).reshape(3, 4)
    t = Tensor.from_dlpack(x)
    expected = np.asarray(x)
    assert t.shape == (3, 4)
    assert (np.asarray(t.numpy()) == expected).all()
    y = jnp.from_dlpack(t)
    assert y.dtype == x.dtype and (np.asarray(y) == expected).all()


@pytest.mark.parametrize("type_name,target,values", [
    ("int2", "IntB2", [-1, 1]), ("uint2", "IntB2", [1, 3]), ("int1", "IntB1", [-1, 0]), ("uint1", "IntB1", [1, 1]),
    ("int4", "IntB4", [-7, 5]), ("uint2", "IntB4", [1, 3]),
])
def test_ml_dtypes_sub_byte_integers_convert_by_value_like_int4(type_name, target, values):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kind = getattr(ml_dtypes, type_name, None)
    if kind is None:
        pytest.skip(f"this ml_dtypes has no {type_name}")
    a = np.array(values, kind)
    wanted = [v for v in values]
    if target == "IntB1" and 0 in wanted:  # IntB1 holds -1 and 1: 0 is refused, naming it
        with pytest.raises(nbx.ValueRangeError, match=r"IntB1: value 0 at index \(1,\)"):
            Tensor.from_numpy(a, dtype=target)
        return
    t = Tensor.from_numpy(a, dtype=target)
    np.testing.assert_array_equal(t.numpy().astype(np.int8), wanted)


# ---- Capsules from hostile producers, built with ctypes as a buggy or malicious library would hand them over:
# every field is checked before anything is read, each refusal names the field, and nothing crashes.

INT, UINT, FLOAT, BOOL = 0, 1, 2, 6


READ_ONLY, IS_COPIED, SUBBYTE_PADDED = 1, 2, 4


class Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int32), ("dtype", DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class ManagedVersioned(ctypes.Structure):
    _fields_ = [("version", Version), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


KEEP = []  # what the capsules point at lives as long as the tests (the capsules have no deleter)


def capsule(data, shape, strides=None, code=INT, bits=8, flags=0, byte_offset=0, ndim=None):
    """A DLPack 1.1 capsule over `data` (a numpy array, or None for NULL), as a producer might build it."""
    managed = ManagedVersioned()
    managed.version = Version(1, 1)
    managed.flags = flags
    t = managed.dl_tensor
    t.data = None if data is None else data.ctypes.data
    t.device = Device(1, 0)
    t.ndim = len(shape) if ndim is None else ndim
    t.dtype = DataType(code, bits, 1)
    shape_array = (ctypes.c_int64 * max(1, len(shape)))(*shape) if shape is not None else None
    t.shape = ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64)) if shape is not None else None
    strides_array = (ctypes.c_int64 * len(strides))(*strides) if strides is not None else None
    t.strides = ctypes.cast(strides_array, ctypes.POINTER(ctypes.c_int64)) if strides is not None else None
    t.byte_offset = byte_offset
    KEEP.extend([managed, shape_array, strides_array, data])
    return _capsule_new(ctypes.addressof(managed), b"dltensor_versioned", None)


@pytest.mark.hardening
def test_a_well_formed_capsule_is_borrowed():
    a = np.arange(4, dtype=np.int32)
    t = Tensor.from_dlpack(capsule(a, [4], code=INT, bits=32), policy="must_borrow")
    assert t.borrowed and t.data_address == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.hardening
def test_a_capsule_of_another_name_is_refused_naming_it():
    a = np.arange(4, dtype=np.int8)
    pointee, name = ctypes.c_int64(0), b"not_a_dltensor_at_all"
    KEEP.extend([pointee, name])
    other = _capsule_new(ctypes.addressof(pointee), name, None)
    with pytest.raises(nbx.DLPackError, match="a capsule named 'not_a_dltensor_at_all' is not a DLPack tensor"):
        Tensor.from_dlpack(other)
    # A capsule taken once is renamed and refused the second time, by the name it has now.
    taken = capsule(a, [4])
    Tensor.from_dlpack(taken)
    with pytest.raises(nbx.DLPackError, match=r"already consumed \('used_dltensor_versioned'\)"):
        Tensor.from_dlpack(taken)


@pytest.mark.hardening
def test_a_null_shape_is_refused_naming_the_field():
    with pytest.raises(nbx.DLPackError, match="shape is NULL with ndim = 1"):
        Tensor.from_dlpack(capsule(np.zeros(4, np.int8), None, ndim=1))


@pytest.mark.hardening
def test_null_data_is_valid_for_zero_elements_only():
    with pytest.raises(nbx.DLPackError, match="data is NULL with 4 elements"):
        Tensor.from_dlpack(capsule(None, [4]))
    with pytest.raises(nbx.DLPackError, match="data is NULL with 4 elements"):
        Tensor.from_dlpack(capsule(None, [4]), policy="copy")
    assert Tensor.from_dlpack(capsule(None, [0])).shape == (0,)


@pytest.mark.hardening
@pytest.mark.parametrize("bits,stride", [(64, 2**61), (32, 2**62), (8, 2**63 - 1), (64, -(2**61))])
def test_strides_that_reach_past_memory_are_refused(bits, stride):
    data = np.zeros(2, dtype=f"int{bits}")
    with pytest.raises(nbx.DLPackError, match=r"strides\[0\] = " + str(stride)):
        Tensor.from_dlpack(capsule(data, [2], [stride], bits=bits))


@pytest.mark.hardening
def test_a_byte_offset_that_reaches_past_memory_is_refused():
    with pytest.raises(nbx.DLPackError, match="byte_offset"):
        Tensor.from_dlpack(capsule(np.zeros(2, np.int8), [2], byte_offset=2**63))


@pytest.mark.hardening
def test_padded_sub_byte_data_is_a_copy_and_says_so():
    # The planner's reason (docs/policies.md's `packing:` row), and under must_borrow its refusal.
    codes = np.array([1, 2, 3, 4], np.uint8)  # int4, one element per byte
    qs4 = np.dtype(np.int8, metadata={"mgb_dtype": {"name": "QuantizedS4", "scale": 1.0}})
    with pytest.raises(nbx.ConversionError, match=r"must_borrow: cannot share the memory of the padded DLPack int4 "
                                                  r"tensor: packing: DLPack int4 values one per byte are unpacked"):
        Tensor.from_dlpack(capsule(codes, [4], bits=4, flags=SUBBYTE_PADDED), dtype=qs4, policy="must_borrow")
    t = Tensor.from_dlpack(capsule(codes, [4], bits=4, flags=SUBBYTE_PADDED), dtype=qs4)
    assert not t.borrowed
    assert t.copy_reason == "packing: DLPack int4 values one per byte are unpacked into a copy"
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3, 4])
    t = Tensor.from_dlpack(capsule(codes, [4], bits=4, flags=SUBBYTE_PADDED), dtype=qs4, policy="copy")
    assert t.copy_reason == "copy requested"


def test_packed_sub_byte_data_is_a_copy_and_says_so():
    t = Tensor.from_numpy(np.array([1, -1, 3, -3, 5, -5], np.int8), dtype="IntB4")
    with pytest.raises(nbx.ConversionError, match=r"must_borrow: cannot share the memory of the packed DLPack uint4 "
                                                  r"tensor: packing: packed DLPack uint4 data is copied into the "
                                                  r"tensor's own packing \(tensor types borrow unpacked memory only\)"):
        Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1), codes=True), dtype="IntB4", policy="must_borrow")
    back = Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1), codes=True), dtype="IntB4")
    assert not back.borrowed and back.copy_reason.startswith("packing: packed DLPack uint4 data is copied")
    assert back.storage() == t.storage()


@pytest.mark.hardening
@pytest.mark.parametrize("code,bits,flags,shown", [(INT, 0, SUBBYTE_PADDED, "0 bits"), (INT, 3, SUBBYTE_PADDED, "int3"),
                                                  (BOOL, 1, SUBBYTE_PADDED, "bool1"), (INT, 2, 0, "int2")])
def test_only_sub_byte_types_with_a_megdnn_dtype_are_read(code, bits, flags, shown):
    with pytest.raises(nbx.DTypeError, match=shown):
        Tensor.from_dlpack(capsule(np.zeros(4, np.uint8), [4], code=code, bits=bits, flags=flags))


@pytest.mark.hardening
@pytest.mark.parametrize("arguments,culprit", [
    ({"dl_device": (1, 2**32)}, r"dl_device=\(1, 4294967296\)"),
    ({"dl_device": (2**32 + 1, 0)}, r"dl_device=\(4294967297, 0\)"),
    ({"dl_device": (-1, 0)}, r"dl_device=\(-1, 0\)"),
    ({"max_version": (2**32, 0)}, r"max_version=\(4294967296, 0\)"),
    ({"max_version": (-1, 0)}, r"max_version=\(-1, 0\)"),
    ({"max_version": ("a", 1)}, r"max_version=\('a', 1\): must be a tuple of two ints"),
    ({"max_version": (1,)}, r"max_version=\(1,\): must be a tuple of two ints"),
])
def test_dlpack_arguments_are_range_checked_and_named(arguments, culprit):
    t = Tensor.from_numpy(np.arange(3, dtype=np.float32))
    with pytest.raises(nbx.ConversionError, match=culprit) as caught:
        t.__dlpack__(**arguments)
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ValueError)


@pytest.mark.hardening
def test_dlpack_arguments_in_range_still_work():
    t = Tensor.from_numpy(np.arange(3, dtype=np.float32))
    assert t.__dlpack__(max_version=(2**32 - 1, 0), dl_device=(1, 0)) is not None
    with pytest.raises(nbx.DLPackError, match=r"dl_device \(kDLCUDA, 0\)|dl_device"):
        t.__dlpack__(dl_device=(2, 0))
