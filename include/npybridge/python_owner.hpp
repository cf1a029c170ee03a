// npybridge/python_owner.hpp — owners that involve Python: a tensor borrowing an array holds it through a
// python_owner_block; an array sharing a tensor's memory holds the owner through an npybridge.owner object;
// free lists recycle both under the GIL (docs/lifetimes.md).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/core/tensor.hpp>

#include <cstddef>
#include <new>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Up to 64 recycled T (each with a `T* next_free` member, free while listed),
/// guarded by the GIL: every push and pop happens with the GIL held, so no
/// lock, no atomic and no thread-local lookup. With a free-threaded CPython
/// there is no GIL to guard it, and the list keeps nothing.
template <class T>
class gil_free_list {
public:
    /// A recycled T, or nullptr when none is kept.
    static T* pop() noexcept {
        list& kept = instance();
        T* item = kept.head;
        if (item != nullptr) {
            kept.head = item->next_free;
            --kept.count;
        }
        return item;
    }

    /// Keeps `item` for reuse; false (and nothing kept) when the list is full.
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
        static list kept;  // constant-initialized: no guard on the hot path
        return kept;
    }
};

/// An owner block holding one Python reference. Blocks are recycled through
/// a gil_free_list, so a borrow costs no malloc.
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

    /// Drops the reference under the GIL from whichever thread lets go last;
    /// once the interpreter is finalizing the reference is leaked instead.
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

/// An owner handle that holds a Python reference and drops it under the GIL
/// from whichever thread releases the last copy; `read_only` says the memory
/// borrowed from `obj` must not be written (owner_block::read_only).
inline owner_handle python_owner(PyObject* obj, bool read_only = false) {
    return python_owner_block::make(obj, read_only);
}

/// The Python object that keeps C++ memory shared with numpy alive: it holds
/// one owner reference, dropped when numpy lets the array go. Cheaper than a
/// PyCapsule: a static type (no name to compare, no heap-type reference per
/// object) and objects recycled through a gil_free_list (made and freed only
/// with the GIL held).
/// Python sees `npybridge.owner`, which cannot be made from Python.
class owner_object {
public:
    /// A new reference holding `owner` (not empty). Throws with `owner` left as it was.
    static object wrap(owner_handle& owner) {
        PyTypeObject* type = ready_type();
        owner_object* self = gil_free_list<owner_object>::pop();
        if (self == nullptr) self = static_cast<owner_object*>(::operator new(sizeof(owner_object)));
        PyObject_Init(reinterpret_cast<PyObject*>(self), type);
        self->m_block = owner.detach();
        return object::steal(reinterpret_cast<PyObject*>(self));
    }

    /// The type, for tests and isinstance checks.
    static PyTypeObject* ready_type() {
        static PyTypeObject* const type = make_type();
        return type;
    }

private:
    friend class gil_free_list<owner_object>;
    [[maybe_unused]] PyObject_HEAD  // read by Python through the object's address
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

/// The base object of an array sharing memory that `owner` keeps alive: the
/// Python object itself when the tensor borrowed from Python (nothing in
/// between, and numpy sees the arrays share a base), else an owner_object
/// holding the owner's reference. An empty owner (a scoped borrow) gives no
/// base at all.
inline object base_object_for(owner_handle owner) {
    if (!owner) return {};
    if (owner.get()->release == &python_owner_block::release_block) {
        return object::borrow(static_cast<python_owner_block*>(owner.get())->object);
    }
    return owner_object::wrap(owner);
}

}  // namespace detail

/// The Python object a borrowing owner keeps alive (the array a tensor
/// borrowed from), nullptr for every other owner.
inline PyObject* python_object_of(const owner_handle& owner) noexcept {
    if (!owner || owner.get()->release != &detail::python_owner_block::release_block) return nullptr;
    return static_cast<const detail::python_owner_block*>(owner.get())->object;
}

/// For the tp_traverse of a Python object holding a tensor (cycles such as
/// `a.t = Tensor(a)` are then collected): visits the Python object the
/// tensor's owner keeps alive, when this handle is that owner's only one.
/// A shared owner's reference belongs to no single holder, and an owner
/// shared with C++ keeps its object alive anyway, so it is not visited.
inline int traverse_owner(const owner_handle& owner, visitproc visit, void* arg) {
    PyObject* held = owner.use_count() == 1 ? python_object_of(owner) : nullptr;
    Py_VISIT(held);
    return 0;
}

}  // namespace npybridge
