// tests/visibility/probe_module.cpp — an extension module built WITHOUT -fvisibility=hidden, using much of
// npybridge: visibility_test.py checks that none of npybridge's symbols (functions, free lists, caches,
// registered types) leave it, which only the header's own namespace attributes can ensure.
#include <npybridge/npybridge.hpp>

namespace nb = npybridge;

namespace {

PyObject* round_trip(PyObject*, PyObject* array) {
    return nb::guarded([&] {
        nb::to_tensor_result<nb::tensor> borrowed = nb::to_tensor(array);
        nb::tensor copy = nb::to_tensor(array, nb::to_tensor_options().with(nb::borrow_policy::copy)).tensor;
        nb::object back = nb::to_array(std::move(copy));
        nb::object packed = nb::to_array(
            nb::to_tensor(array, nb::to_tensor_options().as(nb::dtype::quantized(nb::dtype_enum::QuantizedS4, 0.5)))
                .tensor);
        nb::origin_tracker<const void*> tracker;
        {
            auto scope = tracker.enter(array);
            tracker.on_create(borrowed.tensor.data());
        }
        (void)tracker.blame(borrowed.tensor.data(), "probe");
        return nb::to_array(borrowed.tensor).release();
    });
}

PyMethodDef methods[] = {{"round_trip", round_trip, METH_O, nullptr}, {nullptr, nullptr, 0, nullptr}};
PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "probe_module", nullptr, -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_probe_module() {
    if (!nb::import_numpy()) return nullptr;
    PyObject* module = PyModule_Create(&module_def);
    if (module == nullptr) return nullptr;
    if (!nb::register_user_dtypes(module) || !nb::make_exception_classes(module)) {
        Py_DECREF(module);
        return nullptr;
    }
    return module;
}
