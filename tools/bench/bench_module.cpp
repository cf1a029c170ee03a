// tools/bench/bench_module.cpp — METH_O functions that each do one npybridge conversion, for python_bench.py.
//
// Every measured function exists in `copies` identical copies ("borrow_0" ..
// "borrow_3"), each at its own address: on the machine we measure, moving the
// same code by 32 bytes moved a borrow by 9 ns, and two functions doing the
// same work measured 77 and 100 ns. Copy k starts 24k bytes past a 64-byte
// boundary (padding placed before its entry, never executed), so the copies
// see four different alignments. python_bench.py reports the best and the
// worst copy, for npybridge and the peers alike (the floor is the best of four
// do-nothing functions for the same reason). Built with -fno-ipa-icf so GCC
// keeps the copies apart.
#include <npybridge/npybridge.hpp>

#include <string>
#include <utility>
#include <vector>

namespace npb = npybridge;

namespace {

constexpr int copies = 4;

#define BENCH_COPY [[gnu::noinline, gnu::aligned(64), gnu::patchable_function_entry(Copy * 24, Copy * 24)]]

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
template <int Copy>
BENCH_COPY PyObject* bare_check(PyObject*, PyObject* object) {
    auto* array = reinterpret_cast<PyArrayObject*>(object);
    if (!PyArray_Check(object) || PyArray_TYPE(array) != NPY_FLOAT32 || !PyArray_IS_C_CONTIGUOUS(array)) {
        PyErr_SetString(PyExc_TypeError, "expected a C-contiguous float32 array");
        return nullptr;
    }
    return PyLong_FromSsize_t(PyArray_SIZE(array));
}

/// Borrow an array (try_borrow) and return the element count.
template <int Copy>
BENCH_COPY PyObject* borrow(PyObject*, PyObject* array) {
    return npb::guarded([&] {
        const npb::to_tensor_result<npb::tensor> result = npb::to_tensor(array);
        return PyLong_FromSize_t(result.tensor.count());
    });
}

/// The same, asking for must_borrow (no copy may happen).
template <int Copy>
BENCH_COPY PyObject* must_borrow(PyObject*, PyObject* array) {
    return npb::guarded([&] {
        const npb::to_tensor_result<npb::tensor> result =
            npb::to_tensor(array, npb::to_tensor_options().with(npb::borrow_policy::must_borrow));
        return PyLong_FromSize_t(result.tensor.count());
    });
}

/// Borrow for the duration of the call only (no reference kept: options().scoped()).
template <int Copy>
BENCH_COPY PyObject* borrow_scoped(PyObject*, PyObject* array) {
    return npb::guarded([&] {
        const npb::to_tensor_result<npb::tensor> result = npb::to_tensor(array, npb::to_tensor_options().scoped());
        return PyLong_FromSize_t(result.tensor.count());
    });
}

/// A fresh 1,000-element float32 tensor handed to numpy (the array owns C++ memory).
template <int Copy>
BENCH_COPY PyObject* share(PyObject*, PyObject*) {
    return npb::guarded([&] {
        const std::size_t shape[] = {1000};
        npb::tensor made = npb::tensor::empty(npb::dtype(npb::dtype_enum::Float32), shape, 1);
        return npb::to_array(std::move(made)).release();
    });
}

const npb::tensor& kept_tensor() {
    static const npb::tensor kept = [] {
        const std::size_t shape[] = {1000};
        return npb::tensor::empty(npb::dtype(npb::dtype_enum::Float32), shape, 1);
    }();
    return kept;
}

/// Shares one tensor made at import: the conversion alone, without allocating a tensor per call.
template <int Copy>
BENCH_COPY PyObject* share_existing(PyObject*, PyObject*) {
    return npb::guarded([&] { return npb::to_array(kept_tensor()).release(); });
}

std::vector<std::string> names;  // the method table points into these
std::vector<PyMethodDef> methods;

template <int... Copy>
void add_copies(std::integer_sequence<int, Copy...>) {
    const auto add = [](const char* name, PyCFunction function, int flags, int copy) {
        names.push_back(std::string(name) + "_" + std::to_string(copy));
        methods.push_back({nullptr, function, flags, nullptr});
    };
    (add("bare_check", bare_check<Copy>, METH_O, Copy), ...);
    (add("borrow", borrow<Copy>, METH_O, Copy), ...);
    (add("must_borrow", must_borrow<Copy>, METH_O, Copy), ...);
    (add("borrow_scoped", borrow_scoped<Copy>, METH_O, Copy), ...);
    (add("share", share<Copy>, METH_NOARGS, Copy), ...);
    (add("share_existing", share_existing<Copy>, METH_NOARGS, Copy), ...);
}

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "npybridge_bench", nullptr, -1, nullptr, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_npybridge_bench() {
    if (!npb::import_numpy()) return nullptr;
    if (methods.empty()) {
        names = {"noop", "noop_true", "noop_false", "noop_not_implemented"};
        methods = {{nullptr, noop, METH_O, nullptr},
                   {nullptr, noop_true, METH_O, nullptr},
                   {nullptr, noop_false, METH_O, nullptr},
                   {nullptr, noop_not_implemented, METH_O, nullptr}};
        add_copies(std::make_integer_sequence<int, copies>());
        for (std::size_t i = 0; i < methods.size(); ++i) methods[i].ml_name = names[i].c_str();
        methods.push_back({nullptr, nullptr, 0, nullptr});
        module_def.m_methods = methods.data();
    }
    PyObject* module = PyModule_Create(&module_def);
    if (module != nullptr && PyModule_AddIntConstant(module, "copies", copies) != 0) {
        Py_DECREF(module);
        return nullptr;
    }
    return module;
}
