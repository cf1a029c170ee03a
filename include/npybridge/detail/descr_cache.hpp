// npybridge/detail/descr_cache.hpp — the caches behind from_numpy_dtype / to_numpy_dtype, dropped at interpreter exit.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>
#include <npybridge/core/quantization.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <array>
#include <utility>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Interned key strings, kept for the process on purpose.
inline PyObject* key_object(std::string_view key) {
    struct slot {
        std::string_view key;
        PyObject* object;
    };
    static std::array<slot, 8> slots{};
    for (slot& s : slots) {
        if (s.object != nullptr && s.key == key) return s.object;
        if (s.object == nullptr) {
            s.object = PyUnicode_InternFromString(std::string(key).c_str());
            s.key = key;
            return s.object;
        }
    }
    return PyUnicode_InternFromString(std::string(key).c_str());  // unreachable with today's keys
}

inline void ensure_cleanup_registered();

/// A cached descr rests on its metadata['mgb_dtype'] dict, which numpy does not copy; the stamp sees a change by the
/// dict's version tag (before 3.12) or its values' identities.
class metadata_stamp {
public:
    metadata_stamp() noexcept = default;
    /// The stamp of `descr`'s mgb_dtype dict now.
    explicit metadata_stamp(PyArray_Descr* descr) noexcept {
        PyObject* metadata = descr_metadata(descr);
        PyObject* fields =
            metadata && PyDict_Check(metadata) ? PyDict_GetItemWithError(metadata, key_object("mgb_dtype")) : nullptr;
        if (fields == nullptr || !PyDict_Check(fields)) {
            PyErr_Clear();
            return;
        }
        Py_INCREF(fields);
        m_fields = fields;
#if PY_VERSION_HEX < 0x030C0000
        m_version = reinterpret_cast<PyDictObject*>(fields)->ma_version_tag;
#else
        m_size = PyDict_GET_SIZE(fields);
        for (std::size_t i = 0; i < keys().size(); ++i) {
            m_values[i] = PyDict_GetItemWithError(fields, key_object(keys()[i]));
            Py_XINCREF(m_values[i]);
        }
        PyErr_Clear();
#endif
    }
    metadata_stamp(metadata_stamp&& other) noexcept { swap(other); }
    metadata_stamp& operator=(metadata_stamp&& other) noexcept {
        metadata_stamp gone(std::move(other));
        swap(gone);
        return *this;
    }
    ~metadata_stamp() {
        if (m_fields == nullptr || !Py_IsInitialized()) return;  // a static cache outliving the interpreter
        Py_DECREF(m_fields);
#if PY_VERSION_HEX >= 0x030C0000
        for (PyObject* value : m_values) Py_XDECREF(value);
#endif
    }

    /// True while the dict is unchanged.
    bool holds() const noexcept {
        if (m_fields == nullptr) return true;
#if PY_VERSION_HEX < 0x030C0000
        return reinterpret_cast<PyDictObject*>(m_fields)->ma_version_tag == m_version;
#else
        if (PyDict_GET_SIZE(m_fields) != m_size) return false;
        for (std::size_t i = 0; i < keys().size(); ++i) {
            PyObject* now = PyDict_GetItemWithError(m_fields, key_object(keys()[i]));
            if (now != m_values[i]) {
                PyErr_Clear();
                return false;
            }
        }
        return true;
#endif
    }

private:
    static constexpr std::array<std::string_view, 3> keys() { return {"name", "scale", "zero_point"}; }
    void swap(metadata_stamp& other) noexcept {
        std::swap(m_fields, other.m_fields);
#if PY_VERSION_HEX < 0x030C0000
        std::swap(m_version, other.m_version);
#else
        std::swap(m_size, other.m_size);
        std::swap(m_values, other.m_values);
#endif
    }

    PyObject* m_fields = nullptr;
#if PY_VERSION_HEX < 0x030C0000
    std::uint64_t m_version = 0;
#else
    Py_ssize_t m_size = 0;
    std::array<PyObject*, 3> m_values{};
#endif
};

/// A small direct-mapped dtype cache under the GIL; holds each descr (its address cannot be reused), emptied at exit,
/// missing entries whose stamp changed.
template <class Key, class Value>
class descr_cache {
public:
    struct entry {
        maybe<Key> key;
        PyArray_Descr* descr = nullptr;
        Value value{};
        metadata_stamp stamp;
    };

    entry* find(const Key& key, std::size_t hash) noexcept {
        entry& slot = m_slots[hash % m_slots.size()];
        return slot.key && *slot.key == key && slot.stamp.holds() ? &slot : nullptr;
    }

    /// Caches `descr` for `key` with the stamp its value was made from.
    void put(const Key& key, std::size_t hash, PyArray_Descr* descr, const Value& value, metadata_stamp stamp) {
        ensure_cleanup_registered();
        entry& slot = m_slots[hash % m_slots.size()];
        PyArray_Descr* old = slot.descr;
        Py_INCREF(descr);
        slot.key = key;
        slot.descr = descr;
        slot.value = value;
        slot.stamp = std::move(stamp);
        Py_XDECREF(old);
    }

    void clear() noexcept {
        for (entry& slot : m_slots) {
            PyArray_Descr* old = slot.descr;
            slot = entry{};
            Py_XDECREF(old);
        }
    }

private:
    std::array<entry, 64> m_slots{};
};

inline descr_cache<PyArray_Descr*, std::optional<dtype>>& parsed_descrs() {
    static descr_cache<PyArray_Descr*, std::optional<dtype>> cache;
    return cache;
}

inline descr_cache<dtype, int>& made_descrs() {
    static descr_cache<dtype, int> cache;
    return cache;
}

inline bool& cleanup_registered() {
    static bool registered = false;
    return registered;
}

inline PyObject* clear_caches(PyObject*, PyObject*) {
    parsed_descrs().clear();
    made_descrs().clear();
    cleanup_registered() = false;
    Py_RETURN_NONE;
}

/// Registers clear_caches with atexit, so references are dropped while the interpreter runs.
inline void ensure_cleanup_registered() {
    if (cleanup_registered()) return;
    static PyMethodDef def = {"_npybridge_clear_dtype_caches", clear_caches, METH_NOARGS, nullptr};
    object function = object::steal(PyCFunction_New(&def, nullptr));
    object atexit = object::steal(PyImport_ImportModule("atexit"));
    object done = (function && atexit)
                      ? object::steal(PyObject_CallMethod(atexit.get(), "register", "O", function.get()))
                      : object{};
    if (!done) {
        PyErr_Clear();  // without it the caches keep a few dtypes until exit
        return;
    }
    cleanup_registered() = true;
}

struct descr_pointer_hash {
    std::size_t operator()(PyArray_Descr* descr) const noexcept { return reinterpret_cast<std::uintptr_t>(descr) >> 4; }
};

}  // namespace detail
}  // namespace npybridge
