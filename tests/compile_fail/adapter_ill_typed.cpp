// expect: npybridge: tensor_adapter<T> needs `static tensor_layout layout_of(const T&)` (shape and element strides)
// layout_of returns the shape only (a common first attempt), and max_ndim is not a constant.
#include <npybridge/core/tensor.hpp>

#include <vector>

struct my_tensor {
    npybridge::tensor inner;
};

template <>
struct npybridge::tensor_adapter<my_tensor> {
    static inline std::size_t max_ndim = 4;  // not constexpr
    static constexpr bool has_scalar = false;
    static bool accepts_strides(const tensor_layout&) { return true; }
    static npybridge::dtype dtype_of(const my_tensor& t) { return t.inner.type(); }
    static std::vector<std::size_t> layout_of(const my_tensor& t) { return {t.inner.layout().shape[0]}; }
    static void* data(const my_tensor& t) { return t.inner.data(); }
    static bool writable(const my_tensor& t) { return t.inner.writable(); }
    static lowbit_layout packed_layout(const my_tensor& t) { return t.inner.packing(); }
    static owner_handle owner(const my_tensor& t) { return t.inner.owner(); }
    static my_tensor borrow(const npybridge::dtype& type, void* data, const tensor_layout& layout, bool writable,
                            owner_handle owner) {
        return {npybridge::tensor::borrow(type, data, layout, writable, std::move(owner), lowbit_layout::compact)};
    }
    static my_tensor make(const npybridge::dtype& type, const tensor_layout& layout, lowbit_layout packing) {
        return {npybridge::tensor::empty(type, layout.shape.data(), layout.ndim, packing)};
    }
};

static_assert(npybridge::check_adapter<my_tensor>());
