// The Python <-> C++ error bridge and the origin tracker at C++ level (docs/errors.md).
#include <catch2/catch.hpp>

#include <npybridge/python_errors.hpp>
#include <npybridge/tracker.hpp>
#include <npybridge/core/detail/tag_table.hpp>

#include "tests/support/python.hpp"

#include <exception>
#include <new>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>

namespace npb = npybridge;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// Runs `code` (statements) in a fresh namespace with the GIL held.
void run(const std::string& code) {
    test::owned globals{PyDict_New()};
    PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
    test::owned result{PyRun_String(code.c_str(), Py_file_input, globals.get(), globals.get())};
    if (!result) throw npb::python_error();
}

struct custom_failure {};

/// The Python exception translate_exception() sets for `thrower`, as (type name, message).
template <class F>
std::pair<std::string, std::string> translated(F&& thrower) {
    try {
        thrower();
    } catch (...) {
        npb::translate_exception();
    }
    REQUIRE(PyErr_Occurred() != nullptr);
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    const std::string name = reinterpret_cast<PyTypeObject*>(type)->tp_name;
    test::owned text{PyObject_Str(value)};
    const std::string message = text ? PyUnicode_AsUTF8(text.get()) : "";
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    return {name, message};
}

}  // namespace

TEST_CASE("a Python error travels through C++ and is restored as the same object", "[errors][python]") {
    SECTION("what() holds the formatted traceback; restore gives back the very exception") {
        std::optional<npb::python_error> captured;
        try {
            run("def inner():\n    raise KeyError('missing key')\ninner()\n");
        } catch (const npb::python_error& e) {
            captured = e;
        }
        REQUIRE(captured);
        CHECK_THAT(captured->what(), StartsWith("Traceback (most recent call last):") && Contains("in inner") &&
                                         Contains("KeyError: 'missing key'"));
        CHECK_FALSE(PyErr_Occurred());
        PyObject* original = captured->value();
        Py_INCREF(original);
        CHECK(captured->matches(PyExc_KeyError));
        captured->restore();
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        CHECK(value == original);
        CHECK(type == PyExc_KeyError);
        CHECK(traceback != nullptr);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        Py_DECREF(original);
        SECTION("a second restore says the error was already given back, keeping the message") {
            captured->restore();
            const auto [name, message] = translated([] { throw npb::python_error(); });
            CHECK(name == "RuntimeError");
            CHECK_THAT(message, Contains("already restored") && Contains("KeyError"));
        }
    }
    SECTION("an error caught on one thread is restored on another") {
        std::optional<npb::python_error> from_thread;
        PyObject* raised = nullptr;
        Py_BEGIN_ALLOW_THREADS std::thread worker([&] {
            npb::gil_acquire gil;
            try {
                run("raise ValueError('raised on a worker thread')");
            } catch (const npb::python_error& e) {
                from_thread = e;
                raised = e.value();
                Py_INCREF(raised);
            }
        });
        worker.join();
        Py_END_ALLOW_THREADS REQUIRE(from_thread);
        from_thread->restore();
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        CHECK(value == raised);
        CHECK(type == PyExc_ValueError);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        Py_DECREF(raised);
    }
    SECTION("a copy released on a thread without the GIL takes the GIL to drop its references") {
        std::optional<npb::python_error> captured;
        try {
            run("raise IndexError(3)");
        } catch (const npb::python_error& e) {
            captured = e;
        }
        Py_BEGIN_ALLOW_THREADS std::thread([moved = std::move(*captured)]() mutable { (void)moved; }).join();
        Py_END_ALLOW_THREADS CHECK_FALSE(PyErr_Occurred());
    }
    SECTION("an exception whose traceback cannot be formatted still has a message") {
        std::optional<npb::python_error> captured;
        try {
            run("class Unprintable(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n"
                "raise Unprintable()\n");
        } catch (const npb::python_error& e) {
            captured = e;
        }
        REQUIRE(captured);
        CHECK_THAT(captured->what(), Contains("Unprintable"));
        CHECK_FALSE(PyErr_Occurred());
    }
}

TEST_CASE("C++ exceptions become the right Python exceptions", "[errors][python]") {
    test::owned module{PyModule_New("npybridge_test_errors")};
    REQUIRE(npb::make_exception_classes(module.get()));
    // (C++ exception, Python type name, text the message must hold)
    CHECK(translated([] { throw std::out_of_range("index 3"); }) ==
          std::pair<std::string, std::string>{"RuntimeError", "std::out_of_range: index 3"});
    CHECK(translated([] { throw std::runtime_error("boom"); }).second == "std::runtime_error: boom");
    CHECK(translated([] { throw std::bad_alloc(); }).first == "MemoryError");
    CHECK(translated([] { throw npb::conversion_error("no"); }) ==
          std::pair<std::string, std::string>{"ConversionError", "npybridge::conversion_error: no"});
    CHECK(translated([] { throw npb::metadata_error("zp"); }).first == "MetadataError");
    CHECK(translated([] { throw npb::dtype_error("dt"); }).first == "DTypeError");
    CHECK(translated([] { throw npb::value_range_error("v"); }).first == "ValueRangeError");
    CHECK(translated([] { throw npb::error("e"); }).first == "Error");
    const auto unknown = translated([] { throw custom_failure{}; });
    CHECK(unknown.first == "RuntimeError");
    CHECK_THAT(unknown.second, Contains("unknown C++ exception of type") && Contains("custom_failure"));
    SECTION("the classes subclass what they stand for, and live in the module") {
        const npb::exception_classes& classes = npb::registered_exception_classes();
        test::owned module_name{PyObject_GetAttrString(classes.conversion_error, "__module__")};
        CHECK(std::string(PyUnicode_AsUTF8(module_name.get())) == "npybridge_test_errors");
        CHECK(PyObject_GetAttrString(module.get(), "ConversionError") == classes.conversion_error);
        Py_DECREF(classes.conversion_error);
        CHECK(PyObject_IsSubclass(classes.conversion_error, PyExc_TypeError) == 1);
        CHECK(PyObject_IsSubclass(classes.conversion_error, PyExc_ValueError) == 1);
        CHECK(PyObject_IsSubclass(classes.metadata_error, classes.dtype_error) == 1);
        CHECK(PyObject_IsSubclass(classes.value_range_error, classes.conversion_error) == 1);
        CHECK(PyObject_IsSubclass(classes.error, PyExc_RuntimeError) == 1);
    }
    SECTION("a binding library's translator: npybridge's and unknown types raised, standard ones handed back") {
        const auto pointer_to = [](auto thrown) { return std::make_exception_ptr(thrown); };
        npb::translate_exception(std::exception_ptr{});  // a forced unwind: nothing to do
        CHECK_FALSE(PyErr_Occurred());
        CHECK_THROWS_AS(npb::translate_exception(pointer_to(std::out_of_range("index 3"))), std::out_of_range);
        CHECK_FALSE(PyErr_Occurred());
        npb::translate_exception(pointer_to(npb::value_range_error("value 300")));
        CHECK(PyErr_ExceptionMatches(npb::registered_exception_classes().value_range_error));
        PyErr_Clear();
        npb::translate_exception(pointer_to(custom_failure{}));
        CHECK(PyErr_ExceptionMatches(PyExc_RuntimeError));
        PyErr_Clear();
    }
    SECTION("guarded() returns nullptr with the error set") {
        PyObject* result = npb::guarded([]() -> PyObject* { throw npb::dtype_error("via guarded"); });
        CHECK(result == nullptr);
        CHECK(PyErr_ExceptionMatches(npb::registered_exception_classes().dtype_error));
        PyErr_Clear();
    }
}

TEST_CASE("demangling and safe repr never fail", "[errors]") {
    CHECK(npb::demangle(typeid(std::out_of_range).name()) == "std::out_of_range");
    CHECK(npb::demangle("not a mangled name") == "not a mangled name");
    CHECK(npb::safe_repr(nullptr) == "<NULL>");
    test::owned number = test::eval("[1, 'two']");
    CHECK(npb::safe_repr(number.get()) == "[1, 'two']");
    run("class Bad:\n    def __repr__(self):\n        raise ValueError('no repr')\nimport "
        "builtins\nbuiltins._npybridge_bad = Bad()\n");
    test::owned bad = test::eval("_npybridge_bad");
    CHECK_THAT(npb::safe_repr(bad.get()), Contains("<Bad object at") && Contains("(repr failed)"));
    CHECK_FALSE(PyErr_Occurred());
    SECTION("a pending error survives safe_repr") {
        PyErr_SetString(PyExc_KeyError, "pending");
        (void)npb::safe_repr(bad.get());
        CHECK(PyErr_ExceptionMatches(PyExc_KeyError));
        PyErr_Clear();
    }
}

TEST_CASE("the origin tracker tags, blames and balances references", "[tracker]") {
    test::owned tag = test::eval("('model.py', 12)");
    const Py_ssize_t start = Py_REFCNT(tag.get());
    {
        npb::origin_tracker<const void*> tracker;
        int op_a = 0, op_b = 0, op_c = 0;
        tracker.on_create(&op_c);  // no scope: untagged
        {
            auto scope = tracker.enter(tag.get());
            tracker.on_create(&op_a);
            tracker.on_create(&op_b);
            CHECK_THAT(test::message_of<npb::error>([&] { (void)tracker.enter(tag.get()); }),
                       Contains("already active"));
        }
        CHECK_FALSE(tracker.active());
        CHECK(tracker.origin(&op_a) == tag.get());
        CHECK(tracker.origin(&op_c) == nullptr);
        CHECK_THAT(tracker.blame(&op_b, "shape mismatch in op_b"),
                   StartsWith("shape mismatch in op_b") && Contains("created at: ('model.py', 12)"));
        CHECK(Py_REFCNT(tag.get()) == start + 2);
        tracker.forget(&op_a);
        CHECK(Py_REFCNT(tag.get()) == start + 1);
        SECTION("a stack tag names the creating function") {
            run("import builtins, traceback\ndef make_layer():\n    return traceback.extract_stack()\n"
                "builtins._npybridge_stack = make_layer()\n");
            test::owned summary = test::eval("_npybridge_stack");
            auto scope = tracker.enter(summary.get());
            tracker.on_create(&op_c);
            scope.end();
            CHECK_THAT(tracker.blame(&op_c), Contains("make_layer"));
            CHECK(npb::current_python_stack());
        }
    }
    CHECK(Py_REFCNT(tag.get()) == start);  // the tracker died holding tags: all released
}

TEST_CASE("the tracker's table agrees with a std::unordered_map over random inserts, lookups and erases", "[tracker]") {
    // Keys 16 bytes apart, as the addresses the tracker is given: the hash of a pointer is the address.
    static char arena[16 * 512];
    std::mt19937_64 random(5);
    npb::detail::tag_table<const void*, int, std::hash<const void*>> table;
    std::unordered_map<const void*, int> oracle;
    for (int step = 0; step < 20000; ++step) {
        const void* key = arena + 16 * (random() % 512);
        const int value = static_cast<int>(random() % 1000);
        CAPTURE(step);
        switch (random() % 3) {
            case 0: {
                const auto [slot, inserted] = table.try_emplace(key, value);
                const auto [expected, added] = oracle.try_emplace(key, value);
                REQUIRE(inserted == added);
                REQUIRE(*slot == expected->second);
                break;
            }
            case 1: REQUIRE(table.erase(key) == (oracle.erase(key) == 1)); break;
            default: {
                const int* found = table.find(key);
                const auto expected = oracle.find(key);
                REQUIRE((found != nullptr) == (expected != oracle.end()));
                if (found) REQUIRE(*found == expected->second);
            }
        }
        REQUIRE(table.size() == oracle.size());
    }
    int seen = 0;
    table.for_each([&](const void* key, int value) {
        CHECK(oracle.at(key) == value);
        ++seen;
        return 0;
    });
    CHECK(seen == static_cast<int>(oracle.size()));
    const auto taken = table.take();
    CHECK(table.size() == 0);
    CHECK(taken.size() == oracle.size());
    CHECK(table.find(arena) == nullptr);
}

namespace {

/// A hash with long runs (four values for every key) that throws for key 13 while `poisoned`.
struct fragile_hash {
    static inline bool poisoned = false;
    std::size_t operator()(int key) const {
        if (poisoned && key == 13) throw std::runtime_error("hash of 13");
        return static_cast<std::size_t>(key % 4);
    }
};

}  // namespace

TEST_CASE("what the tracker's Hash throws passes through and leaves its table as it was", "[tracker]") {
    npb::detail::tag_table<int, int, fragile_hash> table;
    for (int key = 0; key < 40; ++key) table.try_emplace(key, 10 * key);
    fragile_hash::poisoned = true;
    CHECK_THROWS_WITH(table.find(13), "hash of 13");
    CHECK_THROWS_WITH(table.erase(13), "hash of 13");
    CHECK_THROWS_WITH(table.try_emplace(13, 0), "hash of 13");
    // Growing and erasing move 13's entry (in the runs of the erased keys) without hashing it again.
    for (int key = 40; key < 100; ++key) table.try_emplace(key, 10 * key);
    for (int key = 0; key < 100; key += 3) CHECK(table.erase(key));
    fragile_hash::poisoned = false;
    CHECK(table.size() == 66);
    for (int key = 0; key < 100; ++key) {
        CAPTURE(key);
        const int* found = table.find(key);
        REQUIRE((found != nullptr) == (key % 3 != 0));
        if (found) CHECK(*found == 10 * key);
    }
}
