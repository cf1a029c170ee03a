// tests/visibility/probe_module.cpp — an extension module built WITHOUT -fvisibility=hidden, using much of
// npybridge: visibility_test.py checks that none of npybridge's symbols (functions, free lists, caches,
// registered types) leave it, which only the header's own namespace attributes can ensure.
#include <npybridge/npybridge.hpp>

namespace npb = npybridge;

namespace {

PyObject* round_trip(PyObject*, PyObject* array) {
    return npb::guarded([&] {
        npb::to_tensor_result<npb::tensor> borrowed = npb::to_tensor(array);
        npb::tensor copy = npb::to_tensor(array, npb::to_tensor_options().with(npb::borrow_policy::copy)).tensor;
        npb::object back = npb::to_array(std::move(copy));
        npb::object packed = npb::to_array(
            npb::to_tensor(array, npb::to_tensor_options().as(npb::dtype::quantized(npb::dtype_enum::QuantizedS4, 0.5)))
                .tensor);
        npb::origin_tracker<const void*> tracker;
        {
            auto scope = tracker.enter(array);
            tracker.on_create(borrowed.tensor.data());
        }
        (void)tracker.blame(borrowed.tensor.data(), "probe");
        return npb::to_array(borrowed.tensor).release();
    });
}

PyMethodDef methods[] = {{"round_trip", round_trip, METH_O, nullptr}, {nullptr, nullptr, 0, nullptr}};
PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "probe_module", nullptr, -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_probe_module() {
    if (!npb::import_numpy()) return nullptr;
    PyObject* module = PyModule_Create(&module_def);
    if (module == nullptr) return nullptr;
    if (!npb::register_user_dtypes(module) || !npb::make_exception_classes(module)) {
        Py_DECREF(module);
        return nullptr;
    }
    return module;
}
