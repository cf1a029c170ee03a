"""Python <-> C++ errors and the origin tracker, as a Python user sees them (docs/errors.md)."""
import gc
import os
import subprocess
import sys
import textwrap
import threading
import traceback

import numpy as np
import pytest

from conftest import BINDING, collected, EXAMPLE_MODULE, nbx


class CallbackError(Exception):
    pass


def test_an_exception_from_a_callback_comes_back_as_the_same_object():
    raised = CallbackError("from the callback")

    def callback(a, b):
        raise raised

    with pytest.raises(CallbackError) as caught:
        nbx.call(callback, 1, 2)
    assert caught.value is raised
    frames = [frame.name for frame in traceback.extract_tb(caught.value.__traceback__)]
    assert "callback" in frames


def test_call_returns_the_callbacks_result_and_passes_arguments():
    assert nbx.call(lambda *args: sum(args), 1, 2, 3) == 6
    assert nbx.call(dict) == {}


def test_exceptions_from_callbacks_on_other_threads_come_back_too():
    results = []

    def worker(i):
        try:
            nbx.call(lambda: (_ for _ in ()).throw(ValueError(f"thread {i}")))
        except ValueError as e:
            results.append(str(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [f"thread {i}" for i in range(4)]


# npybridge's own exceptions arrive as npybridge's classes in every module; other standard C++ exceptions are
# the binding library's to translate (pybind11 and nanobind map std::out_of_range to IndexError, as their users
# expect), while the CPython-API module uses npybridge::guarded, which names the C++ type. An exception that is
# not a std::exception is a RuntimeError naming its C++ type in all three (nanobind alone would raise a
# SystemError, pybind11 a RuntimeError that names nothing).
CPP_EXCEPTIONS = {
    "cpython": [
        ("out_of_range", RuntimeError, "std::out_of_range: index 7"),
        ("runtime_error", RuntimeError, "std::runtime_error: index 7"),
        ("conversion", nbx.ConversionError, "npybridge::conversion_error: index 7"),
        ("unknown", RuntimeError, "unknown C++ exception of type"),
    ],
    "pybind11": [
        ("out_of_range", IndexError, "index 7"),
        ("runtime_error", RuntimeError, "index 7"),
        ("conversion", nbx.ConversionError, "npybridge::conversion_error: index 7"),
        ("unknown", RuntimeError, "unknown C++ exception of type"),
    ],
    "nanobind": [
        ("out_of_range", IndexError, "index 7"),
        ("runtime_error", RuntimeError, "index 7"),
        ("conversion", nbx.ConversionError, "npybridge::conversion_error: index 7"),
        ("unknown", RuntimeError, "unknown C++ exception of type"),
    ],
}[BINDING]


@pytest.mark.parametrize("kind, python_type, text", CPP_EXCEPTIONS)
def test_cpp_exceptions_arrive_as_python_exceptions_naming_the_cpp_type(kind, python_type, text):
    with pytest.raises(python_type) as caught:
        nbx.throw_cpp(kind, "index 7")
    assert text in str(caught.value)


def test_bad_alloc_is_memory_error():
    with pytest.raises(MemoryError):
        nbx.throw_cpp("bad_alloc", "ignored")


def test_conversion_errors_are_type_and_value_errors():
    with pytest.raises(TypeError):
        nbx.throw_cpp("conversion", "x")
    with pytest.raises(ValueError):
        nbx.throw_cpp("conversion", "x")


def test_the_tracker_names_the_origin_it_was_given():
    tracker = nbx.OriginTracker()
    tag = ("layer", 3)
    with tracker.scope(tag) as entered:
        assert entered is tag
        inside = tracker.create()
    outside = tracker.create()
    assert tracker.origin(inside) is tag
    assert tracker.origin(outside) is None
    assert repr(tag) in tracker.blame(inside, "shape mismatch")
    assert tracker.blame(inside, "shape mismatch").startswith("shape mismatch")
    assert "outside any origin_tracker scope" in tracker.blame(outside)


def test_the_tracker_can_tag_with_the_creating_stack():
    tracker = nbx.OriginTracker()

    def build_model():
        with tracker.scope(traceback.extract_stack()):
            return tracker.create()

    key = build_model()
    assert "build_model" in tracker.blame(key)


def test_nested_scopes_are_a_runtime_error():
    tracker = nbx.OriginTracker()
    with tracker.scope("outer"):
        with pytest.raises(RuntimeError, match="already active"):
            with tracker.scope("inner"):
                pass
        key = tracker.create()
    assert tracker.origin(key) == "outer"
    with tracker.scope("again"):  # usable again once the scope ended
        assert tracker.origin(tracker.create()) == "again"


def test_tag_refcounts_return_to_their_start_when_the_tracker_dies():
    tags = [object() for _ in range(3)]
    before = [sys.getrefcount(t) for t in tags]
    tracker = nbx.OriginTracker()
    for i in range(3):
        with tracker.scope(tags[i]):
            for _ in range(100):
                tracker.create()
    assert tracker.tagged() == 300
    assert [sys.getrefcount(t) for t in tags] == [b + 100 for b in before]
    del tracker
    gc.collect()
    assert [sys.getrefcount(t) for t in tags] == before


def test_forgetting_and_exceptions_inside_scopes_keep_counts_balanced():
    tag = object()
    before = sys.getrefcount(tag)
    tracker = nbx.OriginTracker()
    with pytest.raises(KeyError):
        with tracker.scope(tag):
            key = tracker.create()
            raise KeyError("inside")
    assert not tracker.origin(key) is None
    tracker.forget(key)
    assert tracker.origin(key) is None
    assert sys.getrefcount(tag) == before
    scope = tracker.scope(tag)
    scope.__enter__()
    del scope  # dropped while active: the scope ends, its reference goes
    gc.collect()
    assert sys.getrefcount(tag) == before
    del tracker


@pytest.mark.parametrize("name", ["Tensor", "TrackerScope"])
def test_types_made_in_cpp_cannot_be_made_from_python(name):
    # Their internals come only from from_numpy / from_storage and OriginTracker.scope:
    # an empty one used to report address 0 (Tensor) or crash on __enter__ (TrackerScope).
    message = (f"cannot create '{EXAMPLE_MODULE}.{name}' instances" if BINDING == "cpython" else
               f"(?i){EXAMPLE_MODULE}.{name}: no constructor defined")
    with pytest.raises(TypeError, match=message):
        getattr(nbx, name)()


class Tag:
    pass


PROBE = textwrap.dedent("""
    import gc, sys
    import numpy as np
    import {module} as m
    arguments = {{"copy_from": (np.zeros(2, np.float32),), "scope": ("tag",), "create": (), "blame": (0, "x")}}
    refused = 0
    for name in ("Tensor", "TrackerScope", "OriginTracker"):
        cls = getattr(m, name)
        try:
            bare = cls.__new__(cls)
        except TypeError:
            print(name, "refused at __new__")
            continue
        own = lambda a: any(a in vars(k) for k in cls.__mro__[:-1] if k.__module__ == m.__name__)
        for attribute in sorted(a for a in dir(cls) if (not a.startswith("_") or a in ("__repr__", "__enter__", "__exit__", "__dlpack__")) and own(a)):
            try:
                value = getattr(bare, attribute)
                if callable(value) and not isinstance(value, type):
                    value(*arguments.get(attribute, ()))
                elif not callable(value):
                    pass
                else:
                    continue
            except TypeError:
                refused += 1
                continue
            except Exception as error:
                # static factories (from_numpy, ...) do not touch the bare instance: anything they raise is theirs
                if isinstance(getattr(cls, attribute, None), (staticmethod, classmethod)) or attribute.startswith("from_"):
                    continue
                print("NOT A TYPEERROR", name, attribute, type(error).__name__, error)
                continue
            if attribute.startswith("from_") or attribute in ("numpy_type",):
                continue
            print("ACCEPTED", name, attribute)
        del bare
        gc.collect()
    print("refused", refused)
    print("done")
""")


@pytest.mark.hardening
def test_a_tag_that_refers_to_its_tracker_is_collected():
    def make():
        tracker = nbx.OriginTracker()
        tag = Tag()
        tag.tracker = tracker
        with tracker.scope(tag):
            tracker.create()
        return tag  # held by the tracker, which the tag holds
    assert collected(make)


@pytest.mark.hardening
def test_a_scope_on_a_frame_lets_the_frame_go():
    def make():
        tracker = nbx.OriginTracker()
        marker = Tag()  # lives as long as this frame's locals
        scope = tracker.scope(sys._getframe())  # the frame holds the scope, the scope the frame
        assert scope is not None
        return marker
    assert collected(make)


@pytest.mark.hardening
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


@pytest.mark.hardening
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


@pytest.mark.hardening
def test_bare_instances_raise_type_errors_and_never_crash():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", PROBE.format(module=EXAMPLE_MODULE)], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "done", result.stdout
    assert not [line for line in lines if line.startswith("NOT A TYPEERROR")], result.stdout
    accepted = {tuple(line.split()[1:]) for line in lines if line.startswith("ACCEPTED")}
    if BINDING == "cpython":
        assert "Tensor refused at __new__" in lines and "TrackerScope refused at __new__" in lines, result.stdout
        assert all(name == "OriginTracker" for name, _ in accepted), accepted  # a whole tracker: it works
    else:
        assert accepted == set(), accepted
        refused = int(next(line for line in lines if line.startswith("refused")).split()[1])
        assert refused >= 15, result.stdout  # Tensor's properties and methods, the scope's and the tracker's


def test_error_classes_form_the_documented_hierarchy():
    assert issubclass(nbx.ConversionError, TypeError) and issubclass(nbx.ConversionError, ValueError)
    assert issubclass(nbx.DTypeError, nbx.ConversionError)
    assert issubclass(nbx.MetadataError, nbx.DTypeError)
    assert issubclass(nbx.ValueRangeError, nbx.ConversionError)
