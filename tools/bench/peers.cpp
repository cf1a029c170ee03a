// tools/bench/peers.cpp — the same calls written with pybind11 and with nanobind, for python_bench.py.
// Built by python_bench.py with g++ -fno-ipa-icf against the pip-installed headers (one of PEER_PYBIND11 /
// PEER_NANOBIND), each with npybridge's caster for that library beside the library's own array type
// ("borrow_caster": an npybridge::tensor argument). Like bench_module.cpp, every measured function exists in four copies at their own
// addresses ("borrow_0" .. "borrow_3"); python_bench.py reports the best and the worst.
#include <cstddef>
#include <string>
#include <utility>

constexpr int copies = 4;

#include <npybridge/npybridge.hpp>

#if defined(PEER_PYBIND11)
#include <npybridge/bind/pybind11.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
namespace py = pybind11;

template <int Copy>
void define(py::module_& m) {
    const std::string suffix = "_" + std::to_string(Copy);
    m.def(("noop_object" + suffix).c_str(), [](py::object) {});
    m.def(("borrow" + suffix).c_str(),
          [](py::array_t<float, py::array::c_style> a) { return static_cast<std::size_t>(a.size()); });
    m.def(("borrow_caster" + suffix).c_str(), [](const npybridge::tensor& t) { return t.count(); });
    m.def(("share" + suffix).c_str(), [] {
        auto* data = new float[1000]();
        py::capsule owner(data, [](void* p) { delete[] static_cast<float*>(p); });
        return py::array_t<float>({1000}, {sizeof(float)}, data, owner);
    });
}

template <int... Copy>
void define_copies(py::module_& m, std::integer_sequence<int, Copy...>) {
    (define<Copy>(m), ...);
}

PYBIND11_MODULE(peer_pybind11, m) {
    npybridge::pybind11_support::init(m);
    define_copies(m, std::make_integer_sequence<int, copies>());
    m.attr("copies") = copies;
}
#elif defined(PEER_NANOBIND)
#include <npybridge/bind/nanobind.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
namespace nb = nanobind;

template <int Copy>
void define(nb::module_& m) {
    const std::string suffix = "_" + std::to_string(Copy);
    m.def(("borrow" + suffix).c_str(), [](nb::ndarray<float, nb::c_contig, nb::device::cpu> a) { return a.size(); });
    m.def(("borrow_caster" + suffix).c_str(), [](const npybridge::tensor& t) { return t.count(); });
    m.def(("share" + suffix).c_str(), [] {
        auto* data = new float[1000]();
        nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
        return nb::ndarray<nb::numpy, float, nb::ndim<1>>(data, {1000}, owner);
    });
}

template <int... Copy>
void define_copies(nb::module_& m, std::integer_sequence<int, Copy...>) {
    (define<Copy>(m), ...);
}

NB_MODULE(peer_nanobind, m) {
    npybridge::nanobind_support::init(m);
    define_copies(m, std::make_integer_sequence<int, copies>());
    m.attr("copies") = copies;
}
#endif
