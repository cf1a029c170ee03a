"""Conversions of 1 MiB or more run without the GIL (docs/copies.md): another Python thread makes progress
while they run, on every route a conversion can take.

A spinning thread counts while the main thread converts, with a switch interval so long that it only runs when
the conversion gives the GIL up. Its rate is compared, in the same run, with its rate during a float64 ->
Float32 conversion (which releases the GIL for its whole loop): a route whose loop holds the GIL lets the thread
run only in the moments around the loop (the bfloat16 fill held it: about 4% of the reference rate).
"""
import os
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import mgb_dtype, nbx

# A sanitizer build (-O0, every access checked) changes how long each part of a conversion takes beside the
# others, so a rate compared with another route's means nothing there; the other suites run these tests.
pytestmark = pytest.mark.skipif("ASAN_OPTIONS" in os.environ, reason="timing ratios in a sanitizer build")

Tensor = nbx.Tensor
N = 4 << 20  # elements: 16 to 32 MiB of source per route

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None


def spinner_rate(action, least_seconds=0.06):
    """Counts per second of a spinning thread while `action` runs, again and again for at least
    `least_seconds` (a quick conversion alone is too short to measure a rate over)."""
    counter = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            counter[0] += 1
            time.sleep(0)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    thread = threading.Thread(target=spin)
    try:
        thread.start()
        time.sleep(0)  # let it start
        start, before = time.perf_counter(), counter[0]
        while time.perf_counter() - start < least_seconds:
            action()
        elapsed, counted = time.perf_counter() - start, counter[0] - before
    finally:
        done.set()
        sys.setswitchinterval(interval)
        thread.join()
    return counted / elapsed


def test_large_copies_give_up_the_gil():
    # With a huge switch interval, another thread runs only when this one gives up the GIL; a 64 MiB narrowing
    # copy must do so.
    big = np.ones(8 << 20, dtype=np.float64)
    assert spinner_rate(lambda: Tensor.from_numpy(big)) > 0


def routes():
    rng = np.random.default_rng(5)
    floats = rng.standard_normal(N)
    float32 = floats.astype(np.float32)
    whole = np.rint(floats * 20).clip(-100, 100)
    bf16_array = np.zeros(N, nbx.bfloat16)
    made = {
        "same dtype, copied": (lambda: Tensor.from_numpy(float32, policy="copy")),
        "same dtype, strided": (lambda: Tensor.from_numpy(float32.reshape(-1, 2)[:, ::-1], policy="copy")),
        "byteswapped": (lambda a=float32.astype(">f4"): Tensor.from_numpy(a)),
        "narrowing float64 -> Float32": (lambda: Tensor.from_numpy(floats)),
        "narrowing int64 -> Int32": (lambda a=whole.astype(np.int64): Tensor.from_numpy(a)),
        "float32 -> Float16": (lambda: Tensor.from_numpy(float32, dtype="Float16")),
        "float16 -> Float32": (lambda a=float32.astype(np.float16): Tensor.from_numpy(a, dtype="Float32")),
        "float64 -> BFloat16": (lambda: Tensor.from_numpy(floats, dtype="BFloat16")),
        "float32 -> BFloat16": (lambda: Tensor.from_numpy(float32, dtype="BFloat16")),
        "bfloat16 -> Float32": (lambda: Tensor.from_numpy(bf16_array, dtype="Float32")),
        "copy_from float64 into BFloat16": (lambda t=Tensor.from_numpy(np.zeros(N, np.float32), dtype="BFloat16"):
                                            t.copy_from(floats)),
        "packing int8 -> IntB4": (lambda a=(whole.astype(np.int8) % 16 * 2 - 15).astype(np.int8):
                                  Tensor.from_numpy(a, dtype="IntB4")),
        "quantize whole floats -> QuantizedS8": (lambda d=mgb_dtype(np.int8, "QuantizedS8", 0.5):
                                                 Tensor.from_numpy(whole, dtype=d)),
    }
    s1 = mgb_dtype(np.int8, "QuantizedS1", 0.5)
    s1_tensor = Tensor.from_numpy(np.ones(N, np.int8).view(s1))
    made["dequantize QuantizedS1"] = lambda: nbx.dequantize(s1_tensor)
    made["int16 -> QuantizedS1, checked"] = lambda a=np.ones(N, np.int16): Tensor.from_numpy(a, dtype=s1)
    made["int16 -> QuantizedS1, wrap"] = (lambda a=np.ones(N, np.int16):
                                          Tensor.from_numpy(a, dtype=s1, narrowing="wrap"))
    rows_of_three = Tensor.from_numpy(np.ones((N // 3, 3), np.int8), dtype="IntB4", layout="compact")
    made["DLPack packed IntB4, repacked"] = (lambda: Tensor.from_dlpack(
        rows_of_three.__dlpack__(max_version=(1, 1), codes=True), dtype="IntB4", layout="row_aligned"))
    made["DLPack packed IntB4, copied"] = (lambda t=Tensor.from_numpy(np.ones(4 * N, np.int8), dtype="IntB4"):
                                           Tensor.from_dlpack(t.__dlpack__(max_version=(1, 1), codes=True),
                                                              dtype="IntB4"))
    if ml_dtypes is not None:
        made["ml_dtypes int4 -> Int8"] = (lambda a=np.ones(N, ml_dtypes.int4): Tensor.from_numpy(a, dtype="Int8"))
        made["ml_dtypes bfloat16 -> Float32"] = (
            lambda a=float32.astype(ml_dtypes.bfloat16): Tensor.from_numpy(a, dtype="Float32"))
    return made


ROUTES = routes()


@pytest.mark.parametrize("route", list(ROUTES))
def test_every_conversion_route_lets_other_threads_run(route):
    ones = np.ones(N)
    ratios = []
    for _ in range(4):  # the machine is shared: a route passes when one of four measurements shows it
        base = spinner_rate(lambda: Tensor.from_numpy(ones))
        rate = spinner_rate(ROUTES[route])
        ratios.append(rate / base if base else 0.0)
        if ratios[-1] >= 0.5:
            return
    pytest.fail(f"{route}: another thread ran at {max(ratios):.2f} of its rate during float64 -> Float32")


SOURCES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16", "float32", "float64",
           "complex64", "bfloat16"]
TARGETS = ["Bool", "Int8", "Uint8", "Int16", "Int32", "Float16", "Float32", "BFloat16", "Complex64", "IntB2",
           "QuantizedS8", "QuantizedS4", "QuantizedS32"]


def target_dtype(name):
    if name.startswith("Quantized"):
        return mgb_dtype(np.int32 if name == "QuantizedS32" else np.int8, name, 0.5)
    return name


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(SOURCES), st.sampled_from(TARGETS), st.sampled_from(["checked", "wrap"]),
       st.sampled_from(["contiguous", "reversed", "byteswapped"]))
def test_any_conversion_of_a_large_array_lets_other_threads_run(source, target, narrowing, layout):
    # Ones: a value every dtype holds (intbN and QuantizedS1 included), so every pair converts in every mode.
    dtype = nbx.bfloat16 if source == "bfloat16" else np.dtype(source)
    array = np.ones(N, dtype)
    if layout == "reversed":
        array = array[::-1]
    elif layout == "byteswapped" and array.dtype.itemsize > 1 and source != "bfloat16":
        array = array.astype(array.dtype.newbyteorder())
    if source.startswith("complex") and not target.startswith("Complex"):
        narrowing = "wrap"  # complex goes only into complex under checked
    wanted = target_dtype(target)
    try:
        Tensor.from_numpy(array[:4], dtype=wanted, narrowing=narrowing)
    except nbx.ConversionError:
        return  # a pair no mode converts
    ones, ratios = np.ones(N), []
    for _ in range(4):
        base = spinner_rate(lambda: Tensor.from_numpy(ones))
        rate = spinner_rate(lambda: Tensor.from_numpy(array, dtype=wanted, narrowing=narrowing, policy="copy"))
        ratios.append(rate / base if base else 0.0)
        if ratios[-1] >= 0.5:
            return
    pytest.fail(f"{source} ({layout}) -> {target}, {narrowing}: another thread ran at {max(ratios):.2f} of its "
                f"rate during float64 -> Float32")
