// npybridge/core/tensor.hpp — npybridge's reference tensor type and its adapter.
#pragma once

#include <npybridge/core/adapter.hpp>
#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/tensor_storage.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/layout.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/core/owner.hpp>
#include <npybridge/core/quantization.hpp>

#include <cstddef>
#include <optional>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// npybridge's own tensor, for users without a framework and for tests: a dtype, a layout in elements, memory held by
/// an owner.
class tensor {
public:
    tensor() : m_dtype(dtype_enum::Float32) {}

    /// A fresh C-contiguous tensor with unspecified contents (conversions overwrite every byte). Packed dtypes take
    /// packed_bytes() in `layout`.
    static tensor empty(const dtype& type, const std::size_t* shape, std::size_t ndim,
                        std::optional<lowbit_layout> layout = std::nullopt);

    /// A tensor over memory `owner` keeps alive.
    static tensor borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable, owner_handle owner,
                         std::optional<lowbit_layout> packing = std::nullopt);

    const dtype& type() const noexcept { return m_dtype; }
    const tensor_layout& layout() const noexcept { return m_layout; }
    std::size_t ndim() const noexcept { return m_layout.ndim; }
    std::size_t count() const noexcept { return m_layout.count(); }
    void* data() const noexcept { return m_data; }
    bool writable() const noexcept { return m_writable; }
    bool borrowed() const noexcept { return m_borrowed; }
    lowbit_layout packing() const noexcept { return m_packing; }
    const owner_handle& owner() const noexcept { return m_owner; }
    /// Moves the owner out, leaving this tensor empty (as to_array(std::move(t)) does).
    owner_handle take_owner() noexcept;

    /// Bytes of a contiguous tensor's storage (packed for low-bit dtypes).
    std::size_t storage_bytes() const { return storage_bytes_for(m_dtype, m_layout, m_packing); }

    /// The same for any dtype, layout and packing.
    static std::size_t storage_bytes_for(const dtype& type, const tensor_layout& layout, lowbit_layout packing);

private:
    tensor(const dtype& type, const tensor_layout& layout, void* data, bool writable, owner_handle owner,
           lowbit_layout packing)
        : m_dtype(type),
          m_layout(layout),
          m_data(data),
          m_writable(writable),
          m_owner(std::move(owner)),
          m_packing(packing) {}

    dtype m_dtype;
    tensor_layout m_layout;
    void* m_data = nullptr;
    bool m_writable = true;
    bool m_borrowed = false;
    owner_handle m_owner;
    lowbit_layout m_packing = lowbit_layout::compact;
};

/// The adapter for npybridge::tensor: any strides, 0-d allowed.
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
    static owner_handle take_owner(tensor& t) noexcept { return t.take_owner(); }
    static tensor borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable,
                         owner_handle owner) {
        // to_tensor never borrows packed memory.
        return tensor::borrow(type, data, layout, writable, std::move(owner), lowbit_layout::compact);
    }
    static tensor make(const dtype& type, const tensor_layout& layout, lowbit_layout packing) {
        return tensor::empty(type, layout.shape.data(), layout.ndim, packing);
    }
};

/// Example: a tensor over memory a std::shared_ptr keeps alive.
/// ```cpp
/// #include <npybridge/core/tensor.hpp>
///
/// npybridge::tensor over(std::shared_ptr<float[]> values, std::size_t n) {
///     const auto layout = npybridge::tensor_layout::contiguous(&n, 1);
///     return npybridge::tensor::borrow(npybridge::dtype_enum::Float32, values.get(), layout, true, values);
/// }
/// ```

// ---- Definitions

inline tensor tensor::empty(const dtype& type, const std::size_t* shape, std::size_t ndim,
                            std::optional<lowbit_layout> layout) {
    const tensor_layout contiguous = tensor_layout::contiguous(shape, ndim);
    const lowbit_layout packing = layout.value_or(default_layout(type.id()));
    const std::size_t bytes = storage_bytes_for(type, contiguous, packing);
    void* data = nullptr;
    owner_handle owner = detail::allocate_storage(bytes, data);
    return tensor(type, contiguous, data, true, std::move(owner), packing);
}

inline tensor tensor::borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable,
                             owner_handle owner, std::optional<lowbit_layout> packing) {
    tensor result(type, layout, data, writable, std::move(owner), packing.value_or(default_layout(type.id())));
    result.m_borrowed = true;
    return result;
}

inline owner_handle tensor::take_owner() noexcept {
    m_data = nullptr;
    m_layout.ndim = 0;
    m_borrowed = false;
    return std::move(m_owner);
}

inline std::size_t tensor::storage_bytes_for(const dtype& type, const tensor_layout& layout, lowbit_layout packing) {
    const dtype_info& entry = type.info();
    if (entry.is_packed) return packed_bytes(entry.id, layout.count(), layout.innermost(), packing);
    return layout.count() * entry.element_size;
}

}  // namespace npybridge
