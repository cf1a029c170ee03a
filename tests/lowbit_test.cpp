// Low-bit packing and unpacking, bit-exact with MegBrain's layouts (docs/lowbit.md).
#include <catch2/catch.hpp>

#include <npybridge/core/lowbit.hpp>

#include "tests/support/python.hpp"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace npb = npybridge;
using Catch::Matchers::Contains;
using npb::dtype_enum;
using npb::lowbit_layout;

namespace {

const npb::detail::lowbit_kernels& kernel_set(const std::string& name) {
    return name == "portable" ? npb::detail::portable_lowbit_kernels() : npb::detail::active_lowbit_kernels();
}

/// The deliberately simple reference: docs/lowbit.md's table of codes, one element at a
/// time. Element i of a row sits at bit (i*bits) % 8 of byte i*bits/8.
std::vector<std::uint8_t> reference_pack(dtype_enum id, const std::vector<int>& values, std::size_t row_length,
                                         lowbit_layout layout) {
    const npb::dtype_info& type = npb::info(id);
    const unsigned bits = type.bits;
    const std::size_t rows = layout == lowbit_layout::compact ? 1 : values.size() / row_length;
    const std::size_t row = layout == lowbit_layout::compact ? values.size() : row_length;
    const std::size_t pitch = (row * bits + 7) / 8;
    std::vector<std::uint8_t> out(rows * pitch, 0);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t j = 0; j < row; ++j) {
            const int v = values[r * row + j];
            int code = 0;
            switch (type.coding) {
                case npb::lowbit_coding::odd: code = (v + ((1 << bits) - 1)) / 2; break;
                case npb::lowbit_coding::twos_complement: code = v & 0xF; break;
                default: code = v; break;
            }
            const std::size_t bit = j * bits;
            out[r * pitch + bit / 8] |= static_cast<std::uint8_t>(code << (bit % 8));
        }
    }
    return out;
}

std::vector<int> valid_values(dtype_enum id) {
    const npb::dtype_info& type = npb::info(id);
    std::vector<int> values;
    for (int v = static_cast<int>(type.range.lo); v <= static_cast<int>(type.range.hi); ++v) {
        if (type.coding != npb::lowbit_coding::odd || (v & 1) != 0) values.push_back(v);
    }
    return values;
}

std::vector<std::uint8_t> as_bytes(const std::vector<int>& values) {
    std::vector<std::uint8_t> bytes;
    for (int v : values) bytes.push_back(static_cast<std::uint8_t>(v));
    return bytes;
}

std::vector<int> as_values(dtype_enum id, const std::vector<std::uint8_t>& bytes) {
    std::vector<int> values;
    for (std::uint8_t b : bytes) values.push_back(npb::info(id).is_signed ? static_cast<std::int8_t>(b) : b);
    return values;
}

std::vector<std::uint8_t> packed(dtype_enum id, const std::vector<int>& values, lowbit_layout layout,
                                 std::size_t row_length = 0, const std::string& kernels = "active") {
    std::vector<std::uint8_t> out(npb::packed_bytes(id, values.size(), row_length, layout), 0xAA);
    const std::vector<std::uint8_t> in = as_bytes(values);
    npb::pack(id, in.data(), {values.size(), row_length}, out.data(), layout, kernel_set(kernels));
    return out;
}

std::vector<int> unpacked(dtype_enum id, const std::vector<std::uint8_t>& bytes, std::size_t count,
                          lowbit_layout layout, std::size_t row_length = 0, const std::string& kernels = "active") {
    std::vector<std::uint8_t> out(count, 0x55);
    npb::unpack(id, bytes.data(), {count, row_length}, out.data(), layout, kernel_set(kernels));
    return as_values(id, out);
}

const dtype_enum packed_dtypes[] = {dtype_enum::IntB1,  dtype_enum::IntB2,       dtype_enum::IntB4,
                                    dtype_enum::UintB4, dtype_enum::QuantizedS4, dtype_enum::Quantized4Asymm};

}  // namespace

TEST_CASE("hand-checked vectors pack and unpack as MegBrain lays them out", "[lowbit]") {
    const std::string kernels = GENERATE(as<std::string>{}, "active", "portable");
    CAPTURE(kernels, npb::lowbit_kernel_name());
    // Codes (docs/lowbit.md): IntB1 (v+1)/2, IntB2 (v+3)/2, element 0 in the low bits.
    CHECK(packed(dtype_enum::IntB1, {-1, 1}, lowbit_layout::compact, 0, kernels) == std::vector<std::uint8_t>{0x02});
    CHECK(packed(dtype_enum::IntB2, {-3, -1, 1, 3, 3, 1, -1}, lowbit_layout::compact, 0, kernels) ==
          std::vector<std::uint8_t>{0xE4, 0x1B});
    CHECK(packed(dtype_enum::IntB4, {-15, 15, 1}, lowbit_layout::compact, 0, kernels) ==
          std::vector<std::uint8_t>{0xF0, 0x08});
    CHECK(unpacked(dtype_enum::IntB1, {0xFF}, 8, lowbit_layout::compact, 0, kernels) == std::vector<int>(8, 1));
    CHECK(unpacked(dtype_enum::IntB2, {0xFF}, 4, lowbit_layout::compact, 0, kernels) == std::vector<int>(4, 3));
    CHECK(unpacked(dtype_enum::IntB4, {0xFF}, 2, lowbit_layout::compact, 0, kernels) == std::vector<int>(2, 15));
    CHECK(unpacked(dtype_enum::IntB1, {0x00}, 8, lowbit_layout::compact, 0, kernels) == std::vector<int>(8, -1));
    CHECK(unpacked(dtype_enum::UintB4, {0x70}, 2, lowbit_layout::compact, 0, kernels) == std::vector<int>{-15, -1});

    SECTION("QuantizedS4 -8..7 round-trips with sign extension") {
        const std::vector<int> values = valid_values(dtype_enum::QuantizedS4);
        REQUIRE(values.size() == 16);
        const auto bytes = packed(dtype_enum::QuantizedS4, values, lowbit_layout::compact, 0, kernels);
        CHECK(bytes == std::vector<std::uint8_t>{0x98, 0xBA, 0xDC, 0xFE, 0x10, 0x32, 0x54, 0x76});
        CHECK(unpacked(dtype_enum::QuantizedS4, bytes, 16, lowbit_layout::compact, 0, kernels) == values);
    }
    SECTION("Quantized4Asymm 0..15 stores values as they are") {
        const std::vector<int> values = valid_values(dtype_enum::Quantized4Asymm);
        const auto bytes = packed(dtype_enum::Quantized4Asymm, values, lowbit_layout::compact, 0, kernels);
        CHECK(bytes[0] == 0x10);
        CHECK(bytes[7] == 0xFE);
        CHECK(unpacked(dtype_enum::Quantized4Asymm, bytes, 16, lowbit_layout::compact, 0, kernels) == values);
    }
    SECTION("a (3,3,3) QuantizedS4 tensor takes 9 rows of 2 bytes row-aligned, 14 compact") {
        CHECK(npb::packed_bytes(dtype_enum::QuantizedS4, 27, 3, lowbit_layout::row_aligned) == 18);
        CHECK(npb::packed_bytes(dtype_enum::QuantizedS4, 27, 3, lowbit_layout::compact) == 14);
        std::vector<int> values(27);
        for (int i = 0; i < 27; ++i) values[i] = (i % 16) - 8;
        const auto bytes = packed(dtype_enum::QuantizedS4, values, lowbit_layout::row_aligned, 3, kernels);
        REQUIRE(bytes.size() == 18);
        CHECK(bytes[0] == 0x98);  // row 0: -8, -7 | -6 and 4 zero bits
        CHECK(bytes[1] == 0x0A);
        CHECK(bytes[2] == 0xCB);  // row 1 starts on its own byte: -5, -4 | -3
        CHECK(unpacked(dtype_enum::QuantizedS4, bytes, 27, lowbit_layout::row_aligned, 3, kernels) == values);
    }
    SECTION("default layouts follow MegBrain") {
        CHECK(npb::default_layout(dtype_enum::QuantizedS4) == lowbit_layout::row_aligned);
        CHECK(npb::default_layout(dtype_enum::Quantized4Asymm) == lowbit_layout::row_aligned);
        CHECK(npb::default_layout(dtype_enum::IntB2) == lowbit_layout::compact);
        CHECK(npb::default_layout(dtype_enum::UintB4) == lowbit_layout::compact);
        CHECK(npb::default_layout(dtype_enum::QuantizedS8) == lowbit_layout::compact);  // not packed: nothing to align
    }
}

TEST_CASE("random tensors round-trip and match the per-element reference byte for byte", "[lowbit][property]") {
    const std::string kernels = GENERATE(as<std::string>{}, "active", "portable");
    std::mt19937 random(20261129);
    for (int trial = 0; trial < 600; ++trial) {
        const dtype_enum id = packed_dtypes[random() % std::size(packed_dtypes)];
        const std::vector<int> choices = valid_values(id);
        const lowbit_layout layout = random() % 2 ? lowbit_layout::compact : lowbit_layout::row_aligned;
        std::size_t row_length = 1 + random() % 40;
        std::size_t count = random() % 1001;
        if (layout == lowbit_layout::row_aligned) count -= count % row_length;
        if (trial % 50 == 0) count = 0;
        std::vector<int> values(count);
        for (int& v : values) v = choices[random() % choices.size()];
        CAPTURE(kernels, trial, npb::name_of(id), count, row_length, layout == lowbit_layout::compact);
        const auto bytes = packed(id, values, layout, row_length, kernels);
        REQUIRE(bytes == reference_pack(id, values, row_length, layout));
        REQUIRE(unpacked(id, bytes, count, layout, row_length, kernels) == values);
    }
}

TEST_CASE("long tensors exercise the vector loops with every tail length", "[lowbit]") {
    for (const dtype_enum id : packed_dtypes) {
        const std::vector<int> choices = valid_values(id);
        for (std::size_t count = 120; count < 400; count += 7) {
            std::vector<int> values(count);
            for (std::size_t i = 0; i < count; ++i) values[i] = choices[(i * 7 + count) % choices.size()];
            CAPTURE(npb::name_of(id), count);
            const auto bytes = packed(id, values, lowbit_layout::compact);
            REQUIRE(bytes == reference_pack(id, values, 0, lowbit_layout::compact));
            REQUIRE(unpacked(id, bytes, count, lowbit_layout::compact) == values);
        }
    }
}

TEST_CASE("an invalid value is named by index and value and leaves the destination untouched", "[lowbit][errors]") {
    // (dtype, bad value, its index, text of the valid set)
    auto [id, bad, index, valid] = GENERATE(table<dtype_enum, int, std::size_t, std::string>({
        {dtype_enum::IntB1, 0, 0, "odd values in [-1, 1]"},
        {dtype_enum::IntB1, 3, 300, "odd values in [-1, 1]"},
        {dtype_enum::IntB2, 2, 5, "odd values in [-3, 3]"},
        {dtype_enum::IntB2, -5, 129, "odd values in [-3, 3]"},
        {dtype_enum::IntB4, 17, 64, "odd values in [-15, 15]"},
        {dtype_enum::IntB4, -16, 999, "odd values in [-15, 15]"},
        {dtype_enum::UintB4, 4, 1, "odd values in [-15, 15]"},
        {dtype_enum::QuantizedS4, 8, 2, "[-8, 7]"},
        {dtype_enum::QuantizedS4, -9, 700, "[-8, 7]"},
        {dtype_enum::Quantized4Asymm, 16, 31, "[0, 15]"},
        {dtype_enum::Quantized4Asymm, 255, 0, "[0, 15]"},
    }));
    const lowbit_layout layout = GENERATE(lowbit_layout::compact, lowbit_layout::row_aligned);
    const std::vector<int> choices = valid_values(id);
    std::vector<int> values(1000);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = choices[i % choices.size()];
    values[index] = bad;
    const std::vector<std::uint8_t> in = as_bytes(values);
    const std::size_t row_length = 10;
    std::vector<std::uint8_t> destination(npb::packed_bytes(id, values.size(), row_length, layout), 0x5A);
    const std::vector<std::uint8_t> before = destination;
    CAPTURE(npb::name_of(id), bad, index);
    const std::string message = test::message_of<npb::value_range_error>([&, id = id] {
        npb::pack(id, in.data(), {values.size(), row_length}, destination.data(), layout);
    });
    CHECK_THAT(message, Contains(std::string(npb::name_of(id)) + ": value " + std::to_string(bad) + " at index " +
                                 std::to_string(index)) &&
                            Contains(valid));
    CHECK(destination == before);
}

TEST_CASE("packing asks for a packed dtype and a whole number of rows", "[lowbit][errors]") {
    std::uint8_t byte = 0;
    const std::int8_t one = 1;
    CHECK_THAT(test::message_of<npb::dtype_error>([&] {
                   npb::pack(dtype_enum::Int8, &one, {1, 1}, &byte, lowbit_layout::compact);
               }),
               Contains("Int8 is not a packed low-bit dtype (IntB1, IntB2, IntB4, UintB4, Quantized4Asymm, "
                        "QuantizedS4)"));  // table order
    CHECK_THAT(test::message_of<npb::dtype_error>([&] {
                   npb::unpack(dtype_enum::QuantizedS1, &byte, {1, 1}, &byte, lowbit_layout::compact);
               }),
               Contains("QuantizedS1 is not a packed low-bit dtype"));
    std::int8_t five[5] = {1, 1, 1, 1, 1};
    CHECK_THAT(test::message_of<npb::conversion_error>([&] {
                   npb::pack(dtype_enum::IntB4, five, {5, 2}, &byte, lowbit_layout::row_aligned);
               }),
               Contains("innermost dimension (2) to divide the element count (5)"));
}

TEST_CASE("unused trailing bits are zero whatever the destination held", "[lowbit]") {
    for (const dtype_enum id : packed_dtypes) {
        const int one_value = valid_values(id).back();
        for (std::size_t count = 1; count < 9; ++count) {
            const auto bytes = packed(id, std::vector<int>(count, one_value), lowbit_layout::compact);
            const std::size_t used_bits = count * npb::info(id).bits;
            const unsigned spare = static_cast<unsigned>(bytes.size() * 8 - used_bits);
            CAPTURE(npb::name_of(id), count);
            if (spare > 0) CHECK((bytes.back() >> (8 - spare)) == 0);
        }
    }
}

TEST_CASE("outputs large enough for streaming stores match the portable kernels", "[lowbit]") {
    // Over NPYBRIDGE_STREAMING_STORE_BYTES in both directions, with a tail.
    const std::size_t count = (std::size_t{9} << 20) + 13;
    for (const dtype_enum id : {dtype_enum::IntB1, dtype_enum::IntB4, dtype_enum::QuantizedS4}) {
        const std::vector<int> choices = valid_values(id);
        std::vector<std::uint8_t> in(count);
        for (std::size_t i = 0; i < count; ++i)
            in[i] = static_cast<std::uint8_t>(choices[(i * 2654435761u) % choices.size()]);
        const std::size_t bytes = npb::byte_size(id, count);
        std::vector<std::uint8_t> fast(bytes), slow(bytes);
        npb::pack_fresh(id, in.data(), {count, 0}, fast.data(), lowbit_layout::compact);
        npb::pack_fresh(id, in.data(), {count, 0}, slow.data(), lowbit_layout::compact,
                        npb::detail::portable_lowbit_kernels());
        CAPTURE(npb::name_of(id));
        REQUIRE(fast == slow);
        std::vector<std::uint8_t> out(count);
        npb::unpack(id, fast.data(), {count, 0}, out.data(), lowbit_layout::compact);
        REQUIRE(out == in);
    }
}

TEST_CASE("sizes that overflow a size_t are named errors, not wrapped to small numbers", "[lowbit][errors]") {
    CHECK(npb::byte_size(dtype_enum::IntB4, 3) == 2);
    CHECK_THAT(test::message_of<npb::conversion_error>([] {
                   npb::byte_size(dtype_enum::IntB4,
                                  static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()));
               }),
               Contains("byte_size") && Contains("9223372036854775807"));
    CHECK_THAT(test::message_of<npb::conversion_error>([] { npb::byte_size(dtype_enum::Float32, SIZE_MAX / 2); }),
               Contains("overflow"));
    CHECK_THAT(test::message_of<npb::conversion_error>(
                   [] { npb::packed_bytes(dtype_enum::IntB1, SIZE_MAX, 0, npb::lowbit_layout::compact); }),
               Contains("overflow"));
    // A row that long overflows in its pitch; one-element rows are one byte each, exactly (no wrap either way).
    CHECK_THAT(test::message_of<npb::conversion_error>([] {
                   npb::packed_bytes(dtype_enum::QuantizedS4, SIZE_MAX, SIZE_MAX, npb::lowbit_layout::row_aligned);
               }),
               Contains("overflow"));
    CHECK(npb::packed_bytes(dtype_enum::QuantizedS4, SIZE_MAX, 1, npb::lowbit_layout::row_aligned) == SIZE_MAX);
    CHECK(npb::packed_bytes(dtype_enum::QuantizedS4, 6, 3, npb::lowbit_layout::row_aligned) == 4);
}
