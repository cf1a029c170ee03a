// The adapter customization point with a second, deliberately different tensor type (docs/extending.md).
#include <catch2/catch.hpp>

#include <npybridge/convert.hpp>
#include <npybridge/megengine_compat.hpp>

#include "tests/support/megbrain_like.hpp"
#include "tests/support/python.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace npb = npybridge;
using Catch::Matchers::Contains;

// Both adapters meet the contract (tests/compile_fail has adapters that do not).
static_assert(npybridge::check_adapter<megbrain_like::host_tensor>());
static_assert(npybridge::check_adapter<npybridge::tensor>());

using megbrain_like::host_tensor;

TEST_CASE("a MegBrain-like tensor borrows what it can describe and copies the rest", "[adapter][convert]") {
    test::owned array = test::eval("np.arange(12, dtype=np.float32).reshape(3, 4)");
    auto* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.get()));

    SECTION("contiguous memory is borrowed, and the borrow keeps the array alive") {
        const Py_ssize_t before = Py_REFCNT(array.get());
        {
            auto result = npb::to_tensor<host_tensor>(array.get());
            CHECK(result.borrowed);
            CHECK(result.tensor.ptr == data);
            CHECK(result.tensor.ndim == 2);
            CHECK(result.tensor.stride[0] == 4);
            CHECK(Py_REFCNT(array.get()) == before + 1);
        }
        CHECK(Py_REFCNT(array.get()) == before);
    }
    SECTION("negative strides are copied, with the reason") {
        test::owned reversed = test::eval("np.arange(6, dtype=np.int32)[::-1]");
        auto result = npb::to_tensor<host_tensor>(reversed.get());
        CHECK_FALSE(result.borrowed);
        CHECK_THAT(result.copy_reason, Contains("cannot be described by this tensor type"));
        const auto* values = static_cast<const std::int32_t*>(result.tensor.ptr);
        CHECK(values[0] == 5);
        CHECK(values[5] == 0);
        npb::to_tensor_options must;
        must.policy = npb::borrow_policy::must_borrow;
        CHECK_THAT(test::message_of<npb::conversion_error>([&] { npb::to_tensor<host_tensor>(reversed.get(), must); }),
                   Contains("must_borrow") && Contains("strides: (-4,)"));
    }
    SECTION("a 0-d array becomes shape (1,), as in MegBrain") {
        test::owned scalar = test::eval("np.array(2.5, dtype=np.float32)");
        auto result = npb::to_tensor<host_tensor>(scalar.get());
        CHECK(result.tensor.ndim == 1);
        CHECK(result.tensor.shape[0] == 1);
        CHECK(*static_cast<const float*>(result.tensor.ptr) == 2.5f);
    }
    SECTION("eight dimensions are one too many") {
        test::owned deep = test::eval("np.zeros((1,) * 8, dtype=np.float32)");
        CHECK_THAT(test::message_of<npb::conversion_error>([&] { npb::to_tensor<host_tensor>(deep.get()); }),
                   Contains("has 8 dimensions; the tensor type holds at most 7"));
    }
    SECTION("a read-only array is borrowed read-only, or copied when a writable tensor is required") {
        test::owned frozen = test::eval("(lambda a: (a.setflags(write=False), a)[1])(np.arange(3, dtype=np.int16))");
        auto view = npb::to_tensor<host_tensor>(frozen.get());
        CHECK(view.borrowed);
        CHECK(view.tensor.read_only);
        npb::to_tensor_options writable;
        writable.require_writable = true;
        auto copy = npb::to_tensor<host_tensor>(frozen.get(), writable);
        CHECK_FALSE(copy.borrowed);
        CHECK_THAT(copy.copy_reason, Contains("read-only"));
        writable.policy = npb::borrow_policy::must_borrow;
        CHECK_THAT(
            test::message_of<npb::conversion_error>([&] { npb::to_tensor<host_tensor>(frozen.get(), writable); }),
            Contains("read-only"));
    }
}

TEST_CASE("a MegBrain-like tensor shares its memory with numpy", "[adapter][convert]") {
    test::owned source = test::eval("np.arange(6, dtype=np.int16).reshape(2, 3)");
    host_tensor copied =
        npb::to_tensor<host_tensor>(source.get(), npb::to_tensor_options().with(npb::borrow_policy::copy)).tensor;
    npb::object shared = npb::to_array(copied);
    auto* array = reinterpret_cast<PyArrayObject*>(shared.get());
    CHECK(PyArray_DATA(array) == copied.ptr);
    CHECK(PyArray_NDIM(array) == 2);
    CHECK(copied.storage.use_count() == 2);  // the tensor and the array's owner object
    shared = npb::object();
    CHECK(copied.storage.use_count() == 1);
    // Without take_owner in its adapter, to_array(std::move(t)) copies the owner as above.
    npb::object moved = npb::to_array(std::move(copied));
    CHECK(copied.storage.use_count() == 2);  // NOLINT: the adapter left the tensor as it was
    CHECK_THAT(test::message_of<npb::conversion_error>([&] {
                   host_tensor packed =
                       npb::to_tensor<host_tensor>(test::eval("np.array([1, -1, 1], dtype=np.int8)").get(),
                                                   npb::to_tensor_options().as(npb::dtype(npb::dtype_enum::IntB1)))
                           .tensor;
                   npb::to_array(packed, npb::share_policy::must_share);
               }),
               Contains("must_share: IntB1 is packed"));
}

TEST_CASE("copy_into checks shape and dtype and leaves the destination as it was on any error", "[adapter][convert]") {
    test::owned zeros = test::eval("np.zeros((2, 3), dtype=np.int32)");
    host_tensor destination =
        npb::to_tensor<host_tensor>(zeros.get(), npb::to_tensor_options().with(npb::borrow_policy::copy)).tensor;
    auto* values = static_cast<std::int32_t*>(destination.ptr);
    values[0] = 7;

    SECTION("a good copy lands") {
        test::owned ints = test::eval("np.arange(6, dtype=np.int64).reshape(2, 3)");
        npb::copy_into(ints.get(), destination);
        CHECK(values[5] == 5);
    }
    SECTION("same storage copies straight in: strided, byte-swapped, or plain codes into a quantized tensor") {
        test::owned strided = test::eval("np.arange(12, dtype=np.int32).reshape(2, 6)[:, ::2]");
        npb::copy_into(strided.get(), destination);
        CHECK(values[0] == 0);
        CHECK(values[2] == 4);
        CHECK(values[5] == 10);
        test::owned swapped = test::eval("np.arange(6, dtype='>i4').reshape(2, 3) * 256");
        npb::copy_into(swapped.get(), destination);
        CHECK(values[1] == 256);
        CHECK(values[5] == 1280);
        test::owned codes = test::eval("np.zeros((2, 2), dtype=np.int8)");
        host_tensor quantized =
            npb::to_tensor<host_tensor>(codes.get(), npb::to_tensor_options()
                                                         .as(npb::dtype::quantized(npb::dtype_enum::QuantizedS8, 0.5))
                                                         .with(npb::borrow_policy::copy))
                .tensor;
        test::owned plain = test::eval("np.array([[1, -2], [3, -128]], dtype=np.int8)");
        npb::copy_into(plain.get(), quantized);
        CHECK(static_cast<std::int8_t*>(quantized.ptr)[1] == -2);
        CHECK(static_cast<std::int8_t*>(quantized.ptr)[3] == -128);
    }
    SECTION("strided sources into a strided (transposed) destination, every pairing of layouts") {
        test::owned memory = test::eval("np.zeros((7, 5), dtype=np.int32)");
        test::owned transposed{PyObject_GetAttrString(memory.get(), "T")};
        host_tensor strided = npb::to_tensor<host_tensor>(transposed.get()).tensor;
        REQUIRE((strided.stride[0] == 1 && strided.stride[1] == 5));
        for (const char* source : {"np.arange(35, dtype=np.int32).reshape(5, 7)",
                                   "np.arange(35, dtype=np.int32).reshape(7, 5).T[::-1, ::-1]",
                                   "np.arange(35, dtype='>i4').reshape(7, 5).T[:, ::-1]"}) {
            test::owned values_array = test::eval(source);
            npb::copy_into(values_array.get(), strided);
            test::owned equal = test::eval("lambda m, s: bool((m.T == s).all())");
            test::owned result{PyObject_CallFunctionObjArgs(equal.get(), memory.get(), values_array.get(), nullptr)};
            CAPTURE(source);
            CHECK(result.get() == Py_True);
        }
    }
    SECTION("a source sharing the destination's memory is read before it is overwritten") {
        test::owned base = test::eval("np.arange(6, dtype=np.int32).reshape(2, 3)");
        host_tensor borrowed = npb::to_tensor<host_tensor>(base.get()).tensor;
        REQUIRE(PyArray_DATA(reinterpret_cast<PyArrayObject*>(base.get())) == borrowed.ptr);
        test::owned reversed{
            PyObject_GetItem(base.get(), test::eval("(slice(None, None, -1), slice(None, None, -1))").get())};
        REQUIRE(reversed);
        npb::copy_into(reversed.get(), borrowed);
        const auto* got = static_cast<const std::int32_t*>(borrowed.ptr);
        CHECK(got[0] == 5);
        CHECK(got[2] == 3);
        CHECK(got[3] == 2);
        CHECK(got[5] == 0);
    }
    SECTION("checked narrowing failure: untouched") {
        test::owned big = test::eval("np.array([[1, 2, 3], [4, 5, 2**40]])");
        CHECK_THAT(test::message_of<npb::value_range_error>([&] { npb::copy_into(big.get(), destination); }),
                   Contains("at index (1, 2)"));
        CHECK(values[0] == 7);
        CHECK(values[1] == 0);
    }
    SECTION("narrowing checks every value before writing any, wraps on request, and takes care of shared memory") {
        test::owned fits = test::eval("np.array([[1, -2, 3], [4, 5, -(2**31)]])");
        npb::copy_into(fits.get(), destination);
        CHECK(values[1] == -2);
        CHECK(values[5] == INT32_MIN);
        test::owned first_bad = test::eval("np.array([[2**31, 0, 0], [0, 0, 9]])");
        CHECK_THAT(test::message_of<npb::value_range_error>([&] { npb::copy_into(first_bad.get(), destination); }),
                   Contains("value 2147483648 at index (0, 0)"));
        CHECK(values[1] == -2);  // untouched, though the bad value comes first
        npb::copy_into(first_bad.get(), destination, npb::to_tensor_options().with(npb::narrowing::wrap));
        CHECK(values[0] == INT32_MIN);
        CHECK(values[5] == 9);
        // An int64 view over the int32 tensor's own memory (and beyond): staged, so no value is read after it is overwritten.
        test::owned memory = test::eval("np.zeros(8, dtype=np.int32)");
        test::owned tail{PyObject_GetItem(memory.get(), test::eval("slice(4, 8)").get())};
        host_tensor shared = npb::to_tensor<host_tensor>(tail.get()).tensor;
        test::owned wide{PyObject_CallMethod(memory.get(), "view", "s", "int64")};
        REQUIRE(wide);
        test::owned set{PyObject_CallMethod(wide.get(), "__setitem__", "(OO)", test::eval("slice(None)").get(),
                                            test::eval("[1, 2, 3, 4]").get())};
        REQUIRE(set);
        npb::copy_into(wide.get(), shared);
        const auto* got = static_cast<const std::int32_t*>(shared.ptr);
        CHECK((got[0] == 1 && got[1] == 2 && got[2] == 3 && got[3] == 4));
    }
    SECTION("float64 into Float32: a value that would become infinite is refused, infinities pass") {
        test::owned zeros32 = test::eval("np.zeros(3, dtype=np.float32)");
        host_tensor floats =
            npb::to_tensor<host_tensor>(zeros32.get(), npb::to_tensor_options().with(npb::borrow_policy::copy)).tensor;
        auto* f = static_cast<float*>(floats.ptr);
        test::owned good = test::eval("np.array([1.5, -np.inf, np.nan])");
        npb::copy_into(good.get(), floats);
        CHECK(f[0] == 1.5f);
        CHECK(std::isinf(f[1]));
        CHECK(std::isnan(f[2]));
        test::owned too_big = test::eval("np.array([2.0, 3.0, 1e39])");
        CHECK_THAT(test::message_of<npb::value_range_error>([&] { npb::copy_into(too_big.get(), floats); }),
                   Contains("at index (2,)"));
        CHECK(f[0] == 1.5f);
    }
    SECTION("other dtypes follow to_tensor's narrowing rules") {
        // int8 -> Int32 widens (even under reject); int32 / int64 -> Int8 narrow with a check, as to_tensor does.
        test::owned small = test::eval("np.arange(6, dtype=np.int8).reshape(2, 3)");
        npb::copy_into(small.get(), destination, npb::to_tensor_options().with(npb::narrowing::reject));
        CHECK(values[5] == 5);
        const std::size_t shape[] = {2, 3};
        npb::tensor bytes = npb::tensor::empty(npb::dtype(npb::dtype_enum::Int8), shape, 2);
        test::owned wide = test::eval("np.array([[1, -2, 3], [4, 5, 127]], dtype=np.int64)");
        npb::copy_into(wide.get(), bytes);
        CHECK(static_cast<const std::int8_t*>(bytes.data())[5] == 127);
        test::owned too_wide = test::eval("np.array([[1, -2, 3], [4, 5, 300]], dtype=np.int32)");
        CHECK_THAT(test::message_of<npb::value_range_error>([&] { npb::copy_into(too_wide.get(), bytes); }),
                   Contains("value 300 at index (1, 2)"));
        CHECK(static_cast<const std::int8_t*>(bytes.data())[5] == 127);  // untouched
        npb::to_tensor_options reject = npb::to_tensor_options().with(npb::narrowing::reject);
        CHECK_THAT(test::message_of<npb::dtype_error>([&] { npb::copy_into(wide.get(), bytes, reject); }),
                   Contains("int64") && Contains("narrowing='reject'"));
    }
    SECTION("shape and dtype mismatches are named") {
        test::owned wrong_shape = test::eval("np.zeros((3, 2), dtype=np.int32)");
        CHECK_THAT(test::message_of<npb::conversion_error>([&] { npb::copy_into(wrong_shape.get(), destination); }),
                   Contains("does not match the tensor's shape (2, 3)"));
        test::owned not_whole = test::eval("np.array([[1, 2, 3], [4, 5.5, 6]], dtype=np.float32)");
        // to_tensor's rules: floats go into Int32 only as whole numbers, every one checked before any is written.
        CHECK_THAT(test::message_of<npb::value_range_error>([&] { npb::copy_into(not_whole.get(), destination); }),
                   Contains("narrowing float32 to Int32: value 5.5 at index (1, 1) is not held exactly by Int32"));
        CHECK(values[0] == 7);
        test::owned complex = test::eval("np.zeros((2, 3), dtype=np.complex64)");
        CHECK_THAT(test::message_of<npb::dtype_error>([&] { npb::copy_into(complex.get(), destination); }),
                   Contains("cannot cast numpy complex64 to Int32"));
        CHECK(values[0] == 7);
    }
    SECTION("packed destination: an invalid value leaves the bytes as they were") {
        test::owned codes = test::eval("np.array([[1, -1, 3], [3, 1, -3]], dtype=np.int8)");
        host_tensor packed =
            npb::to_tensor<host_tensor>(codes.get(), npb::to_tensor_options().as(npb::dtype(npb::dtype_enum::IntB2)))
                .tensor;
        std::vector<std::uint8_t> before(static_cast<std::uint8_t*>(packed.ptr),
                                         static_cast<std::uint8_t*>(packed.ptr) + 2);
        test::owned bad = test::eval("np.array([[1, -1, 3], [3, 2, -3]], dtype=np.int8)");
        CHECK_THAT(test::message_of<npb::value_range_error>([&] { npb::copy_into(bad.get(), packed); }),
                   Contains("IntB2: value 2 at index (1, 1)"));
        CHECK(std::memcmp(before.data(), packed.ptr, 2) == 0);
        test::owned good = test::eval("np.array([[-3, -3, -3], [3, 3, 3]], dtype=np.int8)");
        npb::copy_into(good.get(), packed);
        // IntB2 is compact, as in MegBrain: codes 0,0,0,3 | 3,3 (v = 2c - 3).
        CHECK(static_cast<std::uint8_t*>(packed.ptr)[0] == 0xC0);
        CHECK(static_cast<std::uint8_t*>(packed.ptr)[1] == 0x0F);
    }
    SECTION("a read-only destination is refused") {
        destination.read_only = true;
        CHECK_THAT(test::message_of<npb::conversion_error>([&] { npb::copy_into(zeros.get(), destination); }),
                   Contains("destination tensor is read-only"));
    }
}

// A tensor type with no read-only flag of its own (as MegBrain's HostTensorND): the stand-in whose adapter
// always says "writable".
struct flagless_tensor : host_tensor {};
template <>
struct npybridge::tensor_adapter<flagless_tensor> : npybridge::tensor_adapter<host_tensor> {
    using base = npybridge::tensor_adapter<host_tensor>;
    static bool writable(const host_tensor&) { return true; }
    static flagless_tensor borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable,
                                  owner_handle owner, const placement& where) {
        return {base::borrow(type, data, layout, writable, std::move(owner), where)};
    }
    static flagless_tensor make(const dtype& type, const tensor_layout& layout, lowbit_layout packing,
                                const placement& where) {
        return {base::make(type, layout, packing, where)};
    }
};
static_assert(npybridge::check_adapter<flagless_tensor>());

TEST_CASE("a placement is carried through borrow, make and copy", "[adapter][placement]") {
    test::owned array = test::eval("np.arange(6, dtype=np.float32)");
    CHECK(npb::to_tensor<host_tensor>(array.get()).tensor.where.device == 0);  // the adapter's default
    auto borrowed = npb::to_tensor<host_tensor>(array.get(), {}, megbrain_like::place{4});
    CHECK(borrowed.borrowed);
    CHECK(borrowed.tensor.where.device == 4);
    auto copied =
        npb::to_tensor<host_tensor>(array.get(), npb::to_tensor_options().with(npb::borrow_policy::copy), {5});
    CHECK_FALSE(copied.borrowed);
    CHECK(copied.tensor.where.device == 5);
    test::owned reversed =
        test::eval("np.arange(6, dtype=np.float32)[::-1]");  // copied: the stand-in takes no negative strides
    CHECK(npb::to_tensor<host_tensor>(reversed.get(), {}, {6}).tensor.where.device == 6);
    test::owned codes = test::eval("np.array([1, -1, 3], dtype=np.int8)");
    CHECK(npb::to_tensor<host_tensor>(codes.get(), npb::to_tensor_options().as(npb::dtype(npb::dtype_enum::IntB2)), {7})
              .tensor.where.device == 7);
    CHECK(npb::placement_of(borrowed.tensor).device == 4);
    CHECK(npb::default_placement<host_tensor>().device == 0);
    static_assert(std::is_same_v<npb::placement_t<npb::tensor>, npb::no_placement>);
}

TEST_CASE("a packed tensor is made in the layout asked for, padded strides included", "[adapter][lowbit]") {
    test::owned codes = test::eval("np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.int8)");
    const npb::dtype qs4 = npb::dtype::quantized(npb::dtype_enum::QuantizedS4, 0.5);
    host_tensor t = npb::to_tensor<host_tensor>(codes.get(), npb::to_tensor_options().as(qs4)).tensor;
    // MegBrain's row-aligned QuantizedS4: two bytes a row, element strides (4, 1).
    CHECK(t.packing == npb::lowbit_layout::row_aligned);
    CHECK(t.stride[0] == 4);
    CHECK(t.stride[1] == 1);
    const auto* bytes = static_cast<const std::uint8_t*>(t.ptr);
    CHECK(bytes[0] == 0xE1);  // 1 | -2 << 4 (two's complement nibbles)
    CHECK(bytes[1] == 0x03);
    CHECK(bytes[2] == 0x5C);  // -4 | 5 << 4
    CHECK(bytes[3] == 0x0A);  // -6
    npb::object back = npb::to_array(t);
    test::owned equal{PyObject_RichCompare(back.get(), codes.get(), Py_EQ)};
    CHECK(PyObject_IsTrue(test::owned{PyObject_CallMethod(equal.get(), "all", nullptr)}.get()) == 1);
}

TEST_CASE("packed sub-tensors convert by copy, element by element", "[adapter][lowbit]") {
    // IntB4 (compact, as MegBrain lays it out): columns 0..1 of a (2, 3) tensor start row 1 inside a byte.
    test::owned values = test::eval("np.array([[-15, -13, -11], [-9, -7, -5]], dtype=np.int8)");
    host_tensor whole =
        npb::to_tensor<host_tensor>(values.get(), npb::to_tensor_options().as(npb::dtype(npb::dtype_enum::IntB4)))
            .tensor;
    host_tensor columns = whole;
    columns.shape[1] = 2;  // strides (3, 1) stay: MegBrain's sub-tensor of the same storage
    npb::object array = npb::to_array(columns);
    test::owned expected = test::eval("np.array([[-15, -13], [-9, -7]], dtype=np.int8)");
    test::owned equal{PyObject_RichCompare(array.get(), expected.get(), Py_EQ)};
    CHECK(PyObject_IsTrue(test::owned{PyObject_CallMethod(equal.get(), "all", nullptr)}.get()) == 1);

    SECTION("row-aligned QuantizedS4 columns 1..2 (the sub-tensor starts on byte 0, bit 4)") {
        test::owned codes = test::eval("np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.int8)");
        host_tensor q =
            npb::to_tensor<host_tensor>(
                codes.get(), npb::to_tensor_options().as(npb::dtype::quantized(npb::dtype_enum::QuantizedS4, 0.5)))
                .tensor;
        host_tensor tail = q;  // columns 0..1: whole bytes
        tail.shape[1] = 2;
        npb::object got = npb::to_array(tail);
        test::owned want = test::eval("np.array([[1, -2], [-4, 5]], dtype=np.int8)");
        test::owned same{PyObject_RichCompare(got.get(), want.get(), Py_EQ)};
        CHECK(PyObject_IsTrue(test::owned{PyObject_CallMethod(same.get(), "all", nullptr)}.get()) == 1);
    }
    SECTION("copy_into a packed sub-tensor writes its elements and keeps every other bit") {
        test::owned fresh = test::eval("np.array([[1, 3], [5, 7]], dtype=np.int8)");
        npb::copy_into(fresh.get(), columns);
        npb::object after = npb::to_array(whole);
        test::owned want = test::eval("np.array([[1, 3, -11], [5, 7, -5]], dtype=np.int8)");
        test::owned same{PyObject_RichCompare(after.get(), want.get(), Py_EQ)};
        CHECK(PyObject_IsTrue(test::owned{PyObject_CallMethod(same.get(), "all", nullptr)}.get()) == 1);
        test::owned bad = test::eval("np.array([[1, 2], [5, 7]], dtype=np.int8)");
        CHECK_THAT(test::message_of<npb::value_range_error>([&] { npb::copy_into(bad.get(), columns); }),
                   Contains("IntB4: value 2 at index (0, 1)"));
        npb::object unchanged = npb::to_array(whole);
        test::owned still{PyObject_RichCompare(unchanged.get(), want.get(), Py_EQ)};
        CHECK(PyObject_IsTrue(test::owned{PyObject_CallMethod(still.get(), "all", nullptr)}.get()) == 1);
    }
}

TEST_CASE("read-only memory is never handed back writable, even by a tensor type that cannot mark it",
          "[adapter][readonly]") {
    test::owned frozen = test::eval("(lambda a: (a.setflags(write=False), a)[1])(np.arange(4, dtype=np.int32))");
    // By default such a type never aliases read-only memory (C++ could write through it): a copy, with the reason.
    auto by_default = npb::to_tensor<flagless_tensor>(frozen.get());
    CHECK_FALSE(by_default.borrowed);
    CHECK_THAT(by_default.copy_reason, Contains("read-only") && Contains("reading_only()"));
    CHECK_THAT(test::message_of<npb::conversion_error>([&] {
                   npb::to_tensor<flagless_tensor>(frozen.get(),
                                                   npb::to_tensor_options().with(npb::borrow_policy::must_borrow));
               }),
               Contains("must_borrow") && Contains("read-only"));
    // A caller that only reads says so, and borrows.
    auto result = npb::to_tensor<flagless_tensor>(frozen.get(), npb::to_tensor_options().reading_only());
    REQUIRE(result.borrowed);  // borrowed, and its owner remembers
    CHECK_FALSE(npb::is_writable(result.tensor));
    npb::object back = npb::to_array(result.tensor);
    CHECK_FALSE(PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(back.get())));
    CHECK(PyArray_DATA(reinterpret_cast<PyArrayObject*>(back.get())) == result.tensor.ptr);
    test::owned values = test::eval("np.ones(4, dtype=np.int32)");
    CHECK_THAT(test::message_of<npb::conversion_error>([&] { npb::copy_into(values.get(), result.tensor); }),
               Contains("destination tensor is read-only"));
    CHECK(static_cast<const std::int32_t*>(result.tensor.ptr)[1] == 1);  // 1 from arange: unchanged

    SECTION("a scoped borrow keeps no owner to remember: copied, with the reason") {
        auto scoped = npb::to_tensor<flagless_tensor>(frozen.get(), npb::to_tensor_options().scoped());
        CHECK_FALSE(scoped.borrowed);
        CHECK_THAT(scoped.copy_reason, Contains("read-only") && Contains("cannot mark memory read-only"));
        auto must = npb::to_tensor_options().scoped().with(npb::borrow_policy::must_borrow);
        CHECK_THAT(
            test::message_of<npb::conversion_error>([&] { npb::to_tensor<flagless_tensor>(frozen.get(), must); }),
            Contains("must_borrow") && Contains("read-only"));
        test::owned open = test::eval("np.arange(4, dtype=np.int32)");
        CHECK(npb::to_tensor<flagless_tensor>(open.get(), npb::to_tensor_options().scoped()).borrowed);
    }
}

TEST_CASE("a tensor that borrowed an array shares it back with that array as base", "[adapter][owner]") {
    test::owned array = test::eval("np.arange(6, dtype=np.float32)");
    host_tensor t = npb::to_tensor<host_tensor>(array.get()).tensor;  // its storage is a shared_ptr
    npb::object back = npb::to_array(t);
    CHECK(PyArray_BASE(reinterpret_cast<PyArrayObject*>(back.get())) == array.get());
    // And the owner of a shared_ptr npybridge did not make is still kept alive through one.
    host_tensor made =
        npb::to_tensor<host_tensor>(array.get(), npb::to_tensor_options().with(npb::borrow_policy::copy)).tensor;
    npb::object shared = npb::to_array(made);
    CHECK(PyArray_BASE(reinterpret_cast<PyArrayObject*>(shared.get())) != nullptr);
    CHECK(made.storage.use_count() == 2);
}

TEST_CASE("C++ that writes through a default borrow cannot change memory Python holds read-only",
          "[adapter][readonly][megengine]") {
    namespace npy = npybridge::npy;
    // An immutable bytes object seen by numpy, and a read-only view: MegBrain code writes through ptr<T>().
    for (const char* read_only :
         {"np.frombuffer(bytes(range(16)), np.float32)", "np.arange(4, dtype=np.float32)[::1].view()",
          "np.asarray(memoryview(bytes(16)).cast('f'))"}) {
        CAPTURE(read_only);
        test::owned array = test::eval(std::string("(lambda a: (a.setflags(write=False), a)[1])(") + read_only + ")");
        const void* memory = PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.get()));
        for (auto options :
             {npb::to_tensor_options(), npb::to_tensor_options().as(npb::dtype(npb::dtype_enum::Float32))}) {
            auto result = npb::to_tensor<flagless_tensor>(array.get(), options);
            CHECK_FALSE(result.borrowed);
            CHECK(result.tensor.ptr != memory);
            static_cast<float*>(result.tensor.ptr)[0] = 42.0f;  // what MegBrain code may do: the copy is its own
        }
        flagless_tensor via_meth = npy::np2tensor(array.get(), npy::Meth<flagless_tensor>::borrow());
        CHECK(via_meth.ptr != memory);
        CHECK_THAT(test::message_of<npb::conversion_error>(
                       [&] { npy::np2tensor(array.get(), npy::Meth<flagless_tensor>::must_borrow()); }),
                   Contains("must_borrow") && Contains("read-only"));
        flagless_tensor reading = npy::np2tensor(array.get(), npy::Meth<flagless_tensor>::borrow().for_reading());
        CHECK(reading.ptr == memory);
        CHECK_FALSE(npb::is_writable(reading));
        test::owned back{npy::ndarray_from_tensor(reading, npy::ShareType::TRY_SHARE)};
        CHECK_FALSE(PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(back.get())));
    }
    // npybridge's own tensor marks memory read-only: it borrows, and stays read-only.
    test::owned frozen = test::eval("np.frombuffer(bytes(16), np.float32)");
    auto own = npb::to_tensor(frozen.get());
    CHECK(own.borrowed);
    CHECK_FALSE(npb::is_writable(own.tensor));
}

TEST_CASE("MegEngine's ndarray_from_tensor hands back shared memory read-only, as MegEngine does",
          "[megengine][readonly]") {
    namespace npy = npybridge::npy;
    test::owned array = test::eval("np.arange(6, dtype=np.int32)");
    host_tensor t = npy::np2tensor(array.get(), npy::Meth<host_tensor>::borrow());
    for (auto share : {npy::ShareType::TRY_SHARE, npy::ShareType::MUST_SHARE}) {
        test::owned shared{npy::ndarray_from_tensor(t, share)};
        CHECK(PyArray_DATA(reinterpret_cast<PyArrayObject*>(shared.get())) == t.ptr);
        CHECK_FALSE(PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(shared.get())));
    }
    test::owned copy{npy::ndarray_from_tensor(t, npy::ShareType::MUST_UNSHARE)};
    CHECK(PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(copy.get())));
    // npybridge's own to_array keeps its rule: writable memory comes back writable.
    npb::object own = npb::to_array(t);
    CHECK(PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(own.get())));
}
