"""What the Python suite shares: the example module under test and helpers.

The suite runs once per example module (npybridge_example, written with the CPython API, and the same API
written with pybind11 and with nanobind): NPYBRIDGE_EXAMPLE_MODULE names the one a run tests, and tests use
`nbx` from here.
"""
import gc
import importlib
import os
import subprocess
import sys
import textwrap
import weakref
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, strategies as st

EXAMPLE_MODULE = os.environ.get("NPYBRIDGE_EXAMPLE_MODULE", "npybridge_example")
nbx = importlib.import_module(EXAMPLE_MODULE)
# The binding library the module under test is written with: "cpython", "pybind11" or "nanobind".
BINDING = getattr(nbx, "binding_library", ("cpython",))[0]


# Under emulation (tools/aarch64 runs the suite under qemu-aarch64) every property runs 1/N of its examples, with no
# deadline: NPYBRIDGE_EXAMPLES_DIVISOR=N. The tests and their inputs are the same; only the count is smaller.
EXAMPLES_DIVISOR = int(os.environ.get("NPYBRIDGE_EXAMPLES_DIVISOR", "1"))


def repeats(count):
    """A loop's count of repeated calls (races, leak checks), divided as the examples are."""
    return max(2, count // EXAMPLES_DIVISOR)


def pytest_collection_modifyitems(items):
    if EXAMPLES_DIVISOR == 1:
        return
    from hypothesis import settings
    for test in {getattr(item, "obj", None) for item in items}:
        held = getattr(test, "_hypothesis_internal_use_settings", None)  # what @given / @settings left on the test
        if held is not None:
            test._hypothesis_internal_use_settings = settings(
                held, max_examples=max(1, held.max_examples // EXAMPLES_DIVISOR), deadline=None)


def pytest_configure(config):
    # Tests are filed by feature (test_<feature>.py); what kind of promise a test checks is a marker.
    config.addinivalue_line("markers", "hardening: hostile input must give a clear error, never a crash, a leak or "
                                       "a silently wrong value (`-m hardening`)")
    config.addinivalue_line("markers", "guarantee: a promise of the docs checked as a property over generated "
                                       "inputs (`-m guarantee`)")


def mgb_dtype(base, name, scale, zero_point=None):
    """A quantized numpy dtype written the way MegEngine writes it."""
    fields = {"name": name, "scale": scale}
    if zero_point is not None:
        fields["zero_point"] = zero_point
    return np.dtype(base, metadata={"mgb_dtype": fields})


@pytest.fixture
def refcounts():
    """Returns a function that asserts refcounts of the objects are back to their start."""
    def check(objects, action, times=10_000):
        times = repeats(times)
        # One call first: npybridge caches a quantized dtype object it has seen
        # (one reference, held until exit); the loop must then add nothing.
        action()
        # Every object alive now is frozen out of the collector, so the collection after the loop looks only at
        # what the calls made (a full collection of a pytest process takes about 20 ms).
        gc.freeze()
        try:
            before = [sys.getrefcount(o) for o in objects]
            for _ in range(times):
                action()
            gc.collect()
            after = [sys.getrefcount(o) for o in objects]
        finally:
            gc.unfreeze()
        assert after == before
    return check


def _libm():
    import ctypes
    import ctypes.util
    return ctypes, ctypes.CDLL(ctypes.util.find_library("m"))


# How glibc's fenv_t holds the flush bits, per machine: (offset of the control word, the bits). On x86-64 fenv_t
# ends with MXCSR (bytes 28..31): FTZ (bit 15) and DAZ (bit 6). On AArch64 it is {FPCR, FPSR}: FZ (bit 24) and FZ16
# (bit 19, half-precision arithmetic).
FLUSH_BITS = {"x86_64": (28, 0x8040), "aarch64": (0, 1 << 24 | 1 << 19)}


@__import__("contextlib").contextmanager
def flush_to_zero():
    """The FPU in flush-to-zero mode, as `import megengine` leaves it (x86: MXCSR |= 0x8040; AArch64: FPCR.FZ, FZ16).

    fegetenv / fesetenv move the control word; restored on exit.
    """
    import platform
    ctypes, libm = _libm()
    offset, bits = FLUSH_BITS[platform.machine()]
    env = ctypes.create_string_buffer(32)
    assert libm.fegetenv(env) == 0
    saved = env.raw
    word = int.from_bytes(saved[offset:offset + 4], "little") | bits
    assert libm.fesetenv(ctypes.create_string_buffer(saved[:offset] + word.to_bytes(4, "little") + saved[offset + 4:],
                                                     32)) == 0
    try:
        # The mode is on: NumPy's own float32 loops now flush a subnormal product.
        assert np.multiply(np.float32(1e-45), np.float32(1)) == 0
        yield
    finally:
        libm.fesetenv(ctypes.create_string_buffer(saved, 32))


def run_python(code, timeout=60):
    """Runs code in a fresh interpreter that can import the example module."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(nbx.__file__))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=timeout)


def collected(make):
    """Makes a cycle, drops it, and tells whether the garbage collector freed it."""
    ref = weakref.ref(make())
    gc.collect()
    return ref() is None


# ---- exact float values and generators at the edges (narrowing and the float conversions) ----------------------

def exact(value):
    """The float's value as a Fraction (None for NaN and infinities)."""
    return Fraction(*np.longdouble(value).as_integer_ratio()) if np.isfinite(value) else None


def bf16_value(bits):
    """The exact value of bfloat16 bits."""
    return exact(np.array([bits << 16], np.uint32).view(np.float32)[0])


BF16_MAX = Fraction(2) ** 127 * Fraction(2 ** 8 - 1, 2 ** 7)
BF16_OVERFLOW = Fraction(2) ** 127 * (2 - Fraction(1, 2 ** 8))  # max + half an ulp: from here on, infinity
FLOAT_EDGES = [float(BF16_OVERFLOW), float(BF16_MAX), 3.3961775e38, 2.0 ** -133, 2.0 ** -134, 2.0 ** -126, 1.0 + 2 ** -8,
         1.0 + 2 ** -8 + 2 ** -30, float(2 ** 24 + 2 ** 16 + 1), 0.0, 1e-40, 5e-324, 2.0 ** -149, 3.4028235e38]


def near_ulps(value, dtype, steps):
    """`value` moved `steps` ulps of `dtype` (the source's own ulps: the window either side of a bound)."""
    x = dtype.type(value)
    towards = dtype.type(np.inf if steps > 0 else -np.inf)
    for _ in range(abs(steps)):
        x = np.nextafter(x, towards)
    return x


@st.composite
def finite_floats(draw, dtype):
    """Finite values of a float dtype, weighted to the edges: bounds, ±1..3 ulps of them, the double-rounding
    window, zeros, subnormals of the source and of bfloat16."""
    dtype = np.dtype(dtype)
    if draw(st.booleans()):
        value = draw(st.floats(width=min(64, dtype.itemsize * 8), allow_nan=False, allow_infinity=False))
        return dtype.type(value)
    value = near_ulps(draw(st.sampled_from(FLOAT_EDGES)), dtype, draw(st.integers(-3, 3)))
    value = value if draw(st.booleans()) else -value
    assume(np.isfinite(value))
    return value
