// npybridge/core/detail/tensor_storage.hpp — npybridge::tensor's memory: owner block and storage in one allocation.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/owner.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Owner block and storage in one allocation, storage 64-byte aligned (plain new: aligned new is a slow memalign).
/// Large buffers ask for huge pages (2 MiB aligned past glibc's mmap threshold).
struct storage_block : owner_block {
    using owner_block::owner_block;
};
inline constexpr std::size_t storage_alignment = 64;

inline void* allocate_large(std::size_t total) {
    constexpr std::size_t huge = std::size_t{2} << 20;
    const bool mapped = total >= (std::size_t{32} << 20);
    const std::size_t rounded = mapped ? (total + huge - 1) / huge * huge : total;
    void* memory = mapped ? std::aligned_alloc(huge, rounded) : std::malloc(total);
    if (memory == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr std::uintptr_t page = 4096;
    const auto first = (reinterpret_cast<std::uintptr_t>(memory) + page - 1) & ~(page - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(memory) + rounded;
    madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);  // advice only
#endif
    return memory;
}

/// `bytes` of storage at `data`, owned by the returned handle.
inline owner_handle allocate_storage(std::size_t bytes, void*& data) {
    const std::size_t total = sizeof(storage_block) + storage_alignment + (bytes > 0 ? bytes : 1);
    void* memory;
    void (*release)(owner_block*) noexcept;
    if (total < NPYBRIDGE_HUGE_PAGE_BYTES) {
        memory = ::operator new(total);
        release = [](owner_block* self) noexcept {
            static_cast<storage_block*>(self)->~storage_block();
            ::operator delete(static_cast<void*>(self));
        };
    } else {
        memory = allocate_large(total);
        release = [](owner_block* self) noexcept {
            static_cast<storage_block*>(self)->~storage_block();
            std::free(self);
        };
    }
    const auto after_block = reinterpret_cast<std::uintptr_t>(memory) + sizeof(storage_block);
    data = reinterpret_cast<void*>((after_block + storage_alignment - 1) / storage_alignment * storage_alignment);
    return owner_handle::adopt(new (memory) storage_block(release));
}

}  // namespace detail
}  // namespace npybridge
