"""The half and bfloat16 kernels (float32 / float64 -> BFloat16, float32 -> Float16, float16 -> Float32) give the
bits NumPy's own casts give (bfloat16: the correctly rounded ones), and checked mode refuses exactly the first
finite value that would overflow, naming it: over generated bit patterns, contiguous (the kernels) and strided
(the general path) alike."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import nbx

Tensor = nbx.Tensor

FLOAT32_BITS = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=300)


def stored(array, dtype, narrowing="wrap"):
    return np.frombuffer(Tensor.from_numpy(array, dtype=dtype, narrowing=narrowing).storage(), np.uint16)


def bf16_of_float32(values):
    """float32 -> bfloat16 bits: to nearest even; a NaN keeps its top bits, its last one set when only lower
    payload bits were (MegDNN's rule)."""
    u = values.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    special = (u & 0x7F800000) == 0x7F800000
    kept = ((u >> 16) | ((u & 0xFFFF) != 0)).astype(np.uint16)
    return np.where(special, kept, rounded)


@settings(max_examples=60, deadline=None)
@given(FLOAT32_BITS)
def test_float32_into_float16_and_bfloat16_gives_numpys_and_the_correctly_rounded_bits(bits):
    values = np.array(bits, np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        half = values.astype(np.float16).view(np.uint16)
    assert np.array_equal(stored(values, "Float16"), half)
    assert np.array_equal(stored(values[::-1], "Float16"), half[::-1])  # strided: the general path
    assert np.array_equal(stored(values, "BFloat16"), bf16_of_float32(values))
    assert np.array_equal(stored(values[::-1], "BFloat16"), bf16_of_float32(values)[::-1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=200))
def test_float64_into_bfloat16_gives_the_bits_of_the_elementwise_rounding(bits):
    values = np.array(bits, np.uint64).view(np.float64)
    assert np.array_equal(stored(values, "BFloat16"), stored(values[::-1], "BFloat16")[::-1])
    one_by_one = np.concatenate([stored(values[i:i + 1], "BFloat16") for i in range(values.size)])
    assert np.array_equal(stored(values, "BFloat16"), one_by_one)  # the block kernel and the tail agree


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2**64 - 1),
                          st.builds(lambda head, e, noise: int(np.float64((2048 + head * 2 + 1) * 2.0 ** e)
                                                               .view(np.uint64)) + noise,
                                    st.integers(0, 1023), st.integers(-40, 5), st.integers(-1, 1))),
                min_size=1, max_size=200))
def test_float64_into_float16_gives_numpys_bits_rounded_once(bits):
    values = np.array(bits, np.uint64).view(np.float64)  # near half ties at every exponent, and any bits
    with np.errstate(all="ignore"):
        half = values.astype(np.float16).view(np.uint16)
    assert np.array_equal(stored(values, "Float16"), half)
    assert np.array_equal(stored(values[::-1], "Float16"), half[::-1])


def test_every_float16_widens_to_numpys_float32():
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    ours = np.frombuffer(Tensor.from_numpy(every, dtype="Float32").storage(), np.uint32)
    assert np.array_equal(ours, every.astype(np.float32).view(np.uint32))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=9000),
       st.sampled_from([("Float16", 65520.0), ("BFloat16", (2 - 2**-8) * 2.0**127)]), st.sampled_from(["float32", "float64"]))
def test_checked_refuses_the_first_finite_value_that_would_overflow(values, target, source):
    name, overflow = target
    array = np.array(values, source)
    finite = np.isfinite(array)
    bad = np.nonzero(finite & (np.abs(array.astype(np.float64)) >= overflow))[0]
    if bad.size == 0:
        Tensor.from_numpy(array, dtype=name)
        return
    with pytest.raises(nbx.ValueRangeError, match=rf"at index \({bad[0]},\)"):
        Tensor.from_numpy(array, dtype=name)
