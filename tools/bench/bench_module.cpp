// tools/bench/bench_module.cpp — METH_O functions that each do one npybridge conversion, for python_bench.py.
#include <npybridge/npybridge.hpp>

namespace nb = npybridge;

namespace {

/// The floor: METH_O functions that do nothing but return a singleton. Which
/// singleton's reference count a call touches moves the same call by up to
/// 20 ns on the machines we measured (store/load address aliasing), so
/// python_bench.py takes the best of these as the floor.
PyObject* noop(PyObject*, PyObject*) { Py_RETURN_NONE; }
PyObject* noop_true(PyObject*, PyObject*) { Py_RETURN_TRUE; }
PyObject* noop_false(PyObject*, PyObject*) { Py_RETURN_FALSE; }
PyObject* noop_not_implemented(PyObject*, PyObject*) { Py_RETURN_NOTIMPLEMENTED; }

/// The reference point: what any binding must do at least (is it a
/// float32 C-contiguous ndarray? return its size), with no tensor and no owner.
PyObject* bare_check(PyObject*, PyObject* object) {
    auto* array = reinterpret_cast<PyArrayObject*>(object);
    if (!PyArray_Check(object) || PyArray_TYPE(array) != NPY_FLOAT32 || !PyArray_IS_C_CONTIGUOUS(array)) {
        PyErr_SetString(PyExc_TypeError, "expected a C-contiguous float32 array");
        return nullptr;
    }
    return PyLong_FromSsize_t(PyArray_SIZE(array));
}

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

/// A fresh 1,000-element float32 tensor handed to numpy (the array owns C++ memory).
PyObject* share(PyObject*, PyObject*) {
    return nb::guarded([&] {
        const std::size_t shape[] = {1000};
        nb::tensor made = nb::tensor::empty(nb::dtype(nb::dtype_enum::Float32), shape, 1);
        return nb::to_array(std::move(made)).release();
    });
}

/// Shares one tensor made at import: the conversion alone, without allocating a tensor per call.
PyObject* share_existing(PyObject*, PyObject*) {
    static const nb::tensor kept = [] {
        const std::size_t shape[] = {1000};
        return nb::tensor::empty(nb::dtype(nb::dtype_enum::Float32), shape, 1);
    }();
    return nb::guarded([&] { return nb::to_array(kept).release(); });
}

PyMethodDef methods[] = {
    {"noop", noop, METH_O, nullptr},
    {"noop_true", noop_true, METH_O, nullptr},
    {"noop_false", noop_false, METH_O, nullptr},
    {"noop_not_implemented", noop_not_implemented, METH_O, nullptr},
    {"bare_check", bare_check, METH_O, nullptr},
    {"share_existing", share_existing, METH_NOARGS, nullptr},
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
