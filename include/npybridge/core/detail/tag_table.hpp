// npybridge/core/detail/tag_table.hpp — the origin tracker's table: keys to tags, without <unordered_map>'s parse time.
#pragma once

#include <npybridge/core/config.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Open addressing, linear probing, at most half full; erase shifts the run back. Hashes are mixed (a pointer's
/// std::hash is its address) and kept: Hash and == run before any change, so what they throw changes nothing.
template <class Key, class Value, class Hash>
class tag_table {
public:
    std::size_t size() const noexcept { return m_size; }

    /// The value of `key`, or nullptr.
    Value* find(const Key& key) {
        if (m_size == 0) return nullptr;
        const std::size_t at = lookup(key, mixed(key));
        return m_slots[at] ? &m_slots[at]->value : nullptr;
    }
    const Value* find(const Key& key) const { return const_cast<tag_table*>(this)->find(key); }

    /// The value of `key`; whether `value` was inserted.
    std::pair<Value*, bool> try_emplace(const Key& key, const Value& value) {
        const std::uint64_t hash = mixed(key);
        if (m_size != 0) {
            const std::size_t at = lookup(key, hash);
            if (m_slots[at]) return {&m_slots[at]->value, false};
        }
        if (2 * (m_size + 1) > m_slots.size()) regrow(m_slots.empty() ? 16 : 2 * m_slots.size());
        std::size_t at = home(hash);
        while (m_slots[at]) at = next(at);
        m_slots[at].emplace(entry{key, value, hash});
        ++m_size;
        return {&m_slots[at]->value, true};
    }

    /// Removes `key`; false if it was not there.
    bool erase(const Key& key) {
        if (m_size == 0) return false;
        std::size_t hole = lookup(key, mixed(key));
        if (!m_slots[hole]) return false;
        m_slots[hole].reset();
        --m_size;
        for (std::size_t i = next(hole); m_slots[i]; i = next(i)) {
            const std::size_t want = home(m_slots[i]->hash);
            const bool stays = hole < i ? (hole < want && want <= i) : (hole < want || want <= i);
            if (stays) continue;
            m_slots[hole] = std::move(m_slots[i]);
            m_slots[i].reset();
            hole = i;
        }
        return true;
    }

    /// visit(key, value) for each entry until one returns nonzero: that value, else 0.
    template <class F>
    int for_each(F&& visit) const {
        for (const auto& slot : m_slots) {
            if (!slot) continue;
            if (const int stop = visit(slot->key, slot->value)) return stop;
        }
        return 0;
    }

    /// Empties the table into the returned one.
    tag_table take() noexcept {
        tag_table taken;
        std::swap(taken.m_slots, m_slots);
        std::swap(taken.m_size, m_size);
        return taken;
    }

private:
    struct entry {
        Key key;
        Value value;
        std::uint64_t hash;  // mixed
    };

    std::uint64_t mixed(const Key& key) const {
        return static_cast<std::uint64_t>(m_hash(key)) * 0x9E3779B97F4A7C15u;  // Fibonacci hashing
    }
    std::size_t home(std::uint64_t hash) const noexcept {
        return static_cast<std::size_t>(hash >> 32) & (m_slots.size() - 1);
    }
    /// The slot holding `key`, else the empty slot that ends its run.
    std::size_t lookup(const Key& key, std::uint64_t hash) const {
        std::size_t i = home(hash);
        while (m_slots[i] && !(m_slots[i]->hash == hash && m_slots[i]->key == key)) i = next(i);
        return i;
    }
    std::size_t next(std::size_t i) const noexcept { return (i + 1) & (m_slots.size() - 1); }

    void regrow(std::size_t slots) {
        std::vector<std::optional<entry>> old(slots);
        std::swap(old, m_slots);
        for (auto& slot : old) {
            if (!slot) continue;
            std::size_t at = home(slot->hash);
            while (m_slots[at]) at = next(at);
            m_slots[at] = std::move(slot);
        }
    }

    std::vector<std::optional<entry>> m_slots;  // a power of two long, or empty
    std::size_t m_size = 0;
    Hash m_hash;
};

}  // namespace detail
}  // namespace npybridge
