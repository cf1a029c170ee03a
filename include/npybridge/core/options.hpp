// npybridge/core/options.hpp — the vocabulary of a conversion: borrow / share policies, narrowing, the options of
// to_tensor and what it returns (docs/policies.md). Python-free: naming an option costs no CPython or NumPy.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/lowbit.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// What happens to values that a narrower dtype may not hold: int64 / float64 input, which MegBrain has no
/// dtype for (it becomes Int32 / Float32), and a requested dtype other than the array's (docs/policies.md).
/// checked: a value it lets through is unchanged. Every value is checked, and the first that the tensor's
/// dtype does not hold exactly is an error: integers and floats into integer, bool and quantized dtypes must be
/// whole and in range (not NaN); integers into float dtypes must be held exactly; floats into float and complex
/// dtypes must not overflow (rounding once to the nearest float is the one change allowed); complex numbers go
/// only into complex dtypes; bools go anywhere. wrap: any cast NumPy has, like a C cast. reject: only casts
/// that cannot lose a value (NumPy's 'safe').
enum class narrowing : std::uint8_t { checked, wrap, reject };

/// numpy → tensor (docs/policies.md).
enum class borrow_policy : std::uint8_t {
    try_borrow,   ///< share the array's memory when the tensor type can describe it, else copy
    must_borrow,  ///< share, or fail saying why sharing is impossible
    copy,         ///< always copy
};

/// tensor → numpy.
enum class share_policy : std::uint8_t {
    try_share,   ///< share the tensor's memory when numpy can describe it (not packed), else copy
    must_share,  ///< share, or fail saying why
    copy,        ///< always copy
};

/// How to_array gives numpy a packed tensor: one byte per element (int8 /
/// uint8, with MegEngine's metadata when quantized: MegEngine's own form), or
/// ml_dtypes' int4 / uint4 carrying the same metadata (QuantizedS4 and
/// Quantized4Asymm only; the value in the low nibble, upper bits zero).
enum class lowbit_format : std::uint8_t { int8, ml_dtypes };

/// How to_tensor, copy_into and from_dlpack convert: the dtype, the policies, the narrowing mode, the layout.
struct to_tensor_options {
    std::optional<dtype> type;  ///< the tensor's dtype; nullopt: the array's
    borrow_policy policy = borrow_policy::try_borrow;
    narrowing narrow = narrowing::checked;
    std::optional<lowbit_layout> layout;  ///< packed dtypes; nullopt: MegBrain's default
    bool require_writable = false;        ///< a read-only array is then copied (or must_borrow fails)
    /// false: a borrowed tensor does not hold a reference to the array; it is
    /// valid only while the caller keeps the array alive (the argument of the
    /// call being served, say). Saves making and releasing an owner per borrow.
    bool keep_alive = true;
    /// true: the caller only reads the tensor. A tensor type that cannot mark memory read-only (MegBrain's
    /// HostTensorND) then borrows a read-only array too; by default it gets a copy, so C++ that writes
    /// through the tensor can never change memory Python holds read-only (an immutable bytes object, say).
    bool reads_only = false;

    // Chainable setters: to_tensor_options().as(type).with(borrow_policy::copy)
    to_tensor_options& as(const dtype& wanted) {
        type = wanted;
        return *this;
    }
    to_tensor_options& with(borrow_policy wanted) {
        policy = wanted;
        return *this;
    }
    to_tensor_options& with(narrowing wanted) {
        narrow = wanted;
        return *this;
    }
    to_tensor_options& with(lowbit_layout wanted) {
        layout = wanted;
        return *this;
    }
    to_tensor_options& writable() {
        require_writable = true;
        return *this;
    }
    to_tensor_options& reading_only() {
        reads_only = true;
        return *this;
    }
    to_tensor_options& scoped() {
        keep_alive = false;
        return *this;
    }
};

/// What to_tensor made.
template <class Tensor>
struct to_tensor_result {
    to_tensor_result(Tensor made, bool shared, std::string reason = {})
        : tensor(std::move(made)), borrowed(shared), copy_reason(std::move(reason)) {}
    /// Builds the tensor in place from `make()` (no move of a large tensor;
    /// GCC also zero-fills aggregates that hold a std::string before building them).
    template <class Make>
    to_tensor_result(std::in_place_t, Make&& make, bool shared)
        : tensor(std::forward<Make>(make)()), borrowed(shared) {}

    Tensor tensor;
    bool borrowed = false;
    std::string copy_reason;  ///< why memory was not shared (empty when borrowed)
};

/// Copies of at least this many bytes give up the GIL while the bytes move.
inline constexpr std::size_t release_gil_bytes = std::size_t{1} << 20;

}  // namespace npybridge
