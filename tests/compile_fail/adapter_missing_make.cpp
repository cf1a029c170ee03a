// expect: npybridge: tensor_adapter<T> needs `static T make(const dtype&, const tensor_layout&, lowbit_layout)`
// An adapter written from memory: everything but make(), which every copy needs.
#include <npybridge/core/tensor.hpp>

struct my_tensor {
    npybridge::tensor inner;
};

template <>
struct npybridge::tensor_adapter<my_tensor> {
    static constexpr std::size_t max_ndim = 4;
    static constexpr bool has_scalar = false;
    static bool accepts_strides(const tensor_layout&) { return true; }
    static npybridge::dtype dtype_of(const my_tensor& t) { return t.inner.type(); }
    static tensor_layout layout_of(const my_tensor& t) { return t.inner.layout(); }
    static void* data(const my_tensor& t) { return t.inner.data(); }
    static bool writable(const my_tensor& t) { return t.inner.writable(); }
    static lowbit_layout packed_layout(const my_tensor& t) { return t.inner.packing(); }
    static owner_handle owner(const my_tensor& t) { return t.inner.owner(); }
    static my_tensor borrow(const npybridge::dtype& type, void* data, const tensor_layout& layout, bool writable,
                            owner_handle owner) {
        return {npybridge::tensor::borrow(type, data, layout, writable, std::move(owner), lowbit_layout::compact)};
    }
};

static_assert(npybridge::check_adapter<my_tensor>());
