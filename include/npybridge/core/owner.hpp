// npybridge/core/owner.hpp — owner handles: what keeps borrowed or shared memory alive, from any thread.
#pragma once

#include <npybridge/core/config.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// What an owner handle points at: a count and the function freeing what the block keeps alive at zero. Derive for a
/// new kind of owner.
struct owner_block {
    explicit owner_block(void (*on_last_release)(owner_block*) noexcept) noexcept : release(on_last_release) {}
    std::atomic<std::size_t> references{1};
    void (*const release)(owner_block*) noexcept;
    /// Read-only memory; set before the block is shared.
    bool read_only = false;
};

/// Keeps borrowed memory alive while a copy lives; thread-safe. Any std::shared_ptr converts to one; shared() gives one
/// back.
class owner_handle {
public:
    owner_handle() noexcept = default;
    owner_handle(std::nullptr_t) noexcept {}  // NOLINT: implicit, like shared_ptr's

    /// Takes over a block already counting this reference.
    static owner_handle adopt(owner_block* block) noexcept;

    /// Keeps `kept` alive (a shared() pointer gives back its owner).
    template <class T>
    owner_handle(std::shared_ptr<T> kept);  // NOLINT: implicit on purpose

    owner_handle(const owner_handle& other) noexcept;
    owner_handle(owner_handle&& other) noexcept : m_block(std::exchange(other.m_block, nullptr)) {}
    owner_handle& operator=(owner_handle other) noexcept;
    ~owner_handle();

    /// Empties the handle, releasing its reference.
    void reset() noexcept;

    explicit operator bool() const noexcept { return m_block != nullptr; }
    /// The block (nullptr when empty).
    owner_block* get() const noexcept { return m_block; }
    /// Whether the memory must not be written.
    bool read_only() const noexcept { return m_block != nullptr && m_block->read_only; }
    /// Handles sharing the block (0 when empty); a snapshot.
    std::size_t use_count() const noexcept { return m_block ? m_block->references.load(std::memory_order_relaxed) : 0; }

    /// A shared_ptr to `pointer` keeping this owner alive.
    template <class T>
    std::shared_ptr<T> shared(T* pointer) const&;
    /// The same, moving this owner in.
    template <class T>
    std::shared_ptr<T> shared(T* pointer) &&;

    /// Gives up the reference unreleased (pair with adopt()).
    owner_block* detach() noexcept { return std::exchange(m_block, nullptr); }

private:
    struct keeper;  // shared()'s deleter

    static void drop(owner_block* block) noexcept;
    struct shared_block;  // what a std::shared_ptr becomes

    owner_block* m_block = nullptr;
};

/// Example: memory kept alive by a std::shared_ptr, handed back out as one.
/// ```cpp
/// #include <npybridge/core/owner.hpp>
///
/// #include <vector>
///
/// std::shared_ptr<float> first_of(std::shared_ptr<std::vector<float>> values) {
///     npybridge::owner_handle owner = values;  // keeps the vector alive, from any thread
///     return std::move(owner).shared(values->data());
/// }
/// ```

// ---- Definitions

inline owner_handle owner_handle::adopt(owner_block* block) noexcept {
    owner_handle handle;
    handle.m_block = block;
    return handle;
}

inline owner_handle::owner_handle(const owner_handle& other) noexcept : m_block(other.m_block) {
    if (m_block) m_block->references.fetch_add(1, std::memory_order_relaxed);
}

inline owner_handle& owner_handle::operator=(owner_handle other) noexcept {
    std::swap(m_block, other.m_block);
    return *this;
}

inline owner_handle::~owner_handle() {
    if (m_block != nullptr) drop(m_block);
}

inline void owner_handle::reset() noexcept {
    if (m_block != nullptr) drop(std::exchange(m_block, nullptr));
}

inline void owner_handle::drop(owner_block* block) noexcept {
    // A count of one is this handle alone: no atomic read-modify-write needed.
    if (block->references.load(std::memory_order_acquire) == 1 ||
        block->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        block->release(block);
    }
}

struct owner_handle::shared_block : owner_block {
    explicit shared_block(std::shared_ptr<const void> held) noexcept
        : owner_block([](owner_block* self) noexcept { delete static_cast<shared_block*>(self); }),
          kept(std::move(held)) {}
    std::shared_ptr<const void> kept;
};

/// shared()'s deleter: holds the owner.
struct owner_handle::keeper {
    owner_handle owner;
    void operator()(const void*) const noexcept {}
};

template <class T>
std::shared_ptr<T> owner_handle::shared(T* pointer) const& {
    return std::shared_ptr<T>(pointer, keeper{*this});
}

template <class T>
std::shared_ptr<T> owner_handle::shared(T* pointer) && {
    return std::shared_ptr<T>(pointer, keeper{std::move(*this)});
}

template <class T>
owner_handle::owner_handle(std::shared_ptr<T> kept) {
    if (!kept) return;
#if defined(__cpp_rtti) || defined(__GXX_RTTI)
    if (const keeper* inner = std::get_deleter<keeper>(kept)) {
        *this = inner->owner;
        return;
    }
#endif
    m_block = new shared_block(std::shared_ptr<const void>(std::move(kept)));
}

}  // namespace npybridge
