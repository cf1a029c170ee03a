"""Hostile input: crashes, silent wrong values and unclear errors that must not happen."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import BINDING, EXAMPLE_MODULE, mgb_dtype, nbx

T = nbx.Tensor
NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def run_python(code, timeout=60):
    """Runs code in a fresh interpreter that can import the example module."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(nbx.__file__))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=timeout)


# ---- Interpreter exit while a daemon thread converts -------------------------------------------

@pytest.mark.parametrize("work", [
    "nbx.Tensor.from_numpy(big)",
    "nbx.Tensor.from_numpy(big, policy='copy')",
    "packed.numpy()",
    "nbx.Tensor.from_numpy(big.T, dtype='Float32')",
])
def test_exit_while_a_daemon_thread_converts_is_clean(work):
    if BINDING == "nanobind" and sys.version_info < (3, 14):
        pytest.skip("nanobind's dispatcher catches (...) and so swallows glibc's forced unwind of a thread that "
                    "Python ends at exit (nanobind issue #890): the process aborts inside nanobind, whatever the "
                    "function does; Python 3.14 no longer unwinds such threads")
    # The thread is ended by the interpreter while it takes the GIL back after a
    # long copy; that must pass through npybridge's frames to the thread's start.
    result = run_python(f"""
        import threading, time
        import numpy as np
        import {EXAMPLE_MODULE} as nbx
        big = np.ones((1024, 1024 * 8))
        packed = nbx.Tensor.from_numpy(np.ones(8 << 20, np.int8), dtype="IntB4")
        def loop():
            while True:
                {work}
        threading.Thread(target=loop, daemon=True).start()
        time.sleep(0.3)
        print("main done")
    """)
    assert result.returncode == 0, result.stderr
    assert "main done" in result.stdout
    assert "terminate" not in result.stderr and "FATAL" not in result.stderr


# ---- Metadata read while Python code changes it ------------------------------------------------

def test_a_scale_whose_float_deletes_it_raises_its_own_error():
    class Evil(int):
        def __float__(self):
            del fields["scale"]
            raise ArithmeticError("from __float__")

    fields = {"name": "QuantizedS8", "scale": Evil(1)}
    dtype = np.dtype("i1", metadata={"mgb_dtype": fields})
    with pytest.raises(ArithmeticError, match="from __float__"):
        T.from_numpy(np.zeros(2, dtype))
    # Under PYTHONMALLOC=debug a use of the freed scale crashes: run it there too.
    result = run_python(f"""
        import numpy as np, {EXAMPLE_MODULE} as nbx
        class Evil(int):
            def __float__(self):
                del fields["scale"]; raise ValueError("mine")
        fields = {{"name": "QuantizedS8", "scale": Evil(1)}}
        try:
            nbx.Tensor.from_numpy(np.zeros(2, np.dtype("i1", metadata={{"mgb_dtype": fields}})))
        except ValueError as e:
            print("raised", e)
    """)
    assert result.returncode == 0, result.stderr
    assert "raised mine" in result.stdout


def test_a_scale_whose_float_raises_keeps_its_exception():
    class Refuses(int):
        def __float__(self):
            raise ZeroDivisionError("no float for you")

    with pytest.raises(ZeroDivisionError, match="no float for you"):
        T.from_numpy(np.zeros(2, mgb_dtype("i1", "QuantizedS8", Refuses(1))))


def test_a_zero_point_whose_index_raises_keeps_its_exception():
    fields = {"name": "Quantized8Asymm", "scale": 0.5}

    class Refuses(np.int64):
        def __index__(self):
            del fields["zero_point"]
            raise LookupError("no index")

    fields["zero_point"] = Refuses(3)
    with pytest.raises(LookupError, match="no index"):
        T.from_numpy(np.zeros(2, np.dtype("u1", metadata={"mgb_dtype": fields})))


def test_a_zero_point_out_of_range_is_still_named():
    with pytest.raises(nbx.MetadataError, match="zero_point 256 is outside|zero_point"):
        T.from_numpy(np.zeros(2, mgb_dtype("u1", "Quantized8Asymm", 0.5, 256)))
    with pytest.raises(nbx.MetadataError, match="zero_point .* is outside"):
        T.from_numpy(np.zeros(2, mgb_dtype("u1", "Quantized8Asymm", 0.5, 2**70)))


# ---- Requantizing and dropping quantization parameters -----------------------------------------

@pytest.mark.parametrize("source, target", [
    (("i1", "QuantizedS8", 0.5, None), ("i1", "QuantizedS4", 0.25, None)),
    (("i1", "QuantizedS8", 0.5, None), ("i1", "QuantizedS4", 0.5, None)),
    (("u1", "Quantized8Asymm", 0.5, 128), ("u1", "Quantized4Asymm", 0.5, 3)),
    (("i1", "QuantizedS8", 0.5, None), ("i1", "QuantizedS8", 0.25, None)),
])
def test_requantizing_is_refused_packed_or_not(source, target):
    base, name, scale, zp = source
    codes = np.array([1, 2, 3], base).view(mgb_dtype(base, name, scale, zp))
    with pytest.raises(nbx.DTypeError, match="requantizing is not supported") as caught:
        T.from_numpy(codes, dtype=mgb_dtype(*target))
    assert name in str(caught.value) and target[1] in str(caught.value)


@pytest.mark.parametrize("target", ["IntB4", "IntB2", "Int8", "Int32", "Float32"])
def test_quantized_codes_do_not_silently_lose_their_scale(target):
    codes = np.array([1, 3, -3], np.int8).view(mgb_dtype("i1", "QuantizedS8", 0.5))
    with pytest.raises(nbx.DTypeError, match="would drop the quantization parameters") as caught:
        T.from_numpy(codes, dtype=target)
    assert "QuantizedS8(scale=0.5)" in str(caught.value) and target in str(caught.value)
    # The raw codes are one view away, as the message says.
    assert T.from_numpy(codes.view(np.int8), dtype=target).numpy().tolist() == [1, 3, -3]


def test_copy_into_a_packed_tensor_refuses_other_quantized_codes():
    destination = T.from_storage(b"\0\0", "QuantizedS4", (3,), scale=0.25)
    codes = np.array([1, 2, -3], np.int8).view(mgb_dtype("i1", "QuantizedS8", 0.5))
    with pytest.raises(nbx.DTypeError, match="requantizing"):
        destination.copy_from(codes)
    assert destination.storage() == b"\0\0"


# ---- Integers that would wrap ------------------------------------------------------------------

@pytest.mark.parametrize("target", ["IntB4", "IntB1", "QuantizedS4"])
@pytest.mark.parametrize("value, numpy_type", [
    (2**64 - 1, np.uint64), (2**63, np.uint64), (2**32 + 1, np.uint64), (-(2**63), np.int64), (255, np.uint8),
    (2**31 + 1, np.uint32),
])
def test_wide_integers_never_wrap_into_low_bit_codes(target, value, numpy_type):
    values = np.array([1, value], numpy_type)
    kwargs = {"scale": 1.0} if target.startswith("Quantized") else {}
    with pytest.raises(nbx.ValueRangeError, match=f"value {value} at index \\(1,\\)"):
        T.from_numpy(values, dtype=target, **kwargs) if not kwargs else \
            T.from_numpy(values, dtype=mgb_dtype("i1", target, 1.0))


def test_uint64_values_that_fit_still_pack():
    assert T.from_numpy(np.array([1, 3, 2**0], np.uint64), dtype="IntB4").numpy().tolist() == [1, 3, 1]


# ---- A narrower requested dtype: checked checks, reject refuses --------------------------------

NARROWER = [
    (np.array([2**40, 300]), "Int8", "1099511627776", "(0,)"),
    (np.array([5, 300]), "Int8", "300", "(1,)"),
    (np.array([5, 70000], np.int32), "Int16", "70000", "(1,)"),
    (np.array([5, -1], np.int16), "Uint8", "-1", "(1,)"),
    (np.array([5, 2**64 - 1], np.uint64), "Int32", "18446744073709551615", "(1,)"),
    (np.array([5, 65536], np.uint32), "Uint16", "65536", "(1,)"),
    (np.array([1.0, 1e39]), "Float16", "1e+39", "(1,)"),
    (np.array([1.0, 70000.0], np.float32), "Float16", "70000", "(1,)"),
    (np.array([1.0, 1e39]), "BFloat16", "1e+39", "(1,)"),
    (np.array([[1, 2], [3, 100000]]), "Float16", "100000", "(1, 1)"),
    (np.array([1 + 1j, 1e39 + 0j]), "Complex64", "(1e+39+0j)", "(1,)"),
]


@pytest.mark.parametrize("values, target, shown, index", NARROWER)
def test_checked_names_every_value_that_does_not_fit_a_narrower_dtype(values, target, shown, index):
    with pytest.raises(nbx.ValueRangeError) as caught:
        T.from_numpy(values, dtype=target, narrowing="checked")
    message = str(caught.value)
    assert f"value {shown} at index {index}" in message and target in message


def test_checked_keeps_values_that_round_but_stay_finite():
    # 65519 rounds to float16's largest value 65504; 65520 would be infinite.
    assert T.from_numpy(np.array([65519.0]), dtype="Float16").numpy().tolist() == [65504.0]
    with pytest.raises(nbx.ValueRangeError, match="65520"):
        T.from_numpy(np.array([65520.0]), dtype="Float16")
    with pytest.raises(nbx.ValueRangeError, match="65520"):
        T.from_numpy(np.array([3, 65520]), dtype="Float16")
    # Non-finite values are values too, and NaN stays NaN.
    out = T.from_numpy(np.array([np.inf, -np.inf, np.nan]), dtype="Float16").numpy()
    assert np.isinf(out[:2]).all() and np.isnan(out[2])
    assert T.from_numpy(np.array([-128, 127]), dtype="Int8").numpy().tolist() == [-128, 127]


@pytest.mark.parametrize("values, target, shown, index", NARROWER)
def test_reject_refuses_every_cast_that_can_lose_values(values, target, shown, index):
    with pytest.raises(nbx.DTypeError, match="narrowing='reject' allows no cast that can lose values"):
        T.from_numpy(values, dtype=target, narrowing="reject")
    # Even when this array's values would fit.
    with pytest.raises(nbx.DTypeError, match=target):
        T.from_numpy(values[:1], dtype=target, narrowing="reject")


def test_reject_takes_casts_that_lose_nothing():
    assert T.from_numpy(np.array([1, -2], np.int8), dtype="Int32", narrowing="reject").numpy().tolist() == [1, -2]
    assert T.from_numpy(np.array([1.5], np.float16), dtype="Float32", narrowing="reject").numpy().tolist() == [1.5]


@pytest.mark.parametrize("values, target, shown, index", NARROWER)
def test_wrap_casts_anyway(values, target, shown, index):
    with np.errstate(all="ignore"):
        T.from_numpy(values, dtype=target, narrowing="wrap")


def test_a_bad_value_leaves_nothing_behind_in_copy_from():
    destination = T.from_numpy(np.zeros(3, np.int32))
    with pytest.raises(nbx.ValueRangeError, match=r"value 1099511627776 at index \(2,\)"):
        destination.copy_from(np.array([1, 2, 2**40]))
    assert destination.numpy().tolist() == [0, 0, 0]
    destination.copy_from(np.array([1, 2, 3]))
    assert destination.numpy().tolist() == [1, 2, 3]


# ---- only numbers become tensors, in every narrowing mode -------------------------------------------

@pytest.mark.parametrize("values,shown", [(np.array(["1.5", "x"]), "numpy <U3 array"),
                                          (np.array([1.5, "x"], dtype=object), "numpy object array")])
@pytest.mark.parametrize("narrowing", ["checked", "wrap", "reject"])
def test_strings_and_objects_are_refused_naming_the_input(values, shown, narrowing):
    with pytest.raises(nbx.DTypeError, match="expected an array of numbers, got a " + shown) as caught:
        T.from_numpy(values, dtype="Float32", narrowing=narrowing)
    assert "no Python error pending" not in str(caught.value)


# ---- Sizes that overflow, zero-size tensors ----------------------------------------------------

@pytest.mark.parametrize("dtype_name, shape", [
    ("Float32", (2**32, 2**32)), ("Float32", (2**62 + 1,)), ("Int8", (2**40, 2**40, 2**40)),
    ("IntB1", (2**62, 2)), ("QuantizedS4", (2**61, 2**3)),
])
def test_shapes_beyond_memory_are_refused_before_any_size_is_computed(dtype_name, shape):
    kwargs = {"scale": 1.0} if dtype_name.startswith("Quantized") else {}
    with pytest.raises(nbx.ConversionError, match="spans more elements than memory can hold") as caught:
        T.from_storage(b"", dtype_name, shape, **kwargs)
    assert str(shape[0]) in str(caught.value)


def test_a_wrong_storage_size_is_refused_before_allocating():
    # 64 GiB would be allocated first (a bare MemoryError) if the size were not checked first.
    with pytest.raises(nbx.ConversionError, match=r"Int8 of shape \(68719476736,\) takes 68719476736 bytes, got 0"):
        T.from_storage(b"", "Int8", (2**36,))


@pytest.mark.parametrize("dtype_name", ["IntB1", "IntB2", "IntB4", "Int8", "Float32"])
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5), (2, 0, 3)])
def test_zero_size_tensors_come_back(dtype_name, shape):
    t = T.from_numpy(np.zeros(shape, np.int8), dtype=dtype_name)
    assert t.numpy().shape == shape
    assert t.storage() == b""
    quantized = T.from_numpy(np.zeros(shape, mgb_dtype("i1", "QuantizedS4", 0.5)))
    assert quantized.numpy().shape == shape and quantized.numpy().dtype.metadata["mgb_dtype"]["scale"] == 0.5


@pytest.mark.parametrize("shape", [(0,), (3, 0)])
def test_zero_size_byte_storage(shape):
    assert T.from_storage(b"", "Byte", shape).storage() == b""


# ---- One validation for names and params -------------------------------------------------------

def test_names_with_a_nul_inside_are_not_cut_short():
    with pytest.raises(nbx.DTypeError, match=r"Float32\\x00junk"):
        T.from_storage(b"\0" * 4, "Float32\x00junk", (1,))
    with pytest.raises(nbx.DTypeError, match=r"Float32\\x00junk"):
        T.from_numpy(np.zeros(1, np.float32), dtype="Float32\x00junk")
    with pytest.raises(nbx.MetadataError, match=r"QuantizedS8\\x00junk"):
        T.from_numpy(np.zeros(1, mgb_dtype("i1", "QuantizedS8\x00junk", 1.0)))
    with pytest.raises(nbx.MetadataError, match=r"unexpected key 'scale\\x00'"):
        T.from_numpy(np.zeros(1, np.dtype("i1", metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 1.0,
                                                                          "scale\x00": 2.0}})))


def test_a_scale_that_underflows_float32_says_so():
    for make in (lambda: T.from_storage(b"\1", "QuantizedS8", (1,), scale=1e-50),
                 lambda: T.from_numpy(np.zeros(1, mgb_dtype("i1", "QuantizedS8", 1e-50)))):
        with pytest.raises(nbx.MetadataError, match="scale 1e-50 is too small for a float32 .*rounds to 0"):
            make()
    with pytest.raises(nbx.MetadataError, match="scale 0 must be > 0"):
        T.from_storage(b"\1", "QuantizedS8", (1,), scale=0.0)


@pytest.mark.parametrize("scale, zero_point, culprit", [
    (True, None, "scale must be a real number, got True"),
    ("0.5", None, "scale must be a real number, got '0.5'"),
    (0.5, True, "zero_point must be an integer, got True"),
    (0.5, 3.0, "zero_point must be an integer, got 3.0"),
    (0.5, 256, "zero_point 256 is outside"),
    (float("nan"), None, "scale nan is not finite"),
])
def test_from_storage_validates_params_as_metadata_does(scale, zero_point, culprit):
    from decimal import Decimal
    name = "Quantized8Asymm" if zero_point is not None else "QuantizedS8"
    with pytest.raises(nbx.MetadataError) as from_storage:
        T.from_storage(b"\1", name, (1,), scale=scale, zero_point=zero_point)
    fields = {"name": name, "scale": scale} if zero_point is None else {"name": name, "scale": scale, "zero_point": zero_point}
    with pytest.raises(nbx.MetadataError) as from_metadata:
        T.from_numpy(np.zeros(1, np.dtype("u1" if zero_point is not None else "i1", metadata={"mgb_dtype": fields})))
    assert culprit in str(from_storage.value) and culprit in str(from_metadata.value)
    with pytest.raises(nbx.MetadataError, match="scale must be a real number, got Decimal"):
        T.from_storage(b"\1", "QuantizedS8", (1,), scale=Decimal("0.5"))


# ---- Cached dtype objects ----------------------------------------------------------------------

def test_changing_a_handed_out_dtypes_metadata_does_not_reach_later_tensors():
    made = T.from_storage(b"\1", "QuantizedS8", (1,), scale=0.25).numpy().dtype
    made.metadata["mgb_dtype"]["scale"] = 99
    later = T.from_storage(b"\1", "QuantizedS8", (1,), scale=0.25).numpy().dtype
    assert later.metadata["mgb_dtype"] == {"name": "QuantizedS8", "scale": 0.25}
    assert T.from_storage(b"\1", "QuantizedS8", (1,), scale=0.25).scale == 0.25


def test_a_dtype_whose_metadata_changed_is_read_again():
    fields = {"name": "QuantizedS8", "scale": 1.0}
    array = np.zeros(2, np.dtype("i1", metadata={"mgb_dtype": fields}))
    assert T.from_numpy(array).scale == 1.0
    fields["scale"] = 2.0
    assert T.from_numpy(array).scale == 2.0
    fields["name"] = "QuantizedS16"
    with pytest.raises(nbx.MetadataError, match="QuantizedS16 is stored as numpy int16, not as numpy int8"):
        T.from_numpy(array)
    fields["name"] = "QuantizedS8"
    fields["zero_point"] = 3
    with pytest.raises(nbx.MetadataError, match="unexpected key 'zero_point'"):
        T.from_numpy(array)
    del fields["zero_point"]
    assert T.from_numpy(array).scale == 2.0


# ---- Reference cycles are collected ------------------------------------------------------------

class Holder(np.ndarray):
    pass


def collected(make):
    """Makes a cycle, drops it, and tells whether the garbage collector freed it."""
    import gc
    import weakref
    ref = weakref.ref(make())
    gc.collect()
    return ref() is None


def test_an_array_holding_its_own_tensor_is_collected():
    def make():
        a = np.arange(3, dtype=np.float32).view(Holder)
        a.t = T.from_numpy(a)
        assert a.t.borrowed
        return a
    assert collected(make)


def test_a_tensor_shared_with_numpy_arrays_still_holds_its_array():
    # Only the sole holder of an owner reports its reference: a copy held
    # elsewhere keeps the array alive, so the collector must not free it.
    import gc
    a = np.arange(4, dtype=np.float32).view(Holder)
    t = T.from_numpy(a)
    view = t.numpy()
    a.t = t
    del a, t
    gc.collect()
    assert view.tolist() == [0, 1, 2, 3]


class Tag:
    pass


def test_a_tag_that_refers_to_its_tracker_is_collected():
    def make():
        tracker = nbx.OriginTracker()
        tag = Tag()
        tag.tracker = tracker
        with tracker.scope(tag):
            tracker.create()
        return tag  # held by the tracker, which the tag holds
    assert collected(make)


def test_a_scope_on_a_frame_lets_the_frame_go():
    def make():
        tracker = nbx.OriginTracker()
        marker = Tag()  # lives as long as this frame's locals
        scope = tracker.scope(sys._getframe())  # the frame holds the scope, the scope the frame
        assert scope is not None
        return marker
    assert collected(make)


def test_a_scope_held_outside_a_cycle_keeps_working():
    import gc

    tracker = nbx.OriginTracker()
    tag = Tag()
    tag.scope = tracker.scope(tag)
    survivor = []
    tag.keep = survivor
    scope = tag.scope
    del tag
    gc.collect()  # the scope is still alive (held here): nothing is cleared
    with scope:
        tracker.create()
    assert tracker.tagged() == 1


# ---- One exception object re-raised through C++ many times --------------------------------------

def test_reraising_one_exception_does_not_format_its_traceback(monkeypatch):
    import traceback
    formatted = []
    real = traceback.format_exception

    def counting(*args, **kwargs):
        formatted.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(traceback, "format_exception", counting)
    error = ValueError("the same one")

    def raise_it():
        raise error

    for _ in range(200):
        with pytest.raises(ValueError) as caught:
            nbx.call(raise_it)
        assert caught.value is error
    assert formatted == []  # formatted on every pass, 200 passes take seconds (quadratic)


# ---- User dtypes: casts, float behaviour, registration -----------------------------------------

INTB = [nbx.intb1, nbx.intb2, nbx.intb4]


@pytest.mark.parametrize("dtype", INTB + [nbx.bfloat16])
@pytest.mark.parametrize("integer", [np.longlong, np.ulonglong, np.int64, np.uint64, np.intc])
def test_user_dtypes_cast_to_and_from_every_integer_type(dtype, integer):
    valid = [1, 1] if dtype is nbx.intb1 else [1, 3]
    values = np.array(valid, integer)
    there = values.astype(dtype)
    assert there.astype(integer).tolist() == valid
    assert np.array(valid, np.int8).astype(dtype).astype(integer).dtype == np.dtype(integer)


def test_intb_cast_errors_do_not_name_a_wrong_index():
    x = np.ones(40, np.int64)
    x[15] = 2
    with pytest.raises(ValueError) as caught:
        x[1::2].astype(nbx.intb2)
    assert "cannot hold 2" in str(caught.value) and "index 0" not in str(caught.value)
    # npybridge's own conversion knows the index, in the view's coordinates.
    with pytest.raises(nbx.ValueRangeError, match=r"value 2 at index \(7,\)"):
        T.from_numpy(x[1::2], dtype="IntB2")
    y = np.ones((4, 4), np.int64)
    y[1, 2] = 2
    with pytest.raises(nbx.ValueRangeError, match=r"value 2 at index \(2, 1\)"):
        T.from_numpy(y.T, dtype="IntB4")


OURS = not nbx.register_user_dtypes()["bfloat16_from_ml_dtypes"]
FLOATS = np.array([3, np.nan, -np.inf, -1, 0, np.inf, 3, 2.5, np.nan], np.float32)


@pytest.mark.skipif(not OURS, reason="bfloat16 here is ml_dtypes' (npybridge's own is used without ml_dtypes)")
def test_npybridge_bfloat16_orders_and_finds_like_float16():
    ours, half = FLOATS.astype(nbx.bfloat16), FLOATS.astype(np.float16)
    np.testing.assert_array_equal(np.sort(ours).astype(np.float32), np.sort(half).astype(np.float32))
    # One NaN: numpy collapses repeated NaNs only for its own float kinds (a user dtype's kind is 'V').
    one_nan = FLOATS[:-1]
    np.testing.assert_array_equal(np.unique(one_nan.astype(nbx.bfloat16)).astype(np.float32),
                                  np.unique(one_nan.astype(np.float16)).astype(np.float32))
    assert np.argmin(ours) == np.argmin(half) and np.argmax(ours) == np.argmax(half)
    finite = ours[np.isfinite(FLOATS)]
    assert np.argmin(finite) == np.argmin(FLOATS[np.isfinite(FLOATS)].astype(np.float16))
    assert np.nonzero(ours)[0].tolist() == np.nonzero(half)[0].tolist()


@pytest.mark.skipif(not OURS, reason="bfloat16 here is ml_dtypes'")
def test_npybridge_bfloat16_byteswaps():
    values = np.array([1.5, -2.0, 3.0], np.float32).astype(nbx.bfloat16)
    bits = values.view(np.uint16)
    assert values.byteswap().view(np.uint16).tolist() == bits.byteswap().tolist()
    swapped = values.copy()
    swapped.byteswap(inplace=True)
    assert swapped.view(np.uint16).tolist() == bits.byteswap().tolist()
    assert values.newbyteorder().byteswap().astype(np.float32).tolist() == [1.5, -2.0, 3.0] if not NUMPY2 else True


@pytest.mark.skipif(not OURS, reason="bfloat16 here is ml_dtypes'")
@pytest.mark.skipif(not __import__("platform").machine() in ("x86_64", "AMD64"), reason="out-of-range casts are x86-64's")
@pytest.mark.parametrize("integer", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                                     np.longlong, np.ulonglong, np.bool_])
def test_npybridge_bfloat16_casts_to_integers_as_float32_does(integer):
    values = np.array([3e38, -3e38, 1e10, -1e10, np.nan, np.inf, -np.inf, 300.5, -1.5, 65536, 1e19, -1e19, 4e9, 0.5],
                      np.float32).astype(nbx.bfloat16)
    with np.errstate(all="ignore"):
        expected = values.astype(np.float32).astype(integer)
    assert values.astype(integer).tolist() == expected.tolist()


@pytest.mark.parametrize("order", ["example first", "registry removed"])
def test_registration_survives_a_removed_registry_module(order):
    result = run_python(f"""
        import sys
        import numpy as np
        import {EXAMPLE_MODULE} as nbx
        before = nbx.register_user_dtypes()
        old = np.array([1, 3], np.int8).astype(nbx.intb4)
        del sys.modules["_npybridge_user_dtypes"]
        after = nbx.register_user_dtypes()
        assert after == before, (before, after)
        assert "_npybridge_user_dtypes" in sys.modules
        assert nbx.Tensor.from_numpy(old).dtype_name == "IntB4"
        print("same types")
    """)
    assert result.returncode == 0, result.stderr
    assert "same types" in result.stdout
