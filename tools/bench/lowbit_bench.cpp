// Packing and unpacking 64 Mi elements against memcpy of the unpacked bytes and a per-element loop.
#include <npybridge/core/lowbit.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace npb = npybridge;
using npb::dtype_enum;

namespace {

constexpr std::size_t count = std::size_t{64} << 20;

struct buffers {
    std::vector<std::uint8_t> values, packed, out;
    explicit buffers(dtype_enum id) : values(count), packed(npb::byte_size(id, count)), out(count) {
        const npb::dtype_info& type = npb::info(id);
        const int lo = static_cast<int>(type.range.lo), hi = static_cast<int>(type.range.hi);
        const int step = type.coding == npb::lowbit_coding::odd ? 2 : 1;
        int v = lo;
        for (auto& byte : values) {
            byte = static_cast<std::uint8_t>(v);
            v = v + step > hi ? lo : v + step;
        }
        npb::pack_fresh(id, values.data(), {count, 0}, packed.data(), npb::lowbit_layout::compact);
    }
};

buffers& data(dtype_enum id) {
    static buffers b1(dtype_enum::IntB1), b2(dtype_enum::IntB2), b4(dtype_enum::IntB4), s4(dtype_enum::QuantizedS4);
    return id == dtype_enum::IntB1 ? b1 : id == dtype_enum::IntB2 ? b2 : id == dtype_enum::IntB4 ? b4 : s4;
}

/// The per-element way: one value at a time, read-modify-write of its byte.
void reference_pack(dtype_enum id, const std::uint8_t* in, std::uint8_t* out) {
    const npb::dtype_info& type = npb::info(id);
    const unsigned bits = type.bits, top = (1u << bits) - 1;
    std::memset(out, 0, npb::byte_size(id, count));
    for (std::size_t i = 0; i < count; ++i) {
        const int v = static_cast<std::int8_t>(in[i]);
        int code;
        if (type.coding == npb::lowbit_coding::odd) {
            if ((v & 1) == 0 || v < -static_cast<int>(top) || v > static_cast<int>(top))
                throw npb::value_range_error("bad");
            code = (v + static_cast<int>(top)) / 2;
        } else {
            if (v < static_cast<int>(type.range.lo) || v > static_cast<int>(type.range.hi))
                throw npb::value_range_error("bad");
            code = v & static_cast<int>(top);
        }
        out[i * bits / 8] |= static_cast<std::uint8_t>(code << (i * bits % 8));
    }
}

void reference_unpack(dtype_enum id, const std::uint8_t* in, std::uint8_t* out) {
    const npb::dtype_info& type = npb::info(id);
    const unsigned bits = type.bits, top = (1u << bits) - 1;
    for (std::size_t i = 0; i < count; ++i) {
        const int code = (in[i * bits / 8] >> (i * bits % 8)) & static_cast<int>(top);
        int v;
        if (type.coding == npb::lowbit_coding::odd)
            v = 2 * code - static_cast<int>(top);
        else
            v = code >= static_cast<int>(top + 1) / 2 ? code - static_cast<int>(top + 1) : code;
        out[i] = static_cast<std::uint8_t>(v);
    }
}

void memcpy_unpacked_bytes(benchmark::State& state) {
    buffers& b = data(dtype_enum::IntB4);
    for (auto _ : state) {
        std::memcpy(b.out.data(), b.values.data(), count);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count));
}
BENCHMARK(memcpy_unpacked_bytes)->Unit(benchmark::kMillisecond)->UseRealTime();

template <dtype_enum Id>
void pack(benchmark::State& state) {
    buffers& b = data(Id);
    for (auto _ : state) {
        npb::pack_fresh(Id, b.values.data(), {count, 0}, b.packed.data(), npb::lowbit_layout::compact);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count));
}

template <dtype_enum Id>
void pack_into_existing(benchmark::State& state) {
    buffers& b = data(Id);
    for (auto _ : state) {
        npb::pack(Id, b.values.data(), {count, 0}, b.packed.data(), npb::lowbit_layout::compact);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count));
}

template <dtype_enum Id>
void unpack(benchmark::State& state) {
    buffers& b = data(Id);
    for (auto _ : state) {
        npb::unpack(Id, b.packed.data(), {count, 0}, b.out.data(), npb::lowbit_layout::compact);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count));
}

template <dtype_enum Id>
void pack_per_element(benchmark::State& state) {
    buffers& b = data(Id);
    for (auto _ : state) {
        reference_pack(Id, b.values.data(), b.packed.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count));
}

template <dtype_enum Id>
void unpack_per_element(benchmark::State& state) {
    buffers& b = data(Id);
    for (auto _ : state) {
        reference_unpack(Id, b.packed.data(), b.out.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count));
}

#define NPYBRIDGE_LOWBIT_BENCH(fn, id) \
    BENCHMARK_TEMPLATE(fn, dtype_enum::id)->Name(#fn "/" #id)->Unit(benchmark::kMillisecond)->UseRealTime()
NPYBRIDGE_LOWBIT_BENCH(pack, IntB1);
NPYBRIDGE_LOWBIT_BENCH(pack, IntB2);
NPYBRIDGE_LOWBIT_BENCH(pack, IntB4);
NPYBRIDGE_LOWBIT_BENCH(pack, QuantizedS4);
NPYBRIDGE_LOWBIT_BENCH(pack_into_existing, IntB4);
NPYBRIDGE_LOWBIT_BENCH(unpack, IntB1);
NPYBRIDGE_LOWBIT_BENCH(unpack, IntB2);
NPYBRIDGE_LOWBIT_BENCH(unpack, IntB4);
NPYBRIDGE_LOWBIT_BENCH(unpack, QuantizedS4);
NPYBRIDGE_LOWBIT_BENCH(pack_per_element, IntB1);
NPYBRIDGE_LOWBIT_BENCH(pack_per_element, IntB2);
NPYBRIDGE_LOWBIT_BENCH(pack_per_element, IntB4);
NPYBRIDGE_LOWBIT_BENCH(unpack_per_element, IntB1);
NPYBRIDGE_LOWBIT_BENCH(unpack_per_element, IntB2);
NPYBRIDGE_LOWBIT_BENCH(unpack_per_element, IntB4);
#undef NPYBRIDGE_LOWBIT_BENCH

}  // namespace

BENCHMARK_MAIN();
