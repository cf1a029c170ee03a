// npybridge/megbrain.hpp — mgb::HostTensorND's adapter and megdnn::DType <-> dtype, Python-free (docs/megbrain.md).
#pragma once

#include <npybridge/core/dtype.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/core/lowbit.hpp>
#include <npybridge/core/tensor.hpp>

#include <megbrain/comp_node.h>
#include <megbrain/tensor.h>
#include <megdnn/tensor_format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace megbrain {

/// npybridge's dtype of a MegDNN DType, params included; dtype_error for one it has no row for.
inline dtype from_megdnn(megdnn::DType type);

/// MegDNN's DType for an npybridge dtype (DType::from_enum refuses parameterized ones).
inline megdnn::DType to_megdnn(const dtype& type);

}  // namespace megbrain

/// MegBrain's host tensor on a comp node (default CPU), borrowing at any strides. Without a read-only
/// flag, its owner remembers a read-only borrow. Packed dtypes: row-aligned as LOWBITS (QuantizedS4 / Quantized4Asymm),
/// compact otherwise.
template <>
struct tensor_adapter<mgb::HostTensorND> {
    using T = mgb::HostTensorND;
    using placement = mgb::CompNode;

    static constexpr std::size_t max_ndim = megdnn::TensorShape::MAX_NDIM;
    static constexpr bool has_scalar = false;  // ndim 0 is MegBrain's "no shape yet"
    static bool accepts_strides(const tensor_layout&) noexcept { return true; }

    static placement default_placement() { return mgb::CompNode::default_cpu(); }
    static placement placement_of(const T& t) { return t.comp_node(); }

    static dtype dtype_of(const T& t) { return megbrain::from_megdnn(t.dtype()); }
    static tensor_layout layout_of(const T& t);
    static void* data(const T& t) { return t.raw_ptr(); }
    static bool writable(const T&) noexcept { return true; }
    static lowbit_layout packed_layout(const T& t) {
        return t.layout().format.is_lowbit_aligned() ? lowbit_layout::row_aligned : lowbit_layout::compact;
    }
    static owner_handle owner(const T& t) { return t.storage().raw_storage(); }

    static T borrow(const dtype& type, void* data, const tensor_layout& layout, bool /*writable: the owner keeps it*/,
                    owner_handle owner, const placement& where);
    static T make(const dtype& type, const tensor_layout& layout, lowbit_layout packing, const placement& where);

private:
    /// A MegBrain layout with npybridge's shape and element strides.
    static megdnn::TensorLayout megbrain_layout(const dtype& type, const tensor_layout& layout);
};

/// Example: a HostTensorND over an array's memory when it can be, else a copy.
/// ```cpp
/// #include <npybridge/convert.hpp>
/// #include <npybridge/megbrain.hpp>
///
/// mgb::HostTensorND host_tensor_of(PyObject* array) {
///     return npybridge::to_tensor<mgb::HostTensorND>(array).tensor;
/// }
/// ```

// ---- Definitions

}  // namespace npybridge

// dtype_enum is MegDNN's DTypeEnum, value for value.
#define NPYBRIDGE_SAME_AS_MEGDNN(name)                                                      \
    static_assert(static_cast<std::uint32_t>(npybridge::dtype_enum::name) ==                \
                      static_cast<std::uint32_t>(megdnn::DTypeEnum::name),                  \
                  "npybridge: dtype_enum::" #name " differs from megdnn::DTypeEnum::" #name \
                  "; this MegDNN numbers its dtypes differently: fix npybridge's table (core/dtype.hpp) for it");
NPYBRIDGE_SAME_AS_MEGDNN(Float32)
NPYBRIDGE_SAME_AS_MEGDNN(Uint8)
NPYBRIDGE_SAME_AS_MEGDNN(Int8)
NPYBRIDGE_SAME_AS_MEGDNN(Int16)
NPYBRIDGE_SAME_AS_MEGDNN(Int32)
NPYBRIDGE_SAME_AS_MEGDNN(IntB1)
NPYBRIDGE_SAME_AS_MEGDNN(IntB2)
NPYBRIDGE_SAME_AS_MEGDNN(IntB4)
NPYBRIDGE_SAME_AS_MEGDNN(Byte)
#if !MEGDNN_DISABLE_FLOAT16
NPYBRIDGE_SAME_AS_MEGDNN(Float16)
NPYBRIDGE_SAME_AS_MEGDNN(BFloat16)
#endif
NPYBRIDGE_SAME_AS_MEGDNN(UintB4)
NPYBRIDGE_SAME_AS_MEGDNN(Bool)
NPYBRIDGE_SAME_AS_MEGDNN(Uint16)
NPYBRIDGE_SAME_AS_MEGDNN(Complex64)
NPYBRIDGE_SAME_AS_MEGDNN(Quantized8Asymm)
NPYBRIDGE_SAME_AS_MEGDNN(QuantizedS32)
NPYBRIDGE_SAME_AS_MEGDNN(QuantizedS8)
NPYBRIDGE_SAME_AS_MEGDNN(Quantized4Asymm)
NPYBRIDGE_SAME_AS_MEGDNN(QuantizedS4)
NPYBRIDGE_SAME_AS_MEGDNN(QuantizedS16)
NPYBRIDGE_SAME_AS_MEGDNN(QuantizedS1)
#undef NPYBRIDGE_SAME_AS_MEGDNN

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace megbrain {

inline dtype from_megdnn(megdnn::DType type) {
    if (!type.valid())
        throw dtype_error("megdnn::DType: an invalid (default-constructed) DType has no npybridge dtype");
    const auto id = static_cast<dtype_enum>(type.enumv());
    if (!is_valid(id)) {
        throw dtype_error(std::string("megdnn::DType ") + type.name() + " (enum value " +
                          std::to_string(static_cast<std::uint32_t>(type.enumv())) + ") has no npybridge dtype");
    }
    switch (id) {  // MegDNN keeps each quantized dtype's params in its own struct
        case dtype_enum::Quantized8Asymm: {
            const auto& p = type.param<megdnn::dtype::Quantized8Asymm>();
            return dtype::quantized(id, p.scale, p.zero_point);
        }
        case dtype_enum::Quantized4Asymm: {
            const auto& p = type.param<megdnn::dtype::Quantized4Asymm>();
            return dtype::quantized(id, p.scale, p.zero_point);
        }
        case dtype_enum::QuantizedS32: return dtype::quantized(id, type.param<megdnn::dtype::QuantizedS32>().scale);
        case dtype_enum::QuantizedS8: return dtype::quantized(id, type.param<megdnn::dtype::QuantizedS8>().scale);
        case dtype_enum::QuantizedS4: return dtype::quantized(id, type.param<megdnn::dtype::QuantizedS4>().scale);
        case dtype_enum::QuantizedS16: return dtype::quantized(id, type.param<megdnn::dtype::QuantizedS16>().scale);
        case dtype_enum::QuantizedS1: return dtype::quantized(id, type.param<megdnn::dtype::QuantizedS1>().scale);
        default: return dtype(id);
    }
}

inline megdnn::DType to_megdnn(const dtype& type) {
    const dtype_enum id = type.id();
    if (!type.is_quantized()) {
        // One from_enum per dtype, kept (a plain DType is a pointer to its trait).
        static const auto plain = [] {
            std::array<megdnn::DType, dtype_count> made{};
            for (const dtype_info& row : dtype_table) {
                if (!row.is_quantized)
                    made[table_index(row.id)] = megdnn::DType::from_enum(static_cast<megdnn::DTypeEnum>(row.id));
            }
            return made;
        }();
        return plain[table_index(id)];
    }
    const float scale = type.scale().value_or(1.0f);
    const auto zero_point = static_cast<std::uint8_t>(type.zero_point().value_or(0));
    switch (id) {
        case dtype_enum::Quantized8Asymm: return megdnn::dtype::Quantized8Asymm(scale, zero_point);
        case dtype_enum::Quantized4Asymm: return megdnn::dtype::Quantized4Asymm(scale, zero_point);
        case dtype_enum::QuantizedS32: return megdnn::dtype::QuantizedS32(scale);
        case dtype_enum::QuantizedS8: return megdnn::dtype::QuantizedS8(scale);
        case dtype_enum::QuantizedS4: return megdnn::dtype::QuantizedS4(scale);
        case dtype_enum::QuantizedS16: return megdnn::dtype::QuantizedS16(scale);
        case dtype_enum::QuantizedS1: return megdnn::dtype::QuantizedS1(scale);
        default: throw dtype_error("to_megdnn: " + type.to_string() + " is quantized but MegDNN has no such DType");
    }
}

}  // namespace megbrain

inline tensor_layout tensor_adapter<mgb::HostTensorND>::layout_of(const T& t) {
    const megdnn::TensorLayout& from = t.layout();
    tensor_layout layout;
    layout.ndim = from.ndim;
    for (std::size_t i = 0; i < from.ndim; ++i) {
        layout.shape[i] = from.shape[i];
        layout.strides[i] = from.stride[i];
    }
    return layout;
}

inline mgb::HostTensorND tensor_adapter<mgb::HostTensorND>::borrow(const dtype& type, void* data,
                                                                   const tensor_layout& layout,
                                                                   bool /*writable: the owner keeps it*/,
                                                                   owner_handle owner, const placement& where) {
    const auto itemsize = static_cast<std::ptrdiff_t>(type.info().element_size);
    const tensor_layout::element_span span = layout.span();
    auto* lowest = static_cast<megdnn::dt_byte*>(data) + span.low * itemsize;
    mgb::HostTensorStorage storage;
    storage.reset(where, static_cast<std::size_t>((span.high - span.low) * itemsize), std::move(owner).shared(lowest));
    if (span.low != 0) storage = storage.sub(-span.low * itemsize);  // element 0 sits above the lowest
    T result;
    result.reset(storage, megbrain_layout(type, layout));
    return result;
}

inline mgb::HostTensorND tensor_adapter<mgb::HostTensorND>::make(const dtype& type, const tensor_layout& layout,
                                                                 lowbit_layout packing, const placement& where) {
    megdnn::TensorShape shape;
    shape.ndim = layout.ndim;
    for (std::size_t i = 0; i < layout.ndim; ++i) shape.shape[i] = layout.shape[i];
    const dtype_info& entry = type.info();
    if (!entry.is_packed) return T(where, megdnn::TensorLayout(shape, megbrain::to_megdnn(type)));
    if (packing == lowbit_layout::row_aligned) {
        return T(where, megdnn::TensorLayout(shape, megbrain::to_megdnn(type),
                                             megdnn::LowbitsAlignedToBytesTensorFormat::make(entry.bits)));
    }
    if (entry.is_quantized) {
        throw conversion_error("MegBrain lays " + std::string(entry.name) +
                               " out row-aligned only (LOWBITS format); lowbit_layout::compact cannot be made");
    }
    return T(where, megdnn::TensorLayout(shape, megbrain::to_megdnn(type), megdnn::DefaultTensorFormat::make()));
}

inline megdnn::TensorLayout tensor_adapter<mgb::HostTensorND>::megbrain_layout(const dtype& type,
                                                                               const tensor_layout& layout) {
    megdnn::TensorLayout result(megbrain::to_megdnn(type));
    result.ndim = layout.ndim;
    for (std::size_t i = 0; i < layout.ndim; ++i) {
        result.shape[i] = layout.shape[i];
        result.stride[i] = layout.strides[i];
    }
    return result;
}

}  // namespace npybridge
