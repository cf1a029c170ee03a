// The owner handle (core/tensor.hpp) and the Python owner behind borrowed tensors (convert.hpp).
#include <catch2/catch.hpp>

#include <npybridge/convert.hpp>

#include "tests/support/python.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace npb = npybridge;

namespace {

/// A block that counts how often it is released (it is never freed: it lives on the test's stack).
struct counting_block : npb::owner_block {
    counting_block()
        : npb::owner_block(
              [](npb::owner_block* self) noexcept { static_cast<counting_block*>(self)->releases.fetch_add(1); }) {}
    std::atomic<int> releases{0};
};

}  // namespace

TEST_CASE("an owner handle counts its copies and releases its block exactly once", "[owner]") {
    SECTION("an empty handle owns nothing") {
        npb::owner_handle empty;
        CHECK_FALSE(empty);
        CHECK(empty.use_count() == 0);
        npb::owner_handle copy = empty;
        CHECK_FALSE(copy);
    }
    SECTION("copies share the block; the last one releases it") {
        counting_block block;
        {
            npb::owner_handle first = npb::owner_handle::adopt(&block);
            CHECK(first.use_count() == 1);
            npb::owner_handle second = first;
            CHECK(first.use_count() == 2);
            npb::owner_handle moved = std::move(second);
            CHECK_FALSE(second);  // NOLINT: a moved-from handle is empty, on purpose
            CHECK(moved.use_count() == 2);
            moved.reset();
            CHECK(block.releases == 0);
            CHECK(first.use_count() == 1);
        }
        CHECK(block.releases == 1);
    }
    SECTION("detach gives up the reference without releasing; adopt takes it back") {
        counting_block block;
        npb::owner_handle handle = npb::owner_handle::adopt(&block);
        npb::owner_block* raw = handle.detach();
        CHECK_FALSE(handle);
        CHECK(block.releases == 0);
        npb::owner_handle::adopt(raw);  // a temporary: released at once
        CHECK(block.releases == 1);
    }
    SECTION("copies made and dropped on many threads release once") {
        counting_block block;
        {
            npb::owner_handle origin = npb::owner_handle::adopt(&block);
            std::atomic<int> too_low{0};  // Catch2's CHECK is not for other threads
            std::vector<std::thread> threads;
            for (int t = 0; t < 4; ++t) {
                threads.emplace_back([origin, &too_low] {  // one copy per thread, then 10,000 more each
                    for (int i = 0; i < 10000; ++i) {
                        npb::owner_handle copy = origin;
                        if (copy.use_count() < 2) too_low.fetch_add(1);
                    }
                });
            }
            for (std::thread& thread : threads) thread.join();
            CHECK(too_low == 0);
            CHECK(origin.use_count() == 1);
        }
        CHECK(block.releases == 1);
    }
}

TEST_CASE("owner handles and shared_ptr convert both ways", "[owner]") {
    auto kept = std::make_shared<int>(7);
    std::weak_ptr<int> watch = kept;
    npb::owner_handle handle = kept;  // any shared_ptr is an owner
    CHECK(kept.use_count() == 2);
    kept.reset();
    CHECK_FALSE(watch.expired());

    int value = 0;
    std::shared_ptr<int> alias = handle.shared(&value);  // for tensor types that store a shared_ptr
    CHECK(alias.get() == &value);
    CHECK(handle.use_count() == 2);
    handle.reset();
    CHECK_FALSE(watch.expired());  // the alias keeps the handle, which keeps the int
    alias.reset();
    CHECK(watch.expired());

    npb::owner_handle none = std::shared_ptr<int>();
    CHECK_FALSE(none);
}

TEST_CASE("tensor::empty keeps block and bytes in one 64-byte aligned allocation", "[owner][tensor]") {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{3} << 20}) {
        const std::size_t shape[] = {n};
        npb::tensor t = npb::tensor::empty(npb::dtype(npb::dtype_enum::Float32), shape, 1);
        CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
        CHECK(t.owner().use_count() == 1);
        if (n > 0) {
            auto* values = static_cast<float*>(t.data());
            values[0] = 1.0f;
            values[n - 1] = 2.0f;  // the whole range is ours (ASan checks)
        }
        npb::tensor copy = t;
        CHECK(t.owner().use_count() == 2);
        CHECK(copy.data() == t.data());
    }
}

TEST_CASE("a borrowed tensor's Python reference is dropped once, on any thread", "[owner][convert]") {
    test::owned array = test::eval("np.arange(4, dtype=np.float32)");
    const Py_ssize_t before = Py_REFCNT(array.get());

    SECTION("released with the GIL held") {
        {
            npb::to_tensor_result<npb::tensor> first = npb::to_tensor(array.get());
            npb::to_tensor_result<npb::tensor> second = npb::to_tensor(array.get());
            CHECK(Py_REFCNT(array.get()) == before + 2);
            npb::tensor copy = first.tensor;
            CHECK(Py_REFCNT(array.get()) == before + 2);  // copies share the one reference
        }
        CHECK(Py_REFCNT(array.get()) == before);
    }
    SECTION("released on a thread that takes the GIL itself") {
        npb::tensor borrowed = npb::to_tensor(array.get()).tensor;
        CHECK(Py_REFCNT(array.get()) == before + 1);
        {
            npb::gil_release unlocked;
            std::thread([moved = std::move(borrowed)]() mutable { moved = npb::tensor(); }).join();
        }
        CHECK(Py_REFCNT(array.get()) == before);
    }
    SECTION("a scoped borrow holds no reference") {
        npb::tensor borrowed = npb::to_tensor(array.get(), npb::to_tensor_options().scoped()).tensor;
        CHECK_FALSE(borrowed.owner());
        CHECK(Py_REFCNT(array.get()) == before);
    }
}

TEST_CASE("sharing a tensor whose dtype has no numpy form names the dtype and leaks nothing", "[owner][convert]") {
    const std::size_t shape[] = {4};
    npb::tensor bytes = npb::tensor::empty(npb::dtype(npb::dtype_enum::Byte), shape, 1);
    CHECK_THROWS_AS(npb::to_array(bytes), npb::dtype_error);
    CHECK_THROWS_WITH(npb::to_array(bytes), Catch::Matchers::Contains("Byte has no numpy form"));
    CHECK(bytes.owner().use_count() == 1);  // no owner reference left behind by the failed conversion
    // A packed dtype without a numpy form cannot even be unpacked into an array.
    npb::tensor uintb4 = npb::tensor::empty(npb::dtype(npb::dtype_enum::UintB4), shape, 1);
    CHECK_THROWS_AS(npb::to_array(uintb4), npb::dtype_error);
    CHECK_THROWS_WITH(npb::to_array(uintb4, npb::share_policy::copy),
                      Catch::Matchers::Contains("UintB4 has no numpy form"));
    CHECK(uintb4.owner().use_count() == 1);
}

TEST_CASE("to_array(std::move(t)) hands the tensor's owner to the array", "[owner][convert]") {
    const std::size_t shape[] = {3};
    SECTION("npybridge::tensor: the array takes the owner over, the tensor is left empty") {
        npb::tensor t = npb::tensor::empty(npb::dtype(npb::dtype_enum::Int32), shape, 1);
        auto* values = static_cast<std::int32_t*>(t.data());
        values[0] = 1;
        values[1] = 2;
        values[2] = 3;
        npb::object array = npb::to_array(std::move(t));
        auto* shared = reinterpret_cast<PyArrayObject*>(array.get());
        CHECK(PyArray_DATA(shared) == values);
        CHECK(PyArray_BASE(shared) != nullptr);
        CHECK(t.data() == nullptr);  // NOLINT: checking the moved-from state, on purpose
        CHECK_FALSE(t.owner());
        CHECK(t.ndim() == 0);
        CHECK(static_cast<std::int32_t*>(PyArray_DATA(shared))[2] == 3);  // alive through the array alone
    }
    SECTION("a failure before the array exists leaves the tensor as it was") {
        npb::tensor bytes = npb::tensor::empty(npb::dtype(npb::dtype_enum::Byte), shape, 1);
        void* data = bytes.data();
        CHECK_THROWS_AS(npb::to_array(std::move(bytes)), npb::dtype_error);
        CHECK(bytes.data() == data);  // NOLINT: not moved from, the conversion failed first
        CHECK(bytes.owner().use_count() == 1);
    }
    SECTION("copy and packed tensors are left alone") {
        npb::tensor t = npb::tensor::empty(npb::dtype(npb::dtype_enum::Int32), shape, 1);
        npb::object copy = npb::to_array(std::move(t), npb::share_policy::copy);
        CHECK(t.owner().use_count() == 1);  // NOLINT
        CHECK(PyArray_DATA(reinterpret_cast<PyArrayObject*>(copy.get())) != t.data());
    }
}

TEST_CASE("arrays sharing a tensor each hold the storage through their own npybridge.owner", "[owner][convert]") {
    const std::size_t shape[] = {16};
    npb::tensor t = npb::tensor::empty(npb::dtype(npb::dtype_enum::Float32), shape, 1);
    // More arrays than the owner objects kept for reuse (64): both the free
    // list and plain deletes run, under ASan in the asan configuration.
    std::vector<npb::object> arrays;
    for (int round = 0; round < 2; ++round) {
        for (int i = 0; i < 100; ++i) arrays.push_back(npb::to_array(t));
        CHECK(t.owner().use_count() == 101);
        PyObject* base = PyArray_BASE(reinterpret_cast<PyArrayObject*>(arrays.front().get()));
        REQUIRE(base != nullptr);
        CHECK(std::string(Py_TYPE(base)->tp_name) == "npybridge.owner");
        CHECK(Py_REFCNT(base) == 1);  // the array's reference alone
        CHECK(PyArray_BASE(reinterpret_cast<PyArrayObject*>(arrays.back().get())) != base);
        arrays.clear();
        CHECK(t.owner().use_count() == 1);
    }
    PyObject* made = PyObject_CallNoArgs(reinterpret_cast<PyObject*>(npb::detail::owner_object::ready_type()));
    CHECK(made == nullptr);  // Python cannot make one
    CHECK(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
}
