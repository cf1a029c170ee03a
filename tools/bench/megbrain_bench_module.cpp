// tools/bench/megbrain_bench_module.cpp — METH_O functions for megbrain_bench.py: ndarray -> mgb::HostTensorND borrow and
// HostTensorND -> ndarray share, beside the same conversions with npybridge's own tensor and a do-nothing floor.
// Built against MegEngine's headers and the megengine wheel's library (--config=py310, MEGENGINE_SOURCE).
#include <npybridge/convert.hpp>
#include <npybridge/megbrain.hpp>

#include <memory>
#include <optional>

namespace npb = npybridge;

namespace {

PyObject* noop(PyObject*, PyObject*) { Py_RETURN_NONE; }

/// Borrows the array (try_borrow, keeping it alive) and drops the tensor.
template <class Tensor>
PyObject* borrow(PyObject*, PyObject* array) {
    return npb::guarded([&] {
        const npb::to_tensor_result<Tensor> result = npb::to_tensor<Tensor>(array);
        (void)result;
        Py_RETURN_NONE;
    });
}

/// MegBrain's own floor for a borrow, written as MegEngine's helper does it (no npybridge): a float32
/// C-contiguous check, a shared_ptr that holds a reference to the array, a storage, a layout, a tensor.
PyObject* bare_host(PyObject*, PyObject* object) {
    auto* array = reinterpret_cast<PyArrayObject*>(object);
    if (!PyArray_Check(object) || PyArray_TYPE(array) != NPY_FLOAT32 || !PyArray_IS_C_CONTIGUOUS(array)) {
        PyErr_SetString(PyExc_TypeError, "expected a C-contiguous float32 array");
        return nullptr;
    }
    try {
        Py_INCREF(object);
        std::shared_ptr<megdnn::dt_byte> data(static_cast<megdnn::dt_byte*>(PyArray_DATA(array)),
                                              [object](megdnn::dt_byte*) { Py_DECREF(object); });
        mgb::TensorLayout layout{mgb::dtype::Float32()};
        layout.ndim = static_cast<std::size_t>(PyArray_NDIM(array));
        for (std::size_t i = 0; i < layout.ndim; ++i) {
            layout.shape[i] = static_cast<std::size_t>(PyArray_DIM(array, static_cast<int>(i)));
            layout.stride[i] = PyArray_STRIDE(array, static_cast<int>(i)) / 4;
        }
        mgb::HostTensorStorage storage;
        storage.reset(mgb::CompNode::default_cpu(), layout.span().high_byte, std::move(data));
        mgb::HostTensorND tensor;
        tensor.reset(storage, layout);
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return nullptr;
    }
    Py_RETURN_NONE;
}

std::optional<npb::tensor> kept_reference;
std::optional<mgb::HostTensorND> kept_host;

/// keep(array): a copy of `array` in each tensor type, for share_*.
PyObject* keep(PyObject*, PyObject* array) {
    return npb::guarded([&] {
        const auto copy = npb::to_tensor_options().with(npb::borrow_policy::copy);
        kept_reference = npb::to_tensor<npb::tensor>(array, copy).tensor;
        kept_host = npb::to_tensor<mgb::HostTensorND>(array, copy).tensor;
        Py_RETURN_NONE;
    });
}

/// A new array sharing the kept tensor's memory.
template <class Tensor>
PyObject* share(PyObject*, PyObject*) {
    return npb::guarded([&] {
        if constexpr (std::is_same_v<Tensor, npb::tensor>)
            return npb::to_array(*kept_reference).release();
        else
            return npb::to_array(*kept_host).release();
    });
}

/// Drops the kept tensors (before the interpreter and MegBrain's comp nodes go).
PyObject* release(PyObject*, PyObject*) {
    kept_reference.reset();
    kept_host.reset();
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"noop", noop, METH_O, "the floor: a METH_O function doing nothing"},
    {"borrow_reference", borrow<npb::tensor>, METH_O, "ndarray -> npybridge::tensor borrow"},
    {"borrow_host", borrow<mgb::HostTensorND>, METH_O, "ndarray -> mgb::HostTensorND borrow"},
    {"bare_host", bare_host, METH_O, "ndarray -> mgb::HostTensorND borrow as MegEngine's helper does it, no npybridge"},
    {"keep", keep, METH_O, "keep a copy of the array in each tensor type"},
    {"share_reference", share<npb::tensor>, METH_O, "npybridge::tensor -> ndarray share"},
    {"share_host", share<mgb::HostTensorND>, METH_O, "mgb::HostTensorND -> ndarray share"},
    {"release", release, METH_NOARGS, "drop the kept tensors"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "megbrain_bench_module", nullptr, -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_megbrain_bench_module() {
    if (!npb::import_numpy()) return nullptr;
    return PyModule_Create(&module_def);
}
