// tools/bench/bench_module.cpp — METH_O functions that each do one npybridge conversion, for python_bench.py.
#include <npybridge/npybridge.hpp>

namespace nb = npybridge;

namespace {

/// The floor: a METH_O function that does nothing.
PyObject* noop(PyObject*, PyObject*) { Py_RETURN_NONE; }

/// Borrow a float32 array (try_borrow) and return the element count.
PyObject* borrow(PyObject*, PyObject* array) {
    return nb::guarded([&] {
        const nb::to_tensor_result<nb::tensor> result = nb::to_tensor(array);
        return PyLong_FromSize_t(result.tensor.count());
    });
}

/// The same, asking for must_borrow (no copy may happen).
PyObject* must_borrow(PyObject*, PyObject* array) {
    return nb::guarded([&] {
        const nb::to_tensor_result<nb::tensor> result =
            nb::to_tensor(array, nb::to_tensor_options().with(nb::borrow_policy::must_borrow));
        return PyLong_FromSize_t(result.tensor.count());
    });
}

/// Borrow for the duration of the call only (no reference kept: options().scoped()).
PyObject* borrow_scoped(PyObject*, PyObject* array) {
    return nb::guarded([&] {
        const nb::to_tensor_result<nb::tensor> result = nb::to_tensor(array, nb::to_tensor_options().scoped());
        return PyLong_FromSize_t(result.tensor.count());
    });
}

/// A fresh 1,000-element float32 tensor shared with numpy (the array owns C++ memory).
PyObject* share(PyObject*, PyObject*) {
    return nb::guarded([&] {
        const std::size_t shape[] = {1000};
        const nb::tensor made = nb::tensor::empty(nb::dtype(nb::dtype_enum::Float32), shape, 1);
        return nb::to_array(made).release();
    });
}

PyMethodDef methods[] = {
    {"noop", noop, METH_O, nullptr},
    {"borrow", borrow, METH_O, nullptr},
    {"must_borrow", must_borrow, METH_O, nullptr},
    {"borrow_scoped", borrow_scoped, METH_O, nullptr},
    {"share", share, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "npybridge_bench", nullptr, -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_npybridge_bench() {
    if (!nb::import_numpy()) return nullptr;
    return PyModule_Create(&module_def);
}
