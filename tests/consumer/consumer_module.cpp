// A user's extension module: includes the umbrella header and nothing else of npybridge.
#include <npybridge/npybridge.hpp>

static_assert(npybridge::dtype_of_v<long> == npybridge::dtype_enum::Int32);

namespace {

PyObject* dtype_count(PyObject*, PyObject*) { return PyLong_FromSize_t(npybridge::dtype_count); }

PyMethodDef methods[] = {
    {"dtype_count", dtype_count, METH_NOARGS, "Number of dtypes npybridge knows."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "consumer_module", nullptr, -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_consumer_module() {
    if (!npybridge::import_numpy()) return nullptr;
    return PyModule_Create(&module_def);
}
