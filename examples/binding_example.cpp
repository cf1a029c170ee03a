// npybridge's tensors and dtypes as arguments and results of a binding library's functions, and the whole
// Python API of npybridge_example (Tensor, OriginTracker, call, throw_cpp, dtype_table, the exception classes
// and user dtypes) written with that library. One source, built twice: npybridge_pybind11_example
// (-DNPYBRIDGE_EXAMPLE_PYBIND11, npybridge/bind/pybind11.hpp) and npybridge_nanobind_example
// (-DNPYBRIDGE_EXAMPLE_NANOBIND, npybridge/bind/nanobind.hpp), from the public headers only. The Python suite
// runs against all three modules; tests/python/test_bindings.py tests what only the casters do.
#include <npybridge/npybridge.hpp>

#include "examples/example_support.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
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
#define def_prop_ro def_property_readonly
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
    return std::vector<std::size_t>(t.layout().shape.begin(),
                                    t.layout().shape.begin() + static_cast<std::ptrdiff_t>(t.ndim()));
}

/// A C++ object that owns a tensor, to show return value policies on a member.
struct holder {
    npb::tensor tensor;
    const npb::tensor& view() const { return tensor; }
};

// ---- the Python API of npybridge_example ---------------------------------------------------------------

/// Python's Tensor: the tensor and why from_numpy copied (empty when it borrowed).
struct tensor_object {
    npb::tensor value;
    std::string copy_reason;
};

/// Python's OriginTracker: tags what create() makes inside `with tracker.scope(tag):`.
struct tracker_object {
    std::unique_ptr<example::tracker> tracker = std::make_unique<example::tracker>();
    unsigned long long next_key = 0;
};

/// Python's TrackerScope (made by OriginTracker.scope only): holds its tracker and its tag.
struct scope_object {
    bind::object owner;  // the OriginTracker
    bind::object tag;
    std::optional<example::tracker::scope> active;
};

}  // namespace

#if defined(NPYBRIDGE_EXAMPLE_PYBIND11)
// An instance made by `Tensor.__new__(Tensor)` alone has no C++ object yet (__init__ or a factory makes it);
// pybind11 would hand its methods uninitialized memory. These casters refuse such an instance (pybind11 then
// raises TypeError, as nanobind does and as npybridge_example refuses to make one).
namespace pybind11::detail {
template <class T>
struct constructed_only_caster : type_caster_base<T> {
    bool load(handle source, bool convert) {
        if (!type_caster_base<T>::load(source, convert)) return false;
        if (!isinstance<T>(source)) return true;  // (made by an implicit conversion)
        auto* made = reinterpret_cast<instance*>(source.ptr());
        const value_and_holder held = made->get_value_and_holder(get_type_info(typeid(T)), false);
        return held && held.holder_constructed();
    }
};
template <>
class type_caster<tensor_object> : public constructed_only_caster<tensor_object> {};
template <>
class type_caster<tracker_object> : public constructed_only_caster<tracker_object> {};
template <>
class type_caster<scope_object> : public constructed_only_caster<scope_object> {};
}  // namespace pybind11::detail
#endif

namespace {

/// An npybridge object reference as the binding library's.
bind::object to_python(npb::object value) {
#if defined(NPYBRIDGE_EXAMPLE_PYBIND11)
    return bind::reinterpret_steal<bind::object>(value.release());
#else
    return bind::steal(value.release());
#endif
}

/// The C++ object inside a Python instance of a bound class, or nullptr while it has none (a slot may run on
/// an instance whose value is not in place yet).
template <class T>
T* instance_of(PyObject* self) noexcept {
#if defined(NPYBRIDGE_EXAMPLE_PYBIND11)
    bind::detail::type_caster<T> caster;
    if (!caster.load(bind::handle(self), false)) return nullptr;  // not constructed yet (see the casters above)
    return static_cast<T*>(caster.value);
#else
    return bind::inst_ready(self) ? bind::inst_ptr<T>(self) : nullptr;
#endif
}

/// The slots a class needs beyond what the binding library writes (the garbage collector's: a tensor that
/// borrowed holds its array, a tracker holds its tags; PEP 3118 buffers for Tensor), as PyType_Slot arrays:
/// nanobind takes them as they are (nb::type_slots; Py_tp_traverse makes the type a GC type), pybind11 through
/// custom_type_setup.
#if defined(NPYBRIDGE_EXAMPLE_PYBIND11)
bind::custom_type_setup with_slots(const PyType_Slot* slots) {
    return bind::custom_type_setup([slots](PyHeapTypeObject* heap_type) {
        PyTypeObject* type = &heap_type->ht_type;
        for (const PyType_Slot* slot = slots; slot->slot != 0; ++slot) {
            switch (slot->slot) {
                case Py_tp_traverse:
                    type->tp_flags |= Py_TPFLAGS_HAVE_GC;
                    type->tp_traverse = reinterpret_cast<traverseproc>(slot->pfunc);
                    break;
                case Py_tp_clear: type->tp_clear = reinterpret_cast<inquiry>(slot->pfunc); break;
                case Py_bf_getbuffer:
                    heap_type->as_buffer.bf_getbuffer = reinterpret_cast<getbufferproc>(slot->pfunc);
                    type->tp_as_buffer = &heap_type->as_buffer;
                    break;
                case Py_bf_releasebuffer:
                    heap_type->as_buffer.bf_releasebuffer = reinterpret_cast<releasebufferproc>(slot->pfunc);
                    break;
                default: throw std::logic_error("with_slots: a slot this example does not set up");
            }
        }
    });
}
#else
bind::type_slots with_slots(PyType_Slot* slots) { return bind::type_slots(slots); }
#endif

int tensor_traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    tensor_object* t = instance_of<tensor_object>(self);
    return t != nullptr ? npb::traverse_owner(t->value.owner(), visit, arg) : 0;
}

int tensor_clear(PyObject* self) {
    if (tensor_object* t = instance_of<tensor_object>(self))
        t->value = npb::tensor();  // drops the owner (and the array)
    return 0;
}

int tensor_get_buffer(PyObject* self, Py_buffer* view, int flags) {
    tensor_object* t = instance_of<tensor_object>(self);
    if (t == nullptr) {
        PyErr_SetString(PyExc_BufferError, "this Tensor holds no tensor");
        return -1;
    }
    return npb::get_buffer(self, t->value, view, flags);
}

void tensor_release_buffer(PyObject*, Py_buffer* view) { npb::release_buffer(view); }

int tracker_traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    tracker_object* t = instance_of<tracker_object>(self);
    return t != nullptr ? t->tracker->traverse(visit, arg) : 0;
}

int tracker_clear(PyObject* self) {
    if (tracker_object* t = instance_of<tracker_object>(self)) t->tracker->clear();
    return 0;
}

int scope_traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    if (scope_object* s = instance_of<scope_object>(self)) {
        Py_VISIT(s->owner.ptr());
        Py_VISIT(s->tag.ptr());
    }
    return 0;
}

int scope_clear(PyObject* self) {
    if (scope_object* s = instance_of<scope_object>(self)) {
        s->active.reset();  // ends the scope while its tracker is alive
        s->tag = bind::object();
        s->owner = bind::object();
    }
    return 0;
}

PyType_Slot tensor_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(tensor_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(tensor_clear)},
    {Py_bf_getbuffer, reinterpret_cast<void*>(tensor_get_buffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void*>(tensor_release_buffer)},
    {0, nullptr},
};
PyType_Slot tracker_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(tracker_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(tracker_clear)},
    {0, nullptr},
};
PyType_Slot scope_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(scope_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(scope_clear)},
    {0, nullptr},
};

/// from_numpy / from_dlpack: (obj, dtype=None, policy='try_borrow', narrowing='checked', layout=None).
template <class Convert>
tensor_object tensor_from(bind::handle obj, bind::handle dtype, bind::handle policy, bind::handle narrowing,
                          bind::handle layout, Convert convert) {
    npb::to_tensor_result<npb::tensor> result =
        convert(obj.ptr(), example::to_tensor_options_of(dtype.ptr(), policy.ptr(), narrowing.ptr(), layout.ptr()));
    return tensor_object{std::move(result.tensor), std::move(result.copy_reason)};
}

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
    m.def("must_borrow_f32", [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Float32>,
                                               npb::policy_is<npb::borrow_policy::must_borrow>>& a) {
        return reinterpret_cast<std::uintptr_t>(a->data());
    });
    m.def("fill", [](npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Float32>,
                              npb::policy_is<npb::borrow_policy::must_borrow>, npb::writable_is<true>>& a,
                     float value) {
        // Every element, whatever the array's strides (in elements, any sign).
        const npb::tensor_layout& layout = a->layout();
        auto* data = static_cast<float*>(a->data());
        std::vector<std::size_t> index(layout.ndim, 0);
        for (std::size_t n = 0; n < a->count(); ++n) {
            std::ptrdiff_t offset = 0;
            for (std::size_t d = 0; d < layout.ndim; ++d)
                offset += static_cast<std::ptrdiff_t>(index[d]) * layout.strides[d];
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
    m.def("pack_intb4", [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::IntB4>,
                                          npb::layout_is<npb::lowbit_layout::compact>>& a) {
        const auto* bytes = static_cast<const unsigned char*>(a->data());
        return bind::bytes(reinterpret_cast<const char*>(bytes), a->storage_bytes());
    });

    // Overloads by dtype: the first pass only borrows, so each array finds its own overload.
    m.def("kind",
          [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Float32>>&) { return std::string("Float32"); });
    m.def("kind", [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Int8>>&) { return std::string("Int8"); });
    m.def("kind", [](const std::string& text) { return "str: " + text; });
    // A quantized overload first: a float64 matrix is not a QuantizedS8 one, so the Float32 overload takes it.
    m.def("scale_or_kind",
          [](const qs8_matrix& a) { return "QuantizedS8 scale " + std::to_string(*a->type().scale()); });
    m.def("scale_or_kind", [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Float32>, npb::ndim_is<2>>&) {
        return std::string("Float32");
    });

    // A Float32 overload first: a quantized array is declined by it (codes never become another dtype), so the
    // Quantized8Asymm one takes it.
    m.def("float_or_asymm",
          [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Float32>>&) { return std::string("Float32"); });
    m.def("float_or_asymm", [](const npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Quantized8Asymm>,
                                              npb::policy_is<npb::borrow_policy::copy>>& a) {
        return "Quantized8Asymm zero point " + std::to_string(*a->type().zero_point());
    });

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

    // ---- the Python API of npybridge_example, written with the binding library ---------------------------
    m.def(
        "register_user_dtypes", [m]() { return to_python(example::user_dtype_numbers(m.ptr())); },
        "Registers bfloat16 / intb1 / intb2 / intb4 (a no-op after the first time); returns their type numbers.");
    // bfloat16, intb1, intb2, intb4 as attributes of the module (a failure is the module's ImportError).
    if (!npb::register_user_dtypes(m.ptr())) throw npb::python_error();
    m.def(
        "call",
        [](bind::handle fn, bind::args args) { return to_python(example::call_from_cpp(fn.ptr(), args.ptr())); },
        "call(fn, *args): fn(*args) called from C++; its exceptions come back unchanged.");
    m.def(
        "throw_cpp", [](const std::string& kind, const std::string& message) { example::throw_cpp(kind, message); },
        "throw_cpp(kind, message): throws a C++ exception: out_of_range, bad_alloc, runtime_error, conversion, "
        "unknown.");
    m.def(
        "quantize",
        [](bind::handle values, bind::handle dtype) {
            return to_python(example::quantize_values(values.ptr(), dtype.ptr()));
        },
        bind::arg("values"), bind::arg("dtype"),
        "The codes of real values in a quantized dtype (npybridge::quantize: MegDNN's rounding).");
    m.def(
        "dequantize",
        [](bind::handle codes) {
            const npb::tensor* tensor =
                bind::isinstance<tensor_object>(codes) ? &bind::cast<tensor_object&>(codes).value : nullptr;
            return to_python(example::dequantize_codes(codes.ptr(), tensor));
        },
        bind::arg("codes"), "The float32 values of a quantized Tensor or array (npybridge::dequantize).");
    m.def(
        "dtype_table", [] { return to_python(example::dtype_table_rows()); },
        "One dict per dtype: name, enum, bits, category, packed, numpy (dtype string or None).");
    m.def(
        "lowbit_kernel", [] { return std::string(npb::lowbit_kernel_name()); },
        "The low-bit packing kernels in use: 'ssse3' or 'portable' (NPYBRIDGE_SIMD=baseline keeps the portable ones).");

    const auto from_numpy = [](bind::handle obj, bind::handle dtype, bind::handle policy, bind::handle narrowing,
                               bind::handle layout) {
        return tensor_from(
            obj, dtype, policy, narrowing, layout,
            [](PyObject* o, const npb::to_tensor_options& options) { return npb::to_tensor(o, options); });
    };
    const auto from_dlpack = [](bind::handle obj, bind::handle dtype, bind::handle policy, bind::handle narrowing,
                                bind::handle layout) {
        return tensor_from(
            obj, dtype, policy, narrowing, layout,
            [](PyObject* o, const npb::to_tensor_options& options) { return npb::from_dlpack(o, options); });
    };
    bind::class_<tensor_object>(m, "Tensor", with_slots(tensor_slots))
        .def_static(
            "from_numpy", from_numpy, bind::arg("obj").none(), bind::arg("dtype").none() = bind::none(),
            bind::arg("policy") = "try_borrow", bind::arg("narrowing") = "checked",
            bind::arg("layout").none() = bind::none(),
            "A tensor over the array's memory when it can be shared (policy 'try_borrow'), else a converted copy.")
        .def_static("from_dlpack", from_dlpack, bind::arg("obj"), bind::arg("dtype").none() = bind::none(),
                    bind::arg("policy") = "try_borrow", bind::arg("narrowing") = "checked",
                    bind::arg("layout").none() = bind::none(),
                    "A tensor over a DLPack producer's memory (anything with __dlpack__, or a capsule), as from_numpy.")
        .def_static(
            "from_storage",
            [](bind::handle data, bind::handle dtype_name, bind::handle shape, bind::handle scale,
               bind::handle zero_point, bind::handle layout) {
                return tensor_object{example::tensor_from_storage(data.ptr(), dtype_name.ptr(), shape.ptr(),
                                                                  scale.ptr(), zero_point.ptr(), layout.ptr()),
                                     example::from_storage_copy_reason};
            },
            bind::arg("data"), bind::arg("dtype_name"), bind::arg("shape"), bind::arg("scale").none() = bind::none(),
            bind::arg("zero_point").none() = bind::none(), bind::arg("layout").none() = bind::none(),
            "A tensor over a copy of raw storage bytes (packed bytes for low-bit dtypes).")
        .def(
            "numpy",
            [](const tensor_object& self, bind::handle policy, bind::handle lowbit_format) {
                return to_python(npb::to_array(self.value, npb::share_policy_from(policy.ptr()),
                                               npb::lowbit_format_from(lowbit_format.ptr())));
            },
            bind::arg("policy") = "try_share", bind::arg("lowbit_format") = "int8",
            "An ndarray sharing the tensor's memory when possible, else a copy; lowbit_format='ml_dtypes' gives\n"
            "QuantizedS4 / Quantized4Asymm as ml_dtypes int4 / uint4.")
        .def(
            "copy_from",
            [](tensor_object& self, bind::handle obj, bind::handle narrowing) {
                npb::to_tensor_options options;
                options.narrow = npb::narrowing_from(narrowing.ptr());
                npb::copy_into(obj.ptr(), self.value, options);
            },
            bind::arg("obj").none(), bind::arg("narrowing") = "checked",
            "Copies the array's values into this tensor (same shape; same dtype, or int64 / float64 narrowed); on any\n"
            "error the tensor keeps its values.")
        .def(
            "__dlpack__",
            [](const tensor_object& self, bind::handle stream, bind::handle max_version, bind::handle dl_device,
               bind::handle copy, bind::handle codes) {
                return to_python(npb::to_dlpack(
                    self.value, npb::dlpack_options::from_python(stream.ptr(), max_version.ptr(), dl_device.ptr(),
                                                                 copy.ptr(), codes.ptr())));
            },
            bind::kw_only(), bind::arg("stream").none() = bind::none(), bind::arg("max_version").none() = bind::none(),
            bind::arg("dl_device").none() = bind::none(), bind::arg("copy").none() = bind::none(),
            bind::arg("codes") = false,
            "A DLPack capsule of the tensor (codes=True exports a quantized tensor's codes without its params).")
        .def(
            "__dlpack_device__", [](const tensor_object&) { return bind::make_tuple(npb::dlpack::kDLCPU, 0); },
            "(kDLCPU, 0): tensors live in CPU memory.")
        .def(
            "storage", [](const tensor_object& self) { return to_python(example::storage_bytes(self.value)); },
            "The tensor's raw storage as bytes (packed for low-bit dtypes).")
        .def("__repr__", [](const tensor_object& self) { return example::repr_text(self.value); })
        .def_prop_ro(
            "dtype_name", [](const tensor_object& self) { return std::string(self.value.type().name()); },
            "npybridge dtype name, e.g. 'QuantizedS8'.")
        .def_prop_ro(
            "dtype",
            [](const tensor_object& self) { return to_python(example::numpy_dtype_or_none(self.value.type())); },
            "numpy dtype (with metadata when quantized), or None without a numpy form.")
        .def_prop_ro(
            "scale",
            [](const tensor_object& self) {
                const auto scale = self.value.type().scale();
                return scale ? std::optional<double>(static_cast<double>(*scale)) : std::nullopt;
            },
            "Quantization scale, or None.")
        .def_prop_ro(
            "zero_point", [](const tensor_object& self) { return self.value.type().zero_point(); },
            "Zero point of the Asymm dtypes, or None.")
        .def_prop_ro(
            "shape", [](const tensor_object& self) { return to_python(example::shape_tuple(self.value.layout())); },
            "Shape as a tuple.")
        .def_prop_ro(
            "strides", [](const tensor_object& self) { return to_python(example::strides_tuple(self.value.layout())); },
            "Strides in elements.")
        .def_prop_ro(
            "borrowed", [](const tensor_object& self) { return self.value.borrowed(); },
            "True when the tensor shares the array's memory.")
        .def_prop_ro(
            "writable", [](const tensor_object& self) { return self.value.writable(); },
            "False for a view of a read-only array.")
        .def_prop_ro(
            "copy_reason",
            [](const tensor_object& self) {
                return self.copy_reason.empty() ? std::nullopt : std::optional<std::string>(self.copy_reason);
            },
            "Why from_numpy copied instead of sharing (None when borrowed).")
        .def_prop_ro(
            "data_address",
            [](const tensor_object& self) { return reinterpret_cast<std::uintptr_t>(self.value.data()); },
            "Address of the first element (to see sharing).");

    bind::class_<scope_object>(m, "TrackerScope", with_slots(scope_slots))
        .def("__enter__",
             [](scope_object& self) {
                 if (!self.owner) throw npb::error("this scope object was cleared by the garbage collector");
                 if (self.active) throw npb::error("this scope object is already entered");
                 self.active.emplace(bind::cast<tracker_object&>(self.owner).tracker->enter(self.tag.ptr()));
                 return self.tag;
             })
        .def("__exit__", [](scope_object& self, bind::args) {
            self.active.reset();
            return false;
        });

    bind::class_<tracker_object>(m, "OriginTracker", with_slots(tracker_slots))
        .def(bind::init<>())
        .def(
            "scope",
            [](bind::object self, bind::object tag) {
                if (instance_of<tracker_object>(self.ptr()) == nullptr) {
                    throw bind::type_error(
                        "OriginTracker.scope: this OriginTracker was made by __new__ alone, never initialized");
                }
                return scope_object{std::move(self), std::move(tag), std::nullopt};
            },
            bind::arg("tag").none(), "scope(tag): a context manager; objects created inside are tagged with tag.")
        .def(
            "create",
            [](tracker_object& self) {
                const unsigned long long key = ++self.next_key;  // stands for a new C++ object (an operator, a node)
                self.tracker->on_create(key);
                return key;
            },
            "Creates a C++ object and returns its integer key.")
        .def(
            "origin",
            [](const tracker_object& self, unsigned long long key) {
                PyObject* tag = self.tracker->origin(key);
                return to_python(npb::object::borrow(tag != nullptr ? tag : Py_None));
            },
            "origin(key): the tag of the key, or None.")
        .def(
            "blame",
            [](const tracker_object& self, unsigned long long key, const std::string& message) {
                return self.tracker->blame(key, message);
            },
            bind::arg("key"), bind::arg("message") = "",
            "blame(key, message=''): a message naming where key was created.")
        .def(
            "forget", [](tracker_object& self, unsigned long long key) { self.tracker->forget(key); },
            "forget(key): the object is gone; drop its tag.")
        .def(
            "tagged", [](const tracker_object& self) { return self.tracker->size(); }, "How many keys hold a tag.");
}
