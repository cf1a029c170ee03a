// MegEngine's python_helper names (npybridge/megengine_compat.hpp) over the MegBrain-like tensor of
// tests/support/megbrain_like.hpp: a project that used `npy::np2tensor` and friends keeps its calls.
#include <catch2/catch.hpp>

#include <npybridge/megengine_compat.hpp>

#include "tests/support/megbrain_like.hpp"
#include "tests/support/python.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace npb = npybridge;
namespace npy = npybridge::npy;
using Catch::Matchers::Contains;
using megbrain_like::host_tensor;

TEST_CASE("np2tensor borrows where asked, must_borrow shares or says why, copy_into replaces a tensor", "[megengine]") {
    test::owned array = test::eval("np.arange(6, dtype=np.float32).reshape(2, 3)");
    void* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.get()));
    using Meth = npy::Meth<host_tensor>;

    host_tensor borrowed = npy::np2tensor(array.get(), Meth::borrow());
    CHECK(borrowed.ptr == data);
    CHECK(borrowed.where.device == 0);  // the adapter's default placement
    host_tensor placed = npy::np2tensor(array.get(), Meth::must_borrow(megbrain_like::place{3}));
    CHECK(placed.ptr == data);
    CHECK(placed.where.device == 3);

    test::owned reversed = test::eval("np.arange(6, dtype=np.float32)[::-1]");
    host_tensor copied = npy::np2tensor(reversed.get(), Meth::borrow(megbrain_like::place{2}));
    CHECK(copied.ptr != PyArray_DATA(reinterpret_cast<PyArrayObject*>(reversed.get())));
    CHECK(static_cast<const float*>(copied.ptr)[0] == 5.0f);
    CHECK(copied.where.device == 2);  // copies are made where asked too
    CHECK_THAT(test::message_of<npb::conversion_error>([&] { npy::np2tensor(reversed.get(), Meth::must_borrow()); }),
               Contains("must_borrow") && Contains("cannot be described by this tensor type"));

    // With a dtype: int64 values into Int16, checked.
    test::owned wide = test::eval("np.array([1, -2, 3])");
    host_tensor narrow = npy::np2tensor(wide.get(), Meth::borrow(), npb::dtype(npb::dtype_enum::Int16));
    CHECK(narrow.type.id() == npb::dtype_enum::Int16);
    CHECK(static_cast<const std::int16_t*>(narrow.ptr)[1] == -2);

    // copy_into, as MegEngine's: the destination becomes a copy of the array, made where the destination is;
    // tensors that shared its old memory keep it.
    test::owned zeros = test::eval("np.zeros((2, 3), np.float32)");
    host_tensor dest = npy::np2tensor(zeros.get(), Meth::borrow(megbrain_like::place{5}));
    const host_tensor old = dest;
    test::owned source = test::eval("np.full((3, 2), 7, np.float32)");
    host_tensor filled = npy::np2tensor(source.get(), Meth::copy_into(&dest));
    CHECK(filled.ptr == dest.ptr);
    CHECK(dest.ptr != PyArray_DATA(reinterpret_cast<PyArrayObject*>(source.get())));
    CHECK(dest.shape[0] == 3);
    CHECK(dest.where.device == 5);
    CHECK(static_cast<const float*>(dest.ptr)[5] == 7.0f);
    CHECK(static_cast<const float*>(old.ptr)[0] == 0.0f);
    test::owned bad = test::eval("np.array([1, 300])");
    CHECK_THAT(test::message_of<npb::value_range_error>(
                   [&] { npy::np2tensor(bad.get(), Meth::copy_into(&dest), npb::dtype(npb::dtype_enum::Int8)); }),
               Contains("300"));
    CHECK(dest.shape[0] == 3);  // untouched on error
    CHECK(static_cast<const float*>(dest.ptr)[0] == 7.0f);
}

TEST_CASE("as_megengine over npybridge's own tensor: MegEngine's bytes, and a refusal naming the cast value",
          "[megengine]") {
    using Meth = npy::Meth<>;
    const auto bytes_of = [](const npb::tensor& t) {
        const auto* first = static_cast<const unsigned char*>(t.data());
        return std::vector<unsigned char>(first, first + t.storage_bytes());
    };
    // Plain types: NumPy's unsafe cast, as MegEngine (int64 300 into Int8 is 44), where checked refuses.
    test::owned wide = test::eval("np.array([300, -1])");
    const npb::dtype int8(npb::dtype_enum::Int8);
    CHECK(bytes_of(npy::np2tensor(wide.get(), Meth::borrow().as_megengine(), int8)) ==
          std::vector<unsigned char>{44, 255});
    CHECK_THAT(test::message_of<npb::value_range_error>([&] { npy::np2tensor(wide.get(), Meth::borrow(), int8); }),
               Contains("value 300 at index (0,)"));

    // Packed codes: NumPy's cast into the storage (int8 for QuantizedS4), then checked: uint8 255 and 248 are -1, -8.
    const npb::dtype qs4 = npb::dtype::quantized(npb::dtype_enum::QuantizedS4, 1.0);
    test::owned codes = test::eval("np.array([255, 248, 3], np.uint8)");
    const npb::tensor cast = npy::np2tensor(codes.get(), Meth::borrow().as_megengine(), qs4);
    CHECK(bytes_of(cast) == bytes_of(npy::np2tensor(test::eval("np.int8([-1, -8, 3])").get(), Meth::borrow(), qs4)));
    CHECK_THAT(test::message_of<npb::value_range_error>(
                   [&] { npy::np2tensor(codes.get(), Meth::borrow().with(npb::narrowing::wrap), qs4); }),
               Contains("value 255 at index (0,)"));
    // A code still out of range after the cast: refused, saying the value named is the cast one.
    test::owned far = test::eval("np.array([100, 1], np.uint8)");
    CHECK_THAT(test::message_of<npb::value_range_error>(
                   [&] { npy::np2tensor(far.get(), Meth::borrow().as_megengine(), qs4); }),
               Contains("value 100 at index (0,)") && Contains("casts the array to int8 first"));
    // with() leaves MegEngine's mode.
    CHECK(Meth::borrow().as_megengine().megengine());
    CHECK_FALSE(Meth::borrow().as_megengine().with(npb::narrowing::checked).megengine());
}

TEST_CASE("ndarray_from_tensor honours MUST_SHARE, MUST_UNSHARE and TRY_SHARE", "[megengine]") {
    test::owned array = test::eval("np.arange(6, dtype=np.int32)");
    host_tensor t = npy::np2tensor(array.get(), npy::Meth<host_tensor>::borrow());
    test::owned shared{npy::ndarray_from_tensor(t, npy::ShareType::MUST_SHARE)};
    CHECK(PyArray_DATA(reinterpret_cast<PyArrayObject*>(shared.get())) == t.ptr);
    test::owned tried{npy::ndarray_from_tensor(t, npy::ShareType::TRY_SHARE)};
    CHECK(PyArray_DATA(reinterpret_cast<PyArrayObject*>(tried.get())) == t.ptr);
    test::owned copy{npy::ndarray_from_tensor(t, npy::ShareType::MUST_UNSHARE)};
    CHECK(PyArray_DATA(reinterpret_cast<PyArrayObject*>(copy.get())) != t.ptr);
    CHECK(static_cast<const std::int32_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(copy.get())))[5] == 5);

    test::owned values = test::eval("np.array([1, -1, 1], np.int8)");
    host_tensor packed =
        npy::np2tensor(values.get(), npy::Meth<host_tensor>::borrow(), npb::dtype(npb::dtype_enum::IntB1));
    CHECK_THAT(
        test::message_of<npb::conversion_error>([&] { npy::ndarray_from_tensor(packed, npy::ShareType::MUST_SHARE); }),
        Contains("must_share") && Contains("IntB1"));
    test::owned unpacked{npy::ndarray_from_tensor(packed, npy::ShareType::TRY_SHARE)};
    CHECK(PyArray_SIZE(reinterpret_cast<PyArrayObject*>(unpacked.get())) == 3);
}

TEST_CASE("dtype_mgb2np, dtype_np2mgb and to_mgb_supported_dtype", "[megengine]") {
    // A numpy.dtype, as MegEngine 1.13's dtype_mgb2np returns.
    test::owned float32_type{npy::dtype_mgb2np(npb::dtype(npb::dtype_enum::Float32))};
    REQUIRE(PyArray_DescrCheck(float32_type.get()));
    CHECK(reinterpret_cast<PyArray_Descr*>(float32_type.get())->type_num == NPY_FLOAT32);
    test::owned quantized{npy::dtype_mgb2np(npb::dtype::quantized(npb::dtype_enum::QuantizedS8, 0.25))};
    REQUIRE(PyArray_DescrCheck(quantized.get()));
    CHECK(npy::dtype_np2mgb(quantized.get()) == npb::dtype::quantized(npb::dtype_enum::QuantizedS8, 0.25));
    CHECK(npy::dtype_np2mgb(test::eval("'int16'").get()) == npb::dtype(npb::dtype_enum::Int16));
    CHECK_THAT(test::message_of<npb::dtype_error>([] { npy::dtype_np2mgb(test::eval("np.int64").get()); }),
               Contains("int64"));
    CHECK_THAT(test::message_of<npb::dtype_error>([] { npy::dtype_np2mgb(Py_None); }), Contains("None"));

    test::owned supported{npy::to_mgb_supported_dtype(test::eval("np.float64").get())};
    CHECK(supported.get() == reinterpret_cast<PyObject*>(&PyFloat32ArrType_Type));
    test::owned same{npy::to_mgb_supported_dtype(test::eval("'uint8'").get())};
    CHECK(same.get() == reinterpret_cast<PyObject*>(&PyUInt8ArrType_Type));
    CHECK_THAT(test::message_of<npb::dtype_error>([&] { npy::to_mgb_supported_dtype(quantized.get()); }),
               Contains("unexpected metadata"));
}

TEST_CASE("PyExceptionForward carries a Python error through C++ and restores it", "[megengine]") {
    PyErr_SetString(PyExc_KeyError, "from python");
    try {
        npy::PyExceptionForward::throw_();
        FAIL("throw_ returned");
    } catch (npy::PyExceptionForward& e) {
        CHECK_FALSE(PyErr_Occurred());
        e.restore();
        REQUIRE(PyErr_ExceptionMatches(PyExc_KeyError));
        PyErr_Clear();
    }
}

TEST_CASE("OprPyTracker tags keys created in a scope", "[megengine]") {
    npy::OprPyTracker<int> tracker;
    test::owned tag = test::eval("'graph building step'");
    {
        auto scope = tracker.enter(tag.get());
        tracker.on_create(1);
    }
    CHECK_THAT(tracker.blame(1, "bad shape"), Contains("bad shape") && Contains("graph building step"));
}
