// npybridge/tensor.hpp — the tensor customization point (adapter) and npybridge's reference tensor type.
#pragma once

#include <npybridge/config.hpp>
#include <npybridge/errors.hpp>
#include <npybridge/lowbit.hpp>
#include <npybridge/quantization.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// Numbers as Python writes a tuple: "()", "(3,)", "(2, 3)" (shapes, strides and indices in messages).
template <class Number>
std::string tuple_text(const Number* values, std::size_t count) {
    std::string text = "(";
    for (std::size_t i = 0; i < count; ++i) text += (i ? ", " : "") + std::to_string(values[i]);
    return text + (count == 1 ? ",)" : ")");
}

/// Shape and element strides of a tensor, up to NPYBRIDGE_MAX_NDIM dimensions.
/// (The adapter of another tensor type fills one of these from its own.)
struct tensor_layout {
    std::size_t ndim = 0;
    // Only the first ndim entries mean anything. Left uninitialized on
    // purpose: zeroing 112 bytes per conversion showed up in profiles.
    std::array<std::size_t, NPYBRIDGE_MAX_NDIM> shape;
    std::array<std::ptrdiff_t, NPYBRIDGE_MAX_NDIM> strides;  ///< in elements

    tensor_layout() noexcept = default;
    // Copies move the first ndim entries one at a time: a layout is usually
    // copied right after it was filled, and wide copies of the whole arrays
    // stall on those fresh narrow stores (store-to-load forwarding).
    tensor_layout(const tensor_layout& other) noexcept { *this = other; }
    tensor_layout& operator=(const tensor_layout& other) noexcept {
        ndim = other.ndim;
        for (std::size_t i = 0; i < other.ndim; ++i) {
            shape[i] = other.shape[i];
            strides[i] = other.strides[i];
#if defined(__GNUC__)
            __asm__("" : "+r"(i));  // keeps GCC from making this loop two memcpy calls
#endif
        }
        return *this;
    }

    std::size_t count() const noexcept {
        std::size_t n = 1;
        for (std::size_t i = 0; i < ndim; ++i) n *= shape[i];
        return n;
    }
    std::size_t innermost() const noexcept { return ndim == 0 ? 1 : shape[ndim - 1]; }

    /// C-contiguous, ignoring the strides of size-1 dimensions; a layout
    /// without elements is contiguous whatever its strides (as in NumPy).
    bool is_contiguous() const noexcept {
        std::ptrdiff_t expected = 1;
        for (std::size_t i = ndim; i-- > 0;) {
            if (shape[i] == 1) continue;
            if (strides[i] != expected) return count() == 0;
            expected *= static_cast<std::ptrdiff_t>(shape[i]);
        }
        return true;
    }

    /// Most elements a layout may span: even at 16 bytes an element (the
    /// widest dtype) their bytes fit a ptrdiff_t, so no size derived from a
    /// checked layout (bytes, packed bytes, strides, offsets) can overflow.
    static constexpr std::size_t max_count = static_cast<std::size_t>(PTRDIFF_MAX) / 16;

    /// The number of elements of `shape`, checked: throws conversion_error
    /// when the extents (zero extents counted as 1, as strides count them)
    /// multiply past max_count.
    static std::size_t checked_count(const std::size_t* shape, std::size_t ndim) {
        std::size_t span = 1, count = 1;
        for (std::size_t i = 0; i < ndim; ++i) {
            const std::size_t extent = shape[i] == 0 ? 1 : shape[i];
            if (span > max_count / extent) {
                throw conversion_error("tensor_layout: shape " + tuple_text(shape, ndim) +
                                       " spans more elements than memory can hold (at most " + std::to_string(max_count) + ")");
            }
            span *= extent;
            count *= shape[i];
        }
        return count;
    }

    /// A C-contiguous layout of this shape (checked_count's limit applies).
    static tensor_layout contiguous(const std::size_t* shape, std::size_t ndim) {
        if (ndim > NPYBRIDGE_MAX_NDIM) {
            throw conversion_error("tensor_layout: " + std::to_string(ndim) + " dimensions, at most " +
                                   std::to_string(NPYBRIDGE_MAX_NDIM) + " (NPYBRIDGE_MAX_NDIM)");
        }
        checked_count(shape, ndim);
        tensor_layout layout;
        layout.ndim = ndim;
        std::ptrdiff_t stride = 1;
        for (std::size_t i = ndim; i-- > 0;) {
            layout.shape[i] = shape[i];
            layout.strides[i] = stride;
            stride *= static_cast<std::ptrdiff_t>(shape[i] == 0 ? 1 : shape[i]);
        }
        return layout;
    }

    std::string shape_text() const { return tuple_text(shape.data(), ndim); }

    /// The elements a layout reaches, relative to element 0: `low` is the
    /// offset of the lowest one (0 unless a stride is negative), `high` one
    /// past the highest. A tensor type that keeps a storage start and an
    /// offset (MegBrain's) borrows negative strides with these.
    struct element_span {
        std::ptrdiff_t low = 0;
        std::ptrdiff_t high = 0;
    };
    element_span span() const noexcept {
        if (count() == 0) return {0, 0};
        element_span reach{0, 1};
        for (std::size_t i = 0; i < ndim; ++i) {
            const std::ptrdiff_t last = static_cast<std::ptrdiff_t>(shape[i] - 1) * strides[i];
            (last < 0 ? reach.low : reach.high) += last;
        }
        return reach;
    }

    /// The layout a packed tensor of this shape has when its innermost rows
    /// start on whole bytes (lowbit_layout::row_aligned), with MegBrain's
    /// padded element strides: a (2, 3) QuantizedS4 tensor has strides (4, 1).
    static tensor_layout row_aligned(dtype_enum id, const std::size_t* shape, std::size_t ndim) {
        tensor_layout layout = contiguous(shape, ndim);
        if (ndim == 0) return layout;
        const std::size_t per_byte = 8 / info(id).bits;
        std::ptrdiff_t stride = static_cast<std::ptrdiff_t>((shape[ndim - 1] + per_byte - 1) / per_byte * per_byte);
        for (std::size_t i = ndim - 1; i-- > 0;) {
            layout.strides[i] = stride;
            stride *= static_cast<std::ptrdiff_t>(shape[i] == 0 ? 1 : shape[i]);
        }
        return layout;
    }

    /// Whether a packed tensor's elements fill its bytes in order: C-contiguous,
    /// or, in a row-aligned layout, contiguous rows at MegBrain's padded strides.
    /// Anything else (a sub-tensor) is read element by element from its strides.
    bool is_dense_packed(dtype_enum id, lowbit_layout packing) const {
        if (is_contiguous()) return true;
        if (packing != lowbit_layout::row_aligned || ndim == 0) return false;
        const tensor_layout padded = row_aligned(id, shape.data(), ndim);
        for (std::size_t i = 0; i < ndim; ++i) {
            if (shape[i] != 1 && strides[i] != padded.strides[i]) return false;
        }
        return true;
    }
};

/// What an owner handle points at: a reference count and the function that
/// frees whatever the block keeps alive once the count reaches zero. Derive
/// from it to make a new kind of owner (convert.hpp's Python reference,
/// tensor::empty's storage); `release` may run on any thread.
struct owner_block {
    explicit owner_block(void (*on_last_release)(owner_block*) noexcept) noexcept : release(on_last_release) {}
    std::atomic<std::size_t> references{1};
    void (*const release)(owner_block*) noexcept;
    /// The memory is read-only (a read-only array or DLPack tensor was
    /// borrowed): set before the block is shared, so that a tensor type with
    /// no read-only flag of its own (MegBrain's) never hands it back writable.
    bool read_only = false;
};

/// Keeps borrowed memory alive: a tensor that borrows holds one of these, and
/// the memory stays valid while any copy lives. Copies and releases are safe
/// from any thread (an atomic count, like std::shared_ptr's). One pointer
/// wide, and a sole owner is released without an atomic read-modify-write.
/// Any std::shared_ptr converts to one (the handle then keeps a copy), and
/// shared() hands one to tensor types that hold their storage in a shared_ptr.
class owner_handle {
public:
    owner_handle() noexcept = default;
    owner_handle(std::nullptr_t) noexcept {}  // NOLINT: implicit, like shared_ptr's

    /// Takes over a block whose count already holds this handle's reference.
    static owner_handle adopt(owner_block* block) noexcept {
        owner_handle handle;
        handle.m_block = block;
        return handle;
    }

    /// Keeps `kept` alive (one allocation for the block holding it). A
    /// shared_ptr that shared() made gives back the owner it keeps, so an owner
    /// that went through a tensor type's shared_ptr storage is the same owner
    /// again (an array a tensor borrowed is the base of the array it shares back).
    template <class T>
    owner_handle(std::shared_ptr<T> kept);  // NOLINT: implicit on purpose, any shared_ptr is an owner

    owner_handle(const owner_handle& other) noexcept : m_block(other.m_block) {
        if (m_block) m_block->references.fetch_add(1, std::memory_order_relaxed);
    }
    owner_handle(owner_handle&& other) noexcept : m_block(std::exchange(other.m_block, nullptr)) {}
    owner_handle& operator=(owner_handle other) noexcept {
        std::swap(m_block, other.m_block);
        return *this;
    }
    ~owner_handle() {
        if (m_block != nullptr) drop(m_block);
    }

    void reset() noexcept {
        if (m_block != nullptr) drop(std::exchange(m_block, nullptr));
    }

    explicit operator bool() const noexcept { return m_block != nullptr; }
    /// The block (nullptr when empty), to recognise a kind of owner by its `release`.
    owner_block* get() const noexcept { return m_block; }
    /// Whether the memory this owner keeps alive must not be written (owner_block::read_only).
    bool read_only() const noexcept { return m_block != nullptr && m_block->read_only; }
    /// Handles sharing this one's block (0 when empty); a snapshot, for tests.
    std::size_t use_count() const noexcept { return m_block ? m_block->references.load(std::memory_order_relaxed) : 0; }

    /// A shared_ptr to `pointer` that keeps this owner alive (for tensor types
    /// whose storage is a shared_ptr; one control block per call).
    template <class T>
    std::shared_ptr<T> shared(T* pointer) const;

    /// Gives up the reference without releasing it (pair with adopt()).
    owner_block* detach() noexcept { return std::exchange(m_block, nullptr); }

private:
    struct keeper;  // shared()'s deleter (below)

    static void drop(owner_block* block) noexcept {
        // A count of one is this handle alone: nobody else can copy it
        // meanwhile, so the decrement needs no atomic read-modify-write.
        if (block->references.load(std::memory_order_acquire) == 1 ||
            block->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            block->release(block);
        }
    }

    struct shared_block : owner_block {
        explicit shared_block(std::shared_ptr<const void> held) noexcept
            : owner_block([](owner_block* self) noexcept { delete static_cast<shared_block*>(self); }), kept(std::move(held)) {}
        std::shared_ptr<const void> kept;
    };

    owner_block* m_block = nullptr;
};

/// shared()'s deleter: holds the owner, frees nothing itself.
struct owner_handle::keeper {
    owner_handle owner;
    void operator()(const void*) const noexcept {}
};

template <class T>
std::shared_ptr<T> owner_handle::shared(T* pointer) const {
    return std::shared_ptr<T>(pointer, keeper{*this});
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

// ---------------------------------------------------------------------------
// The customization point. To make npybridge work with your tensor type T,
// specialize npybridge::tensor_adapter<T> (in your code, not in detail) with:
//
//   static constexpr std::size_t max_ndim;     // most dimensions T holds
//   static constexpr bool has_scalar;          // can T be 0-d? (else 0-d -> shape (1,))
//   static bool accepts_strides(const tensor_layout&);  // element strides T can describe (negative ones
//                                                       // only if T keeps an offset: see tensor_layout::span)
//   static npybridge::dtype dtype_of(const T&);
//   static tensor_layout layout_of(const T&);  // shape and element strides (packed dtypes: strides in
//                                              // elements, padded rows as MegBrain reports them)
//   static void* data(const T&);               // first element (packed: its byte, which it starts)
//   static bool writable(const T&);            // false if T knows its memory is read-only
//   static lowbit_layout packed_layout(const T&);  // only asked for packed dtypes
//   static owner_handle owner(const T&);       // keeps T's memory alive
//   static owner_handle take_owner(T&);        // optional: moves it out for to_array(std::move(t))
//   static T borrow(const dtype&, void* data, const tensor_layout&, bool writable, owner_handle);
//   static T make(const dtype&, const tensor_layout& contiguous, lowbit_layout);  // fresh, writable
//
// A tensor type whose memory has a place (MegBrain's comp nodes, a device)
// adds `using placement = ...;` and then takes it as the last argument of
// borrow and make; to_tensor and from_dlpack pass it through (default:
// `static placement default_placement()` when the adapter has one, else
// `placement{}`), and `static placement placement_of(const T&)` (optional)
// lets megengine_compat's copy_into make the copy where the destination is.
//
// make() may lay a packed tensor out row-aligned with padded strides
// (tensor_layout::row_aligned) or compact; npybridge reads layout_of() of the
// tensor it made and fills it accordingly.
// npybridge::tensor below is the reference implementation;
// tests/support/megbrain_like.hpp is a second one (7 dims, no 0-d, no negative
// strides, a placement) and npybridge/megbrain.hpp adapts MegBrain's own HostTensorND.
// ---------------------------------------------------------------------------
template <class Tensor>
struct tensor_adapter;

namespace detail {

template <class T, class = void>
struct is_complete : std::false_type {};
template <class T>
struct is_complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

template <class...>
inline constexpr bool always_false = false;

// One detector per member of the adapter contract: true when the member exists
// with a usable type (the checks of check_adapter name each one that is not).
#define NPYBRIDGE_ADAPTER_MEMBER(name, wanted, ...)                                                 \
    template <class A, class T, class = void>                                                       \
    struct adapter_##name : std::false_type {};                                                     \
    template <class A, class T>                                                                     \
    struct adapter_##name<A, T, std::void_t<decltype(__VA_ARGS__)>>                                 \
        : std::is_convertible<decltype(__VA_ARGS__), wanted> {};
NPYBRIDGE_ADAPTER_MEMBER(max_ndim, std::size_t, std::integral_constant<std::size_t, A::max_ndim>::value)
NPYBRIDGE_ADAPTER_MEMBER(has_scalar, bool, std::bool_constant<A::has_scalar>::value)
NPYBRIDGE_ADAPTER_MEMBER(accepts_strides, bool, A::accepts_strides(std::declval<const tensor_layout&>()))
NPYBRIDGE_ADAPTER_MEMBER(dtype_of, dtype, A::dtype_of(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(layout_of, tensor_layout, A::layout_of(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(data, void*, A::data(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(writable, bool, A::writable(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(packed_layout, lowbit_layout, A::packed_layout(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(owner, owner_handle, A::owner(std::declval<const T&>()))
NPYBRIDGE_ADAPTER_MEMBER(borrow, T,
                         A::borrow(std::declval<const dtype&>(), std::declval<void*>(), std::declval<const tensor_layout&>(),
                                   true, std::declval<owner_handle>()))
NPYBRIDGE_ADAPTER_MEMBER(make, T, A::make(std::declval<const dtype&>(), std::declval<const tensor_layout&>(), lowbit_layout{}))
NPYBRIDGE_ADAPTER_MEMBER(placed_borrow, T,
                         A::borrow(std::declval<const dtype&>(), std::declval<void*>(), std::declval<const tensor_layout&>(),
                                   true, std::declval<owner_handle>(), std::declval<const typename A::placement&>()))
NPYBRIDGE_ADAPTER_MEMBER(placed_make, T,
                         A::make(std::declval<const dtype&>(), std::declval<const tensor_layout&>(), lowbit_layout{},
                                 std::declval<const typename A::placement&>()))
NPYBRIDGE_ADAPTER_MEMBER(default_placement, typename A::placement, A::default_placement())
NPYBRIDGE_ADAPTER_MEMBER(placement_of, typename A::placement, A::placement_of(std::declval<const T&>()))
#undef NPYBRIDGE_ADAPTER_MEMBER

template <class A, class = void>
struct adapter_placement {
    using type = void;
};
template <class A>
struct adapter_placement<A, std::void_t<typename A::placement>> {
    using type = typename A::placement;
};

}  // namespace detail

/// What a tensor type without places takes as placement: nothing.
struct no_placement {
    friend constexpr bool operator==(no_placement, no_placement) noexcept { return true; }
};

/// The placement type of Tensor's adapter (no_placement when it declares none).
template <class Tensor>
using placement_t = std::conditional_t<std::is_void_v<typename detail::adapter_placement<tensor_adapter<Tensor>>::type>,
                                       no_placement, typename detail::adapter_placement<tensor_adapter<Tensor>>::type>;

/// Where new tensors of this type go unless told otherwise.
template <class Tensor>
placement_t<Tensor> default_placement() {
    using A = tensor_adapter<Tensor>;
    if constexpr (detail::adapter_default_placement<A, Tensor>::value) {
        return A::default_placement();
    } else {
        return placement_t<Tensor>{};
    }
}

/// Where a tensor is (default_placement() for a type that cannot say).
template <class Tensor>
placement_t<Tensor> placement_of(const Tensor& t) {
    using A = tensor_adapter<Tensor>;
    if constexpr (detail::adapter_placement_of<A, Tensor>::value) {
        return A::placement_of(t);
    } else {
        return default_placement<Tensor>();
    }
}

/// Whether a tensor's memory may be written: its adapter says so and its
/// owner does not know better (memory borrowed read-only stays read-only
/// through tensor types that cannot mark it).
template <class Tensor>
bool is_writable(const Tensor& t) {
    return tensor_adapter<Tensor>::writable(t) && !tensor_adapter<Tensor>::owner(t).read_only();
}

namespace detail {

template <class Tensor>
inline constexpr bool has_placement = !std::is_same_v<placement_t<Tensor>, no_placement>;

/// adapter::borrow with the placement when the adapter takes one.
template <class Tensor>
Tensor adapter_borrow_at(const dtype& type, void* data, const tensor_layout& layout, bool writable, owner_handle owner,
                         const placement_t<Tensor>& where) {
    using A = tensor_adapter<Tensor>;
    if constexpr (has_placement<Tensor>) {
        return A::borrow(type, data, layout, writable, std::move(owner), where);
    } else {
        return A::borrow(type, data, layout, writable, std::move(owner));
    }
}

/// adapter::make with the placement when the adapter takes one.
template <class Tensor>
Tensor adapter_make_at(const dtype& type, const tensor_layout& layout, lowbit_layout packing, const placement_t<Tensor>& where) {
    using A = tensor_adapter<Tensor>;
    if constexpr (has_placement<Tensor>) {
        return A::make(type, layout, packing, where);
    } else {
        return A::make(type, layout, packing);
    }
}

}  // namespace detail

/// Checks tensor_adapter<Tensor> against the contract above at compile time,
/// naming every missing or ill-typed member. Every conversion entry point
/// (to_tensor, to_array, copy_into, from_dlpack, to_dlpack, get_buffer) runs
/// it first; `static_assert(npybridge::check_adapter<MyTensor>())` beside an
/// adapter checks it where it is written.
template <class Tensor>
constexpr bool check_adapter() {
    using A = tensor_adapter<Tensor>;
    if constexpr (!detail::is_complete<A>::value) {
        static_assert(detail::always_false<Tensor>,
                      "npybridge: this tensor type has no tensor_adapter: specialize npybridge::tensor_adapter<T> "
                      "(the contract is in npybridge/tensor.hpp and docs/extending.md)");
        return false;
    } else {
        using namespace detail;
        static_assert(adapter_max_ndim<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static constexpr std::size_t max_ndim` (most dimensions T holds)");
        static_assert(adapter_has_scalar<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static constexpr bool has_scalar` (can T be 0-d?)");
        static_assert(adapter_accepts_strides<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static bool accepts_strides(const tensor_layout&)`");
        static_assert(adapter_dtype_of<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static npybridge::dtype dtype_of(const T&)`");
        static_assert(adapter_layout_of<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static tensor_layout layout_of(const T&)` (shape and element strides)");
        static_assert(adapter_data<A, Tensor>::value, "npybridge: tensor_adapter<T> needs `static void* data(const T&)`");
        static_assert(adapter_writable<A, Tensor>::value, "npybridge: tensor_adapter<T> needs `static bool writable(const T&)`");
        static_assert(adapter_packed_layout<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static lowbit_layout packed_layout(const T&)`");
        static_assert(adapter_owner<A, Tensor>::value,
                      "npybridge: tensor_adapter<T> needs `static owner_handle owner(const T&)` (keeps T's memory alive)");
        if constexpr (has_placement<Tensor>) {
            static_assert(adapter_placed_borrow<A, Tensor>::value,
                          "npybridge: tensor_adapter<T> declares a placement, so it needs `static T borrow(const dtype&, "
                          "void* data, const tensor_layout&, bool writable, owner_handle, const placement&)`");
            static_assert(adapter_placed_make<A, Tensor>::value,
                          "npybridge: tensor_adapter<T> declares a placement, so it needs `static T make(const dtype&, "
                          "const tensor_layout&, lowbit_layout, const placement&)`");
        } else {
            static_assert(adapter_borrow<A, Tensor>::value,
                          "npybridge: tensor_adapter<T> needs `static T borrow(const dtype&, void* data, const tensor_layout&, "
                          "bool writable, owner_handle)`");
            static_assert(adapter_make<A, Tensor>::value,
                          "npybridge: tensor_adapter<T> needs `static T make(const dtype&, const tensor_layout&, lowbit_layout)`");
        }
        return true;
    }
}

/// npybridge's own tensor: a dtype (with params), a layout in elements, and
/// memory shared through an owner handle. For users without a framework, and
/// for tests.
class tensor {
public:
    tensor() : m_dtype(dtype_enum::Float32) {}

    /// A fresh C-contiguous tensor whose contents are unspecified (conversions
    /// overwrite every byte; zeroing first would cost a pass over memory).
    /// Packed dtypes take packed_bytes() in `layout` (default: MegBrain's).
    static tensor empty(const dtype& type, const std::size_t* shape, std::size_t ndim,
                        std::optional<lowbit_layout> layout = std::nullopt) {
        const tensor_layout contiguous = tensor_layout::contiguous(shape, ndim);
        const lowbit_layout packing = layout.value_or(default_layout(type.id()));
        const std::size_t bytes = storage_bytes_for(type, contiguous, packing);
        void* data = nullptr;
        owner_handle owner = allocate(bytes, data);
        return tensor(type, contiguous, data, true, std::move(owner), packing);
    }

    /// A tensor over memory someone else owns; `owner` keeps it alive.
    static tensor borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable, owner_handle owner,
                         std::optional<lowbit_layout> packing = std::nullopt) {
        tensor result(type, layout, data, writable, std::move(owner), packing.value_or(default_layout(type.id())));
        result.m_borrowed = true;
        return result;
    }

    const dtype& type() const noexcept { return m_dtype; }
    const tensor_layout& layout() const noexcept { return m_layout; }
    std::size_t ndim() const noexcept { return m_layout.ndim; }
    std::size_t count() const noexcept { return m_layout.count(); }
    void* data() const noexcept { return m_data; }
    bool writable() const noexcept { return m_writable; }
    bool borrowed() const noexcept { return m_borrowed; }
    lowbit_layout packing() const noexcept { return m_packing; }
    const owner_handle& owner() const noexcept { return m_owner; }
    /// Moves the owner out and leaves this tensor empty (no data, 0-d): for
    /// handing the memory to someone else, as to_array(std::move(t)) does.
    owner_handle take_owner() noexcept {
        m_data = nullptr;
        m_layout.ndim = 0;
        m_borrowed = false;
        return std::move(m_owner);
    }

    /// Bytes of the raw storage of a contiguous tensor (packed for low-bit dtypes).
    std::size_t storage_bytes() const { return storage_bytes_for(m_dtype, m_layout, m_packing); }

    static std::size_t storage_bytes_for(const dtype& type, const tensor_layout& layout, lowbit_layout packing) {
        const dtype_info& entry = type.info();
        if (entry.is_packed) return packed_bytes(entry.id, layout.count(), layout.innermost(), packing);
        return layout.count() * entry.element_size;
    }

private:
    /// The owner block and the storage in one allocation: the block, then
    /// `bytes` from the first 64-byte boundary after it. Plain operator new
    /// (an aligned new costs glibc a slow memalign per call). Large buffers
    /// are 2 MiB aligned and, on Linux, asked for transparent huge pages (as
    /// NumPy does): first-touch page faults otherwise dominate big conversions.
    struct storage_block : owner_block {
        using owner_block::owner_block;
    };
    static constexpr std::size_t storage_alignment = 64;

    static owner_handle allocate(std::size_t bytes, void*& data) {
        constexpr std::size_t huge = std::size_t{2} << 20;
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
            const std::size_t rounded = (total + huge - 1) / huge * huge;
            memory = std::aligned_alloc(huge, rounded);
            if (memory == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
            madvise(memory, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
            release = [](owner_block* self) noexcept {
                static_cast<storage_block*>(self)->~storage_block();
                std::free(self);
            };
        }
        const auto after_block = reinterpret_cast<std::uintptr_t>(memory) + sizeof(storage_block);
        data = reinterpret_cast<void*>((after_block + storage_alignment - 1) / storage_alignment * storage_alignment);
        return owner_handle::adopt(new (memory) storage_block(release));
    }

    tensor(const dtype& type, const tensor_layout& layout, void* data, bool writable, owner_handle owner,
           lowbit_layout packing)
        : m_dtype(type), m_layout(layout), m_data(data), m_writable(writable), m_owner(std::move(owner)),
          m_packing(packing) {}

    dtype m_dtype;
    tensor_layout m_layout;
    void* m_data = nullptr;
    bool m_writable = true;
    bool m_borrowed = false;
    owner_handle m_owner;
    lowbit_layout m_packing = lowbit_layout::compact;
};

/// The adapter for npybridge::tensor: any strides, 0-d allowed, up to
/// NPYBRIDGE_MAX_NDIM dimensions.
template <>
struct tensor_adapter<tensor> {
    static constexpr std::size_t max_ndim = NPYBRIDGE_MAX_NDIM;
    static constexpr bool has_scalar = true;
    static bool accepts_strides(const tensor_layout&) noexcept { return true; }
    static dtype dtype_of(const tensor& t) { return t.type(); }
    static tensor_layout layout_of(const tensor& t) { return t.layout(); }
    static void* data(const tensor& t) noexcept { return t.data(); }
    static bool writable(const tensor& t) noexcept { return t.writable(); }
    static lowbit_layout packed_layout(const tensor& t) noexcept { return t.packing(); }
    static owner_handle owner(const tensor& t) { return t.owner(); }
    static owner_handle take_owner(tensor& t) noexcept { return t.take_owner(); }
    static tensor borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable, owner_handle owner) {
        // to_tensor never borrows packed memory (numpy holds a byte per element).
        return tensor::borrow(type, data, layout, writable, std::move(owner), lowbit_layout::compact);
    }
    static tensor make(const dtype& type, const tensor_layout& layout, lowbit_layout packing) {
        return tensor::empty(type, layout.shape.data(), layout.ndim, packing);
    }
};

}  // namespace npybridge
