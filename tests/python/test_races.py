"""Another Python thread rewriting an array while a checked conversion of it runs without the GIL: the conversion
either succeeds, storing only values the array held, or raises ValueRangeError naming a value the array held and its
index, the destination untouched. Never a crash, a MemoryError, an empty value or a value the array never held
(docs/copies.md, "Threads").

A kernel that meets a bad value stops; the error then names the first bad value of one reading of the array. A
thread that puts the value back in between must not leave the error path with nothing to name. A check that runs
before its kernel (NumPy's casts, rounding to bfloat16, packing, copies into existing memory) reads a private copy
that the kernel then reads: never a value that passed the check and changed before it was stored.
"""
import re
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import nbx, repeats

Tensor = nbx.Tensor
MIB = 1 << 20

# (source dtype, target, a value the target does not hold, one it holds, the bad value as the message names it).
# The bad and the good value differ in one byte: a copy that moves an element in pieces (AddressSanitizer's memcpy,
# which NumPy's own copies of the array call in the asan suite) cannot make a third value out of the two.
HUGE = 8.229186103190533e303  # 3.0 with its top byte 0x7F: no Float32, BFloat16 or Complex64 holds it
CASES = {
    "float64 -> Int8": (np.float64, "Int8", 98304.0, 3.0, "98304.0"),
    "float64 -> Int8, not whole": (np.float64, "Int8", 2.5, 3.0, "2.5"),
    "float32 -> Int16": (np.float32, "Int16", 49152.0, 3.0, "49152.0"),
    "int64 -> Int8": (np.int64, "Int8", (1 << 40) + 3, 3, str((1 << 40) + 3)),
    "int32 -> Uint8": (np.int32, "Uint8", -16777213, 3, "-16777213"),
    "int64 -> Float16": (np.int64, "Float16", 2049, 2048, "2049"),
    "int32 -> BFloat16": (np.int32, "BFloat16", 257, 256, "257"),
    "int64 -> Float32": (np.int64, "Float32", (1 << 24) + 1, 1 << 24, str((1 << 24) + 1)),
    "float32 -> Float16": (np.float32, "Float16", 196608.0, 3.0, "196608.0"),
    "float64 -> BFloat16": (np.float64, "BFloat16", HUGE, 3.0, repr(HUGE)),
    "complex128 -> Complex64": (np.complex128, "Complex64", HUGE + 0j, 3 + 0j, repr(HUGE + 0j)),
    "float64 -> Float32": (np.float64, "Float32", HUGE, 3.0, repr(HUGE)),
    "int64 -> Int32": (np.int64, "Int32", (1 << 40) + 3, 3, str((1 << 40) + 3)),
    "float16 -> Int8": (np.float16, "Int8", 256.0, 3.0, "256.0"),
    "uint64 -> Int16": (np.uint64, "Int16", (1 << 40) + 3, 3, str((1 << 40) + 3)),
    "int8 -> IntB4": (np.int8, "IntB4", 4, 3, "4"),
    "int32 -> IntB4": (np.int32, "IntB4", 259, 3, "259"),
}


def test_the_bad_and_the_good_value_differ_in_one_byte():
    for case, (numpy_type, _, bad, good, _) in CASES.items():
        bad_bytes, good_bytes = np.array(bad, numpy_type).tobytes(), np.array(good, numpy_type).tobytes()
        assert sum(a != b for a, b in zip(bad_bytes, good_bytes)) == 1, case


# How the source is laid out: each picks another kernel or layout class of the kernel table.
LAYOUTS = {
    "contiguous": lambda a: a,
    "every other": lambda a: a.reshape(-1, 2)[:, 0],
    "transposed": lambda a: a.reshape(512, -1).T,
    "rows of a transpose": lambda a: a.reshape(-1, 64).T,
    "permuted 3-D": lambda a: a.reshape(16, 32, -1).transpose(2, 0, 1),
}


def raced(case, layout, where, tries, into=False):
    """Checked conversions of the case's array (into a new tensor, or `into` an existing one) while a thread flips one
    element between the bad and the good value; what each call gave (None: it converted, holding only good values)."""
    numpy_type, target, bad, good, shown = CASES[case]
    count = 2 * MIB // np.dtype(numpy_type).itemsize  # 2 MiB: the GIL is released, the slab kernels see several
    base = np.full(count, good, dtype=numpy_type)
    view = LAYOUTS[layout](base)
    expected = Tensor.from_numpy(view.copy(), dtype=target).storage()  # every value good
    destination = Tensor.from_numpy(np.ones(view.shape, numpy_type), dtype=target) if into else None
    before = destination.storage() if into else None
    flat = np.unravel_index(int(where * view.size) % view.size, view.shape)
    stop = threading.Event()

    def flip():  # as long bad as good
        while not stop.is_set():
            view[flat] = bad
            for _ in range(50):
                pass
            view[flat] = good
            for _ in range(50):
                pass

    outcomes = []
    thread = threading.Thread(target=flip)
    # The GIL changes hands every 0.1 ms, not 5: the calls wait less for it, and the element changes more often.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    thread.start()
    try:
        for _ in range(tries):
            try:
                if into:
                    destination.copy_from(view, narrowing="checked")
                    made = destination
                else:
                    made = Tensor.from_numpy(view, dtype=target, narrowing="checked")
                # The bad value does not fit the target: a success read the good one everywhere.
                assert made.storage() == expected, "stored a value the array never held"
                outcomes.append(None)
                if into:
                    destination = Tensor.from_numpy(np.ones(view.shape, numpy_type), dtype=target)
            except nbx.ValueRangeError as error:
                outcomes.append(str(error))
                if into:
                    assert destination.storage() == before, "the destination was written"
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    index = ", ".join(str(int(i)) for i in flat)
    return outcomes, shown, index


@pytest.mark.hardening
@pytest.mark.guarantee
@settings(max_examples=12, deadline=None)
@given(case=st.sampled_from(sorted(CASES)), layout=st.sampled_from(sorted(LAYOUTS)),
       where=st.floats(0, 1, exclude_max=True), into=st.booleans())
def test_a_thread_changing_the_array_never_makes_a_checked_conversion_crash(case, layout, where, into):
    outcomes, shown, index = raced(case, layout, where, tries=repeats(12), into=into)
    for message in outcomes:
        if message is None:
            continue
        # The value named is the bad one (a value the array held), at its index, as the source holds it.
        pattern = r"value %s( \(not held exactly[^)]*\))? at index \(%s,?\)" % (re.escape(shown), re.escape(index))
        assert re.search(pattern, message), message


@pytest.mark.hardening
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("into", [False, True], ids=["new tensor", "copy_into"])
def test_every_kernel_survives_a_racing_thread(case, into):
    # Each case through every layout, many calls: the error path runs while the element changes under it.
    for layout in LAYOUTS:
        outcomes, shown, index = raced(case, layout, 0.37, tries=repeats(15), into=into)
        for message in outcomes:
            assert message is None or re.search(r"value %s[ (]" % re.escape(shown), message), message
