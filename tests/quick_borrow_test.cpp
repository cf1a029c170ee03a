// to_tensor's fast path (quick_borrow: the planner's first case over an ndarray) against the whole planner over
// the facts the general path gathers from the same array: over arrays of every dtype, layout, flag and metadata,
// and every option that changes a borrow, the fast path borrows only what plan_borrow borrows, and takes every
// common borrow (the array's own dtype in writable, native, aligned memory) itself.
#include <catch2/catch.hpp>

#include <npybridge/convert.hpp>

#include "tests/support/megbrain_like.hpp"
#include "tests/support/python.hpp"

#include <string>

namespace npb = npybridge;

namespace {

/// Arrays of every plain and quantized dtype in every layout the planner tells apart.
const char* const quick_borrow_arrays = R"((lambda: [
    view
    for dtype in ["i1", "u1", "i2", ">i2", "u2", "i4", "u4", "i8", "f2", "f4", ">f4", "f8", "c8", "?",
                  np.dtype("i1", metadata={"mgb_dtype": {"name": "QuantizedS8", "scale": 0.5}}),
                  np.dtype("i1", metadata={"mgb_dtype": {"name": "QuantizedS1", "scale": 1.0}}),
                  np.dtype("u1", metadata={"mgb_dtype": {"name": "Quantized8Asymm", "scale": 0.5, "zero_point": 3}})]
    for base in [np.ones((4, 6), dtype), np.frombuffer(bytearray(np.dtype(dtype).itemsize * 24 + 1), dtype, 24, 1)]
    for view in [base, base[::-1], base.T, base[..., ::2], base.reshape(-1)[:1].reshape(()),
                 base.reshape(-1)[:0], np.broadcast_to(base.reshape(-1)[:1], (3, 2)),
                 np.lib.stride_tricks.as_strided(base, (2,), (3,)) if base.size >= 4 else base,
                 (lambda r: (r.setflags(write=False), r)[1])(base.view())]
])())";

template <class Tensor>
void check_every_array(const npb::to_tensor_options& options, npb::detail::read_only_marking marking) {
    test::owned arrays = test::eval(quick_borrow_arrays);
    const Py_ssize_t count = PyList_Size(arrays.get());
    REQUIRE(count > 100);
    std::size_t fast = 0;
    for (Py_ssize_t i = 0; i < count; ++i) {
        auto* array = reinterpret_cast<PyArrayObject*>(PyList_GetItem(arrays.get(), i));
        CAPTURE(i, npb::detail::array_text(array), npb::detail::strides_text(array));
        npb::detail::maybe<npb::numpy_dtype_match> source;
        try {
            source = npb::detail::match_of(array, options);  // (parses and caches metadata, as the general path does)
        } catch (const npb::dtype_error&) {
            continue;
        }
        if (static_cast<std::size_t>(PyArray_NDIM(array)) > npb::detail::ndim_limit<Tensor>) continue;
        const npb::dtype target = options.type.value_or(source->type);
        npb::tensor_layout layout;
        const bool whole = npb::detail::checked_layout<Tensor>(array, layout);
        npb::detail::memory_facts facts = npb::detail::memory_facts_of<Tensor>(array, source, layout, whole);
        if (npb::detail::checks_codes(facts, target)) {
            try {
                facts.codes_fit = !npb::detail::first_unfit_value(array, *npb::detail::storage_bounds(target.info()));
            } catch (const npb::error&) {
                continue;
            }
        }
        const auto verdict = npb::detail::plan_borrow(facts, target, options, marking);
        npb::tensor_layout quick_layout;
        const npb::dtype* quick = npb::detail::quick_borrow<Tensor>(array, options, quick_layout);
        const bool planned = verdict.cause == npb::detail::copy_cause::none && !verdict.check_marking &&
                             verdict.quantized == npb::detail::refusal::none;
        if (quick != nullptr) {
            ++fast;
            REQUIRE(planned);
            REQUIRE(*quick == target);
            REQUIRE(quick_layout.ndim == layout.ndim);
            for (std::size_t d = 0; d < layout.ndim; ++d) REQUIRE(quick_layout.strides[d] == layout.strides[d]);
        } else if (planned && facts.writable && npb::detail::borrows_as_it_is[npb::table_index(target.id())] &&
                   (!options.type || *options.type == source->type) && !source->narrowed) {
            FAIL("the fast path left a common borrow to the general path");
        }
    }
    if (options.policy != npb::borrow_policy::copy) CHECK(fast >= 5);  // the check is not vacuous
}

}  // namespace

TEST_CASE("to_tensor's fast path borrows exactly the common borrows the planner answers for the same array",
          "[plan][convert]") {
    using marking = npb::detail::read_only_marking;
    SECTION("default options") { check_every_array<npb::tensor>({}, marking::marks); }
    SECTION("writable() asked") { check_every_array<npb::tensor>(npb::to_tensor_options().writable(), marking::marks); }
    SECTION("scoped, must_borrow, copy") {
        check_every_array<npb::tensor>(npb::to_tensor_options().scoped(), marking::marks);
        check_every_array<npb::tensor>(npb::to_tensor_options().with(npb::borrow_policy::must_borrow), marking::marks);
        check_every_array<npb::tensor>(npb::to_tensor_options().with(npb::borrow_policy::copy), marking::marks);
    }
    SECTION("a requested dtype") {
        check_every_array<npb::tensor>(npb::to_tensor_options().as(npb::dtype(npb::dtype_enum::Float32)),
                                       marking::marks);
        check_every_array<npb::tensor>(npb::to_tensor_options().as(npb::dtype(npb::dtype_enum::Int8)), marking::marks);
    }
    SECTION("a tensor type without negative strides or 0-d (MegBrain's shape)") {
        check_every_array<megbrain_like::host_tensor>({}, marking::marks);
    }
}
