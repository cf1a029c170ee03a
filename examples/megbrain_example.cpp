// npybridge_megbrain_example: MegEngine's helper API (np2tensor, ndarray_from_tensor, dtype_mgb2np,
// dtype_np2mgb) over MegBrain's own mgb::HostTensorND, written with pybind11 and npybridge/megbrain_compat.hpp,
// linked against the MegEngine wheel's libmegengine_shared.so. It imports before or after `import megengine`
// (one library instance). tests/python/test_megbrain.py is its suite.
#include <npybridge/bind/pybind11.hpp>
#include <npybridge/dlpack.hpp>
#include <npybridge/megbrain_compat.hpp>
#include <npybridge/policies.hpp>
#include <npybridge/user_dtypes.hpp>

#include <megbrain/dtype.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace py = pybind11;
namespace npb = npybridge;
namespace npy = npybridge::megbrain::npy;

// Every name of MegEngine's helper is under the namespace docs/megbrain.md recommends, OprPyTracker included.
static_assert(std::is_same_v<npy::OprPyTracker<int>, npb::origin_tracker<int>>);

namespace {

npy::ShareType share_type(const std::string& share) {
    if (share == "try") return npy::ShareType::TRY_SHARE;
    if (share == "must_share") return npy::ShareType::MUST_SHARE;
    if (share == "must_unshare") return npy::ShareType::MUST_UNSHARE;
    throw py::value_error("share must be 'try', 'must_share' or 'must_unshare', got '" + share + "'");
}

/// `narrowing`: the policy spellings ('checked', 'reject', 'wrap'), or 'megengine' for MegEngine 1.13's own conversion.
npy::Meth with_narrowing(const npy::Meth& meth, py::handle narrowing) {
    if (py::isinstance<py::str>(narrowing)) {
        const std::string spelled = narrowing.cast<std::string>();
        if (spelled == "megengine") return meth.as_megengine();
        if (spelled != "checked" && spelled != "reject" && spelled != "wrap")
            throw py::value_error("narrowing must be one of 'checked', 'reject', 'wrap', 'megengine', got '" + spelled +
                                  "'");
    }
    return meth.with(npb::narrowing_from(narrowing.ptr()));
}

mgb::HostTensorND np2tensor(py::handle array, const std::string& meth, py::handle dtype, const std::string& comp_node,
                            py::handle narrowing) {
    const mgb::DType wanted = dtype.is_none() ? mgb::DType() : npy::dtype_np2mgb(dtype.ptr());
    const mgb::CompNode where = mgb::CompNode::load(comp_node);
    if (meth == "borrow")
        return npy::np2tensor(array.ptr(), with_narrowing(npy::Meth::borrow(where), narrowing), wanted);
    if (meth == "must_borrow")
        return npy::np2tensor(array.ptr(), with_narrowing(npy::Meth::must_borrow(where), narrowing), wanted);
    if (meth == "borrow_for_reading")
        return npy::np2tensor(array.ptr(), with_narrowing(npy::Meth::borrow(where).for_reading(), narrowing), wanted);
    if (meth == "copy") {
        mgb::HostTensorND destination(where);
        return npy::np2tensor(array.ptr(), with_narrowing(npy::Meth::copy_into(&destination), narrowing), wanted);
    }
    throw py::value_error("meth must be 'borrow', 'must_borrow', 'borrow_for_reading' or 'copy', got '" + meth + "'");
}

py::object ndarray_from_tensor(const mgb::HostTensorND& tensor, const std::string& share) {
    return py::reinterpret_steal<py::object>(npy::ndarray_from_tensor(tensor, share_type(share)));
}

py::tuple ints(const std::size_t* values, std::size_t count) {
    py::tuple result(count);
    for (std::size_t i = 0; i < count; ++i) result[i] = values[i];
    return result;
}

/// The bytes of the layout's span, as MegBrain stores them.
py::bytes raw_bytes(const mgb::HostTensorND& tensor) {
    const auto span = tensor.layout().span();
    const char* lowest = reinterpret_cast<const char*>(tensor.raw_ptr()) + span.low_byte;
    return py::bytes(lowest, span.dist_byte());
}

/// MegBrain's own sub-tensor along one axis (shares storage).
mgb::HostTensorND sub(const mgb::HostTensorND& tensor, int axis, std::ptrdiff_t start, std::ptrdiff_t stop,
                      std::ptrdiff_t step) {
    return tensor.sub(mgb::Slice(start, stop, step).apply(tensor.layout(), axis));
}

/// A zero point as MegEngine's quint8(scale, zero_point) takes it: an integer (3 or 3.0); 0.233 is a ValueError
/// naming it, as MegEngine's, not pybind11's TypeError for a signature that did not match.
std::optional<long long> zero_point_of(py::handle given) {
    if (given.is_none()) return std::nullopt;
    if (!PyNumber_Check(given.ptr()) || PyBool_Check(given.ptr())) {
        throw py::type_error("dtype_mgb2np: zero_point must be an integer, got " +
                             std::string(py::str(py::type::handle_of(given).attr("__name__"))));
    }
    if (!PyLong_Check(given.ptr())) {
        const double value = py::cast<double>(given);
        if (!(value == std::floor(value)) || std::fabs(value) > 1e18) {
            throw py::value_error("dtype_mgb2np: zero_point " + std::string(py::repr(given)) + " is not an integer");
        }
        return static_cast<long long>(value);
    }
    return py::cast<long long>(given);
}

py::object dtype_mgb2np(const std::string& name, std::optional<double> scale, py::handle zero_point_given) {
    const std::optional<long long> zero_point = zero_point_of(zero_point_given);
    const npb::dtype_info* row = npb::find_dtype(name);
    if (row == nullptr) throw npb::dtype_error("dtype_mgb2np: '" + name + "' is not a MegDNN dtype name");
    if (row->is_quantized && !scale) throw npb::dtype_error("dtype_mgb2np: " + name + " needs its scale");
    const npb::dtype type =
        row->is_quantized ? npb::dtype::quantized(row->id, *scale, zero_point) : npb::dtype(row->id);
    return py::reinterpret_steal<py::object>(npy::dtype_mgb2np(npb::megbrain::to_megdnn(type)));
}

py::tuple dtype_np2mgb(py::handle dtype) {
    const mgb::DType type = npy::dtype_np2mgb(dtype.ptr());
    const npb::dtype ours = npb::megbrain::from_megdnn(type);
    return py::make_tuple(type.name(), ours.scale() ? py::cast(*ours.scale()) : py::none(),
                          ours.zero_point() ? py::cast(*ours.zero_point()) : py::none());
}

/// MegBrain's own packing (what MegEngine's helper does): one byte per element in `values` (C-contiguous)
/// into a HostTensorND in the layout MegBrain picks for the dtype, by lowbit_memcpy_byte2aligned / byte2compact.
mgb::HostTensorND megbrain_pack(py::handle values, py::handle dtype) {
    const mgb::DType type = npy::dtype_np2mgb(dtype.ptr());
    const auto bytes =
        py::reinterpret_steal<py::object>(PyArray_FromAny(values.ptr(), nullptr, 0, 0, NPY_ARRAY_IN_ARRAY, nullptr));
    if (!bytes) throw py::error_already_set();
    auto* array = reinterpret_cast<PyArrayObject*>(bytes.ptr());
    if (PyArray_ITEMSIZE(array) != 1) throw py::type_error("megbrain_pack: values must be int8 or uint8");
    mgb::TensorShape shape;
    shape.ndim = static_cast<std::size_t>(PyArray_NDIM(array));
    for (std::size_t i = 0; i < shape.ndim; ++i)
        shape.shape[i] = static_cast<std::size_t>(PyArray_DIM(array, static_cast<int>(i)));
    const mgb::TensorLayout layout(shape, type);
    mgb::HostTensorND made(mgb::CompNode::default_cpu(), layout);
    if (layout.format.is_lowbit_aligned()) {
        mgb::lowbit_memcpy_byte2aligned(made.raw_ptr(), PyArray_DATA(array), layout);
    } else {
        mgb::lowbit_memcpy_byte2compact(type, made.raw_ptr(), PyArray_DATA(array), layout.total_nr_elems());
    }
    return made;
}

/// npybridge::from_dlpack into a HostTensorND: (tensor, borrowed, copy_reason or None). `meth` as np2tensor's.
py::tuple from_dlpack(py::handle producer, const std::string& meth) {
    npb::to_tensor_options options;
    if (meth == "must_borrow") options.with(npb::borrow_policy::must_borrow);
    if (meth == "borrow_for_reading") options.reading_only();
    if (meth == "copy") options.with(npb::borrow_policy::copy);
    npb::to_tensor_result<mgb::HostTensorND> made = npb::from_dlpack<mgb::HostTensorND>(producer.ptr(), options);
    return py::make_tuple(made.tensor, made.borrowed,
                          made.copy_reason.empty() ? py::object(py::none()) : py::cast(made.copy_reason));
}

/// npybridge::to_dlpack of a HostTensorND as a DLPack 1.x capsule (read-only when its owner says so).
py::object to_dlpack(const mgb::HostTensorND& tensor) {
    npb::dlpack_options options;
    options.max_version = npb::dlpack::DLPackVersion{1, 1};
    return py::reinterpret_steal<py::object>(npb::to_dlpack(tensor, options).release());
}

/// A real MegBrain call that fails: its exception reaches Python with MegBrain's message.
void megbrain_error() { mgb::DType::from_enum(mgb::DTypeEnum::QuantizedS8); }

}  // namespace

PYBIND11_MODULE(npybridge_megbrain_example, m) {
    npb::pybind11_support::init(m);
    // bfloat16 / intb1/2/4 as numpy dtypes when MegEngine is not imported (its own are preferred while it is).
    if (!npb::register_user_dtypes(m.ptr())) throw py::error_already_set();
    m.doc() = "MegEngine's helper API over MegBrain's HostTensorND, through npybridge";

    py::class_<mgb::HostTensorND>(m, "HostTensor")
        .def_property_readonly("dtype_name", [](const mgb::HostTensorND& t) { return std::string(t.dtype().name()); })
        .def_property_readonly("dtype_enum",
                               [](const mgb::HostTensorND& t) { return static_cast<std::uint32_t>(t.dtype().enumv()); })
        .def_property_readonly("scale",
                               [](const mgb::HostTensorND& t) { return npb::megbrain::from_megdnn(t.dtype()).scale(); })
        .def_property_readonly(
            "zero_point", [](const mgb::HostTensorND& t) { return npb::megbrain::from_megdnn(t.dtype()).zero_point(); })
        .def_property_readonly("shape",
                               [](const mgb::HostTensorND& t) { return ints(t.layout().shape, t.layout().ndim); })
        .def_property_readonly("strides",
                               [](const mgb::HostTensorND& t) {
                                   py::tuple result(t.layout().ndim);
                                   for (std::size_t i = 0; i < t.layout().ndim; ++i) result[i] = t.layout().stride[i];
                                   return result;
                               })
        .def_property_readonly("format", [](const mgb::HostTensorND& t) { return t.layout().format.to_string(); })
        .def_property_readonly("comp_node", [](const mgb::HostTensorND& t) { return t.comp_node().to_string(); })
        .def_property_readonly("data_ptr",
                               [](const mgb::HostTensorND& t) { return reinterpret_cast<std::uintptr_t>(t.raw_ptr()); })
        .def_property_readonly("nbytes", [](const mgb::HostTensorND& t) { return t.layout().span().dist_byte(); })
        .def("raw_bytes", &raw_bytes)
        .def("sub", &sub, py::arg("axis"), py::arg("start"), py::arg("stop"), py::arg("step") = 1)
        .def(
            "copy_from", [](mgb::HostTensorND& t, py::handle values) { npb::copy_into(values.ptr(), t); },
            py::arg("values"), "npybridge::copy_into: the values into this tensor (a sub-tensor writes its parent)")
        .def("numpy", &ndarray_from_tensor, py::arg("share") = "try");

    m.def("np2tensor", &np2tensor, py::arg("array"), py::arg("meth") = "borrow", py::arg("dtype") = py::none(),
          py::arg("comp_node") = "cpu0", py::arg("narrowing") = "checked");
    m.def("ndarray_from_tensor", &ndarray_from_tensor, py::arg("tensor"), py::arg("share") = "try");
    m.def("dtype_mgb2np", &dtype_mgb2np, py::arg("name"), py::arg("scale") = py::none(),
          py::arg("zero_point") = py::none());
    m.def("dtype_np2mgb", &dtype_np2mgb, py::arg("np_dtype"));
    m.def("megbrain_pack", &megbrain_pack, py::arg("values"), py::arg("dtype"));
    m.def("from_dlpack", &from_dlpack, py::arg("producer"), py::arg("meth") = "borrow");
    m.def("to_dlpack", &to_dlpack, py::arg("tensor"));
    m.def("megbrain_error", &megbrain_error);
}
