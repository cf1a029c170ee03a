// npybridge/core/detail/plan.hpp — the planner: how an array becomes a tensor, decided once (docs/policies.md).
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/detail/lean_types.hpp>
#include <npybridge/core/detail/value_bounds.hpp>
#include <npybridge/core/dtype.hpp>
#include <npybridge/core/options.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Why the array's memory does not back the tensor: the first that applies, in this order, is the copy reason;
/// borrow_causes below says when each applies.
enum class copy_cause : std::uint8_t {
    none,  ///< borrowed
    copy_requested,
    packed_source,
    padded_source,
    packed_target,
    foreign_dtype,
    narrowing,
    other_dtype,
    byte_order,
    partial_strides,
    misaligned,
    refused_strides,
    invalid_codes,
    read_only_writable,
    read_only_unmarked,
    read_only_scoped,
};

/// A row of docs/policies.md's decision table.
struct cause_row {
    copy_cause cause;
    const char* word;
    const char* when;
};

/// The borrow checks in plan_borrow's order.
inline constexpr cause_row borrow_causes[] = {
    {copy_cause::copy_requested, "copy requested", "`borrow_policy::copy` was asked for"},
    {copy_cause::packed_source, "packing:",
     "the source is packed sub-byte data (DLPack): tensor types borrow unpacked memory only, so the bytes are copied "
     "into the tensor's own packing"},
    {copy_cause::padded_source,
     "packing:", "the source holds sub-byte values one per byte (DLPack's padded flag): they are unpacked into a copy"},
    {copy_cause::packed_target, "dtype:", "the tensor's dtype is packed (numpy holds one byte per element)"},
    {copy_cause::foreign_dtype, "dtype:", "the array's dtype has no MegBrain dtype and must be cast"},
    {copy_cause::narrowing, "dtype:", "int64 / float64 must be narrowed to Int32 / Float32"},
    {copy_cause::other_dtype, "dtype:",
     "the array's dtype is not the tensor's (a plain array may become a quantized tensor of its storage type, "
     "int8 → QuantizedS8, without a copy)"},
    {copy_cause::byte_order, "byte order:", "the array is not in native byte order"},
    {copy_cause::partial_strides, "strides:", "a stride is not a whole number of elements"},
    {copy_cause::misaligned, "alignment:", "the data pointer is not aligned for the element type"},
    {copy_cause::refused_strides,
     "strides:", "the tensor type's adapter cannot describe the strides (e.g. no negative strides)"},
    {copy_cause::invalid_codes, "codes:",
     "`narrowing='wrap'` and a value is not a code of the dtype (QuantizedS1: 0 and 1); "
     "`checked` and `reject` refuse it instead"},
    {copy_cause::read_only_writable,
     "read-only:", "the array is read-only and a writable tensor was asked for (`to_tensor_options().writable()`)"},
    {copy_cause::read_only_unmarked, "read-only:",
     "the array is read-only, the tensor type cannot mark memory read-only, and the caller did not say "
     "`reading_only()`"},
    {copy_cause::read_only_scoped,
     "read-only:", "the same, borrowed `scoped()`: no owner is kept to remember that the memory is read-only"},
};

/// Whether a tensor type marks borrowed memory read-only; `unknown` until a borrow shows it (that borrow is then
/// checked).
enum class read_only_marking : std::uint8_t { unknown, marks, cannot };

/// Sub-byte source data: packed (several values a byte) or padded (a value a byte).
enum class sub_byte_source : std::uint8_t { none, packed, padded };

/// What the planner knows of the array's memory.
struct memory_facts {
    sub_byte_source sub_byte = sub_byte_source::none;
    const dtype* type = nullptr;  ///< nullptr: no MegBrain dtype (a cast)
    bool narrowed = false;        ///< int64 / float64 read as Int32 / Float32
    bool native_order = true;
    bool whole_elements = true;  ///< every stride that matters is whole elements
    bool aligned = true;
    bool strides_accepted = true;  ///< the adapter describes the strides
    bool writable = true;
    bool codes_fit = true;  ///< every value is a code (asked when checks_codes)
};

/// A plain array of a quantized dtype's storage (int8 → QuantizedS8) keeps its bytes: its integers are the codes, as in
/// MegEngine.
inline bool same_storage(const dtype& source, bool narrowed, const dtype& target) noexcept {
    if (narrowed) return false;
    if (source == target) return true;
    const dtype_info& from = source.info();
    const dtype_info& to = target.info();
    return to.is_quantized && !from.is_quantized && !to.is_packed && !from.is_packed &&
           from.category == dtype_category::integer && from.storage == to.storage;
}

/// Whether kept storage must be checked against the dtype's codes (QuantizedS1).
inline bool checks_codes(const memory_facts& facts, const dtype& target) noexcept {
    return facts.type != nullptr && codes_narrower_by_row[table_index(target.id())] &&
           same_storage(*facts.type, facts.narrowed, target);
}

/// Why a copy cannot be made.
enum class refusal : std::uint8_t {
    none,
    requantizing,     ///< quantized codes into another quantized dtype
    dropping_params,  ///< quantized codes into a plain dtype
    kind,             ///< checked: a change of kind (complex into real)
    unsafe,           ///< reject: a cast that can lose values
    no_cast,          ///< no numpy cast, or under checked a dtype only numpy knows without a safe cast
    no_numpy_form,    ///< no numpy form (Byte)
    not_integers,     ///< packed dtypes take integers (checked: whole floats)
};

/// Quantized codes go only into the same quantized dtype: anything else would requantize or drop the params.
inline refusal quantized_refusal(const dtype* source, const dtype& target) noexcept {
    if (source == nullptr || !source->is_quantized() || *source == target) return refusal::none;
    return target.is_quantized() ? refusal::requantizing : refusal::dropping_params;
}

/// The borrow decision (cause none: borrow). Read-only memory with `marking` unknown borrows and sets `check_marking`:
/// if the tensor came back writable, ask again with `cannot`.
struct borrow_verdict {
    copy_cause cause = copy_cause::none;
    bool check_marking = false;
    /// must_borrow and a cause: the cause is the refusal's reason.
    bool refused = false;
    /// checked / reject and a value that is not a code.
    bool invalid_code = false;
    /// Codes that would change meaning: refused first.
    refusal quantized = refusal::none;
};

/// A copy, or under must_borrow a refusal.
constexpr borrow_verdict refuse_or_copy(copy_cause cause, const to_tensor_options& options) noexcept {
    return {cause, false, options.policy == borrow_policy::must_borrow, false};
}

inline borrow_verdict plan_borrow(const memory_facts& facts, const dtype& target, const to_tensor_options& options,
                                  read_only_marking marking) noexcept {
    if (const refusal quantized = quantized_refusal(facts.type, target); quantized != refusal::none) {
        return {copy_cause::other_dtype, false, true, false, quantized};
    }
    if (options.policy == borrow_policy::copy) return {copy_cause::copy_requested};
    if (facts.sub_byte == sub_byte_source::packed) return refuse_or_copy(copy_cause::packed_source, options);
    if (facts.sub_byte == sub_byte_source::padded) return refuse_or_copy(copy_cause::padded_source, options);
    if (target.info().is_packed) return refuse_or_copy(copy_cause::packed_target, options);
    if (facts.type == nullptr) return refuse_or_copy(copy_cause::foreign_dtype, options);
    if (facts.narrowed) return refuse_or_copy(copy_cause::narrowing, options);
    if (!same_storage(*facts.type, false, target)) return refuse_or_copy(copy_cause::other_dtype, options);
    if (!facts.native_order) return refuse_or_copy(copy_cause::byte_order, options);
    // Strides before alignment: NumPy calls a 5-byte float32 stride unaligned, and the stride is the cause.
    if (!facts.whole_elements) return refuse_or_copy(copy_cause::partial_strides, options);
    if (!facts.aligned) return refuse_or_copy(copy_cause::misaligned, options);
    if (!facts.strides_accepted) return refuse_or_copy(copy_cause::refused_strides, options);
    if (!facts.codes_fit) {
        if (options.narrow != narrowing::wrap) return {copy_cause::invalid_codes, false, false, true};
        return refuse_or_copy(copy_cause::invalid_codes, options);
    }
    if (facts.writable) return {};
    if (options.require_writable) return refuse_or_copy(copy_cause::read_only_writable, options);
    // Read-only memory the tensor type cannot mark is borrowed only on the caller's word, with an owner to keep the
    // flag.
    if (marking == read_only_marking::marks || (options.reads_only && options.keep_alive)) return {};
    if (marking == read_only_marking::unknown) return {copy_cause::none, true};
    return refuse_or_copy(options.keep_alive ? copy_cause::read_only_unmarked : copy_cause::read_only_scoped, options);
}

/// Per dtype row: whether an array of that dtype borrows without a look at its values.
inline constexpr std::array<bool, dtype_count> borrows_as_it_is = [] {
    std::array<bool, dtype_count> rows{};
    for (std::size_t i = 0; i < dtype_count; ++i) rows[i] = !dtype_table[i].is_packed && !codes_narrower_by_row[i];
    return rows;
}();

/// The common borrow, inlined into the fast paths: true means plan_borrow would answer none (a property test checks
/// it); false leaves the decision to plan_borrow.
[[gnu::always_inline]] inline bool borrows_at_once(const dtype* type, bool native_aligned_writable,
                                                   bool strides_accepted, const to_tensor_options& options) noexcept {
    return type != nullptr && native_aligned_writable && strides_accepted && options.policy != borrow_policy::copy &&
           borrows_as_it_is[table_index(type->id())] && (!options.type || *options.type == *type);
}

/// How a copy fills the tensor's memory.
enum class fill_route : std::uint8_t {
    nothing,  ///< no elements
    same,     ///< the same values, another layout or byte order
    narrow,   ///< int64 → Int32, float64 → Float32, checked
    convert,  ///< another dtype: checked as `check` says, then cast
    pack,     ///< a byte per value into a packed dtype
    refuse,   ///< see `refusal`
};

/// What narrowing='checked' checks of each value.
enum class value_check : std::uint8_t {
    none,      ///< every source value fits
    range,     ///< integers into an integer dtype: in [lo, hi]
    exact,     ///< integers into a float: exact, no overflow
    overflow,  ///< floats into a narrower float: no overflow
    whole,     ///< floats into an integer dtype: whole, in range
};

struct fill_plan {
    fill_route route = fill_route::refuse;
    value_check check = value_check::none;
    refusal refused = refusal::none;
    /// QuantizedS1 (fewer codes than its storage): the filled memory is settled last, so no route stores an invalid
    /// code.
    bool settle_codes = false;
};

/// What the planner knows of the values, user dtypes read as their values (bfloat16 as float32, int4 as int8).
struct value_facts {
    const dtype* type = nullptr;  ///< nullptr: a dtype only numpy knows
    bool narrowed = false;
    char kind = 0;  ///< 'b', 'i', 'u', 'f', 'c', or a type only numpy knows
    std::size_t itemsize = 0;
    bool empty = false;
    bool numpy_safe = false;   ///< numpy's cast loses no value (reject)
    bool numpy_casts = false;  ///< numpy has a cast (wrap)
};

/// Whether every value of a numpy (kind, itemsize) fits `bounds`.
constexpr bool every_value_fits(char kind, std::size_t itemsize, const value_bounds& bounds) noexcept {
    const unsigned bits = static_cast<unsigned>(itemsize * 8);
    if (kind == 'b') return true;
    if (kind == 'i' || kind == 'u') {
        const unsigned value_bits = kind == 'i' ? bits - 1 : bits;
        if (bounds.floating) return value_bits <= bounds.digits;
        if (bits >= 64) return false;
        const std::int64_t lo = kind == 'i' ? -(std::int64_t{1} << (bits - 1)) : 0;
        const std::int64_t hi = kind == 'i' ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
        return lo >= bounds.lo && hi <= bounds.hi;
    }
    if (kind == 'f' || kind == 'c') {
        // A float fits a float with at least its significand.
        const unsigned digits = (kind == 'c' ? bits / 2 : bits) == 16   ? 11
                                : (kind == 'c' ? bits / 2 : bits) == 32 ? 24
                                                                        : 53;
        return bounds.floating && digits <= bounds.digits;
    }
    return false;
}

/// The check narrowing='checked' makes of `kind` into `target`; refusal::kind when none makes it safe.
constexpr value_check checked_value_check(char kind, const dtype_info& target, refusal& refused) noexcept {
    const bool complex_target = target.category == dtype_category::complex;
    const bool float_target = target.category == dtype_category::floating || complex_target;
    if (kind == 'b') return value_check::none;
    if (kind == 'i' || kind == 'u') return float_target ? value_check::exact : value_check::range;
    if (kind == 'f') return float_target ? value_check::overflow : value_check::whole;
    if (kind == 'c' && complex_target) return value_check::overflow;
    refused = refusal::kind;
    return value_check::none;
}

constexpr bool is_number_kind(char kind) noexcept {
    return kind == 'b' || kind == 'i' || kind == 'u' || kind == 'f' || kind == 'c';
}

constexpr fill_plan refused_fill(refusal why) noexcept { return {fill_route::refuse, value_check::none, why}; }

/// narrowing='checked': the kind rule, and a value check unless every source value fits.
inline fill_plan plan_checked_fill(const value_facts& values, const dtype_info& to) noexcept {
    const fill_route route = to.is_packed ? fill_route::pack : fill_route::convert;
    if (!is_number_kind(values.kind)) {  // a dtype only numpy knows: no value check
        return values.numpy_safe && !to.is_packed ? fill_plan{route} : refused_fill(refusal::no_cast);
    }
    refusal refused = refusal::none;
    const value_check check = checked_value_check(values.kind, to, refused);
    if (refused != refusal::none) return refused_fill(refused);
    const maybe<value_bounds> bounds = storage_bounds(to);
    if (!bounds || every_value_fits(values.kind, values.itemsize, *bounds)) return {route};
    return {route, check};
}

/// narrowing='wrap' (any numpy cast; npybridge rounds into BFloat16 itself) and 'reject' (safe casts only). Packed
/// dtypes take integers.
inline fill_plan plan_unchecked_fill(const value_facts& values, const dtype& target, narrowing mode) noexcept {
    const bool integers = values.kind == 'b' || values.kind == 'i' || values.kind == 'u';
    if (target.info().is_packed) return integers ? fill_plan{fill_route::pack} : refused_fill(refusal::not_integers);
    if (mode == narrowing::reject)
        return values.numpy_safe ? fill_plan{fill_route::convert} : refused_fill(refusal::unsafe);
    const bool rounds_itself = is_number_kind(values.kind) && target.id() == dtype_enum::BFloat16;
    return values.numpy_casts || rounds_itself ? fill_plan{fill_route::convert} : refused_fill(refusal::no_cast);
}

/// How a copy fills `target`'s memory from the values.
inline fill_plan plan_fill(const value_facts& values, const dtype& target, narrowing mode) noexcept {
    if (const refusal quantized = quantized_refusal(values.type, target); quantized != refusal::none) {
        return refused_fill(quantized);
    }
    if (values.empty) return {fill_route::nothing};
    const dtype_info& to = target.info();
    const bool settle = codes_narrower_by_row[table_index(target.id())];
    if (values.type != nullptr && !to.is_packed && same_storage(*values.type, values.narrowed, target)) {
        return {fill_route::same, settle && mode != narrowing::wrap ? value_check::range : value_check::none,
                refusal::none, settle};
    }
    if (values.type != nullptr && values.narrowed && *values.type == target) {
        return mode == narrowing::reject ? refused_fill(refusal::unsafe) : fill_plan{fill_route::narrow};
    }
    if (to.form == numpy_form::none && !to.is_packed) return refused_fill(refusal::no_numpy_form);
    fill_plan plan =
        mode == narrowing::checked ? plan_checked_fill(values, to) : plan_unchecked_fill(values, target, mode);
    plan.settle_codes = settle && plan.route != fill_route::refuse;
    return plan;
}

}  // namespace detail
}  // namespace npybridge
