// detail::maybe and detail::byte_buffer (core/detail/lean_types.hpp): std::optional's and a byte array's semantics.
#include <catch2/catch.hpp>

#include <npybridge/core/detail/lean_types.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace {

using npybridge::detail::byte_buffer;
using npybridge::detail::maybe;

/// Counts the live copies of itself, so a leak or a double destruction shows.
struct counted {
    static inline int alive = 0;
    std::string text;
    explicit counted(std::string t) : text(std::move(t)) { ++alive; }
    counted(const counted& other) : text(other.text) { ++alive; }
    counted& operator=(const counted&) = default;
    ~counted() { --alive; }
};

}  // namespace

TEST_CASE("maybe holds a value or none, as std::optional does", "[lean_types]") {
    const maybe<int> none;
    CHECK_FALSE(none);
    CHECK(none.value_or(7) == 7);
    const maybe<int> from_nullopt = std::nullopt;
    CHECK_FALSE(from_nullopt);

    maybe<int> some = 3;
    REQUIRE(some);
    CHECK(*some == 3);
    CHECK(some.value_or(7) == 3);
    *some = 4;
    CHECK(*some == 4);
    some.reset();
    CHECK_FALSE(some);
}

TEST_CASE("maybe constructs, copies and destroys a non-trivial value exactly once each", "[lean_types]") {
    REQUIRE(counted::alive == 0);
    {
        maybe<counted> a = counted("first");
        CHECK(counted::alive == 1);
        CHECK(a->text == "first");
        maybe<counted> b = a;
        CHECK(counted::alive == 2);
        maybe<counted> c;
        c = b;
        CHECK(counted::alive == 3);
        CHECK(c->text == "first");
        c = maybe<counted>();
        CHECK_FALSE(c);
        CHECK(counted::alive == 2);
        const maybe<counted>& same = b;
        b = same;  // self-assignment keeps the value
        REQUIRE(b);
        CHECK(b->text == "first");
        a.reset();
        CHECK(counted::alive == 1);
    }
    CHECK(counted::alive == 0);
}

TEST_CASE("byte_buffer owns its bytes and moves them", "[lean_types]") {
    const byte_buffer empty;
    CHECK(empty.get() == nullptr);

    byte_buffer a(16);
    REQUIRE(a.get() != nullptr);
    std::memset(a.get(), 0xab, 16);
    unsigned char* bytes = a.get();
    byte_buffer b(std::move(a));
    CHECK(b.get() == bytes);
    CHECK(a.get() == nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    a = byte_buffer(4);         // the old (empty) buffer is released, the new one owned
    CHECK(a.get() != nullptr);
    b = std::move(a);  // the two swap: a frees the 16 bytes when it goes
    CHECK(b.get() != bytes);
}
