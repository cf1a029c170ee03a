"""npybridge's pybind11 and nanobind casters, as a user of such a module sees them (examples/binding_example.cpp,
built once per binding library: every test runs against both, or against those NPYBRIDGE_BINDINGS names:
run_pytest.py --bindings=pybind11 for the suite against Debian's pybind11, which builds no nanobind module)."""
import gc
import importlib
import os
import sys

import numpy as np
import pytest

import npybridge_example as nbx
from conftest import mgb_dtype

QS8 = mgb_dtype("int8", "QuantizedS8", 0.25)
BINDINGS = os.environ.get("NPYBRIDGE_BINDINGS", "pybind11,nanobind").split(",")
assert BINDINGS and set(BINDINGS) <= {"pybind11", "nanobind"}, f"NPYBRIDGE_BINDINGS={BINDINGS}: pybind11, nanobind"
MODULES = [importlib.import_module(f"npybridge_{name}_example") for name in BINDINGS]
PYBIND11 = sys.modules.get("npybridge_pybind11_example")


@pytest.fixture(params=MODULES, ids=BINDINGS)
def m(request):
    return request.param


def test_the_binding_libraries_are_the_expected_ones(m):
    library = m.binding_library
    assert library[0] == ("pybind11" if m is PYBIND11 else "nanobind")
    assert library[1:] >= (2, 10) if m is PYBIND11 else library[1:] >= (3, 1)


def test_a_tensor_argument_borrows_the_array(m):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = m.describe(a)
    assert d["dtype"] == "Float32" and d["shape"] == [2, 3] and d["writable"]
    assert d["data_address"] == a.ctypes.data
    borrowed, reason, address = m.borrow_info(a.T)
    assert borrowed and reason == "" and address == a.ctypes.data


def test_a_conversion_says_why_it_copied(m):
    borrowed, reason, _ = m.borrow_info(np.arange(3))  # int64: narrowed to Int32
    assert not borrowed and reason == "dtype: int64 must be narrowed to Int32"
    assert m.describe([1.5, 2.5])["dtype"] == "Float32"  # a list becomes an array first (float64, narrowed)


def test_errors_are_npybridges_classes_with_its_messages(m):
    with pytest.raises(m.ValueRangeError, match=r"value 1099511627776 at index \(1,\) does not fit Int32") as caught:
        m.describe(np.array([1, 2**40]))
    assert isinstance(caught.value, (TypeError, ValueError)) and isinstance(caught.value, m.ConversionError)
    # The same message as the plain module's.
    with pytest.raises(nbx.ValueRangeError) as plain:
        nbx.Tensor.from_numpy(np.array([1, 2**40]))
    assert str(caught.value) == str(plain.value)
    with pytest.raises(m.DTypeError, match="narrowing='reject'"):
        m.reject_narrowing(np.arange(3))
    with pytest.raises(m.MetadataError, match="zero_point 300 is outside"):
        m.quantized("Quantized8Asymm", 0.5, 300)


def test_signatures_name_the_constraints(m):
    # Valid typing in each library's idiom (docs/guide.md, "Stubs"): the scalar type, then the constraints.
    if m.binding_library[0] == "pybind11":
        qs8 = 'typing.Annotated[numpy.typing.NDArray[numpy.int8], "QuantizedS8", "ndim=2"]'
        fill = 'typing.Annotated[numpy.typing.NDArray[numpy.float32], "Float32", "flags.writeable"]'
    else:
        qs8 = "typing.Annotated[numpy.typing.NDArray[numpy.int8], dict(dtype='QuantizedS8', ndim=2)]"
        fill = "typing.Annotated[numpy.typing.NDArray[numpy.float32], dict(dtype='Float32', writable=True)]"
    assert "qs8_scale(arg" in m.qs8_scale.__doc__ and qs8 in m.qs8_scale.__doc__
    assert fill in m.fill.__doc__
    if m.binding_library >= ("pybind11", 3) or m.binding_library[0] == "nanobind":  # takes / gives told apart
        doc = (m.describe.__doc__ + m.dtype_name.__doc__).replace("arg: ", "arg0: ").replace(", /)", ")")
        assert "describe(arg0: numpy.typing.ArrayLike) -> dict" in doc
        assert "dtype_name(arg0: numpy.typing.DTypeLike) -> str" in doc
    else:
        assert "describe(arg0: numpy.typing.NDArray[typing.Any]) -> dict" in m.describe.__doc__
        assert "dtype_name(arg0: numpy.dtype[typing.Any]) -> str" in m.dtype_name.__doc__


def test_inputs_no_overload_can_take_are_declined_with_the_constraints_named(m):
    # What cannot become the argument at all (another ndim, another quantized dtype) is declined on every pass,
    # so the binding library's TypeError lists the constraints; neither library lets a caster learn that no
    # overload took the input, so npybridge's own reason cannot be raised then (see docs/bindings).
    assert m.qs8_scale(np.zeros((2, 2), QS8)) == 0.25
    for declined in (np.zeros((2, 2, 2), QS8), np.zeros((2, 2), np.int8), np.zeros((2, 2)),
                     np.zeros((2, 2), mgb_dtype("int8", "QuantizedS4", 0.5))):
        with pytest.raises(TypeError, match=r"incompatible function arguments(.|\n)*NDArray\[numpy.int8\].*QuantizedS8.*ndim=2"):
            m.qs8_scale(declined)


def test_an_overload_for_another_dtype_gets_its_turn(m):
    # The case: a QuantizedS8 overload first, then Float32: a float64 matrix goes to the second.
    assert m.scale_or_kind(np.zeros((2, 3))) == "Float32"
    assert m.scale_or_kind(np.zeros((2, 3), np.int64)) == "Float32"
    assert m.scale_or_kind(np.zeros((2, 2), QS8)).startswith("QuantizedS8 scale 0.25")
    # Taken by an overload but its values do not fit: npybridge's reason, naming the value.
    with pytest.raises(m.ValueRangeError, match="1e\\+300|1e300|value"):
        m.scale_or_kind(np.full((2, 2), 1e300))


def test_a_quantized_array_is_declined_by_an_overload_of_another_dtype(m):
    asymm = np.zeros((2, 2), mgb_dtype("uint8", "Quantized8Asymm", 0.5, 3))
    assert m.float_or_asymm(asymm) == "Quantized8Asymm zero point 3"
    assert m.float_or_asymm(np.zeros(3, np.float32)) == "Float32"
    assert m.float_or_asymm(np.zeros(3)) == "Float32"  # float64: converted on the second pass
    with pytest.raises(TypeError, match="incompatible function arguments"):
        m.float_or_asymm(np.zeros(3, QS8))  # QuantizedS8 codes: neither overload takes them


def test_borrow_only_arguments_share_or_fail(m):
    a = np.ones(4, np.float32)
    assert m.must_borrow_f32(a) == a.ctypes.data
    with pytest.raises(m.ConversionError, match="must_borrow: .*byte order"):
        m.must_borrow_f32(a.astype(">f4"))
    with pytest.raises(m.ConversionError, match="must_borrow: .*the array is Int8, the tensor wants Float32"):
        m.must_borrow_f32(np.ones(4, np.int8))


def test_writable_borrows_write_through_and_refuse_read_only_arrays(m):
    a = np.zeros(8, np.float32)
    m.fill(a[::2], 2.5)
    assert a.tolist() == [2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0]
    a.flags.writeable = False
    with pytest.raises(m.ConversionError, match="read-only"):
        m.fill(a, 1.0)
    assert a.tolist() == [2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0]
    # Memory Python holds read-only: an immutable bytes object, through np.frombuffer and through a memoryview.
    data = np.arange(4, dtype=np.float32).tobytes()
    for view in (np.frombuffer(data, np.float32), np.asarray(memoryview(data).cast("f"))):
        with pytest.raises(m.ConversionError, match="read-only"):
            m.fill(view, 7.0)
        assert m.must_borrow_f32(view) == view.ctypes.data  # borrowed to read: npybridge's tensor marks it
    assert data == np.arange(4, dtype=np.float32).tobytes()


def test_overloads_pick_by_dtype(m):
    assert m.kind(np.zeros(2, np.float32)) == "Float32"
    assert m.kind(np.zeros(2, np.int8)) == "Int8"
    assert m.kind("text") == "str: text"
    # No overload borrows int16: the second pass converts into the first that accepts it.
    assert m.kind(np.zeros(2, np.int16)) == "Float32"
    # An ndarray that no overload can take (strings): declined, the library's message lists the constraints.
    with pytest.raises(TypeError, match=r"incompatible function arguments(.|\n)*NDArray\[numpy.float32\]"):
        m.kind(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="incompatible function arguments"):
        m.kind({})  # not an array nor anything NumPy makes a usable one of: the binding library's own message


def test_a_packed_constraint_packs(m):
    assert m.pack_intb4(np.array([-15, 1, 15], np.int8)) == b"\x80\x0f"
    with pytest.raises(m.ValueRangeError, match="IntB4: value 2 at index \\(1,\\) is not valid"):
        m.pack_intb4(np.array([1, 2], np.int8))


def test_results_share_memory_and_keep_it_alive(m):
    z = m.zeros(np.dtype("float32"), [2, 3])
    assert z.shape == (2, 3) and not z.any() and type(z.base).__name__ == "owner"
    a = np.arange(4, dtype=np.float32)
    same = m.identity(a)
    assert same.ctypes.data == a.ctypes.data and same.base is a
    quantized = m.identity(np.zeros(3, QS8))
    assert quantized.dtype.metadata["mgb_dtype"] == {"name": "QuantizedS8", "scale": 0.25}


def test_return_value_policies_of_a_member(m):
    a = np.arange(6, dtype=np.float32)
    h = m.Holder(a)
    view = h.view()  # reference_internal: shares the tensor's memory
    copy = h.copy()  # copy: its own memory
    assert view.ctypes.data == a.ctypes.data and copy.ctypes.data != a.ctypes.data
    del h
    gc.collect()
    assert view.tolist() == a.tolist()  # the owner keeps the memory alive without the holder


def test_dtypes_both_ways(m):
    assert m.dtype_name(np.dtype("float32")) == "Float32"
    assert m.dtype_name("IntB4") == "IntB4"
    assert m.dtype_name(QS8) == "QuantizedS8(scale=0.25)"
    q = m.quantized("Quantized8Asymm", 0.5, 128)
    assert q == np.uint8 and q.metadata["mgb_dtype"] == {"name": "Quantized8Asymm", "scale": 0.5, "zero_point": 128}
    with pytest.raises(m.DTypeError, match="int64"):
        m.dtype_name(np.dtype("int64"))  # no dtype of its own
    with pytest.raises(TypeError, match="incompatible function arguments"):
        m.dtype_name(3.5)


def test_no_reference_is_leaked(m):
    a = np.arange(6, dtype=np.float32)
    before = sys.getrefcount(a)
    for _ in range(100):
        m.describe(a)
        m.borrow_info(a)
        m.identity(a)
        with pytest.raises(TypeError):
            m.qs8_scale(a)  # ndim 1 and Float32: declined
    assert sys.getrefcount(a) == before
    z = m.zeros(np.dtype("int8"), [3])
    owner = z.base
    held = sys.getrefcount(owner)
    del z
    assert sys.getrefcount(owner) == held - 1  # the array was the owner's only other holder


def public_names(namespace):
    return {name for name in dir(namespace) if not name.startswith("_") or name in ("__dlpack__", "__dlpack_device__")}


# What only the caster modules have: the casters' own demonstrations (not part of npybridge_example's API).
CASTER_DEMOS = {"binding_library", "describe", "borrow_info", "qs8_scale", "must_borrow_f32", "fill", "reject_narrowing",
                "pack_intb4", "kind", "scale_or_kind", "float_or_asymm", "zeros", "identity", "dtype_name", "quantized", "Holder"}


def test_the_caster_modules_expose_the_whole_api_of_the_plain_module(m):
    assert public_names(m) - CASTER_DEMOS == public_names(nbx)
    for name in ("Tensor", "OriginTracker", "TrackerScope"):
        assert public_names(getattr(m, name)) == public_names(getattr(nbx, name)), name
    for name in ("Error", "ConversionError", "DTypeError", "MetadataError", "ValueRangeError", "DLPackError"):
        assert [c.__name__ for c in getattr(m, name).__mro__] == [c.__name__ for c in getattr(nbx, name).__mro__]
    # The user dtypes are the same NumPy types, whichever module registered them first.
    assert m.bfloat16 is nbx.bfloat16 and m.intb4 is nbx.intb4
    assert m.register_user_dtypes() == nbx.register_user_dtypes()
