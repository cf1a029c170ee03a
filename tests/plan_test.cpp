// The conversion planner (core/detail/plan.hpp), without Python: its first case agrees with the whole planner on
// every input, the borrow checks run in the order docs/policies.md's table gives, and the fill rule of each mode.
#include <catch2/catch.hpp>

#include <npybridge/core/detail/plan.hpp>

#include <string>

namespace npb = npybridge;
using npb::detail::copy_cause;
using npb::detail::fill_route;
using npb::detail::read_only_marking;
using npb::detail::refusal;
using npb::detail::value_check;

namespace {

/// The dtype of a table row; quantized ones with params (scale 0.5, zero point 3 where they take one).
npb::dtype dtype_of_row(std::size_t row) {
    const npb::dtype_info& entry = npb::dtype_table[row];
    if (!entry.is_quantized) return npb::dtype(entry.id);
    return npb::dtype::quantized(entry.id, 0.5, entry.param_fields == 2 ? std::optional<long long>(3) : std::nullopt);
}

}  // namespace

TEST_CASE("the planner's first case borrows only where the whole planner borrows, over every input", "[plan]") {
    // Every dtype as the array's, every requested dtype (none or any), every flag, policy and marking: the
    // fast case never answers "borrow" where plan_borrow would not, and answers it wherever plan_borrow borrows
    // writable, native, aligned memory of the array's own dtype without a look at values.
    std::size_t agreed = 0;
    for (std::size_t source = 0; source < npb::dtype_count; ++source) {
        const npb::dtype type = dtype_of_row(source);
        for (std::size_t wanted = 0; wanted <= npb::dtype_count; ++wanted) {
            for (unsigned bits = 0; bits < (1u << 9); ++bits) {
                npb::to_tensor_options options;
                if (wanted < npb::dtype_count) options.type = dtype_of_row(wanted);
                options.policy = static_cast<npb::borrow_policy>((bits >> 7) % 3);
                options.keep_alive = bits & 1;
                options.reads_only = bits & 2;
                options.require_writable = bits & 4;
                npb::detail::memory_facts facts;
                facts.type = &type;
                facts.native_order = bits & 8;
                facts.aligned = bits & 16;
                facts.strides_accepted = bits & 32;
                facts.writable = bits & 64;
                const npb::dtype target = options.type.value_or(type);
                const bool fast = npb::detail::borrows_at_once(
                    &type, facts.native_order && facts.aligned && facts.writable, facts.strides_accepted, options);
                for (const auto marking :
                     {read_only_marking::unknown, read_only_marking::marks, read_only_marking::cannot}) {
                    const auto verdict = npb::detail::plan_borrow(facts, target, options, marking);
                    const bool borrows = verdict.cause == copy_cause::none && !verdict.check_marking &&
                                         verdict.quantized == refusal::none;
                    const bool borrows_at_once = borrows && facts.writable && target == type && facts.native_order &&
                                                 facts.aligned && !npb::detail::codes_narrower_by_row[source];
                    // (2.5 million cases: Catch2's bookkeeping only for one that fails)
                    if ((fast && !borrows) || (borrows_at_once && !fast)) {
                        CAPTURE(type.name(), target.name(), bits, static_cast<int>(marking), fast, borrows);
                        REQUIRE(fast == borrows_at_once);
                    }
                    ++agreed;
                }
            }
        }
    }
    CHECK(agreed > 10000);
}

TEST_CASE("the borrow checks run in the order of docs/policies.md's table, the first that fails the reason", "[plan]") {
    const npb::dtype f32(npb::dtype_enum::Float32);
    npb::detail::memory_facts all_wrong;
    all_wrong.type = &f32;
    all_wrong.native_order = false;
    all_wrong.whole_elements = false;
    all_wrong.aligned = false;
    all_wrong.strides_accepted = false;
    all_wrong.codes_fit = false;
    all_wrong.writable = false;
    npb::to_tensor_options options;
    options.require_writable = true;
    options.narrow = npb::narrowing::wrap;
    const auto cause = [&](const npb::detail::memory_facts& facts, const npb::dtype& target) {
        return npb::detail::plan_borrow(facts, target, options, read_only_marking::cannot).cause;
    };
    // Fix the facts one at a time, in the table's order: each fix reveals the next row's cause.
    npb::detail::memory_facts facts = all_wrong;
    facts.sub_byte = npb::detail::sub_byte_source::packed;
    CHECK(cause(facts, npb::dtype(npb::dtype_enum::IntB4)) == copy_cause::packed_source);
    facts.sub_byte = npb::detail::sub_byte_source::padded;
    CHECK(cause(facts, npb::dtype(npb::dtype_enum::IntB4)) == copy_cause::padded_source);
    facts.sub_byte = npb::detail::sub_byte_source::none;
    CHECK(cause(facts, npb::dtype(npb::dtype_enum::IntB4)) == copy_cause::packed_target);
    facts.type = nullptr;
    CHECK(cause(facts, f32) == copy_cause::foreign_dtype);
    facts.type = &f32;
    facts.narrowed = true;
    CHECK(cause(facts, f32) == copy_cause::narrowing);
    facts.narrowed = false;
    CHECK(cause(facts, npb::dtype(npb::dtype_enum::Float16)) == copy_cause::other_dtype);
    CHECK(cause(facts, f32) == copy_cause::byte_order);
    facts.native_order = true;
    CHECK(cause(facts, f32) == copy_cause::partial_strides);
    facts.whole_elements = true;
    CHECK(cause(facts, f32) == copy_cause::misaligned);
    facts.aligned = true;
    CHECK(cause(facts, f32) == copy_cause::refused_strides);
    facts.strides_accepted = true;
    CHECK(cause(facts, f32) == copy_cause::invalid_codes);
    facts.codes_fit = true;
    CHECK(cause(facts, f32) == copy_cause::read_only_writable);
    options.require_writable = false;
    CHECK(cause(facts, f32) == copy_cause::read_only_unmarked);
    options.keep_alive = false;
    CHECK(cause(facts, f32) == copy_cause::read_only_scoped);
    facts.writable = true;
    CHECK(cause(facts, f32) == copy_cause::none);

    // The table lists every cause once per row, in this order.
    const copy_cause order[] = {
        copy_cause::copy_requested,     copy_cause::packed_source,      copy_cause::padded_source,
        copy_cause::packed_target,      copy_cause::foreign_dtype,      copy_cause::narrowing,
        copy_cause::other_dtype,        copy_cause::byte_order,         copy_cause::partial_strides,
        copy_cause::misaligned,         copy_cause::refused_strides,    copy_cause::invalid_codes,
        copy_cause::read_only_writable, copy_cause::read_only_unmarked, copy_cause::read_only_scoped};
    REQUIRE(std::size(npb::detail::borrow_causes) == std::size(order));
    for (std::size_t i = 0; i < std::size(order); ++i) CHECK(npb::detail::borrow_causes[i].cause == order[i]);
}

TEST_CASE("read-only memory: borrowed where the type marks it or the caller only reads, else copied or checked",
          "[plan]") {
    const npb::dtype f32(npb::dtype_enum::Float32);
    npb::detail::memory_facts facts;
    facts.type = &f32;
    facts.writable = false;
    npb::to_tensor_options options;
    SECTION("unknown marking: borrow, and ask again once the tensor shows whether it kept the flag") {
        const auto verdict = npb::detail::plan_borrow(facts, f32, options, read_only_marking::unknown);
        CHECK((verdict.cause == copy_cause::none && verdict.check_marking));
        CHECK(npb::detail::plan_borrow(facts, f32, options, read_only_marking::marks).cause == copy_cause::none);
        CHECK(npb::detail::plan_borrow(facts, f32, options, read_only_marking::cannot).cause ==
              copy_cause::read_only_unmarked);
    }
    SECTION("reading_only() borrows with an owner; scoped() keeps none, so it copies") {
        options.reading_only();
        CHECK(npb::detail::plan_borrow(facts, f32, options, read_only_marking::cannot).cause == copy_cause::none);
        options.scoped();
        CHECK(npb::detail::plan_borrow(facts, f32, options, read_only_marking::cannot).cause ==
              copy_cause::read_only_scoped);
    }
    SECTION("must_borrow turns every cause into a refusal") {
        options.with(npb::borrow_policy::must_borrow);
        const auto verdict = npb::detail::plan_borrow(facts, f32, options, read_only_marking::cannot);
        CHECK((verdict.cause == copy_cause::read_only_unmarked && verdict.refused));
    }
}

namespace {

npb::detail::fill_plan plan_fill_of(char kind, std::size_t itemsize, npb::dtype_enum target,
                                    npb::narrowing mode = npb::narrowing::checked, const npb::dtype* type = nullptr) {
    npb::detail::value_facts values;
    values.type = type;
    values.kind = kind;
    values.itemsize = itemsize;
    return npb::detail::plan_fill(values, npb::dtype(target), mode);
}

}  // namespace

TEST_CASE("checked: what each kind of value goes into, and what is looked at", "[plan]") {
    using id = npb::dtype_enum;
    SECTION("complex numbers go only into complex dtypes, whatever a user dtype registered") {
        for (const id target : {id::BFloat16, id::Float32, id::Float16, id::Int8, id::Bool}) {
            const auto plan = plan_fill_of('c', 16, target);
            CHECK((plan.route == fill_route::refuse && plan.refused == refusal::kind));
        }
        CHECK(plan_fill_of('c', 16, id::Complex64).check == value_check::overflow);
        CHECK(plan_fill_of('c', 8, id::Complex64).route == fill_route::convert);
    }
    SECTION("floats into integer, bool, quantized and packed dtypes: whole numbers in range") {
        for (const id target : {id::Int8, id::Int32, id::Uint16, id::Bool, id::IntB4}) {
            CAPTURE(npb::name_of(target));
            CHECK(plan_fill_of('f', 4, target).check == value_check::whole);
        }
    }
    SECTION("integers into floats: held exactly unless every value of the type is") {
        CHECK(plan_fill_of('i', 8, id::Float32).check == value_check::exact);
        CHECK(plan_fill_of('i', 2, id::Float32).check == value_check::none);
        CHECK(plan_fill_of('i', 2, id::Float16).check == value_check::exact);
        CHECK(plan_fill_of('u', 1, id::BFloat16).check == value_check::none);
        CHECK(plan_fill_of('i', 2, id::Int32).check == value_check::none);
        CHECK(plan_fill_of('i', 4, id::Int16).check == value_check::range);
        CHECK(plan_fill_of('i', 1, id::Bool).check == value_check::range);
    }
    SECTION("floats into floats: a narrower one is checked for overflow") {
        CHECK(plan_fill_of('f', 2, id::Float32).check == value_check::none);
        CHECK(plan_fill_of('f', 8, id::Float32).check == value_check::overflow);
        CHECK(plan_fill_of('f', 4, id::BFloat16).check == value_check::overflow);
    }
    SECTION("an empty array always converts; quantized codes never change meaning") {
        npb::detail::value_facts empty;
        empty.kind = 'c';
        empty.itemsize = 16;
        empty.empty = true;
        CHECK(npb::detail::plan_fill(empty, npb::dtype(id::Bool), npb::narrowing::checked).route ==
              fill_route::nothing);
        const npb::dtype s8 = npb::dtype::quantized(id::QuantizedS8, 0.5);
        const auto plan = plan_fill_of('i', 1, id::Float32, npb::narrowing::wrap, &s8);
        CHECK((plan.route == fill_route::refuse && plan.refused == refusal::dropping_params));
    }
}

TEST_CASE("wrap and reject: numpy's casts, npybridge's rounding into BFloat16, integers into packed dtypes", "[plan]") {
    using id = npb::dtype_enum;
    CHECK(plan_fill_of('c', 16, id::BFloat16, npb::narrowing::wrap).route == fill_route::convert);
    CHECK(plan_fill_of('f', 8, id::IntB4, npb::narrowing::wrap).refused == refusal::not_integers);
    CHECK(plan_fill_of('i', 8, id::IntB4, npb::narrowing::wrap).route == fill_route::pack);
    CHECK(plan_fill_of('f', 8, id::Int8, npb::narrowing::reject).refused == refusal::unsafe);
    CHECK(plan_fill_of('V', 1, id::Float32, npb::narrowing::checked).refused == refusal::no_cast);
}
