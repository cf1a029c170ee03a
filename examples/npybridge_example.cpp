// examples/npybridge_example.cpp — the Python face of npybridge: an extension module written with the CPython
// API and npybridge's public headers only.
#include <npybridge/npybridge.hpp>

#include "examples/example_support.hpp"

#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <optional>
#include <utility>
#include <string>
#include <string_view>

namespace npb = npybridge;

namespace {

// ---- the Tensor type ---------------------------------------------------------

/// The Python object: the tensor and its copy reason live inside it (no
/// allocation besides the object itself).
struct tensor_object {
    PyObject_HEAD npb::tensor value;
    std::string copy_reason;
};

PyTypeObject* tensor_type = nullptr;  // made once in PyInit (a heap type)

PyObject* wrap(npb::tensor value, std::string copy_reason = {}) {
    auto* self = PyObject_GC_New(tensor_object, tensor_type);
    if (self == nullptr) return nullptr;
    new (&self->value) npb::tensor(std::move(value));  // noexcept moves: nothing can fail past PyObject_GC_New
    new (&self->copy_reason) std::string(std::move(copy_reason));
    PyObject_GC_Track(self);
    return reinterpret_cast<PyObject*>(self);
}

npb::tensor& unwrap(PyObject* self) { return reinterpret_cast<tensor_object*>(self)->value; }

void tensor_dealloc(PyObject* self) {
    auto* t = reinterpret_cast<tensor_object*>(self);
    PyTypeObject* type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    t->value.~tensor();  // releases a borrowed array's reference (GIL held here)
    t->copy_reason.~basic_string();
    PyObject_GC_Del(self);
    Py_DECREF(type);
}

/// A tensor that borrowed from an array keeps the array alive: the garbage
/// collector must see that reference, or `a.t = Tensor.from_numpy(a)` (an
/// ndarray subclass holding its own tensor) would never be freed.
int tensor_traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    return npb::traverse_owner(unwrap(self).owner(), visit, arg);
}

int tensor_clear(PyObject* self) {
    unwrap(self) = npb::tensor();  // drops the owner (and with it the array)
    return 0;
}

/// The interned Python strings of a function's argument names (made once per
/// names array and kept for the life of the process, like CPython's own).
template <std::size_t N>
const std::array<PyObject*, N>& interned_names(const char* const (&names)[N]) {
    struct entry {
        const char* const* names;
        std::array<PyObject*, N> interned;
    };
    static std::array<entry, 8> cache{};
    for (entry& e : cache) {
        if (e.names == names) return e.interned;
        if (e.names == nullptr) {
            for (std::size_t i = 0; i < N; ++i) e.interned[i] = PyUnicode_InternFromString(names[i]);
            e.names = names;
            return e.interned;
        }
    }
    static std::array<PyObject*, N> none{};  // more than 8 functions of N arguments: text comparison only
    return none;
}

/// Vectorcall arguments by name: fills `slots` (nullptr where not given) from
/// positional arguments, then keywords. Like CPython's own parsers, a missing
/// required argument, an unknown or repeated keyword, or too many positional
/// arguments is a TypeError naming the function and the argument.
template <std::size_t N>
void parse_arguments(const char* function, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                     const char* const (&names)[N], std::size_t required, PyObject* (&slots)[N]) {
    auto fail = [&](const std::string& what) {
        PyErr_Format(PyExc_TypeError, "%s() %s", function, what.c_str());
        throw npb::python_error();
    };
    if (static_cast<std::size_t>(nargs) > N) {
        fail("takes at most " + std::to_string(N) + " arguments (" + std::to_string(nargs) + " given)");
    }
    for (std::size_t i = 0; i < N; ++i) slots[i] = i < static_cast<std::size_t>(nargs) ? args[i] : nullptr;
    const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < keywords; ++k) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, k);
        // Keyword names from Python calls are interned: compare pointers first, text only when none matches.
        const std::array<PyObject*, N>& interned = interned_names(names);
        std::size_t i = 0;
        while (i < N && key != interned[i]) ++i;
        if (i == N) {
            i = 0;
            while (i < N && PyUnicode_CompareWithASCIIString(key, names[i]) != 0) ++i;
        }
        if (i == N) fail("got an unexpected keyword argument " + npb::safe_repr(key));
        if (slots[i] != nullptr) fail("got multiple values for argument '" + std::string(names[i]) + "'");
        slots[i] = args[nargs + k];
    }
    for (std::size_t i = 0; i < required; ++i) {
        if (slots[i] == nullptr) fail("missing required argument '" + std::string(names[i]) + "'");
    }
}

/// from_numpy and from_dlpack: (obj, dtype=None, policy='try_borrow', narrowing='checked', layout=None).
template <class Convert>
PyObject* tensor_from(const char* function, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames,
                      Convert convert) {
    return npb::guarded([&]() -> PyObject* {
        static const char* const names[] = {"obj", "dtype", "policy", "narrowing", "layout"};
        PyObject* slots[5];
        parse_arguments(function, args, PyVectorcall_NARGS(nargsf), kwnames, names, 1, slots);
        auto [obj, dtype, policy, narrowing, layout] = slots;
        const npb::to_tensor_options options = example::to_tensor_options_of(dtype, policy, narrowing, layout);
        npb::to_tensor_result<npb::tensor> result = convert(obj, options);
        return wrap(std::move(result.tensor), std::move(result.copy_reason));
    });
}

PyObject* tensor_from_numpy(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
    return tensor_from("from_numpy", args, nargsf, kwnames, [](PyObject* obj, const npb::to_tensor_options& options) {
        return npb::to_tensor(obj, options);
    });
}

PyObject* tensor_from_dlpack(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
    return tensor_from("from_dlpack", args, nargsf, kwnames, [](PyObject* obj, const npb::to_tensor_options& options) {
        return npb::from_dlpack(obj, options);
    });
}

/// Tensor.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None, codes=False)
PyObject* tensor_dlpack(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
    return npb::guarded([&]() -> PyObject* {
        // Keyword-only, so the order is free: NumPy passes max_version, dl_device and copy.
        static const char* const names[] = {"max_version", "dl_device", "copy", "stream", "codes"};
        PyObject* slots[5];
        if (PyVectorcall_NARGS(nargsf) != 0) {
            PyErr_SetString(PyExc_TypeError, "__dlpack__() takes keyword arguments only");
            return nullptr;
        }
        parse_arguments("__dlpack__", args, 0, kwnames, names, 0, slots);
        auto [max_version, dl_device, copy, stream, codes] = slots;
        return npb::to_dlpack(unwrap(self),
                              npb::dlpack_options::from_python(stream, max_version, dl_device, copy, codes))
            .release();
    });
}

PyObject* tensor_dlpack_device(PyObject*, PyObject*) { return Py_BuildValue("(ii)", npb::dlpack::kDLCPU, 0); }

PyObject* tensor_from_storage(PyObject*, PyObject* args, PyObject* kwargs) {
    return npb::guarded([&]() -> PyObject* {
        static const char* keywords[] = {"data", "dtype_name", "shape", "scale", "zero_point", "layout", nullptr};
        PyObject *data = nullptr, *name = nullptr, *shape = nullptr, *scale = Py_None, *zero_point = Py_None,
                 *layout = nullptr;
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OOO:from_storage", const_cast<char**>(keywords), &data,
                                         &name, &shape, &scale, &zero_point, &layout)) {
            return nullptr;
        }
        return wrap(example::tensor_from_storage(data, name, shape, scale, zero_point, layout),
                    example::from_storage_copy_reason);
    });
}

/// Tensor.copy_from(obj, narrowing='checked'): copies the array's values into
/// this tensor's memory (same shape; same dtype or int64 / float64 narrowed).
PyObject* tensor_copy_from(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
    return npb::guarded([&]() -> PyObject* {
        static const char* const names[] = {"obj", "narrowing"};
        PyObject* slots[2];
        parse_arguments("copy_from", args, PyVectorcall_NARGS(nargsf), kwnames, names, 1, slots);
        npb::to_tensor_options options;
        options.narrow = npb::narrowing_from(slots[1]);
        npb::copy_into(slots[0], unwrap(self), options);
        Py_RETURN_NONE;
    });
}

PyObject* tensor_numpy(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
    return npb::guarded([&]() -> PyObject* {
        static const char* const names[] = {"policy", "lowbit_format"};
        PyObject* slots[2];
        parse_arguments("numpy", args, PyVectorcall_NARGS(nargsf), kwnames, names, 0, slots);
        return npb::to_array(unwrap(self), npb::share_policy_from(slots[0]), npb::lowbit_format_from(slots[1]))
            .release();
    });
}

int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
    return npb::get_buffer(self, unwrap(self), view, flags);
}
void tensor_releasebuffer(PyObject*, Py_buffer* view) { npb::release_buffer(view); }

PyObject* tensor_storage(PyObject* self, PyObject*) {
    return npb::guarded([&] { return example::storage_bytes(unwrap(self)).release(); });
}

PyObject* tensor_repr(PyObject* self) {
    return npb::guarded([&] { return PyUnicode_FromString(example::repr_text(unwrap(self)).c_str()); });
}

PyObject* get_dtype_name(PyObject* self, void*) {
    const std::string_view name = unwrap(self).type().name();
    return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}

PyObject* get_dtype(PyObject* self, void*) {
    return npb::guarded([&] { return example::numpy_dtype_or_none(unwrap(self).type()).release(); });
}

PyObject* get_scale(PyObject* self, void*) {
    const auto scale = unwrap(self).type().scale();
    if (!scale) Py_RETURN_NONE;
    return PyFloat_FromDouble(static_cast<double>(*scale));
}

PyObject* get_zero_point(PyObject* self, void*) {
    const auto zero_point = unwrap(self).type().zero_point();
    if (!zero_point) Py_RETURN_NONE;
    return PyLong_FromLong(*zero_point);
}

PyObject* get_shape(PyObject* self, void*) {
    return npb::guarded([&] { return example::shape_tuple(unwrap(self).layout()).release(); });
}
PyObject* get_strides(PyObject* self, void*) {
    return npb::guarded([&] { return example::strides_tuple(unwrap(self).layout()).release(); });
}
PyObject* get_borrowed(PyObject* self, void*) { return PyBool_FromLong(unwrap(self).borrowed()); }
PyObject* get_writable(PyObject* self, void*) { return PyBool_FromLong(unwrap(self).writable()); }

PyObject* get_copy_reason(PyObject* self, void*) {
    const std::string& reason = reinterpret_cast<tensor_object*>(self)->copy_reason;
    if (reason.empty()) Py_RETURN_NONE;
    return PyUnicode_FromString(reason.c_str());
}

PyObject* get_data_address(PyObject* self, void*) { return PyLong_FromVoidPtr(unwrap(self).data()); }

PyMethodDef tensor_methods[] = {
    {"from_numpy", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(tensor_from_numpy)),
     METH_FASTCALL | METH_KEYWORDS | METH_CLASS,
     "from_numpy(obj, dtype=None, policy='try_borrow', narrowing='checked', layout=None)\n"
     "A tensor over the array's memory when it can be shared (policy 'try_borrow'), else a converted copy."},
    {"from_storage", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(tensor_from_storage)),
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_storage(data, dtype_name, shape, scale=None, zero_point=None, layout=None)\n"
     "A tensor over a copy of raw storage bytes (packed bytes for low-bit dtypes)."},
    {"from_dlpack", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(tensor_from_dlpack)),
     METH_FASTCALL | METH_KEYWORDS | METH_CLASS,
     "from_dlpack(obj, dtype=None, policy='try_borrow', narrowing='checked', layout=None)\n"
     "A tensor over a DLPack producer's memory (anything with __dlpack__, or a capsule), as from_numpy."},
    {"numpy", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(tensor_numpy)), METH_FASTCALL | METH_KEYWORDS,
     "numpy(policy='try_share', lowbit_format='int8'): an ndarray sharing the tensor's memory when possible, else a "
     "copy;\n"
     "lowbit_format='ml_dtypes' gives QuantizedS4 / Quantized4Asymm as ml_dtypes int4 / uint4."},
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(tensor_dlpack)),
     METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None, codes=False): a DLPack capsule."},
    {"__dlpack_device__", tensor_dlpack_device, METH_NOARGS, "(kDLCPU, 0): tensors live in CPU memory."},
    {"copy_from", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(tensor_copy_from)),
     METH_FASTCALL | METH_KEYWORDS,
     "copy_from(obj, narrowing='checked'): copies the array's values into this tensor (same shape; same dtype, or\n"
     "int64 / float64 narrowed); on any error the tensor keeps its values."},
    {"storage", tensor_storage, METH_NOARGS, "The tensor's raw storage as bytes (packed for low-bit dtypes)."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef tensor_getset[] = {
    {"dtype_name", get_dtype_name, nullptr, "npybridge dtype name, e.g. 'QuantizedS8'.", nullptr},
    {"dtype", get_dtype, nullptr, "numpy dtype (with metadata when quantized), or None without a numpy form.", nullptr},
    {"scale", get_scale, nullptr, "Quantization scale, or None.", nullptr},
    {"zero_point", get_zero_point, nullptr, "Zero point of the Asymm dtypes, or None.", nullptr},
    {"shape", get_shape, nullptr, "Shape as a tuple.", nullptr},
    {"strides", get_strides, nullptr, "Strides in elements.", nullptr},
    {"borrowed", get_borrowed, nullptr, "True when the tensor shares the array's memory.", nullptr},
    {"writable", get_writable, nullptr, "False for a view of a read-only array.", nullptr},
    {"copy_reason", get_copy_reason, nullptr, "Why from_numpy copied instead of sharing (None when borrowed).",
     nullptr},
    {"data_address", get_data_address, nullptr, "Address of the first element (to see sharing).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot tensor_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(tensor_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(tensor_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(tensor_clear)},
    {Py_bf_getbuffer, reinterpret_cast<void*>(tensor_getbuffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void*>(tensor_releasebuffer)},
    {Py_tp_repr, reinterpret_cast<void*>(tensor_repr)},
    {Py_tp_methods, tensor_methods},
    {Py_tp_getset, tensor_getset},
    {Py_tp_doc, const_cast<char*>(
                    "A tensor (npybridge::tensor): from_numpy / from_storage make one, numpy() gives an array back.")},
    {0, nullptr},
};

// Tensors come from from_numpy / from_storage only, scopes from OriginTracker.scope:
// Python cannot make either with empty internals.
#if defined(Py_TPFLAGS_DISALLOW_INSTANTIATION)
constexpr unsigned long made_in_cpp_only = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_HAVE_GC;
#else
#error "npybridge_example needs Python 3.10 or later (Py_TPFLAGS_DISALLOW_INSTANTIATION)"
#endif

PyType_Spec tensor_spec = {"npybridge_example.Tensor", sizeof(tensor_object), 0, made_in_cpp_only, tensor_slots};

// ---- errors through C++ (npybridge/python_errors.hpp) ------------------------------

/// call(fn, *args): calls fn from C++; a Python exception travels through the
/// C++ frames as npybridge::python_error and comes back as the same object.
PyObject* call(PyObject*, PyObject* args) {
    return npb::guarded([&]() -> PyObject* {
        const Py_ssize_t count = PyTuple_GET_SIZE(args);
        if (count < 1) throw npb::error("call(fn, *args) needs fn");
        npb::object rest = npb::object::steal(PyTuple_GetSlice(args, 1, count));
        if (!rest) throw npb::python_error();
        return example::call_from_cpp(PyTuple_GET_ITEM(args, 0), rest.get()).release();
    });
}

/// throw_cpp(kind, message): throws a C++ exception of the named kind.
PyObject* throw_cpp(PyObject*, PyObject* args) {
    return npb::guarded([&]() -> PyObject* {
        const char* kind = nullptr;
        const char* message = nullptr;
        if (!PyArg_ParseTuple(args, "ss:throw_cpp", &kind, &message)) return nullptr;
        example::throw_cpp(kind, message);
    });
}

// ---- OriginTracker (npybridge/tracker.hpp) -------------------------------------------

struct tracker_object {
    PyObject_HEAD example::tracker* tracker;
    unsigned long long next_key;
};

struct scope_object {
    PyObject_HEAD PyObject* owner;  // the tracker_object (strong)
    PyObject* tag;                  // strong
    std::optional<example::tracker::scope>* active;
};

PyTypeObject* tracker_type = nullptr;
PyTypeObject* scope_type = nullptr;

example::tracker& tracker_of(PyObject* self) { return *reinterpret_cast<tracker_object*>(self)->tracker; }

PyObject* tracker_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    return npb::guarded([&]() -> PyObject* {
        if (!PyArg_ParseTuple(args, ":OriginTracker") || (kwargs && PyDict_Size(kwargs) > 0)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "OriginTracker() takes no arguments");
            return nullptr;
        }
        auto* self = reinterpret_cast<tracker_object*>(type->tp_alloc(type, 0));
        if (self == nullptr) return nullptr;
        self->tracker = new example::tracker();
        self->next_key = 0;
        return reinterpret_cast<PyObject*>(self);
    });
}

void tracker_dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    delete reinterpret_cast<tracker_object*>(self)->tracker;  // releases every tag
    type->tp_free(self);
    Py_DECREF(type);
}

/// Tags are Python objects the tracker holds: a tag that refers to its
/// tracker (or a frame that holds it) must not keep both alive forever.
int tracker_traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    auto* tracker = reinterpret_cast<tracker_object*>(self)->tracker;
    return tracker != nullptr ? tracker->traverse(visit, arg) : 0;
}

int tracker_clear(PyObject* self) {
    if (auto* tracker = reinterpret_cast<tracker_object*>(self)->tracker) tracker->clear();
    return 0;
}

PyObject* tracker_scope(PyObject* self, PyObject* tag) {
    return npb::guarded([&]() -> PyObject* {
        auto active = std::make_unique<std::optional<example::tracker::scope>>();
        auto* scope = PyObject_GC_New(scope_object, scope_type);
        if (scope == nullptr) return nullptr;
        Py_INCREF(self);
        Py_INCREF(tag);
        scope->owner = self;
        scope->tag = tag;
        scope->active = active.release();
        PyObject_GC_Track(scope);
        return reinterpret_cast<PyObject*>(scope);
    });
}

PyObject* tracker_create(PyObject* self, PyObject*) {
    return npb::guarded([&] {
        auto* t = reinterpret_cast<tracker_object*>(self);
        const unsigned long long key = ++t->next_key;  // stands for a new C++ object (an operator, a node)
        t->tracker->on_create(key);
        return PyLong_FromUnsignedLongLong(key);
    });
}

unsigned long long key_of(PyObject* key) {
    const unsigned long long value = PyLong_AsUnsignedLongLong(key);
    if (value == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw npb::python_error();
    return value;
}

PyObject* tracker_origin(PyObject* self, PyObject* key) {
    return npb::guarded([&]() -> PyObject* {
        PyObject* tag = tracker_of(self).origin(key_of(key));
        if (tag == nullptr) Py_RETURN_NONE;
        Py_INCREF(tag);
        return tag;
    });
}

PyObject* tracker_blame(PyObject* self, PyObject* args) {
    return npb::guarded([&]() -> PyObject* {
        PyObject* key = nullptr;
        const char* message = "";
        if (!PyArg_ParseTuple(args, "O|s:blame", &key, &message)) return nullptr;
        const std::string text = tracker_of(self).blame(key_of(key), message);
        return PyUnicode_FromString(text.c_str());
    });
}

PyObject* tracker_forget(PyObject* self, PyObject* key) {
    return npb::guarded([&]() -> PyObject* {
        tracker_of(self).forget(key_of(key));
        Py_RETURN_NONE;
    });
}

PyObject* tracker_len(PyObject* self, PyObject*) { return PyLong_FromSize_t(tracker_of(self).size()); }

PyMethodDef tracker_methods[] = {
    {"scope", tracker_scope, METH_O, "scope(tag): a context manager; objects created inside are tagged with tag."},
    {"create", tracker_create, METH_NOARGS, "Creates a C++ object and returns its integer key."},
    {"origin", tracker_origin, METH_O, "origin(key): the tag of the key, or None."},
    {"blame", tracker_blame, METH_VARARGS, "blame(key, message=''): a message naming where key was created."},
    {"forget", tracker_forget, METH_O, "forget(key): the object is gone; drop its tag."},
    {"tagged", tracker_len, METH_NOARGS, "How many keys hold a tag."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot tracker_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(tracker_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(tracker_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(tracker_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(tracker_clear)},
    {Py_tp_methods, tracker_methods},
    {Py_tp_doc, const_cast<char*>("OriginTracker(): tags what is created inside `with tracker.scope(tag):`.")},
    {0, nullptr},
};

PyType_Spec tracker_spec = {"npybridge_example.OriginTracker", sizeof(tracker_object), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, tracker_slots};

void scope_dealloc(PyObject* self) {
    auto* s = reinterpret_cast<scope_object*>(self);
    PyTypeObject* type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    delete s->active;  // ends the scope if still active
    Py_XDECREF(s->tag);
    Py_XDECREF(s->owner);
    PyObject_GC_Del(self);
    Py_DECREF(type);
}

int scope_traverse(PyObject* self, visitproc visit, void* arg) {
    auto* s = reinterpret_cast<scope_object*>(self);
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(s->owner);
    Py_VISIT(s->tag);
    return 0;
}

int scope_clear(PyObject* self) {
    auto* s = reinterpret_cast<scope_object*>(self);
    s->active->reset();  // the tracker must not outlive an active scope's end
    Py_CLEAR(s->tag);
    Py_CLEAR(s->owner);
    return 0;
}

PyObject* scope_enter(PyObject* self, PyObject*) {
    return npb::guarded([&]() -> PyObject* {
        auto* s = reinterpret_cast<scope_object*>(self);
        if (s->owner == nullptr) throw npb::error("this scope object was cleared by the garbage collector");
        if (s->active->has_value()) throw npb::error("this scope object is already entered");
        s->active->emplace(tracker_of(s->owner).enter(s->tag));
        Py_INCREF(s->tag);
        return s->tag;
    });
}

PyObject* scope_exit(PyObject* self, PyObject*) {
    auto* s = reinterpret_cast<scope_object*>(self);
    s->active->reset();
    Py_RETURN_FALSE;
}

PyMethodDef scope_methods[] = {
    {"__enter__", scope_enter, METH_NOARGS, nullptr},
    {"__exit__", scope_exit, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot scope_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(scope_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(scope_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(scope_clear)},
    {Py_tp_methods, scope_methods},
    {0, nullptr},
};

PyType_Spec scope_spec = {"npybridge_example.TrackerScope", sizeof(scope_object), 0, made_in_cpp_only, scope_slots};

// ---- module functions -----------------------------------------------------------

PyObject* dtype_table(PyObject*, PyObject*) {
    return npb::guarded([&] { return example::dtype_table_rows().release(); });
}

PyObject* register_user_dtypes_again(PyObject* module, PyObject*) {
    return npb::guarded([&] { return example::user_dtype_numbers(module).release(); });
}

PyObject* quantize(PyObject*, PyObject* args) {
    return npb::guarded([&]() -> PyObject* {
        PyObject *values = nullptr, *dtype = nullptr;
        if (!PyArg_ParseTuple(args, "OO:quantize", &values, &dtype)) return nullptr;
        return example::quantize_values(values, dtype).release();
    });
}

PyObject* dequantize(PyObject*, PyObject* codes) {
    return npb::guarded([&] {
        const bool is_tensor = PyObject_TypeCheck(codes, tensor_type) != 0;
        return example::dequantize_codes(codes, is_tensor ? &unwrap(codes) : nullptr).release();
    });
}

PyObject* lowbit_kernel(PyObject*, PyObject*) { return PyUnicode_FromString(npb::lowbit_kernel_name()); }

PyMethodDef module_methods[] = {
    {"quantize", quantize, METH_VARARGS,
     "quantize(values, dtype): the codes of real values in a quantized dtype (npybridge::quantize: MegDNN's "
     "rounding)."},
    {"dequantize", dequantize, METH_O,
     "dequantize(codes): the float32 values of a quantized Tensor or array (npybridge::dequantize)."},
    {"register_user_dtypes", register_user_dtypes_again, METH_NOARGS,
     "Registers bfloat16 / intb1 / intb2 / intb4 (a no-op after the first time); returns their type numbers."},
    {"call", call, METH_VARARGS, "call(fn, *args): fn(*args) called from C++; its exceptions come back unchanged."},
    {"throw_cpp", throw_cpp, METH_VARARGS,
     "throw_cpp(kind, message): throws a C++ exception: out_of_range, bad_alloc, runtime_error, conversion, unknown."},
    {"dtype_table", dtype_table, METH_NOARGS,
     "One dict per dtype: name, enum, bits, category, packed, numpy (dtype string or None)."},
    {"lowbit_kernel", lowbit_kernel, METH_NOARGS,
     "The low-bit packing kernels in use: 'ssse3' or 'portable' (NPYBRIDGE_SIMD=baseline keeps the portable ones)."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                          "npybridge_example",
                          "npybridge's example extension: NumPy arrays <-> npybridge tensors.",
                          -1,
                          module_methods,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_npybridge_example() {
    if (!npb::import_numpy()) return nullptr;
    npb::object module = npb::object::steal(PyModule_Create(&module_def));
    if (!module) return nullptr;
    if (!npb::make_exception_classes(module.get())) return nullptr;
    if (!npb::register_user_dtypes(module.get())) return nullptr;
    if (tensor_type == nullptr) {
        tensor_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&tensor_spec));
        if (tensor_type == nullptr) return nullptr;
    }
    Py_INCREF(tensor_type);
    if (PyModule_AddObject(module.get(), "Tensor", reinterpret_cast<PyObject*>(tensor_type)) != 0) {
        Py_DECREF(tensor_type);
        return nullptr;
    }
    auto add_type = [&](PyTypeObject*& type, PyType_Spec& spec, const char* name) {
        if (type == nullptr) type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
        if (type == nullptr) return false;
        Py_INCREF(type);
        if (PyModule_AddObject(module.get(), name, reinterpret_cast<PyObject*>(type)) != 0) {
            Py_DECREF(type);
            return false;
        }
        return true;
    };
    if (!add_type(tracker_type, tracker_spec, "OriginTracker") || !add_type(scope_type, scope_spec, "TrackerScope")) {
        return nullptr;
    }
    return module.release();
}
