"""Lifetimes: what keeps memory alive, reference counts, threads, garbage collection and interpreter exit
(docs/lifetimes.md).
"""
import gc
import sys
import threading
import weakref

import numpy as np
import pytest

from conftest import BINDING, collected, EXAMPLE_MODULE, mgb_dtype, nbx, run_python


Tensor = nbx.Tensor


class Holder(np.ndarray):
    pass


@pytest.mark.hardening
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


@pytest.mark.hardening
def test_an_array_holding_its_own_tensor_is_collected():
    def make():
        a = np.arange(3, dtype=np.float32).view(Holder)
        a.t = Tensor.from_numpy(a)
        assert a.t.borrowed
        return a
    assert collected(make)


@pytest.mark.hardening
def test_a_tensor_shared_with_numpy_arrays_still_holds_its_array():
    # Only the sole holder of an owner reports its reference: a copy held
    # elsewhere keeps the array alive, so the collector must not free it.
    import gc
    a = np.arange(4, dtype=np.float32).view(Holder)
    t = Tensor.from_numpy(a)
    view = t.numpy()
    a.t = t
    del a, t
    gc.collect()
    assert view.tolist() == [0, 1, 2, 3]


def test_a_borrowed_tensor_keeps_the_array_alive():
    a = np.arange(1000, dtype=np.float32)
    expected = a.copy()
    t = Tensor.from_numpy(a)
    ref = weakref.ref(a) if hasattr(a, "__weakref__") else None
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), expected)
    del t
    gc.collect()
    if ref is not None:
        assert ref() is None


def test_a_shared_array_keeps_the_tensor_storage_alive():
    t = Tensor.from_numpy(np.arange(1000, dtype=np.int32), policy="copy")
    b = t.numpy()
    assert b.base is not None
    del t
    gc.collect()
    np.testing.assert_array_equal(b, np.arange(1000, dtype=np.int32))


def test_a_shared_array_of_cpp_memory_has_an_npybridge_owner_as_base():
    t = Tensor.from_numpy(np.arange(1000, dtype=np.int32), policy="copy")
    arrays = [t.numpy() for _ in range(200)]  # more than the owner objects kept for reuse
    owner_type = type(arrays[0].base)
    assert owner_type.__name__ == "owner" and owner_type.__module__ == "npybridge"
    assert all(type(b.base) is owner_type for b in arrays)
    assert len({id(b.base) for b in arrays}) == len(arrays)  # one owner per array
    with pytest.raises(TypeError, match="cannot create 'npybridge.owner' instances"):
        owner_type()
    del t
    for i, b in enumerate(arrays):  # each owner keeps the storage alive on its own
        np.testing.assert_array_equal(b, np.arange(1000, dtype=np.int32))
        arrays[i] = None
    gc.collect()
    again = Tensor.from_numpy(np.arange(4, dtype=np.int32), policy="copy").numpy()  # a recycled owner object
    assert type(again.base) is owner_type and again.tolist() == [0, 1, 2, 3]


def test_a_borrowed_tensor_shares_back_with_the_original_array_as_base():
    a = np.arange(6, dtype=np.float32)
    t = Tensor.from_numpy(a)
    b = t.numpy()
    assert b.base is a and np.shares_memory(a, b)  # no owner object in between
    del a, t
    gc.collect()
    b[0] = 7  # the memory is still alive (b keeps the array)
    assert b[0] == 7
    view = np.arange(12, dtype=np.float32)[::2]
    shared = Tensor.from_numpy(view).numpy()
    assert shared.base is view.base and shared.strides == view.strides  # numpy collapses to the owner


def test_the_refcount_check_sees_a_kept_reference_and_lets_collected_cycles_go(refcounts):
    # The check freezes what is alive before its loop: a reference a call keeps must still fail it, also when
    # it is kept by an object that was alive (and so frozen) before; garbage cycles the calls make must not.
    class Node:
        pass

    a = np.arange(4)
    kept = []
    with pytest.raises(AssertionError):
        refcounts([a], lambda: kept.append(a), times=10)
    holder = Node()
    holder.self, holder.items = holder, []
    with pytest.raises(AssertionError):
        refcounts([a], lambda: holder.items.append(a), times=10)

    def cycle():
        node = Node()
        node.self, node.array = node, a

    refcounts([a], cycle, times=1000)


def test_refcounts_are_stable_across_10000_conversions_each_way(refcounts):
    a = np.arange(64, dtype=np.float32)
    q = np.zeros(8, dtype=mgb_dtype("uint8", "Quantized8Asymm", 0.5, 3))
    t = Tensor.from_numpy(a, policy="copy")
    refcounts([a, a.dtype], lambda: Tensor.from_numpy(a))
    refcounts([q, q.dtype], lambda: Tensor.from_numpy(q).numpy())
    refcounts([t], lambda: t.numpy())
    refcounts([a], lambda: Tensor.from_numpy(a, dtype="float32", policy="copy"))


def test_failed_conversions_leak_nothing(refcounts):
    a = np.array([2**40], dtype=np.int64)
    bad = np.zeros(2, dtype=mgb_dtype("uint8", "Quantized8Asymm", 1.0, 300))

    def fail(obj, **kwargs):
        with pytest.raises(nbx.ConversionError):
            Tensor.from_numpy(obj, **kwargs)
    refcounts([a], lambda: fail(a), times=2000)
    refcounts([bad, bad.dtype], lambda: fail(bad), times=2000)
    refcounts([a], lambda: fail(a, policy="must_borrow"), times=2000)


def test_conversions_run_on_other_threads():
    results, errors = [], []

    def work(seed):
        try:
            for i in range(200):
                a = np.full((16, 16), seed + i, dtype=np.float32)
                t = Tensor.from_numpy(a)
                c = Tensor.from_numpy(a.astype(np.float64))
                assert (t.numpy() == seed + i).all() and (c.numpy() == seed + i).all()
            results.append(seed)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and sorted(results) == [0, 1, 2, 3]


def test_tensor_released_on_another_thread_releases_the_array():
    a = np.arange(10, dtype=np.float32)
    before = sys.getrefcount(a)
    holder = [Tensor.from_numpy(a)]
    assert sys.getrefcount(a) == before + 1
    th = threading.Thread(target=holder.clear)
    th.start()
    th.join()
    assert sys.getrefcount(a) == before
