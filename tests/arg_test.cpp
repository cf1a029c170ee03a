// Constrained tensor arguments (npybridge/arg.hpp): what to_arg refuses names the caller's input, and
// may_convert tells casters which inputs are another overload's.
#include <catch2/catch.hpp>

#include <npybridge/arg.hpp>

#include "tests/support/python.hpp"

#include <string>
#include <type_traits>

namespace npb = npybridge;
using Catch::Matchers::Contains;
using npb::dtype_enum;

using qs8_matrix = npb::arg<npb::tensor, npb::dtype_is<dtype_enum::QuantizedS8>, npb::ndim_is<2>>;
using f32_any = npb::arg<npb::tensor, npb::dtype_is<dtype_enum::Float32>>;

TEST_CASE("a quantized constraint names the caller's dtype, not a step of its conversion", "[arg][errors]") {
    // int64 was reported as "narrowing int64 to Int32: ...", float64 as "got Float32".
    test::owned wide = test::eval("np.zeros((2, 2), np.int64)");
    CHECK_THAT(test::message_of<npb::dtype_error>([&] { npb::to_arg<qs8_matrix>(wide.get()); }),
               Contains("expected a QuantizedS8 array (int8 with mgb_dtype metadata), got int64"));
    test::owned floats = test::eval("np.zeros((2, 2))");
    CHECK_THAT(test::message_of<npb::dtype_error>([&] { npb::to_arg<qs8_matrix>(floats.get()); }),
               Contains("got float64"));
    test::owned other =
        test::eval("np.zeros((2, 2), np.dtype('int8', metadata={'mgb_dtype': {'name': 'QuantizedS4', 'scale': 0.5}}))");
    CHECK_THAT(test::message_of<npb::dtype_error>([&] { npb::to_arg<qs8_matrix>(other.get()); }),
               Contains("expected a QuantizedS8 array") && Contains("QuantizedS4"));
    test::owned listed = test::eval("[[1, 2], [3, 4]]");
    CHECK_THAT(test::message_of<npb::dtype_error>([&] { npb::to_arg<qs8_matrix>(listed.get()); }),
               Contains("got list"));
    test::owned right = test::eval(
        "np.zeros((2, 2), np.dtype('int8', metadata={'mgb_dtype': {'name': 'QuantizedS8', 'scale': 0.25}}))");
    CHECK(*npb::to_arg<qs8_matrix>(right.get())->type().scale() == 0.25f);
}

TEST_CASE("may_convert declines what cannot become the argument and takes what could", "[arg]") {
    CHECK_FALSE(qs8_matrix::may_convert(test::eval("np.zeros((2, 2))").get()));
    CHECK_FALSE(qs8_matrix::may_convert(
        test::eval("np.zeros(2, np.dtype('int8', metadata={'mgb_dtype': {'name': 'QuantizedS8', 'scale': 0.25}}))")
            .get()));
    CHECK(qs8_matrix::may_convert(
        test::eval("np.zeros((2, 2), np.dtype('int8', metadata={'mgb_dtype': {'name': 'QuantizedS8', 'scale': 0.25}}))")
            .get()));
    CHECK(f32_any::may_convert(test::eval("np.zeros(3)").get()));  // float64 narrows (checked)
    CHECK(f32_any::may_convert(test::eval("np.zeros(3, np.int64)").get()));
    CHECK(f32_any::may_convert(test::eval("[1.0, 2.0]").get()));
    CHECK_FALSE(f32_any::may_convert(test::eval("np.array(['a'])").get()));
    CHECK_FALSE(PyErr_Occurred());
}

TEST_CASE("policy_is and writable_is set their fields; a borrow that must write refuses read-only memory", "[arg]") {
    using borrowed = npb::arg<npb::tensor, npb::policy_is<npb::borrow_policy::must_borrow>, npb::writable_is<true>>;
    STATIC_REQUIRE(borrowed::spec.policy == npb::borrow_policy::must_borrow);
    STATIC_REQUIRE(borrowed::spec.writable);
    using copied = npb::arg<npb::tensor, npb::policy_is<npb::borrow_policy::copy>, npb::writable_is<false>>;
    STATIC_REQUIRE(copied::spec.policy == npb::borrow_policy::copy);
    STATIC_REQUIRE_FALSE(copied::spec.writable);
    test::owned read_only = test::eval("np.arange(4, dtype=np.float32)");
    PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(read_only.get()), NPY_ARRAY_WRITEABLE);
    CHECK_THAT(test::message_of<npb::conversion_error>([&] { (void)npb::to_arg<borrowed>(read_only.get()); }),
               Contains("read-only"));
}
