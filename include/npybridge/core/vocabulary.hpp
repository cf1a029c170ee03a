// npybridge/core/vocabulary.hpp — the enums a conversion is asked with: policies, narrowing, packed layouts.
#pragma once

#include <npybridge/core/config.hpp>

#include <cstddef>
#include <cstdint>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// How a packed tensor's bits are laid out (docs/lowbit.md).
enum class lowbit_layout : std::uint8_t {
    compact,      ///< one bit stream
    row_aligned,  ///< each innermost row starts a byte
};

/// What happens to values the dtype may not hold (docs/policies.md). checked: a value that would change beyond a
/// float's rounding is an error; wrap: NumPy's cast, like C's; reject: only NumPy's 'safe' casts.
enum class narrowing : std::uint8_t { checked, wrap, reject };

/// numpy → tensor (docs/policies.md).
enum class borrow_policy : std::uint8_t {
    try_borrow,   ///< share when the tensor type can, else copy
    must_borrow,  ///< share, or fail saying why
    copy,         ///< always copy
};

/// tensor → numpy.
enum class share_policy : std::uint8_t {
    try_share,   ///< share when numpy can (not packed), else copy
    must_share,  ///< share, or fail saying why
    copy,        ///< always copy
};

/// How to_array gives numpy a packed tensor: a byte per element (as MegEngine), or ml_dtypes' int4 / uint4
/// (QuantizedS4, Quantized4Asymm).
enum class lowbit_format : std::uint8_t { int8, ml_dtypes };

/// Copies from this many bytes release the GIL.
inline constexpr std::size_t release_gil_bytes = std::size_t{1} << 20;

/// Example: a function of the policies alone, which needs no dtype, Python or NumPy header.
/// ```cpp
/// #include <npybridge/core/vocabulary.hpp>
///
/// bool may_share(npybridge::borrow_policy policy) { return policy != npybridge::borrow_policy::copy; }
/// ```

}  // namespace npybridge
