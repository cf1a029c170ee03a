// npybridge/python.hpp — owning references, GIL guards, safe text of Python objects.
#pragma once

#include <npybridge/core/config.hpp>

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <npybridge/core/detail/thread_end.hpp>
#include <npybridge/core/errors.hpp>

#if defined(__GNUG__) || defined(__clang__)
#include <cxxabi.h>

#include <cstdlib>
#define NPYBRIDGE_HAS_CXXABI 1
#endif

#include <cstdio>
#include <memory>
#include <string>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// An owning, move-only reference; destroy it with the GIL held (or release() first).
class object {
public:
    object() noexcept = default;
    /// Takes over a new reference (nullptr allowed).
    static object steal(PyObject* ptr) noexcept { return object(ptr); }
    /// Adds a reference to a borrowed one.
    static object borrow(PyObject* ptr) noexcept {
        Py_XINCREF(ptr);
        return object(ptr);
    }

    object(object&& other) noexcept : m_ptr(std::exchange(other.m_ptr, nullptr)) {}
    object& operator=(object&& other) noexcept;
    object(const object&) = delete;
    object& operator=(const object&) = delete;
    ~object() { drop(); }

    PyObject* get() const noexcept { return m_ptr; }
    /// Gives the reference away.
    PyObject* release() noexcept { return std::exchange(m_ptr, nullptr); }
    explicit operator bool() const noexcept { return m_ptr != nullptr; }

private:
    explicit object(PyObject* ptr) noexcept : m_ptr(ptr) {}
    void drop() noexcept;
    PyObject* m_ptr = nullptr;
};

/// Holds the GIL for a scope, from any thread.
class gil_acquire {
public:
    gil_acquire() noexcept : m_state(PyGILState_Ensure()) {}
    ~gil_acquire() { PyGILState_Release(m_state); }
    gil_acquire(const gil_acquire&) = delete;
    gil_acquire& operator=(const gil_acquire&) = delete;

private:
    PyGILState_STATE m_state;
};

/// Gives up the GIL for a scope. Its destructor is noexcept(false) (a daemon thread ends by forced unwind during
/// finalization): a plain local, never in std::optional. without_gil() is the conditional form.
class gil_release {
public:
    gil_release() noexcept : m_state(PyEval_SaveThread()) {}
    ~gil_release() noexcept(false);
    gil_release(const gil_release&) = delete;
    gil_release& operator=(const gil_release&) = delete;

private:
    PyThreadState* m_state;
};

/// f() without the GIL when `release`, else with it; f must not touch Python.
template <class F>
decltype(auto) without_gil(bool release, F&& f);

/// Sets the pending Python error aside for a scope.
class pending_error_kept {
public:
    pending_error_kept() noexcept { PyErr_Fetch(&m_type, &m_value, &m_traceback); }
    ~pending_error_kept() { PyErr_Restore(m_type, m_value, m_traceback); }
    pending_error_kept(const pending_error_kept&) = delete;
    pending_error_kept& operator=(const pending_error_kept&) = delete;

private:
    PyObject* m_type;
    PyObject* m_value;
    PyObject* m_traceback;
};

/// repr(obj) that never fails (nullptr, a raising __repr__); keeps a pending error. GIL required.
inline std::string safe_repr(PyObject* obj);

/// Readable C++ type name (demangled where the ABI allows).
inline std::string demangle(const char* name);

/// True while Python can run code; owners released later leak their reference.
inline bool python_alive() noexcept;

/// Runs f() with the GIL from any thread; false without running it once the interpreter finalizes (Py_IsInitialized()
/// first: PyGILState_Check() answers 1 then).
template <class F>
bool under_gil(F&& f) noexcept;

/// The pending Python error as a C++ exception (copies share it); what() formats the traceback once, restore() hands
/// the exception back.
class python_error : public error {
public:
    /// Captures and clears the pending error (GIL required); with none pending, a SystemError saying so.
    python_error() : error("npybridge: Python error"), m_state(fetch()) {}

    /// The formatted traceback, taking the GIL if needed; after restore(), the text formatted before or the type's
    /// name.
    const char* what() const noexcept override;

    /// Makes the exception Python's pending error again (GIL required); a second restore raises RuntimeError.
    void restore() const;

    /// The type (borrowed; nullptr once restored).
    PyObject* type() const noexcept;
    /// The instance (borrowed; nullptr once restored).
    PyObject* value() const noexcept;

    /// True when the exception is an `exception_class`.
    bool matches(PyObject* exception_class) const;

private:
    struct state;
    static std::shared_ptr<state> fetch();
    /// The traceback via the traceback module, else "TypeName: message"; leaves no Python error.
    static std::string format(PyObject* type, PyObject* value, PyObject* traceback);

    std::shared_ptr<state> m_state;
};

/// Example: a loop that lets other threads run Python.
/// ```cpp
/// #include <npybridge/python.hpp>
///
/// double total(const double* values, Py_ssize_t n) {
///     return npybridge::without_gil(n >= 4096, [&] {
///         double sum = 0;
///         for (Py_ssize_t i = 0; i < n; ++i) sum += values[i];
///         return sum;
///     });
/// }
/// ```

// ---- Definitions

inline object& object::operator=(object&& other) noexcept {
    if (this != &other) {
        drop();
        m_ptr = std::exchange(other.m_ptr, nullptr);
    }
    return *this;
}

inline void object::drop() noexcept {
    if (m_ptr != nullptr && !detail::python_ended_a_thread.load(std::memory_order_relaxed)) Py_DECREF(m_ptr);
}

inline gil_release::~gil_release() noexcept(false) {
    try {
        PyEval_RestoreThread(m_state);
    } catch (...) {  // forced unwind: Python ends this thread
        detail::python_ended_a_thread.store(true, std::memory_order_relaxed);
        throw;
    }
}

template <class F>
decltype(auto) without_gil(bool release, F&& f) {
    if (!release) return std::forward<F>(f)();
    gil_release unlocked;
    return std::forward<F>(f)();
}

inline std::string safe_repr(PyObject* obj) {
    if (obj == nullptr) return "<NULL>";
    const pending_error_kept kept;
    std::string text;
    PyObject* repr = PyObject_Repr(obj);
    const char* utf8 = repr ? PyUnicode_AsUTF8(repr) : nullptr;
    if (utf8 != nullptr) {
        text = utf8;
    } else {
        PyErr_Clear();
        char buffer[160];
        std::snprintf(buffer, sizeof buffer, "<%s object at %p (repr failed)>", Py_TYPE(obj)->tp_name,
                      static_cast<void*>(obj));
        text = buffer;
    }
    Py_XDECREF(repr);
    return text;
}

inline std::string demangle(const char* name) {
#if NPYBRIDGE_HAS_CXXABI
    int status = 0;
    char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && readable) {
        std::string text;
        try {
            text = readable;
        } catch (...) {
            std::free(readable);
            throw;
        }
        std::free(readable);
        return text;
    }
#endif
    return name ? name : "<unknown type>";
}

inline bool python_alive() noexcept {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsInitialized() && !Py_IsFinalizing();
#else
    return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

template <class F>
bool under_gil(F&& f) noexcept {
    if (Py_IsInitialized() && PyGILState_Check()) {  // the common case
        f();
        return true;
    }
    if (!python_alive()) return false;
    gil_acquire gil;
    f();
    return true;
}

struct python_error::state {
    PyObject* type = nullptr;
    PyObject* value = nullptr;
    PyObject* traceback = nullptr;
    std::string type_name;  ///< for what() after restore
    std::string text;       ///< the traceback, once asked
    bool formatted = false;

    void take(PyObject*& t, PyObject*& v, PyObject*& tb) noexcept {
        t = type;
        v = value;
        tb = traceback;
        type = value = traceback = nullptr;
    }
    ~state() {
        // Released on the thread that drops the last copy.
        if (type == nullptr && value == nullptr && traceback == nullptr) return;
        under_gil([&]() noexcept {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
        });
    }
};

inline std::shared_ptr<python_error::state> python_error::fetch() {
    auto captured = std::make_shared<state>();
    PyErr_Fetch(&captured->type, &captured->value, &captured->traceback);
    if (captured->type == nullptr) {
        PyErr_SetString(PyExc_SystemError, "npybridge: python_error made with no Python error pending");
        PyErr_Fetch(&captured->type, &captured->value, &captured->traceback);
    }
    PyErr_NormalizeException(&captured->type, &captured->value, &captured->traceback);
    if (captured->traceback != nullptr && captured->value != nullptr) {
        PyException_SetTraceback(captured->value, captured->traceback);
    }
    captured->type_name = captured->type && PyType_Check(captured->type)
                              ? reinterpret_cast<PyTypeObject*>(captured->type)->tp_name
                              : "<unknown Python error>";
    return captured;
}

inline std::string python_error::format(PyObject* type, PyObject* value, PyObject* traceback) {
    const pending_error_kept kept;  // what() may be asked while another error is pending
    std::string text;
    object module = object::steal(PyImport_ImportModule("traceback"));
    object lines = module ? object::steal(PyObject_CallMethod(module.get(), "format_exception", "OOO", type,
                                                              value ? value : Py_None, traceback ? traceback : Py_None))
                          : object{};
    object empty = object::steal(PyUnicode_FromString(""));
    object joined = (lines && empty) ? object::steal(PyUnicode_Join(empty.get(), lines.get())) : object{};
    const char* utf8 = joined ? PyUnicode_AsUTF8(joined.get()) : nullptr;
    if (utf8 != nullptr) {
        text = utf8;
        while (!text.empty() && text.back() == '\n') text.pop_back();
    } else {
        PyErr_Clear();
        const char* name = type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "<unknown>";
        object message = value ? object::steal(PyObject_Str(value)) : object{};
        const char* message_utf8 = message ? PyUnicode_AsUTF8(message.get()) : nullptr;
        if (message_utf8 == nullptr) PyErr_Clear();
        text = std::string(name) + ": " + (message_utf8 ? message_utf8 : "<message could not be formatted>") +
               " (traceback could not be formatted)";
    }
    return text;
}

inline PyObject* python_error::type() const noexcept { return m_state ? m_state->type : nullptr; }

inline PyObject* python_error::value() const noexcept { return m_state ? m_state->value : nullptr; }

inline bool python_error::matches(PyObject* exception_class) const {
    return m_state && m_state->type && PyErr_GivenExceptionMatches(m_state->type, exception_class);
}

inline const char* python_error::what() const noexcept {
    if (!m_state) return error::what();
    state& s = *m_state;
    const char* text = s.type_name.c_str();
    under_gil([&]() noexcept {  // the GIL orders threads asking at once
        if (!s.formatted && s.type != nullptr) {
            try {
                s.text = format(s.type, s.value, s.traceback);
                s.formatted = true;
            } catch (...) {  // out of memory: the type name
            }
        }
        if (s.formatted) text = s.text.c_str();
    });
    return text;
}

inline void python_error::restore() const {
    PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
    if (m_state) m_state->take(type, value, traceback);
    if (type == nullptr) {
        PyErr_SetString(PyExc_RuntimeError,
                        ("npybridge: Python error already restored: " + std::string(what())).c_str());
        return;
    }
    PyErr_Restore(type, value, traceback);
}

}  // namespace npybridge

#undef NPYBRIDGE_HAS_CXXABI
