"""DLPack capsules from hostile producers (built with ctypes, as a buggy or malicious library would hand them
over): every field is checked before anything is read, each refusal names the field, and nothing crashes."""
import ctypes

import numpy as np
import pytest

from conftest import nbx

Tensor = nbx.Tensor

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


def test_a_well_formed_capsule_is_borrowed():
    a = np.arange(4, dtype=np.int32)
    t = Tensor.from_dlpack(capsule(a, [4], code=INT, bits=32), policy="must_borrow")
    assert t.borrowed and t.data_address == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)


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


def test_a_null_shape_is_refused_naming_the_field():
    with pytest.raises(nbx.DLPackError, match="shape is NULL with ndim = 1"):
        Tensor.from_dlpack(capsule(np.zeros(4, np.int8), None, ndim=1))


def test_null_data_is_valid_for_zero_elements_only():
    with pytest.raises(nbx.DLPackError, match="data is NULL with 4 elements"):
        Tensor.from_dlpack(capsule(None, [4]))
    with pytest.raises(nbx.DLPackError, match="data is NULL with 4 elements"):
        Tensor.from_dlpack(capsule(None, [4]), policy="copy")
    assert Tensor.from_dlpack(capsule(None, [0])).shape == (0,)


@pytest.mark.parametrize("bits,stride", [(64, 2**61), (32, 2**62), (8, 2**63 - 1), (64, -(2**61))])
def test_strides_that_reach_past_memory_are_refused(bits, stride):
    data = np.zeros(2, dtype=f"int{bits}")
    with pytest.raises(nbx.DLPackError, match=r"strides\[0\] = " + str(stride)):
        Tensor.from_dlpack(capsule(data, [2], [stride], bits=bits))


def test_a_byte_offset_that_reaches_past_memory_is_refused():
    with pytest.raises(nbx.DLPackError, match="byte_offset"):
        Tensor.from_dlpack(capsule(np.zeros(2, np.int8), [2], byte_offset=2**63))


def test_padded_sub_byte_data_is_a_copy_and_says_so():
    codes = np.array([1, 2, 3, 4], np.uint8)  # int4, one element per byte
    with pytest.raises(nbx.ConversionError, match="must_borrow: padded sub-byte DLPack int4"):
        Tensor.from_dlpack(capsule(codes, [4], bits=4, flags=SUBBYTE_PADDED),
                           dtype=np.dtype(np.int8, metadata={"mgb_dtype": {"name": "QuantizedS4", "scale": 1.0}}),
                           policy="must_borrow")
    t = Tensor.from_dlpack(capsule(codes, [4], bits=4, flags=SUBBYTE_PADDED),
                           dtype=np.dtype(np.int8, metadata={"mgb_dtype": {"name": "QuantizedS4", "scale": 1.0}}))
    assert not t.borrowed
    assert "padded sub-byte" in t.copy_reason
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3, 4])


@pytest.mark.parametrize("code,bits,flags,shown", [(INT, 0, SUBBYTE_PADDED, "0 bits"), (INT, 3, SUBBYTE_PADDED, "int3"),
                                                  (BOOL, 1, SUBBYTE_PADDED, "bool1"), (INT, 2, 0, "int2")])
def test_only_sub_byte_types_with_a_megdnn_dtype_are_read(code, bits, flags, shown):
    with pytest.raises(nbx.DTypeError, match=shown):
        Tensor.from_dlpack(capsule(np.zeros(4, np.uint8), [4], code=code, bits=bits, flags=flags))


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


def test_dlpack_arguments_in_range_still_work():
    t = Tensor.from_numpy(np.arange(3, dtype=np.float32))
    assert t.__dlpack__(max_version=(2**32 - 1, 0), dl_device=(1, 0)) is not None
    with pytest.raises(nbx.DLPackError, match=r"dl_device \(kDLCUDA, 0\)|dl_device"):
        t.__dlpack__(dl_device=(2, 0))
