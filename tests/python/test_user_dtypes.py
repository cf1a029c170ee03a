"""NumPy user dtypes bfloat16 and intb1/2/4 (docs/dtypes.md), and tensors of them."""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import exact, EXAMPLE_MODULE, nbx, run_python


bf16 = nbx.bfloat16


try:
    import ml_dtypes
except ImportError:  # the NumPy 1 venv has no ml_dtypes (0.6 needs NumPy 2)
    ml_dtypes = None


SAME_NAME_OTHER_SIZE = """
import ml_dtypes, numpy as np
fake = ml_dtypes.float8_e4m3fn
fake.__name__ = "bfloat16"  # now ml_dtypes.bfloat16 by module and name, but one byte per item
assert (fake.__module__, np.dtype(fake).itemsize) == ("ml_dtypes", 1)
import {module} as nbx
real = nbx.Tensor.from_numpy(np.array([1.5], dtype=ml_dtypes.bfloat16))
assert real.dtype_name == "BFloat16" and real.borrowed
try:
    nbx.Tensor.from_numpy(np.zeros(3, dtype=fake))
except nbx.DTypeError as e:
    print("refused:", e)
"""


@pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes (NumPy 2 venvs)")
def test_a_user_dtype_named_like_a_known_one_but_of_another_item_size_is_refused():
    # Other libraries' types are recognized by scalar type module, name and item size: the size keeps a
    # look-alike from being read as two-byte bfloat16. Fresh interpreter: the rename is process-wide.
    env = dict(os.environ, PYTHONPATH=os.path.dirname(nbx.__file__))
    code = textwrap.dedent(SAME_NAME_OTHER_SIZE).format(module=EXAMPLE_MODULE)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "refused:" in result.stdout and "has no MegBrain dtype" in result.stdout, result.stdout
    assert "bfloat16" in result.stdout.split("refused:")[1], result.stdout


def test_registering_again_is_a_no_op():
    first = nbx.register_user_dtypes()
    second = nbx.register_user_dtypes()
    assert first == second
    assert np.dtype(nbx.intb4).num == first["intb4"]
    assert sys.modules["_npybridge_user_dtypes"].intb2 is nbx.intb2


def test_ml_dtypes_bfloat16_is_reused_when_installed():
    info = nbx.register_user_dtypes()
    if ml_dtypes is None:
        assert not info["bfloat16_from_ml_dtypes"]
        assert bf16.__name__ == "bfloat16"
    else:
        assert info["bfloat16_from_ml_dtypes"]
        assert bf16 is ml_dtypes.bfloat16


# Vectors: bf16 is the top half of a float32 rounded to nearest even (MegDNN / ml_dtypes).
# 0.13425 -> 0x3E09 = 0.1337890625; -9.34673 -> 0xC116 = -9.375;
# 2.3515625 is halfway between 2.34375 (0x4016, even) and 2.359375 (0x4017).
@pytest.mark.parametrize("value, expected", [
    (0.13425, 0.1337890625),
    (-9.34673, -9.375),
    (2.3515625, 2.34375),
    (2.359375, 2.359375),
    (1.0, 1.0),
    (-0.0, -0.0),
    (3.3895313892515355e38, 3.3895313892515355e38),
])
def test_bfloat16_rounds_to_nearest_even(value, expected):
    a = np.array([value], dtype=np.float32).astype(bf16)
    assert a.astype(np.float32)[0] == np.float32(expected)
    assert float(np.array([value], dtype=bf16)[0]) == expected


def test_bfloat16_keeps_nan_and_infinities():
    a = np.array([np.nan, np.inf, -np.inf], dtype=np.float32).astype(bf16).astype(np.float32)
    assert np.isnan(a[0]) and a[1] == np.inf and a[2] == -np.inf


def test_bfloat16_arrays_behave_like_arrays():
    a = np.array([1.5, -2.0, 0.25], dtype=bf16)
    assert a.dtype.itemsize == 2
    assert a[1] == -2.0 and float(a[2]) == 0.25
    assert (a == np.array([1.5, -2.0, 0.25], dtype=bf16)).all()
    assert a.tolist() == [1.5, -2.0, 0.25]
    assert (pickle.loads(pickle.dumps(a)) == a).all()
    for target in (np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64):
        reference = np.array([1.5, -2.0, 0.25])
        if np.dtype(target).kind == "u":
            # C leaves a negative float into an unsigned type to the machine, and so NumPy does: 254 on x86-64, 0 on
            # AArch64. npybridge's casts give x86-64's answer on every machine, the integer's low bits.
            reference = reference.astype(np.int64)
        np.testing.assert_array_equal(a.astype(target), reference.astype(target))
    np.testing.assert_array_equal(np.arange(4, dtype=np.int16).astype(bf16).astype(np.float32), [0, 1, 2, 3])
    np.testing.assert_array_equal(np.array([0.5], dtype=np.float16).astype(bf16).astype(np.float32), [0.5])


def megengine_intb_arange(start, step, count, bits):
    """MegEngine's intbN fill: each value adds the step to the last, and one past either end of [-top, top]
    becomes the other end."""
    top = 2**bits - 1
    values = [start, start + step]
    while len(values) < count:
        value = values[-1] + step
        values.append(-top if value > top else top if value < -top else value)
    return values[:count]


@pytest.mark.parametrize("bits, dtype", [(1, nbx.intb1), (2, nbx.intb2), (4, nbx.intb4)])
def test_intb_arange_continues_as_megengines_fill_for_every_start_and_step(bits, dtype):
    top = 2**bits - 1
    valid = range(-top, top + 1, 2)
    assert np.arange(1, 20, 6, dtype=nbx.intb4).tolist() == [1, 7, 13, -15]
    assert np.arange(-1, 12, 4, dtype=nbx.intb2).tolist() == [-1, 3, -3, 1]
    for start in valid:
        for second in valid:
            step = second - start
            if step == 0:
                continue
            count = 3 * (top + 1)
            stop = start + step * count
            got = np.arange(start, stop, step, dtype=dtype).tolist()
            assert got == megengine_intb_arange(start, step, count, bits), (start, step)


@pytest.mark.parametrize("bits, dtype", [(1, nbx.intb1), (2, nbx.intb2), (4, nbx.intb4)])
def test_intb_round_trips_every_valid_value(bits, dtype):
    m = 2**bits - 1
    values = list(range(-m, m + 2, 2))
    a = np.array(values, dtype=dtype)
    assert a.dtype.itemsize == 1
    assert a.tolist() == values
    for target in (np.int8, np.int16, np.int32, np.int64, np.float32, np.float64):
        np.testing.assert_array_equal(a.astype(target), np.array(values, dtype=target))
    np.testing.assert_array_equal(np.array(values, dtype=np.int64).astype(dtype).astype(np.int8), values)
    assert (pickle.loads(pickle.dumps(a)) == a).all()
    assert (a == a).all() and a[0] == -m and repr(a[-1]) == str(m)


@pytest.mark.parametrize("dtype", [nbx.intb1, nbx.intb2, nbx.intb4])
def test_any_nonzero_bool_byte_is_true(dtype):
    # NumPy reads a bool byte as zero / nonzero: a byte of 15 is True, i.e. 1, never 15 (found by fuzzing).
    flags = np.frombuffer(b"\x0f\x01\x80", dtype=np.bool_)
    assert flags.astype(dtype).tolist() == [1, 1, 1]


@pytest.mark.parametrize("dtype, bad", [
    (nbx.intb1, 0), (nbx.intb1, 3), (nbx.intb2, 2), (nbx.intb2, -5), (nbx.intb4, 16), (nbx.intb4, 17), (nbx.intb4, 1.5),
])
def test_intb_rejects_even_and_out_of_range_values(dtype, bad):
    with pytest.raises(ValueError, match="not an odd integer"):
        np.array([1, bad], dtype=dtype)
    a = np.array([1, 1], dtype=dtype)
    with pytest.raises(ValueError):
        a[1] = bad
    assert a.tolist() == [1, 1]
    # numpy's cast loop sees a chunk, not the array: the value is named, no index.
    with pytest.raises(ValueError, match=f"cannot hold {bad}"):
        np.array([1, bad]).astype(dtype)


def test_scalars_print_and_compare_sensibly():
    assert str(np.array([0.5], dtype=bf16)[0]) == "0.5"
    assert repr(np.array([-3], dtype=nbx.intb2)[0]) == "-3"
    assert nbx.intb4(5) == 5 and int(nbx.intb4(-7)) == -7
    with pytest.raises(ValueError):
        nbx.intb4(4)


def test_user_dtype_refcounts_stay_stable(refcounts):
    a = np.array([1.0, 2.0], dtype=bf16)
    b = np.array([1, 3], dtype=nbx.intb2)
    refcounts([a, a.dtype, bf16], lambda: a[0], times=10000)
    refcounts([b, b.dtype, nbx.intb2], lambda: b.tolist(), times=10000)


def test_bfloat16_tensors_borrow_and_share():
    a = np.array([[1.5, -2.0], [0.25, 8.0]], dtype=bf16)
    t = nbx.Tensor.from_numpy(a)
    assert t.dtype_name == "BFloat16" and t.borrowed and t.dtype == a.dtype
    back = t.numpy()
    assert back.dtype == a.dtype and back.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    c = nbx.Tensor.from_numpy(np.array([0.13425], dtype=np.float32), dtype="BFloat16")
    assert not c.borrowed and c.storage() == bytes([0x09, 0x3E])


def test_intb_tensors_pack_from_and_unpack_to_the_user_dtype():
    a = np.array([[-3, -1, 1], [3, 3, 1]], dtype=nbx.intb2)
    t = nbx.Tensor.from_numpy(a)
    assert t.dtype_name == "IntB2" and not t.borrowed
    assert t.storage() == bytes([0xE4, 0x0B])  # compact: codes 0,1,2,3 | 3,2 (2 bits each, element 0 lowest)
    back = t.numpy()
    assert back.dtype == np.dtype(nbx.intb2)
    assert back.tolist() == a.tolist()
    assert nbx.Tensor.from_storage(bytes([0xE4, 0x1B]), "IntB2", (7,)).numpy().tolist() == [-3, -1, 1, 3, 3, 1, -1]


Tensor = nbx.Tensor


NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


INTB = [nbx.intb1, nbx.intb2, nbx.intb4]


OURS = not nbx.register_user_dtypes()["bfloat16_from_ml_dtypes"]


FLOATS = np.array([3, np.nan, -np.inf, -1, 0, np.inf, 3, 2.5, np.nan], np.float32)


INTB_TOP = {"intb1": 1, "intb2": 3, "intb4": 15}


@pytest.mark.hardening
@pytest.mark.parametrize("dtype", INTB + [nbx.bfloat16])
@pytest.mark.parametrize("integer", [np.longlong, np.ulonglong, np.int64, np.uint64, np.intc])
def test_user_dtypes_cast_to_and_from_every_integer_type(dtype, integer):
    valid = [1, 1] if dtype is nbx.intb1 else [1, 3]
    values = np.array(valid, integer)
    there = values.astype(dtype)
    assert there.astype(integer).tolist() == valid
    assert np.array(valid, np.int8).astype(dtype).astype(integer).dtype == np.dtype(integer)


@pytest.mark.hardening
def test_intb_cast_errors_do_not_name_a_wrong_index():
    x = np.ones(40, np.int64)
    x[15] = 2
    with pytest.raises(ValueError) as caught:
        x[1::2].astype(nbx.intb2)
    assert "cannot hold 2" in str(caught.value) and "index 0" not in str(caught.value)
    # npybridge's own conversion knows the index, in the view's coordinates.
    with pytest.raises(nbx.ValueRangeError, match=r"value 2 at index \(7,\)"):
        Tensor.from_numpy(x[1::2], dtype="IntB2")
    y = np.ones((4, 4), np.int64)
    y[1, 2] = 2
    with pytest.raises(nbx.ValueRangeError, match=r"value 2 at index \(2, 1\)"):
        Tensor.from_numpy(y.T, dtype="IntB4")


@pytest.mark.hardening
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


@pytest.mark.hardening
@pytest.mark.skipif(not OURS, reason="bfloat16 here is ml_dtypes'")
def test_npybridge_bfloat16_byteswaps():
    values = np.array([1.5, -2.0, 3.0], np.float32).astype(nbx.bfloat16)
    bits = values.view(np.uint16)
    assert values.byteswap().view(np.uint16).tolist() == bits.byteswap().tolist()
    swapped = values.copy()
    swapped.byteswap(inplace=True)
    assert swapped.view(np.uint16).tolist() == bits.byteswap().tolist()
    assert values.newbyteorder().byteswap().astype(np.float32).tolist() == [1.5, -2.0, 3.0] if not NUMPY2 else True


@pytest.mark.hardening
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


@pytest.mark.hardening
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


@pytest.mark.guarantee
@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(sorted(INTB_TOP)), count=st.integers(1, 3000), data=st.data())
def test_intb_reductions_compute_in_float64_as_megengine_does(name, count, data):
    top = INTB_TOP[name]
    dtype = np.dtype(getattr(nbx, name))
    values = data.draw(st.lists(st.sampled_from(range(-top, top + 1, 2)), min_size=count, max_size=count))
    a = np.array(values, np.int8).astype(dtype)
    exact = np.array(values, np.float64)
    assert a.sum().dtype == np.float64 and a.sum() == exact.sum()  # MegEngine's intbN: float64 too
    assert a.mean() == exact.mean()
    assert a.max() == exact.max() and a.min() == exact.min()
    assert np.cumsum(a)[-1] == exact.sum()
    short = a[:5]
    assert short.prod() == np.prod(exact[:5])


@pytest.mark.guarantee
@pytest.mark.parametrize("bits, name", [(1, "intb1"), (2, "intb2"), (4, "intb4")])
def test_intb_arange_as_megengines_own_test_expects(bits, name):
    dtype = np.dtype(getattr(nbx, name))
    top, low = (1 << bits) - 1, 1 - (1 << bits)
    with pytest.raises(ValueError):
        np.arange(low, top, dtype=dtype)  # step 1: the second value is even
    with pytest.raises(ValueError):
        np.arange(low - 2, top + 4, 2, dtype=dtype)  # the first value is out of range
    np.testing.assert_allclose(np.arange(low, 12, 2, dtype=dtype).astype(np.float64),
                               (np.arange((13 - low) // 2, dtype=np.int8) % (top + 1)) * 2 - top)
    np.testing.assert_allclose(np.arange(top, top - 20, -2, dtype=dtype).astype(np.float64),
                               (np.arange(top, top - 10, -1, dtype=np.int8) % (top + 1)) * 2 - top)
    np.testing.assert_allclose(np.arange(low, top + 2, 4, dtype=dtype).astype(np.float64), range(low, top + 2, 4))
