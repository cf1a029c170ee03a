// npybridge/detail/python_owner_blocks.hpp — the owner blocks of python_owner.hpp and the free lists recycling them.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>
#include <npybridge/core/tensor.hpp>

#include <cstddef>
#include <new>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Up to 64 recycled T (linked by `T* next_free`), guarded by the GIL: no lock, atomic or thread-local. Free-threaded
/// CPython: keeps nothing.
template <class T>
class gil_free_list {
public:
    /// A recycled T, or nullptr.
    static T* pop() noexcept {
        list& kept = instance();
        T* item = kept.head;
        if (item != nullptr) {
            kept.head = item->next_free;
            --kept.count;
        }
        return item;
    }

    /// Keeps `item`; false when the list is full.
    static bool push(T* item) noexcept {
        list& kept = instance();
        if (kept.count >= limit) return false;
        item->next_free = kept.head;
        kept.head = item;
        ++kept.count;
        return true;
    }

private:
#if defined(Py_GIL_DISABLED)
    static constexpr std::size_t limit = 0;
#else
    static constexpr std::size_t limit = 64;
#endif
    struct list {
        T* head = nullptr;
        std::size_t count = 0;
    };
    static list& instance() noexcept {
        static list kept;  // constant-initialized: no guard
        return kept;
    }
};

/// An owner block holding a Python reference, recycled so a borrow costs no malloc.
struct python_owner_block : owner_block {
    python_owner_block() noexcept : owner_block(&release_block) {}
    PyObject* object = nullptr;
    python_owner_block* next_free = nullptr;

    static owner_handle make(PyObject* obj, bool read_only) {
        python_owner_block* block = gil_free_list<python_owner_block>::pop();
        if (block == nullptr) {
            block = new python_owner_block();
        } else {
            block->references.store(1, std::memory_order_relaxed);
        }
        block->read_only = read_only;
        Py_INCREF(obj);
        block->object = obj;
        return owner_handle::adopt(block);
    }

    /// Drops the reference under the GIL on the thread that lets go last (leaked once the interpreter finalizes).
    static void release_block(owner_block* base) noexcept {
        auto* block = static_cast<python_owner_block*>(base);
        PyObject* obj = block->object;
        const bool released = under_gil([&]() noexcept {
            if (!gil_free_list<python_owner_block>::push(block)) delete block;
            Py_DECREF(obj);
        });
        if (!released) delete block;
    }
};

/// An owner holding a Python reference, dropped under the GIL by the last release; `read_only`: the memory must not be
/// written.
inline owner_handle python_owner(PyObject* obj, bool read_only = false) {
    return python_owner_block::make(obj, read_only);
}

/// The Python object (`npybridge.owner`, not constructible from Python) keeping C++ memory shared with numpy alive by
/// one owner reference. Cheaper than a PyCapsule: a static type, recycled objects.
class owner_object {
public:
    /// A new reference holding `owner`; on a throw `owner` is unchanged.
    static object wrap(owner_handle& owner) {
        PyTypeObject* type = ready_type();
        owner_object* self = gil_free_list<owner_object>::pop();
        if (self == nullptr) self = static_cast<owner_object*>(::operator new(sizeof(owner_object)));
        PyObject_Init(reinterpret_cast<PyObject*>(self), type);
        self->m_block = owner.detach();
        return object::steal(reinterpret_cast<PyObject*>(self));
    }

    /// The type, for tests and isinstance.
    static PyTypeObject* ready_type() {
        static PyTypeObject* const type = make_type();
        return type;
    }

private:
    friend class gil_free_list<owner_object>;
    [[maybe_unused]] PyObject_HEAD  // read by Python through the address
        owner_block* m_block;
    owner_object* next_free;

    static void dealloc(PyObject* base) noexcept {
        auto* self = reinterpret_cast<owner_object*>(base);
        owner_block* block = self->m_block;
        if (!gil_free_list<owner_object>::push(self)) ::operator delete(static_cast<void*>(self));
        owner_handle::adopt(block);  // released here
    }

    static PyTypeObject* make_type() {
        static PyTypeObject type{};
        Py_SET_REFCNT(reinterpret_cast<PyObject*>(&type), 1);
        type.tp_name = "npybridge.owner";
        type.tp_doc = "Keeps the C++ memory of a numpy array that npybridge shared alive.";
        type.tp_basicsize = sizeof(owner_object);
        type.tp_dealloc = &dealloc;
        type.tp_flags = Py_TPFLAGS_DEFAULT;
#if defined(Py_TPFLAGS_DISALLOW_INSTANTIATION)
        type.tp_flags |= Py_TPFLAGS_DISALLOW_INSTANTIATION;
#endif
        if (PyType_Ready(&type) != 0) throw python_error();
        return &type;
    }
};

/// The base of an array sharing `owner`'s memory: the Python object the tensor borrowed from, else an owner_object;
/// none for a scoped owner.
inline object base_object_for(owner_handle owner) {
    if (!owner) return {};
    if (owner.get()->release == &python_owner_block::release_block) {
        return object::borrow(static_cast<python_owner_block*>(owner.get())->object);
    }
    return owner_object::wrap(owner);
}

}  // namespace detail
}  // namespace npybridge
