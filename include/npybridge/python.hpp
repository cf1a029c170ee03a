// npybridge/python.hpp — owning references, GIL guards, safe text of Python objects.
#pragma once

#include <npybridge/core/config.hpp>

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <npybridge/core/detail/thread_end.hpp>

#include <cstdio>
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

}  // namespace npybridge
