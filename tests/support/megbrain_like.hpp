// tests/support/megbrain_like.hpp — a tensor type shaped like MegBrain's HostTensorND and its npybridge
// adapter, for the tests that need a tensor type other than npybridge::tensor.
#pragma once

#include <npybridge/core/tensor.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace megbrain_like {

/// Where a tensor's memory is, like MegBrain's comp node ("cpu0", "cpu1", ...).
struct place {
    int device = 0;
};

/// Shaped like MegBrain's HostTensorND: at most 7 dims, no 0-d, no negative
/// or zero strides, its own storage type, a place, no read-only flag of its
/// own (`read_only` stands for a type that has one: the adapter reports it),
/// packed dtypes row-aligned with padded strides as MegBrain lays them out.
struct host_tensor {
    npybridge::dtype type = npybridge::dtype(npybridge::dtype_enum::Float32);
    std::size_t ndim = 0;
    std::size_t shape[7] = {};
    std::ptrdiff_t stride[7] = {};
    std::shared_ptr<const void> storage;
    void* ptr = nullptr;
    bool read_only = false;
    place where;
    npybridge::lowbit_layout packing = npybridge::lowbit_layout::compact;
};

}  // namespace megbrain_like

template <>
struct npybridge::tensor_adapter<megbrain_like::host_tensor> {
    using T = megbrain_like::host_tensor;
    using placement = megbrain_like::place;
    static constexpr std::size_t max_ndim = 7;
    static constexpr bool has_scalar = false;
    static bool accepts_strides(const tensor_layout& layout) {
        for (std::size_t i = 0; i < layout.ndim; ++i) {
            if (layout.shape[i] > 1 && layout.strides[i] <= 0) return false;
        }
        return true;
    }
    static dtype dtype_of(const T& t) { return t.type; }
    static tensor_layout layout_of(const T& t) {
        tensor_layout layout;
        layout.ndim = t.ndim;
        for (std::size_t i = 0; i < t.ndim; ++i) {
            layout.shape[i] = t.shape[i];
            layout.strides[i] = t.stride[i];
        }
        return layout;
    }
    static void* data(const T& t) { return t.ptr; }
    static bool writable(const T& t) { return !t.read_only; }
    static lowbit_layout packed_layout(const T& t) { return t.packing; }
    static owner_handle owner(const T& t) { return t.storage; }
    static placement default_placement() { return {0}; }
    static placement placement_of(const T& t) { return t.where; }
    static T borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable, owner_handle owner,
                    const placement& where) {
        T t;
        t.type = type;
        t.ndim = layout.ndim;
        for (std::size_t i = 0; i < layout.ndim; ++i) {
            t.shape[i] = layout.shape[i];
            t.stride[i] = layout.strides[i];
        }
        t.storage = owner.shared(static_cast<const void*>(data));  // MegBrain's storage is a shared_ptr too
        t.ptr = data;
        t.read_only = !writable;
        t.where = where;
        return t;
    }
    static T make(const dtype& type, const tensor_layout& layout, lowbit_layout packing, const placement& where) {
        const std::size_t bytes = tensor::storage_bytes_for(type, layout, packing);
        auto memory =
            std::shared_ptr<std::uint8_t>(new std::uint8_t[bytes + 1](), std::default_delete<std::uint8_t[]>());
        const bool padded = type.info().is_packed && packing == lowbit_layout::row_aligned;
        T t = borrow(type, memory.get(),
                     padded ? tensor_layout::row_aligned(type.id(), layout.shape.data(), layout.ndim) : layout, true,
                     nullptr, where);
        t.storage = memory;
        t.packing = type.info().is_packed ? packing : lowbit_layout::compact;
        return t;
    }
};
