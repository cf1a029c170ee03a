// npybridge/tensor.hpp — the tensor customization point (adapter) and npybridge's reference tensor type.
#pragma once

#include <npybridge/config.hpp>
#include <npybridge/errors.hpp>
#include <npybridge/lowbit.hpp>
#include <npybridge/quantization.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace npybridge {

/// Shape and element strides of a tensor, up to NPYBRIDGE_MAX_NDIM dimensions.
/// (The adapter of another tensor type fills one of these from its own.)
struct tensor_layout {
    std::size_t ndim = 0;
    // Only the first ndim entries mean anything. Left uninitialized on
    // purpose: zeroing 112 bytes per conversion showed up in profiles.
    std::array<std::size_t, NPYBRIDGE_MAX_NDIM> shape;
    std::array<std::ptrdiff_t, NPYBRIDGE_MAX_NDIM> strides;  ///< in elements

    std::size_t count() const noexcept {
        std::size_t n = 1;
        for (std::size_t i = 0; i < ndim; ++i) n *= shape[i];
        return n;
    }
    std::size_t innermost() const noexcept { return ndim == 0 ? 1 : shape[ndim - 1]; }

    /// C-contiguous, ignoring the strides of size-1 dimensions (SPEC.md §5).
    bool is_contiguous() const noexcept {
        std::ptrdiff_t expected = 1;
        for (std::size_t i = ndim; i-- > 0;) {
            if (shape[i] == 1) continue;
            if (strides[i] != expected) return false;
            expected *= static_cast<std::ptrdiff_t>(shape[i]);
        }
        return true;
    }

    /// A C-contiguous layout of this shape.
    static tensor_layout contiguous(const std::size_t* shape, std::size_t ndim) {
        if (ndim > NPYBRIDGE_MAX_NDIM) {
            throw conversion_error("tensor_layout: " + std::to_string(ndim) + " dimensions, at most " +
                                   std::to_string(NPYBRIDGE_MAX_NDIM) + " (NPYBRIDGE_MAX_NDIM)");
        }
        tensor_layout layout;
        layout.ndim = ndim;
        std::ptrdiff_t stride = 1;
        for (std::size_t i = ndim; i-- > 0;) {
            layout.shape[i] = shape[i];
            layout.strides[i] = stride;
            stride *= static_cast<std::ptrdiff_t>(shape[i] == 0 ? 1 : shape[i]);
        }
        return layout;
    }

    std::string shape_text() const {
        std::string text = "(";
        for (std::size_t i = 0; i < ndim; ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
        return text + (ndim == 1 ? ",)" : ")");
    }
};

/// Keeps borrowed memory alive: a tensor that borrows holds one of these, and
/// the memory stays valid while any copy lives. Its deleter may run on any
/// thread (see numpy's owner in convert.hpp: it takes the GIL).
using owner_handle = std::shared_ptr<const void>;

// ---------------------------------------------------------------------------
// The customization point. To make npybridge work with your tensor type T,
// specialize npybridge::tensor_adapter<T> (in your code, not in detail) with:
//
//   static constexpr std::size_t max_ndim;     // most dimensions T holds
//   static constexpr bool has_scalar;          // can T be 0-d? (else 0-d -> shape (1,))
//   static bool accepts_strides(const tensor_layout&);  // element strides T can describe
//   static npybridge::dtype dtype_of(const T&);
//   static tensor_layout layout_of(const T&);  // shape and element strides
//   static void* data(const T&);               // first element (packed: first byte)
//   static bool writable(const T&);
//   static lowbit_layout packed_layout(const T&);  // only asked for packed dtypes
//   static owner_handle owner(const T&);       // keeps T's memory alive
//   static T borrow(const dtype&, void* data, const tensor_layout&, bool writable, owner_handle);
//   static T make(const dtype&, const tensor_layout& contiguous, lowbit_layout);  // fresh, writable
//
// npybridge::tensor below is the reference implementation; tests/adapter_test
// has a second, MegBrain-like one (7 dims, no 0-d, no negative strides).
// ---------------------------------------------------------------------------
template <class Tensor>
struct tensor_adapter;

/// npybridge's own tensor: a dtype (with params), a layout in elements, and
/// memory shared through an owner handle. For users without a framework, and
/// for tests.
class tensor {
public:
    tensor() : m_dtype(dtype_enum::Float32) {}

    /// A fresh C-contiguous tensor whose contents are unspecified (conversions
    /// overwrite every byte; zeroing first would cost a pass over memory).
    /// Packed dtypes take packed_bytes() in `layout` (default: MegBrain's).
    static tensor empty(const dtype& type, const std::size_t* shape, std::size_t ndim,
                        std::optional<lowbit_layout> layout = std::nullopt) {
        const tensor_layout contiguous = tensor_layout::contiguous(shape, ndim);
        const lowbit_layout packing = layout.value_or(default_packing(type));
        const std::size_t bytes = storage_bytes_for(type, contiguous, packing);
        std::shared_ptr<std::uint8_t> memory = allocate(bytes);
        tensor result(type, contiguous, memory.get(), true, owner_handle(memory, memory.get()), packing);
        return result;
    }

    /// A tensor over memory someone else owns; `owner` keeps it alive.
    static tensor borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable, owner_handle owner,
                         std::optional<lowbit_layout> packing = std::nullopt) {
        tensor result(type, layout, data, writable, std::move(owner), packing.value_or(default_packing(type)));
        result.m_borrowed = true;
        return result;
    }

    const dtype& type() const noexcept { return m_dtype; }
    const tensor_layout& layout() const noexcept { return m_layout; }
    std::size_t ndim() const noexcept { return m_layout.ndim; }
    std::size_t count() const noexcept { return m_layout.count(); }
    void* data() const noexcept { return m_data; }
    bool writable() const noexcept { return m_writable; }
    bool borrowed() const noexcept { return m_borrowed; }
    lowbit_layout packing() const noexcept { return m_packing; }
    const owner_handle& owner() const noexcept { return m_owner; }

    /// Bytes of the raw storage of a contiguous tensor (packed for low-bit dtypes).
    std::size_t storage_bytes() const { return storage_bytes_for(m_dtype, m_layout, m_packing); }

    static std::size_t storage_bytes_for(const dtype& type, const tensor_layout& layout, lowbit_layout packing) {
        const dtype_info& entry = type.info();
        if (entry.is_packed) return packed_bytes(entry.id, layout.count(), layout.innermost(), packing);
        return layout.count() * entry.element_size;
    }

private:
    /// Storage for `bytes`. Large buffers are 2 MiB aligned and, on Linux,
    /// asked for transparent huge pages (as NumPy does): first-touch page
    /// faults otherwise dominate big conversions.
    static std::shared_ptr<std::uint8_t> allocate(std::size_t bytes) {
        constexpr std::size_t huge = std::size_t{2} << 20;
        if (bytes < NPYBRIDGE_HUGE_PAGE_BYTES) {
            return std::shared_ptr<std::uint8_t>(new std::uint8_t[bytes > 0 ? bytes : 1], std::default_delete<std::uint8_t[]>());
        }
        const std::size_t rounded = (bytes + huge - 1) / huge * huge;
        void* memory = std::aligned_alloc(huge, rounded);
        if (memory == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        madvise(memory, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
        return std::shared_ptr<std::uint8_t>(static_cast<std::uint8_t*>(memory), [](std::uint8_t* p) { std::free(p); });
    }

    static lowbit_layout default_packing(const dtype& type) {
        return type.info().is_packed ? default_layout(type.id()) : lowbit_layout::compact;
    }

    tensor(const dtype& type, const tensor_layout& layout, void* data, bool writable, owner_handle owner,
           lowbit_layout packing)
        : m_dtype(type), m_layout(layout), m_data(data), m_writable(writable), m_owner(std::move(owner)),
          m_packing(packing) {}

    dtype m_dtype;
    tensor_layout m_layout;
    void* m_data = nullptr;
    bool m_writable = true;
    bool m_borrowed = false;
    owner_handle m_owner;
    lowbit_layout m_packing = lowbit_layout::compact;
};

/// The adapter for npybridge::tensor: any strides, 0-d allowed, up to
/// NPYBRIDGE_MAX_NDIM dimensions.
template <>
struct tensor_adapter<tensor> {
    static constexpr std::size_t max_ndim = NPYBRIDGE_MAX_NDIM;
    static constexpr bool has_scalar = true;
    static bool accepts_strides(const tensor_layout&) noexcept { return true; }
    static dtype dtype_of(const tensor& t) { return t.type(); }
    static tensor_layout layout_of(const tensor& t) { return t.layout(); }
    static void* data(const tensor& t) noexcept { return t.data(); }
    static bool writable(const tensor& t) noexcept { return t.writable(); }
    static lowbit_layout packed_layout(const tensor& t) noexcept { return t.packing(); }
    static owner_handle owner(const tensor& t) { return t.owner(); }
    static tensor borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable, owner_handle owner) {
        return tensor::borrow(type, data, layout, writable, std::move(owner));
    }
    static tensor make(const dtype& type, const tensor_layout& layout, lowbit_layout packing) {
        return tensor::empty(type, layout.shape.data(), layout.ndim, packing);
    }
};

}  // namespace npybridge
