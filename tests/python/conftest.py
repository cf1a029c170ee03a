import gc
import sys

import numpy as np
import pytest

import npybridge_example as nbx


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
        gc.collect()
        before = [sys.getrefcount(o) for o in objects]
        for _ in range(times):
            action()
        gc.collect()
        after = [sys.getrefcount(o) for o in objects]
        assert after == before
    return check
