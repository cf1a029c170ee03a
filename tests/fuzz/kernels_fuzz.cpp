// libFuzzer target: the Python-free kernels against plain reference loops.
//  - low-bit packing (every packed dtype, both layouts, SIMD and portable kernels): a value set accepted iff
//    every value is valid, the bits exactly where the layout puts them, unpacking gives the values back;
//  - int64 -> int32 and float64 -> float32 narrowing: every fit decision and every written value;
//  - the tiled strided copier: any shape, permutation, step and sign of strides, itemsize and byte swap.
#include <npybridge/core/detail/narrowing_kernels.hpp>
#include <npybridge/core/detail/strided_copy.hpp>
#include <npybridge/core/lowbit.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

namespace npb = npybridge;
namespace nd = npybridge::detail;

namespace {

#define FUZZ_CHECK(condition)                                                                   \
    do {                                                                                        \
        if (!(condition)) {                                                                     \
            std::fprintf(stderr, "check failed: %s (%s:%d)\n", #condition, __FILE__, __LINE__); \
            std::abort();                                                                       \
        }                                                                                       \
    } while (0)

bool valid_code(const npb::dtype_info& type, std::uint8_t byte) {
    const int top = (1 << type.bits) - 1;
    const int value = type.is_signed ? static_cast<std::int8_t>(byte) : byte;
    switch (type.coding) {
        case npb::lowbit_coding::odd: return value >= -top && value <= top && (value % 2 != 0);
        case npb::lowbit_coding::twos_complement:
            return value >= -(1 << (type.bits - 1)) && value < (1 << (type.bits - 1));
        case npb::lowbit_coding::unsigned_value: return value >= 0 && value <= top;
        case npb::lowbit_coding::none: break;
    }
    return false;
}

unsigned code_of(const npb::dtype_info& type, std::uint8_t byte) {
    const int top = (1 << type.bits) - 1;
    const int value = type.is_signed ? static_cast<std::int8_t>(byte) : byte;
    return type.coding == npb::lowbit_coding::odd ? static_cast<unsigned>((value + top) / 2)
                                                  : static_cast<unsigned>(value) & static_cast<unsigned>(top);
}

void fuzz_lowbit(FuzzedDataProvider& in) {
    static const npb::dtype_enum packed[] = {npb::dtype_enum::IntB1,       npb::dtype_enum::IntB2,
                                             npb::dtype_enum::IntB4,       npb::dtype_enum::UintB4,
                                             npb::dtype_enum::QuantizedS4, npb::dtype_enum::Quantized4Asymm};
    const npb::dtype_enum id = in.PickValueInArray(packed);
    const npb::dtype_info& type = npb::info(id);
    const std::size_t rows = in.ConsumeIntegralInRange<std::size_t>(0, 9);
    const std::size_t row_length = in.ConsumeIntegralInRange<std::size_t>(rows == 0 ? 0 : 1, 70);
    const npb::lowbit_layout layout = in.ConsumeBool() ? npb::lowbit_layout::compact : npb::lowbit_layout::row_aligned;
    const std::size_t count = rows * row_length;
    // Mostly valid values (drawn from the valid set), some raw bytes.
    const bool raw = in.ConsumeIntegralInRange<int>(0, 7) == 0;
    std::vector<std::uint8_t> values(count);
    for (auto& v : values) {
        const std::uint8_t byte = in.ConsumeIntegral<std::uint8_t>();
        if (raw) {
            v = byte;
        } else {
            std::uint8_t candidate = byte;
            for (int tries = 0; tries < 256 && !valid_code(type, candidate); ++tries) ++candidate;
            v = candidate;
        }
    }
    const bool all_valid =
        std::all_of(values.begin(), values.end(), [&](std::uint8_t v) { return valid_code(type, v); });
    const std::size_t bytes = npb::packed_bytes(id, count, row_length, layout);
    std::vector<std::uint8_t> expected(bytes, 0);
    const std::size_t pitch_bits = layout == npb::lowbit_layout::row_aligned && row_length > 0
                                       ? npb::row_pitch(id, row_length) * 8
                                       : row_length * type.bits;
    for (std::size_t i = 0; all_valid && i < count; ++i) {
        const std::size_t bit = (i / std::max<std::size_t>(row_length, 1)) * pitch_bits +
                                (i % std::max<std::size_t>(row_length, 1)) * type.bits;
        expected[bit / 8] |= static_cast<std::uint8_t>(code_of(type, values[i]) << (bit % 8));
    }
    for (const nd::lowbit_kernels* kernels : {&nd::active_lowbit_kernels(), &nd::portable_lowbit_kernels()}) {
        std::vector<std::uint8_t> packed_bytes_out(bytes + 1, 0xA5);
        bool threw = false;
        try {
            npb::pack(id, values.data(), {count, row_length}, packed_bytes_out.data(), layout, *kernels);
        } catch (const npb::value_range_error&) {
            threw = true;
        }
        FUZZ_CHECK(threw == !all_valid);
        FUZZ_CHECK(packed_bytes_out[bytes] == 0xA5);  // nothing past the end
        if (threw) {
            for (std::size_t b = 0; b < bytes; ++b) FUZZ_CHECK(packed_bytes_out[b] == 0xA5);  // nothing half-written
            continue;
        }
        // Row padding bits are unspecified: compare the element bits only, through unpack and the expected bits.
        std::vector<std::uint8_t> back(count + 1, 0x5A);
        npb::unpack(id, packed_bytes_out.data(), {count, row_length}, back.data(), layout, *kernels);
        FUZZ_CHECK(std::equal(values.begin(), values.end(), back.begin()));
        FUZZ_CHECK(back[count] == 0x5A);
        std::vector<std::uint8_t> repacked(bytes, 0);
        for (std::size_t i = 0; i < count; ++i) {
            const std::size_t bit = (i / row_length) * pitch_bits + (i % row_length) * type.bits;
            const unsigned code = (packed_bytes_out[bit / 8] >> (bit % 8)) & ((1u << type.bits) - 1);
            repacked[bit / 8] |= static_cast<std::uint8_t>(code << (bit % 8));
        }
        FUZZ_CHECK(repacked == expected);
    }
}

template <class Source, class Target>
void fuzz_narrowing_of(FuzzedDataProvider& in) {
    const std::size_t n = in.ConsumeIntegralInRange<std::size_t>(0, 9000);
    std::vector<Source> values(n);
    for (auto& v : values) {
        if constexpr (std::is_integral_v<Source>) {
            v = in.ConsumeBool() ? static_cast<Source>(in.ConsumeIntegral<std::int32_t>())
                                 : in.ConsumeIntegral<Source>();
        } else {
            v = in.ConsumeBool() ? static_cast<Source>(in.ConsumeFloatingPoint<float>())
                                 : in.ConsumeFloatingPoint<Source>();
        }
        if (in.remaining_bytes() == 0) break;
    }
    std::size_t expected_bad = n;
    for (std::size_t i = 0; i < n && expected_bad == n; ++i) {
        if constexpr (std::is_integral_v<Source>) {
            if (values[i] < INT32_MIN || values[i] > INT32_MAX) expected_bad = i;
        } else {
            if (std::isfinite(values[i]) && std::isinf(static_cast<float>(values[i]))) expected_bad = i;
        }
    }
    std::vector<Target> out(n + 1);
    out[n] = Target(7);
    FUZZ_CHECK((nd::first_unfit<Source, Target>(values.data(), n)) == expected_bad);
    FUZZ_CHECK((nd::narrow_values<Source, Target>(values.data(), out.data(), n, true)) == expected_bad);
    FUZZ_CHECK(out[n] == Target(7));
    nd::narrow_values<Source, Target>(values.data(), out.data(), n, false);
    for (std::size_t i = 0; i < n; ++i) {
        const Target want = static_cast<Target>(values[i]);  // int64 -> int32 wraps (C++20 and every compiler)
        if constexpr (std::is_integral_v<Source>) {
            FUZZ_CHECK(out[i] == want);
        } else {
            FUZZ_CHECK((std::isnan(want) && std::isnan(out[i])) || std::memcmp(&want, &out[i], sizeof want) == 0);
        }
    }
}

void fuzz_strided_copy(FuzzedDataProvider& in) {
    static const std::size_t itemsizes[] = {1, 2, 3, 4, 8, 12, 16};
    const std::size_t itemsize = in.PickValueInArray(itemsizes);
    // Byte orders numpy has: whole element, or each half of a complex number (12: the odd-size path).
    std::size_t swap_unit = 0;
    if (in.ConsumeBool()) {
        switch (itemsize) {
            case 2:
            case 4: swap_unit = itemsize; break;
            case 8: swap_unit = in.ConsumeBool() ? 8 : 4; break;
            case 12: swap_unit = 4; break;
            case 16: swap_unit = 8; break;
            default: break;
        }
    }
    const std::size_t ndim = in.ConsumeIntegralInRange<std::size_t>(0, 4);
    std::size_t shape[4] = {1, 1, 1, 1};
    // Up to two long dimensions (tile edges), the rest short (at most 2 after two long ones): a run copies
    // at most 70 x 70 x 5 x 5 elements, and usually far fewer.
    std::size_t long_dims = 0;
    for (std::size_t i = 0; i < ndim; ++i) {
        const bool long_dim = long_dims < 2 && in.ConsumeBool();
        long_dims += long_dim;
        shape[i] = in.ConsumeIntegralInRange<std::size_t>(0, long_dim ? 70 : long_dims == 2 ? 2 : 5);
    }
    // A source buffer laid out in some permutation, then viewed with steps and signs.
    std::size_t perm[4] = {0, 1, 2, 3};
    for (std::size_t i = ndim; i > 1; --i)
        std::swap(perm[i - 1], perm[in.ConsumeIntegralInRange<std::size_t>(0, i - 1)]);
    std::ptrdiff_t step[4], base_stride[4];
    std::size_t full[4];
    for (std::size_t i = 0; i < ndim; ++i) {
        step[i] = in.ConsumeIntegralInRange<std::ptrdiff_t>(1, 3) * (in.ConsumeBool() ? -1 : 1);
        full[i] = shape[i] == 0 ? 0 : (shape[i] - 1) * static_cast<std::size_t>(std::abs(step[i])) + 1;
    }
    std::ptrdiff_t stride = static_cast<std::ptrdiff_t>(itemsize);
    for (std::size_t k = ndim; k-- > 0;) {
        base_stride[perm[k]] = stride;
        stride *= static_cast<std::ptrdiff_t>(std::max<std::size_t>(full[perm[k]], 1));
    }
    const std::size_t buffer_bytes = static_cast<std::size_t>(stride);
    std::vector<unsigned char> source(buffer_bytes);
    for (auto& b : source) b = in.ConsumeIntegral<unsigned char>();
    nd::copy_plan plan;
    plan.ndim = ndim;
    std::ptrdiff_t start = 0;
    std::ptrdiff_t dst_stride = static_cast<std::ptrdiff_t>(itemsize);
    for (std::size_t k = ndim; k-- > 0;) {
        plan.shape[k] = shape[k];
        plan.src[k] = base_stride[k] * step[k];
        if (step[k] < 0 && shape[k] > 0) start += base_stride[k] * static_cast<std::ptrdiff_t>(full[k] - 1);
        plan.dst[k] = dst_stride;
        dst_stride *= static_cast<std::ptrdiff_t>(std::max<std::size_t>(shape[k], 1));
    }
    std::size_t count = 1;
    for (std::size_t i = 0; i < ndim; ++i) count *= shape[i];
    std::vector<unsigned char> got(count * itemsize + 1, 0xEE), want(count * itemsize + 1, 0xEE);
    // Reference: element by element in C order.
    for (std::size_t flat = 0; flat < count; ++flat) {
        std::ptrdiff_t offset = start;
        std::size_t rest = flat;
        for (std::size_t k = ndim; k-- > 0;) {
            offset += static_cast<std::ptrdiff_t>(rest % shape[k]) * plan.src[k];
            rest /= shape[k];
        }
        unsigned char* out = want.data() + flat * itemsize;
        std::memcpy(out, source.data() + offset, itemsize);
        if (swap_unit != 0) {
            for (std::size_t u = 0; u < itemsize; u += swap_unit) std::reverse(out + u, out + u + swap_unit);
        }
    }
    nd::copy_strided(plan, source.data() + start, got.data(), itemsize, swap_unit);
    FUZZ_CHECK(got == want);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
        case 0: fuzz_lowbit(in); break;
        case 1: fuzz_narrowing_of<std::int64_t, std::int32_t>(in); break;
        case 2: fuzz_narrowing_of<double, float>(in); break;
        default: fuzz_strided_copy(in); break;
    }
    return 0;
}
