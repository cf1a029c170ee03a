// tests/support/python.hpp — small helpers for tests that talk to the embedded interpreter.
#pragma once

#include <npybridge/numpy.hpp>

#include <memory>
#include <stdexcept>
#include <string>

namespace test {

struct decref {
    void operator()(PyObject* object) const noexcept { Py_XDECREF(object); }
};
using owned = std::unique_ptr<PyObject, decref>;

/// Evaluates a Python expression with numpy imported as np; throws with the
/// Python error text when it fails.
inline owned eval(const std::string& expression) {
    owned globals{PyDict_New()};
    owned numpy{PyImport_ImportModule("numpy")};
    if (!numpy) throw std::runtime_error("cannot import numpy");
    PyDict_SetItemString(globals.get(), "np", numpy.get());
    PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
    owned result{PyRun_String(expression.c_str(), Py_eval_input, globals.get(), globals.get())};
    if (!result) {
        PyErr_Print();
        throw std::runtime_error("python expression failed: " + expression);
    }
    return result;
}

/// np.dtype(text) as a PyArray_Descr (new reference).
inline PyArray_Descr* descr(const std::string& text) {
    owned dtype = eval("np.dtype('" + text + "')");
    return reinterpret_cast<PyArray_Descr*>(dtype.release());
}

/// The message of the Error that f throws; "<nothing thrown>" when f
/// returns. Any other exception escapes, failing the test: so one CHECK_THAT
/// on the result checks both the error type and that the message names the culprit.
template <class Error, class F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "<nothing thrown>";
}

}  // namespace test
