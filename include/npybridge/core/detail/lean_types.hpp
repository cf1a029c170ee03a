// npybridge/core/detail/lean_types.hpp — std::optional's and unique_ptr<unsigned char[]>'s jobs, lighter to parse.
#pragma once

#include <npybridge/core/config.hpp>

#include <cstddef>
#include <new>
#include <optional>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// A value or none for npybridge's own types: std::optional<T> brings layered bases and constrained members into
/// every unit, maybe<T> one union and a flag (docs/performance.md has the cost). Public API keeps std::optional.
template <class T>
class maybe {
public:
    maybe() noexcept {}
    maybe(std::nullopt_t) noexcept {}                                     // NOLINT: implicit, as std::optional's
    maybe(T value) : m_has(true) { new (&m_value) T(std::move(value)); }  // NOLINT: implicit, as std::optional's
    maybe(const maybe& other) : m_has(other.m_has) {
        if (m_has) new (&m_value) T(other.m_value);
    }
    maybe& operator=(const maybe& other) {
        if (this != &other) {
            reset();
            if (other.m_has) new (&m_value) T(other.m_value);
            m_has = other.m_has;
        }
        return *this;
    }
    ~maybe() { reset(); }

    explicit operator bool() const noexcept { return m_has; }
    T& operator*() noexcept { return m_value; }
    const T& operator*() const noexcept { return m_value; }
    T* operator->() noexcept { return &m_value; }
    const T* operator->() const noexcept { return &m_value; }
    T value_or(T other) const { return m_has ? m_value : other; }

    void reset() noexcept {
        if (m_has) m_value.~T();
        m_has = false;
    }

private:
    union {
        T m_value;
    };
    bool m_has = false;
};

/// Uninitialized bytes owned for a while (a copy, a staging area): one class, where each unique_ptr or vector
/// specialization is parsed with all its members.
class byte_buffer {
public:
    byte_buffer() noexcept = default;
    explicit byte_buffer(std::size_t bytes) : m_data(new unsigned char[bytes]) {}
    byte_buffer(byte_buffer&& other) noexcept : m_data(other.m_data) { other.m_data = nullptr; }
    byte_buffer& operator=(byte_buffer&& other) noexcept {
        std::swap(m_data, other.m_data);
        return *this;
    }
    ~byte_buffer() { delete[] m_data; }

    unsigned char* get() const noexcept { return m_data; }

private:
    unsigned char* m_data = nullptr;
};

}  // namespace detail
}  // namespace npybridge
