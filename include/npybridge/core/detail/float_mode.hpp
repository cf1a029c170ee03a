// npybridge/core/detail/float_mode.hpp — IEEE 754 arithmetic for conversions, whatever the thread's FPU mode.
#pragma once

#include <npybridge/core/config.hpp>

#include <cstdint>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// While it lives, the thread computes subnormals as IEEE 754 says: FTZ and DAZ (`import megengine` sets them) are
/// cleared, then restored. One register read when neither is set.
class ieee_float_mode {
public:
    ieee_float_mode() noexcept : saved_(read()) {
        if ((saved_ & flush_bits) != 0) write(saved_ & ~flush_bits);
    }
    ~ieee_float_mode() {
        if ((saved_ & flush_bits) != 0) write(saved_);
    }
    ieee_float_mode(const ieee_float_mode&) = delete;
    ieee_float_mode& operator=(const ieee_float_mode&) = delete;

private:
#if (defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))) && (defined(__GNUC__) || defined(__clang__))
    using word = unsigned;
    static constexpr word flush_bits = 0x8040u;  // FTZ (bit 15) and DAZ (bit 6)
    static word read() noexcept { return __builtin_ia32_stmxcsr(); }
    static void write(word mode) noexcept { __builtin_ia32_ldmxcsr(mode); }
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
    using word = std::uint64_t;
    static constexpr word flush_bits = (word{1} << 24) | (word{1} << 19);  // FZ, FZ16
    static word read() noexcept {
        word mode;
        __asm__ __volatile__("mrs %0, fpcr" : "=r"(mode));
        return mode;
    }
    static void write(word mode) noexcept { __asm__ __volatile__("msr fpcr, %0" : : "r"(mode)); }
#else
    using word = unsigned;  // no flush modes known here
    static constexpr word flush_bits = 0;
    static word read() noexcept { return 0; }
    static void write(word) noexcept {}
#endif
    word saved_;
};

}  // namespace detail
}  // namespace npybridge
