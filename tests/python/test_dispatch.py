"""Every kernel level gives the same bits: the conversions run with the levels this CPU has (AVX2, F16C, SSSE3)
and with NPYBRIDGE_SIMD=baseline (SSE2 and portable loops only), each in an interpreter of its own: once over
values that reach every branch of the kernels (NaN payloads, infinities, subnormals, ties, overflow, the largest
finite values) in blocks long enough for the vector loops, and as a property over generated sources, views,
targets and quantized dtypes, each sent to both interpreters.
"""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from conftest import EXAMPLE_MODULE, nbx


CONVERSIONS = r"""
import pickle, sys
import numpy as np
import {module} as nbx
Tensor = nbx.Tensor
rng = np.random.default_rng(11)
specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-45, 1.1754942e-38, 6e-8, -5.9e-8,
                     65504.0, 65520.0, -65519.99, 3.3895313892515355e38, 3.4e38, 1e300, -1e300, 2.5, 3.5, -0.5,
                     1.00048828125, 1.0009765625, 1.001953125, 255.5, 256.5, 127.5, -128.5, 32767.5])
floats = np.concatenate([specials, rng.standard_normal(5000) * 1000.0, rng.standard_normal(3001) * 1e-6,
                         specials[::-1]])
nan_payloads = np.array([0x7FC00001, 0xFFC12345, 0x7F800001, 0x7FBFFFFF], np.uint32).view(np.float32)
f32 = np.concatenate([floats.astype(np.float32), nan_payloads])
ints = np.concatenate([rng.integers(-2**40, 2**40, 3000), rng.integers(-300, 300, 3000),
                       np.array([2**31 - 1, -2**31, 2**24 + 1, 2**53 + 1, -(2**53) - 3, 255, 256, 257])])


def outcome(action):
    try:
        return ("ok", bytes(action()))
    except Exception as error:
        return (type(error).__name__, str(error))


def to(array, dtype, narrowing="checked"):
    return lambda: Tensor.from_numpy(array, dtype=dtype, narrowing=narrowing).storage()


def cases(array, target, fitting, unfit, inside=None):
    # Everything wrapped; every value fitting; fitting values, then one that does not (the whole loop runs); one
    # that does not inside a vector loop's block.
    results[name, target, "wrap"] = outcome(to(array, target, "wrap"))
    results[name, target, "fits"] = outcome(to(fitting, target))
    late = np.concatenate([fitting, np.array([unfit]).astype(fitting.dtype)])
    results[name, target, "unfit last"] = outcome(to(late, target))
    within = fitting.copy()
    within[len(within) // 3] = unfit if inside is None else inside
    results[name, target, "unfit inside"] = outcome(to(within, target))


results = {{}}
float_targets = {{"Float16": 6e4, "BFloat16": 3e38, "Float32": 3e38}}
for name, array in [("float64", floats), ("float32", f32)]:
    with np.errstate(all="ignore"):
        for target, largest in float_targets.items():
            cases(array, target, np.where(np.abs(array) > largest, 1.0, array).astype(array.dtype), 1e300)
        whole = np.rint(np.clip(np.nan_to_num(array), -100, 100)).astype(array.dtype)
        for target in ["Int8", "Int16", "Uint8"]:
            cases(array, target, np.abs(whole) if target == "Uint8" else whole, 1000.5, 2.5)
    results[name, "stepped Float16"] = outcome(to(array[::3], "Float16", "wrap"))
halves = f32.astype(np.float16)
results["float16 -> Float32"] = outcome(to(halves, "Float32"))
results["Float16 -> float32"] = outcome(lambda: Tensor.from_numpy(halves).numpy().astype(np.float32).tobytes())
bf16 = Tensor.from_numpy(f32, dtype="BFloat16", narrowing="wrap").numpy()
results["bfloat16 -> Float32"] = outcome(to(bf16, "Float32"))
for name, source in [("int64", ints), ("int32", ints.astype(np.int32)), ("int16", ints.astype(np.int16)),
                     ("int8", ints.astype(np.int8)), ("uint16", ints.astype(np.uint16))]:
    small = np.clip(source, -100, 100) if source.dtype.kind == "i" else np.clip(source, 0, 100)
    for target in ["Int8", "Int16", "Int32", "Float16", "BFloat16", "Float32"]:
        cases(source, target, small, 2**31 - 1 if source.itemsize == 8 else np.iinfo(source.dtype).max,
              2**32 + 5 if source.itemsize == 8 else None)  # its low half fits
    results[name, "stepped rows"] = outcome(to(small[: 64 * 80].reshape(80, 64)[:, ::2], "Int8"))
    results[name, "transposed"] = outcome(to(small[: 64 * 80].reshape(80, 64).T, "Int16"))
bytes_source = rng.integers(-128, 128, 2100 * 2100).astype(np.int8)
for rows, columns in [(77, 203), (2100, 2100)]:  # ragged blocks; past 4 MiB, the streamed tiles
    square = bytes_source[: rows * columns].reshape(rows, columns)
    results["int8 transposed", rows] = outcome(to(square.T, "Int8"))
for qname, params in [("QuantizedS8", {{"scale": 0.25}}), ("Quantized8Asymm", {{"scale": 0.5, "zero_point": 7}}),
                      ("QuantizedS4", {{"scale": 0.125}}), ("Quantized4Asymm", {{"scale": 0.5, "zero_point": 3}})]:
    dtype = np.dtype(np.int8 if "S" in qname else np.uint8, metadata={{"mgb_dtype": dict(name=qname, **params)}})
    codes = outcome(lambda: nbx.quantize(f32, dtype).tobytes())
    results["quantize", qname] = codes
    if codes[0] == "ok" and "4" not in qname:
        stored = np.frombuffer(codes[1], dtype.base).astype(dtype)
        results["dequantize", qname] = outcome(lambda: nbx.dequantize(stored).tobytes())
for target, odd in [("IntB1", ints % 2 * 2 - 1), ("IntB2", ints % 4 * 2 - 3), ("IntB4", ints % 16 * 2 - 15)]:
    odd = odd.astype(np.int8)
    results["pack", target] = outcome(to(odd, target))
    results["unpack", target] = outcome(lambda: Tensor.from_numpy(odd, dtype=target).numpy().tobytes())
kernel = getattr(nbx, "lowbit_kernel", None)
results["lowbit kernel"] = kernel() if kernel else None
sys.stdout.buffer.write(pickle.dumps(results))
"""


def environment(simd):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(nbx.__file__))
    env.pop("NPYBRIDGE_SIMD", None)
    if simd is not None:
        env["NPYBRIDGE_SIMD"] = simd
    return env


def converted(simd=None):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(CONVERSIONS.format(module=EXAMPLE_MODULE))],
                          env=environment(simd), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return pickle.loads(done.stdout)


@pytest.mark.guarantee
def test_the_baseline_kernels_give_the_same_bits_and_errors_as_this_cpus_own():
    native, baseline = converted(), converted("baseline")
    if native["lowbit kernel"] is not None:
        assert baseline["lowbit kernel"] == "portable"
        if native["lowbit kernel"] == "portable":
            pytest.skip("this CPU has no level above the baseline to compare with")
    native.pop("lowbit kernel")
    baseline.pop("lowbit kernel")
    assert native.keys() == baseline.keys()
    for key in native:
        assert baseline[key] == native[key], key
    # The comparison is of work done: most conversions succeed, the checked ones of unfit values fail.
    outcomes = [value[0] for value in native.values()]
    assert outcomes.count("ok") > 0.6 * len(outcomes) and "ValueRangeError" in outcomes


def test_another_simd_setting_changes_nothing():
    assert converted("avx512")["lowbit kernel"] == converted()["lowbit kernel"]


# An interpreter that answers requests (pickled, one per line of work) until its input ends: a source array, a view
# of it, and what to make of it; the answer is the storage's bytes or the error's type and message.
SERVER = r"""
import pickle, sys
import numpy as np
import {module} as nbx


def view(array, layout):
    if layout == "stepped":
        return array[::3]
    if layout == "transposed":
        return array[: array.size // 4 * 4].reshape(-1, 4).T
    return array


def answer(kind, array, layout, target, option):
    source = view(array, layout)
    if kind == "convert":
        return bytes(nbx.Tensor.from_numpy(source, dtype=target, narrowing=option).storage())
    dtype = np.dtype(np.uint8 if "Asymm" in target else np.int8, metadata={{"mgb_dtype": option}})
    if kind == "quantize":
        return nbx.quantize(source, dtype).tobytes()
    return nbx.dequantize(source.astype(dtype)).tobytes()


requests, replies = sys.stdin.buffer, sys.stdout.buffer
while True:
    try:
        request = pickle.load(requests)
    except EOFError:
        break
    try:
        reply = ("ok", answer(*request))
    except Exception as error:
        reply = (type(error).__name__, str(error))
    pickle.dump(reply, replies)
    replies.flush()
"""


class Server:
    def __init__(self, simd):
        self.process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SERVER.format(module=EXAMPLE_MODULE))],
                                        env=environment(simd), stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def __call__(self, *request):
        pickle.dump(request, self.process.stdin)
        self.process.stdin.flush()
        return pickle.load(self.process.stdout)

    def close(self):
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0


@pytest.fixture(scope="module")
def both_levels():
    """Each request answered by this CPU's own levels and by the baseline; both answers."""
    native, baseline = Server(None), Server("baseline")
    yield lambda *request: (native(*request), baseline(*request))
    native.close()
    baseline.close()


SOURCES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint16", "uint8"]
TARGETS = ["Float32", "Float16", "BFloat16", "Int32", "Int16", "Int8", "Uint8"]
QUANTIZED = st.sampled_from([
    {"name": "QuantizedS8", "scale": 0.25}, {"name": "Quantized8Asymm", "scale": 0.5, "zero_point": 7},
    {"name": "QuantizedS4", "scale": 0.125}, {"name": "Quantized4Asymm", "scale": 0.5, "zero_point": 3},
    {"name": "QuantizedS8", "scale": 3e-39}, {"name": "QuantizedS8", "scale": 1e30}])


def ties(dtype, moderate):
    """Floats halfway between two values of a narrower float (float32, Float16, BFloat16): a moderate value with the
    bits below the narrower mantissa's last cleared and the highest of them set."""
    bits = 8 * np.dtype(dtype).itemsize
    mantissa = {64: 52, 32: 23, 16: 10}[bits]
    dropped = [mantissa - kept for kept in (23, 10, 7) if kept < mantissa]

    def tie(value, drop):
        pattern = int(np.array(value, dtype).view(f"uint{bits}"))
        return np.array(pattern >> drop << drop | 1 << (drop - 1), f"uint{bits}").view(dtype).item()
    return st.builds(tie, moderate, st.sampled_from(dropped)) if dropped else st.nothing()


def sources(dtype):
    """Arrays long enough for every vector loop (16 and 32 a step) and its scalar tail, of ordinary values (a vector
    loop's whole block on its fast path) with ties among them, or of anything: floats of every class, integers of
    the whole range."""
    if dtype.startswith("float"):
        width = 8 * np.dtype(dtype).itemsize
        # Normal in every target (Float16's smallest normal to near its largest), as vector loops take them.
        moderate = st.tuples(st.floats(2.0**-14, 60000.0, width=width), st.booleans()).map(
            lambda magnitude_and_sign: -magnitude_and_sign[0] if magnitude_and_sign[1] else magnitude_and_sign[0])
        ordinary = moderate | ties(dtype, moderate)
        anything = st.floats(width=width) | ordinary
    else:
        limits = np.iinfo(dtype)
        ordinary = st.integers(max(int(limits.min), -70000), min(int(limits.max), 70000))
        anything = st.integers(int(limits.min), int(limits.max))
    # A drawn run of values repeated to a drawn length: quick to draw, and every vector block differs.
    run = st.sampled_from([ordinary, anything]).flatmap(
        lambda elements: hnp.arrays(dtype, st.integers(1, 29), elements=elements))
    return st.builds(np.resize, run, st.integers(0, 300))


@pytest.mark.guarantee
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=20, deadline=None)
@given(data=st.data(), narrowing=st.sampled_from(["checked", "wrap"]),
       layout=st.sampled_from(["whole", "stepped", "transposed"]))
def test_generated_conversions_give_the_same_bits_and_errors_on_both_levels(both_levels, source, target, data,
                                                                          narrowing, layout):
    array = data.draw(sources(source))
    native, baseline = both_levels("convert", array, layout, target, narrowing)
    assert native == baseline
    assert native[0] == "ok" or (narrowing == "checked" and native[0] == "ValueRangeError"), native


def quantize_sources(scale):
    """Floats as sources() draws them, or values whose quotient by `scale` is a tie or next to one."""
    near_ties = st.tuples(st.integers(-300, 300), st.sampled_from([-1, 0, 1])).map(
        lambda step: float(np.float32((step[0] + 0.5) * scale) + np.float32(step[1] * scale * 2.0**-20)))
    run = hnp.arrays("float32", st.integers(1, 29), elements=near_ties)
    return sources("float32") | st.builds(np.resize, run, st.integers(0, 300))


@pytest.mark.guarantee
@settings(max_examples=150, deadline=None)
@given(data=st.data(), dtype=QUANTIZED, layout=st.sampled_from(["whole", "stepped", "transposed"]))
def test_generated_quantize_and_dequantize_give_the_same_bits_on_both_levels(both_levels, data, dtype, layout):
    values = data.draw(quantize_sources(dtype["scale"]))
    native, baseline = both_levels("quantize", values, layout, dtype["name"], dtype)
    assert native == baseline
    assert native[0] == "ok", native
    if "4" not in dtype["name"]:
        codes = values.view(np.uint8 if "Asymm" in dtype["name"] else np.int8)
        native, baseline = both_levels("dequantize", codes, layout, dtype["name"], dtype)
        assert native == baseline
        assert native[0] == "ok", native
