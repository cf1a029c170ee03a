// libFuzzer target: from_dlpack of capsules built from the input (versioned or legacy; any type code, bits
// and lanes; device; ndim, shape, strides in elements, byte offset; read-only and sub-byte flags) over memory
// that holds everything the capsule claims, and hostile producers: a NULL shape, NULL data, strides 2^62
// elements or more apart. Invariant: a named npybridge error or a tensor whose values are the bytes the capsule
// describes (a NULL shape or NULL data with elements, or strides past this memory, are always refused; padded
// sub-byte data is never reported borrowed, and must_borrow refuses it); the producer's deleter runs exactly
// once, whatever happened; no Python error left pending.
#include "tests/fuzz/fuzz_support.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <limits>
#include <vector>

namespace npb = npybridge;
namespace dl = npybridge::dlpack;

namespace {

int deleted = 0;

struct producer {
    std::vector<unsigned char> memory;
    std::int64_t shape[8];
    std::int64_t strides[8];
};

void delete_versioned(dl::DLManagedTensorVersioned* self) {
    ++deleted;
    delete static_cast<producer*>(self->manager_ctx);
    delete self;
}

void delete_legacy(dl::DLManagedTensor* self) {
    ++deleted;
    delete static_cast<producer*>(self->manager_ctx);
    delete self;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::start("");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    auto* made = new producer();
    dl::DLTensor view{};
    static const std::uint8_t codes[] = {dl::kDLInt,     dl::kDLUInt, dl::kDLFloat,        dl::kDLBfloat,
                                         dl::kDLComplex, dl::kDLBool, dl::kDLOpaqueHandle, 9};
    view.dtype.code = in.PickValueInArray(codes);
    static const std::uint8_t bits[] = {1, 2, 4, 8, 16, 32, 64, 128, 3, 0};
    view.dtype.bits = in.PickValueInArray(bits);
    view.dtype.lanes = in.ConsumeIntegralInRange<int>(0, 9) == 0 ? in.ConsumeIntegral<std::uint16_t>() : 1;
    view.device = {
        in.ConsumeIntegralInRange<int>(0, 9) == 0 ? in.ConsumeIntegralInRange<std::int32_t>(0, 20) : dl::kDLCPU, 0};
    view.ndim = in.ConsumeIntegralInRange<int>(0, 12) == 0 ? in.ConsumeIntegralInRange<std::int32_t>(-2, 8)
                                                           : in.ConsumeIntegralInRange<std::int32_t>(0, 4);
    const bool with_strides = in.ConsumeBool();
    const bool hostile_shape = in.ConsumeIntegralInRange<int>(0, 15) == 0;
    // 1: a NULL shape, 2: NULL data, 3: strides of any value.
    const int hostile_field = in.ConsumeIntegralInRange<int>(0, 12);
    // Element size in bytes for laying out memory (sub-byte types: one byte per element or less). Vector
    // lanes are never imported (checked below), so the memory is laid out for one lane.
    const std::size_t element_bits = std::max<std::size_t>(1, std::size_t{view.dtype.bits});
    const std::size_t itemsize = (element_bits + 7) / 8;
    std::int64_t span = 1;  // elements the memory must reach
    bool fits = true;
    for (std::int32_t i = view.ndim - 1; i >= 0 && i < 8; --i) {
        std::int64_t extent = in.ConsumeIntegralInRange<std::int64_t>(0, 6);
        if (hostile_shape) extent = in.ConsumeIntegral<std::int64_t>();
        made->shape[i] = extent;
        if (with_strides) {
            // Hostile: at least 2^62 elements apart, which no memory holds (a lie within memory's range cannot
            // be seen by any consumer).
            const std::int64_t huge =
                (std::int64_t{1} << 62) + in.ConsumeIntegralInRange<std::int64_t>(0, std::int64_t{1} << 40);
            made->strides[i] = hostile_field == 3 ? (in.ConsumeBool() ? huge : -huge)
                                                  : in.ConsumeIntegralInRange<std::int64_t>(-8, 40);
        } else {
            made->strides[i] = span;
        }
        if (extent < 0 || extent > 6) fits = false;
        if (hostile_field == 3 && with_strides && extent > 1) fits = false;  // past this memory
        const std::int64_t reach =
            fits && extent > 0 ? (extent - 1) * (made->strides[i] < 0 ? -made->strides[i] : made->strides[i]) : 0;
        span += reach;
    }
    // A hostile shape must be refused (negative, or its element count overflows) unless it has no elements:
    // a shape with a huge but representable count is made empty, as no memory here could back it.
    if (!fits && view.ndim > 0 && view.ndim <= 8) {
        bool negative = false, overflows = false;
        std::uint64_t product = 1;
        for (std::int32_t i = 0; i < view.ndim; ++i) {
            if (made->shape[i] < 0)
                negative = true;
            else if (!overflows && made->shape[i] != 0 &&
                     product > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) /
                                   static_cast<std::uint64_t>(made->shape[i]))
                overflows = true;
            else if (!overflows)
                product *= static_cast<std::uint64_t>(made->shape[i]);
        }
        if (!negative && !overflows) made->shape[view.ndim - 1] = 0;
    }
    // Honest memory: enough for every element on either side of data (negative strides reach back).
    const std::size_t reach_bytes = fits ? static_cast<std::size_t>(span) * itemsize + 16 : 64;
    made->memory.resize(2 * reach_bytes + 64);
    for (auto& b : made->memory) b = in.ConsumeIntegral<unsigned char>();
    const std::uint64_t byte_offset = in.ConsumeIntegralInRange<std::uint64_t>(0, 8);
    view.data = made->memory.data() + reach_bytes;  // the middle: negative strides stay inside
    view.byte_offset = byte_offset;
    view.shape = view.ndim > 0 && hostile_field != 1 ? made->shape : nullptr;
    if (hostile_field == 2) view.data = nullptr;
    view.strides = with_strides && view.ndim > 0 ? made->strides : nullptr;
    const bool honest =
        fits && !(hostile_field == 1 && view.ndim > 0) && hostile_field != 2;  // (a 0-d tensor needs no shape)
    // The element count the shape claims, read now: a copying import may free the producer before returning.
    std::size_t claimed_count = 1;
    if (honest) {
        for (std::int32_t i = 0; i < view.ndim; ++i) claimed_count *= static_cast<std::size_t>(made->shape[i]);
    }
    const std::uint64_t flags = (in.ConsumeBool() ? dl::flag_read_only : 0) |
                                (in.ConsumeIntegralInRange<int>(0, 3) == 0 ? dl::flag_subbyte_padded : 0);
    const bool versioned = in.ConsumeBool();

    npb::to_tensor_options options;
    options.policy = in.PickValueInArray(
        {npb::borrow_policy::try_borrow, npb::borrow_policy::must_borrow, npb::borrow_policy::copy});
    options.narrow = in.PickValueInArray({npb::narrowing::checked, npb::narrowing::wrap, npb::narrowing::reject});
    static const npb::dtype_enum packed_targets[] = {npb::dtype_enum::IntB1, npb::dtype_enum::IntB2,
                                                     npb::dtype_enum::IntB4, npb::dtype_enum::UintB4,
                                                     npb::dtype_enum::Int8,  npb::dtype_enum::Float32};
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
        case 0: options.type = npb::dtype(in.PickValueInArray(packed_targets)); break;
        case 1:
            options.type = in.ConsumeBool() ? npb::dtype::quantized(npb::dtype_enum::QuantizedS4, 0.5, std::nullopt)
                                            : npb::dtype::quantized(npb::dtype_enum::Quantized4Asymm, 0.5, 3);
            break;
        default: break;
    }

    deleted = 0;
    npb::object capsule;
    if (versioned) {
        auto* managed = new dl::DLManagedTensorVersioned{{1, 1}, made, delete_versioned, flags, view};
        capsule = npb::object::steal(
            PyCapsule_New(managed, dl::versioned_capsule_name, npb::detail::dlpack_capsule_destructor));
        if (!capsule) delete_versioned(managed);
    } else {
        auto* managed = new dl::DLManagedTensor{view, made, delete_legacy};
        capsule = npb::object::steal(PyCapsule_New(managed, dl::capsule_name, npb::detail::dlpack_capsule_destructor));
        if (!capsule) delete_legacy(managed);
    }
    FUZZ_CHECK(capsule);
    {
        std::optional<npb::to_tensor_result<npb::tensor>> result;
        try {
            result.emplace(npb::from_dlpack<npb::tensor>(capsule.get(), options));
        } catch (const npb::error&) {}
        FUZZ_CHECK(!PyErr_Occurred());
        if (result) {
            FUZZ_CHECK(view.dtype.lanes == 1);
            FUZZ_CHECK(view.ndim <= 0 || view.shape != nullptr);
            if (view.dtype.bits < 8 && (flags & dl::flag_subbyte_padded) != 0) {
                FUZZ_CHECK(!result->borrowed);
                FUZZ_CHECK(options.policy != npb::borrow_policy::must_borrow);
            }
            const npb::tensor& t = result->tensor;
            // A shape beyond this memory is only acceptable without elements (an extent of 0).
            FUZZ_CHECK(honest || t.count() == 0);
            if (honest) FUZZ_CHECK(t.count() == claimed_count);
            try {
                npb::object values = npb::to_array(t, npb::share_policy::copy);  // every element readable
                FUZZ_CHECK(values);
            } catch (const npb::error&) {}
            FUZZ_CHECK(!PyErr_Occurred());
        }
        capsule = npb::object();
        // The tensor (if any) still holds the producer: its memory must be alive until now.
    }
    FUZZ_CHECK(deleted == 1);
    return 0;
}
