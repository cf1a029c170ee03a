// npybridge/python_owner.hpp — owners that hold Python objects, and npybridge.owner (docs/lifetimes.md).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/owner.hpp>
#include <npybridge/detail/python_owner_blocks.hpp>
#include <npybridge/python.hpp>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The Python object a borrowing owner keeps alive; nullptr for other owners.
inline PyObject* python_object_of(const owner_handle& owner) noexcept;

/// For the tp_traverse of an object holding a tensor: visits the object the owner keeps alive when this handle is its
/// only one.
inline int traverse_owner(const owner_handle& owner, visitproc visit, void* arg);

/// Example: a tp_traverse for a Python type holding a tensor, so a cycle through its array can be freed.
/// ```cpp
/// #include <npybridge/python_owner.hpp>
///
/// struct tensor_holder {
///     PyObject_HEAD
///     npybridge::owner_handle owner;
/// };
///
/// int holder_traverse(PyObject* self, visitproc visit, void* arg) {
///     return npybridge::traverse_owner(reinterpret_cast<tensor_holder*>(self)->owner, visit, arg);
/// }
/// ```

// ---- Definitions

inline PyObject* python_object_of(const owner_handle& owner) noexcept {
    if (!owner || owner.get()->release != &detail::python_owner_block::release_block) return nullptr;
    return static_cast<const detail::python_owner_block*>(owner.get())->object;
}

inline int traverse_owner(const owner_handle& owner, visitproc visit, void* arg) {
    PyObject* held = owner.use_count() == 1 ? python_object_of(owner) : nullptr;
    Py_VISIT(held);
    return 0;
}

}  // namespace npybridge
