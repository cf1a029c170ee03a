"""What the Python suite shares: the example module under test and helpers.

The suite runs once per example module (npybridge_example, written with the CPython API, and the same API
written with pybind11 and with nanobind): NPYBRIDGE_EXAMPLE_MODULE names the one a run tests, and tests use
`nbx` from here.
"""
import gc
import importlib
import os
import sys

import numpy as np
import pytest

EXAMPLE_MODULE = os.environ.get("NPYBRIDGE_EXAMPLE_MODULE", "npybridge_example")
nbx = importlib.import_module(EXAMPLE_MODULE)
# The binding library the module under test is written with: "cpython", "pybind11" or "nanobind".
BINDING = getattr(nbx, "binding_library", ("cpython",))[0]


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


@__import__("contextlib").contextmanager
def flush_to_zero():
    """The x86 FPU in flush-to-zero + denormals-are-zero mode, as `import megengine` leaves it (MXCSR |= 0x8040).

    glibc's fenv_t on x86-64 ends with MXCSR (bytes 28..31); fegetenv / fesetenv move it. Restored on exit.
    """
    ctypes, libm = _libm()
    env = ctypes.create_string_buffer(32)
    assert libm.fegetenv(env) == 0
    saved = env.raw
    mxcsr = int.from_bytes(saved[28:32], "little") | 0x8040
    assert libm.fesetenv(ctypes.create_string_buffer(saved[:28] + mxcsr.to_bytes(4, "little"), 32)) == 0
    try:
        # The mode is on: NumPy's own float32 loops now flush a subnormal product.
        assert np.multiply(np.float32(1e-45), np.float32(1)) == 0
        yield
    finally:
        libm.fesetenv(ctypes.create_string_buffer(saved, 32))
