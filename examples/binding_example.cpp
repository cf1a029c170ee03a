// npybridge's tensors and dtypes as arguments and results of a binding library's functions. One source, built
// twice: npybridge_pybind11_example (-DNPYBRIDGE_EXAMPLE_PYBIND11, npybridge/bind/pybind11.hpp) and
// npybridge_nanobind_example (-DNPYBRIDGE_EXAMPLE_NANOBIND, npybridge/bind/nanobind.hpp), from the public headers
// only; tests/python/test_bindings.py runs the same tests against both.
#include <npybridge/npybridge.hpp>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#if defined(NPYBRIDGE_EXAMPLE_PYBIND11)
#include <npybridge/bind/pybind11.hpp>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
namespace bind = pybind11;
#define EXAMPLE_MODULE(m) PYBIND11_MODULE(npybridge_pybind11_example, m)
#define EXAMPLE_INIT(m) npybridge::pybind11_support::init(m)
#define EXAMPLE_FACTORY(f) bind::init(f)
#define EXAMPLE_LIBRARY "pybind11", PYBIND11_VERSION_MAJOR, PYBIND11_VERSION_MINOR
using policy = bind::return_value_policy;
#elif defined(NPYBRIDGE_EXAMPLE_NANOBIND)
#include <npybridge/bind/nanobind.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
namespace bind = nanobind;
#define EXAMPLE_MODULE(m) NB_MODULE(npybridge_nanobind_example, m)
#define EXAMPLE_INIT(m) npybridge::nanobind_support::init(m)
#define EXAMPLE_FACTORY(f) bind::new_(f)
#define EXAMPLE_LIBRARY "nanobind", NB_VERSION_MAJOR, NB_VERSION_MINOR
using policy = bind::rv_policy;
#else
#error "define NPYBRIDGE_EXAMPLE_PYBIND11 or NPYBRIDGE_EXAMPLE_NANOBIND"
#endif

namespace npb = npybridge;

namespace {

using npb::dtype_enum;

std::vector<std::size_t> shape_of(const npb::tensor& t) {
    return std::vector<std::size_t>(t.layout().shape.begin(), t.layout().shape.begin() + static_cast<std::ptrdiff_t>(t.ndim()));
}

/// A C++ object that owns a tensor, to show return value policies on a member.
struct holder {
    npb::tensor tensor;
    const npb::tensor& view() const { return tensor; }
};

}  // namespace

EXAMPLE_MODULE(m) {
    EXAMPLE_INIT(m);
    m.doc() = "npybridge's casters: tensors, constrained tensor arguments and dtypes";
    m.attr("binding_library") = bind::make_tuple(EXAMPLE_LIBRARY);  // ("pybind11", 3, 1)

    // A plain tensor argument: any dtype npybridge knows, borrowed when possible (checked narrowing).
    m.def("describe", [](const npb::tensor& t) {
        bind::dict d;
        d["dtype"] = t.type().to_string();
        d["shape"] = shape_of(t);
        d["data_address"] = reinterpret_cast<std::uintptr_t>(t.data());
        d["writable"] = t.writable();
        return d;
    });
    // The same with borrow information: arg<> keeps to_tensor's result.
    m.def("borrow_info", [](const npb::arg<npb::tensor>& a) {
        return bind::make_tuple(a.borrowed(), a.copy_reason(), reinterpret_cast<std::uintptr_t>(a->data()));
    });

    // Constrained arguments: the signature names them, the casters check them.
    using qs8_matrix = npb::arg<npb::tensor, npb::dtype_is<dtype_enum::QuantizedS8>, npb::ndim_is<2>>;
    m.def("qs8_scale", [](const qs8_matrix& a) { return static_cast<double>(*a->type().scale()); });
    m.def("must_borrow_f32", [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Float32>, npb::borrow_only>& a) {
        return reinterpret_cast<std::uintptr_t>(a->data());
    });
    m.def("fill", [](npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Float32>, npb::borrow_only, npb::writable_only>& a,
                     float value) {
        // Every element, whatever the array's strides (in elements, any sign).
        const npb::tensor_layout& layout = a->layout();
        auto* data = static_cast<float*>(a->data());
        std::vector<std::size_t> index(layout.ndim, 0);
        for (std::size_t n = 0; n < a->count(); ++n) {
            std::ptrdiff_t offset = 0;
            for (std::size_t d = 0; d < layout.ndim; ++d) offset += static_cast<std::ptrdiff_t>(index[d]) * layout.strides[d];
            data[offset] = value;
            for (std::size_t d = layout.ndim; d-- > 0;) {
                if (++index[d] < layout.shape[d]) break;
                index[d] = 0;
            }
        }
    });
    m.def("reject_narrowing", [](const npb::arg<npb::tensor, npb::narrowing_is<npb::narrowing::reject>>& a) {
        return a->type().to_string();
    });
    m.def("pack_intb4", [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::IntB4>, npb::layout_is<npb::lowbit_layout::compact>>& a) {
        const auto* bytes = static_cast<const unsigned char*>(a->data());
        return bind::bytes(reinterpret_cast<const char*>(bytes), a->storage_bytes());
    });

    // Overloads by dtype: the first pass only borrows, so each array finds its own overload.
    m.def("kind", [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Float32>>&) { return std::string("Float32"); });
    m.def("kind", [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Int8>>&) { return std::string("Int8"); });
    m.def("kind", [](const std::string& text) { return "str: " + text; });

    // Results: a tensor returned by value hands its owner to the array.
    m.def("zeros", [](const npb::dtype& type, const std::vector<std::size_t>& shape) {
        npb::tensor t = npb::tensor::empty(type, shape.data(), shape.size());
        std::memset(t.data(), 0, t.storage_bytes());
        return t;
    });
    m.def("identity", [](npb::tensor t) { return t; });

    // dtypes both ways (quantized params in metadata).
    m.def("dtype_name", [](const npb::dtype& type) { return type.to_string(); });
    m.def("quantized", [](const std::string& name, double scale, std::optional<std::int64_t> zero_point) {
        const npb::dtype_info* found = npb::find_dtype(name);
        if (found == nullptr) throw npb::dtype_error("unknown dtype name '" + name + "'");
        return npb::dtype::quantized(found->id, scale, zero_point);
    });

    // Return value policies on a member: reference_internal and copy.
    bind::class_<holder>(m, "Holder")
        .def(EXAMPLE_FACTORY([](npb::tensor t) { return holder{std::move(t)}; }))
        .def("view", &holder::view, policy::reference_internal)
        .def("copy", &holder::view, policy::copy);
}
