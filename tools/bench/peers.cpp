// tools/bench/peers.cpp — the same calls written with pybind11 and with nanobind, for python_bench.py.
// Built by python_bench.py with g++ against the pip-installed headers (one of PEER_PYBIND11 / PEER_NANOBIND).
#include <cstddef>

#if defined(PEER_PYBIND11)
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
namespace py = pybind11;

PYBIND11_MODULE(peer_pybind11, m) {
    m.def("noop_object", [](py::object) {});
    m.def("borrow", [](py::array_t<float, py::array::c_style> a) { return static_cast<std::size_t>(a.size()); });
    m.def("share", [] {
        auto* data = new float[1000]();
        py::capsule owner(data, [](void* p) { delete[] static_cast<float*>(p); });
        return py::array_t<float>({1000}, {sizeof(float)}, data, owner);
    });
}
#elif defined(PEER_NANOBIND)
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
namespace nb = nanobind;

NB_MODULE(peer_nanobind, m) {
    m.def("borrow", [](nb::ndarray<float, nb::c_contig, nb::device::cpu> a) { return a.size(); });
    m.def("share", [] {
        auto* data = new float[1000]();
        nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
        return nb::ndarray<nb::numpy, float, nb::ndim<1>>(data, {1000}, owner);
    });
}
#endif
