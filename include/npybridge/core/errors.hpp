// npybridge/core/errors.hpp — the C++ exception types npybridge throws.
#pragma once

#include <npybridge/core/config.hpp>

#include <stdexcept>
#include <string>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Base of every error npybridge throws.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A conversion between NumPy and a tensor (or between dtypes) is impossible
/// as asked. At the Python boundary it becomes npybridge's ConversionError,
/// which is both a TypeError and a ValueError.
class conversion_error : public error {
public:
    using error::error;
};

/// A dtype npybridge cannot accept or produce (unsupported numpy dtype,
/// unknown name, a dtype that does not fit the request). Python: DTypeError,
/// a ConversionError.
class dtype_error : public conversion_error {
public:
    using conversion_error::conversion_error;
};

/// Quantized dtype metadata that is malformed or out of range (docs/metadata.md
/// lists every case).
/// Python: MetadataError, a DTypeError.
class metadata_error : public dtype_error {
public:
    using dtype_error::dtype_error;
};

/// A value that does not fit its destination: narrowing overflow, a low-bit
/// value outside its set. Python: ValueRangeError, a ConversionError (so a
/// ValueError too).
class value_range_error : public conversion_error {
public:
    using conversion_error::conversion_error;
};

namespace detail {

/// False for every type: a static_assert on it fires only where its template is used.
template <class...>
inline constexpr bool always_false = false;

template <class... Use>
struct value_error_removed {
    static_assert(always_false<Use...>, "npybridge: value_error was removed in 0.6.0: write value_range_error");
};

}  // namespace detail

/// Removed: naming it stops the build with a message that names value_range_error.
using value_error = detail::value_error_removed<>;

/// Memory that cannot be exported or imported as asked: another device than
/// the CPU, copy=False where a copy is needed, a DLPack capsule already
/// consumed or of an unknown kind. Python: DLPackError, a ConversionError and
/// a BufferError (what the array API has producers and consumers raise).
class dlpack_error : public conversion_error {
public:
    using conversion_error::conversion_error;
};

}  // namespace npybridge
