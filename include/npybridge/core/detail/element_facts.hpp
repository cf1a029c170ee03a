// npybridge/core/detail/element_facts.hpp — each C++ element kind and its names in C++, NumPy and PEP 3118.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/scalar_types.hpp>

#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <type_traits>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Fixed-capacity string for names computed at compile time, stored in the table.
struct short_name {
    std::array<char, 16> chars{};
    std::size_t size = 0;
    constexpr std::string_view view() const noexcept { return {chars.data(), size}; }
};

constexpr short_name make_short_name(std::string_view text, bool lowercase = false) {
    short_name out{};
    for (char c : text) {
        out.chars[out.size++] = (lowercase && c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
    return out;
}

/// What kind of number a C++ element type is; with sizeof, everything else derives from it.
enum class scalar_kind : std::uint8_t {
    none,
    boolean,
    signed_int,
    unsigned_int,
    floating,
    complex,
    half,
    bfloat16,
    byte
};

template <class T>
constexpr scalar_kind scalar_kind_of() noexcept {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, bool>) {
        return scalar_kind::boolean;
    } else if constexpr (std::is_same_v<U, half>) {
        return scalar_kind::half;
    } else if constexpr (std::is_same_v<U, bfloat16>) {
        return scalar_kind::bfloat16;
    } else if constexpr (std::is_same_v<U, std::byte>) {
        return scalar_kind::byte;
    } else if constexpr (std::is_same_v<U, std::complex<float>> || std::is_same_v<U, std::complex<double>>) {
        return scalar_kind::complex;
    } else if constexpr (std::is_same_v<U, wchar_t> || std::is_same_v<U, char16_t> || std::is_same_v<U, char32_t>) {
        return scalar_kind::none;  // characters, not numbers
    } else if constexpr (std::is_floating_point_v<U>) {
        return scalar_kind::floating;
    } else if constexpr (std::is_integral_v<U>) {
        return std::is_signed_v<U> ? scalar_kind::signed_int : scalar_kind::unsigned_int;
    } else {
        return scalar_kind::none;
    }
}

/// A (kind, size)'s names in C++, NumPy and PEP 3118: the one place every per-kind fact lives.
struct element_facts {
    scalar_kind kind;
    std::size_t size;
    std::string_view cpp_name;    ///< the table's `storage`
    std::string_view numpy_name;  ///< empty: NumPy has none
    char numpy_kind;              ///< 0: no built-in
    const char* buffer_format;    ///< nullptr where a reader would misread it
};

inline constexpr element_facts element_table[] = {
    {scalar_kind::boolean, 1, "bool", "bool", 'b', "?"},
    {scalar_kind::signed_int, 1, "int8", "int8", 'i', "b"},
    {scalar_kind::signed_int, 2, "int16", "int16", 'i', "h"},
    {scalar_kind::signed_int, 4, "int32", "int32", 'i', "i"},
    {scalar_kind::signed_int, 8, "int64", "int64", 'i', "q"},
    {scalar_kind::unsigned_int, 1, "uint8", "uint8", 'u', "B"},
    {scalar_kind::unsigned_int, 2, "uint16", "uint16", 'u', "H"},
    {scalar_kind::unsigned_int, 4, "uint32", "uint32", 'u', "I"},
    {scalar_kind::unsigned_int, 8, "uint64", "uint64", 'u', "Q"},
    {scalar_kind::half, 2, "half", "float16", 'f', "e"},
    {scalar_kind::floating, 4, "float", "float32", 'f', "f"},
    {scalar_kind::floating, 8, "double", "float64", 'f', "d"},
    {scalar_kind::complex, 8, "complex<float>", "complex64", 'c', "Zf"},
    {scalar_kind::complex, 16, "complex<double>", "complex128", 'c', "Zd"},
    {scalar_kind::bfloat16, 2, "bfloat16", "", 0, nullptr},  // PEP 3118 has no code
    {scalar_kind::byte, 1, "byte", "", 0, "B"},
};

/// The facts of Element (a compile error when none).
template <class Element>
constexpr const element_facts& facts_of() noexcept {
    constexpr scalar_kind kind = scalar_kind_of<Element>();
    constexpr std::size_t row = [] {
        std::size_t i = 0;
        while (i < std::size(element_table) &&
               !(element_table[i].kind == kind && element_table[i].size == sizeof(Element)))
            ++i;
        return i;
    }();
    static_assert(row < std::size(element_table), "npybridge: this element type has no row in detail::element_table");
    return element_table[row];
}

/// The facts of the element the table calls `cpp_name`, or nullptr.
constexpr const element_facts* facts_named(std::string_view cpp_name) noexcept {
    for (const element_facts& facts : element_table) {
        if (facts.cpp_name == cpp_name) return &facts;
    }
    return nullptr;
}

}  // namespace detail
}  // namespace npybridge
