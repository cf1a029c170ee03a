// npybridge/core/errors.hpp — the C++ exception types npybridge throws.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/always_false.hpp>

#include <stdexcept>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Base of every error npybridge throws.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A conversion impossible as asked; Python: ConversionError (a TypeError and a ValueError).
class conversion_error : public error {
public:
    using error::error;
};

/// A dtype npybridge cannot accept or produce; Python: DTypeError.
class dtype_error : public conversion_error {
public:
    using conversion_error::conversion_error;
};

/// Malformed or out-of-range quantized metadata (docs/metadata.md); Python: MetadataError.
class metadata_error : public dtype_error {
public:
    using dtype_error::dtype_error;
};

/// A value that does not fit its destination; Python: ValueRangeError (a ValueError too).
class value_range_error : public conversion_error {
public:
    using conversion_error::conversion_error;
};

/// Removed (a compile error): use value_range_error.
using value_error = detail::value_error_removed<>;

/// Memory that cannot be exported or imported as asked (another device, copy=False needing a copy, a consumed or
/// unknown capsule); Python: DLPackError, a ConversionError and a BufferError.
class dlpack_error : public conversion_error {
public:
    using conversion_error::conversion_error;
};

/// Example: a value out of range, told apart from other refusals.
/// ```cpp
/// #include <npybridge/core/errors.hpp>
///
/// bool out_of_range(void (*convert)()) {
///     try {
///         convert();
///     } catch (const npybridge::value_range_error&) {
///         return true;
///     }
///     return false;  // other npybridge::error subclasses propagate
/// }
/// ```

}  // namespace npybridge
