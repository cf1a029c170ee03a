// DLPack lifetimes (dlpack.hpp): a producer's deleter runs exactly once — after the imported tensor goes, on
// whichever thread lets it go, never for a capsule that was not consumed by us — and an exported capsule keeps
// the tensor's memory alive until its consumer's deleter call or, unconsumed, until the capsule goes.
#include <catch2/catch.hpp>

#include <npybridge/dlpack.hpp>

#include "tests/support/megbrain_like.hpp"
#include "tests/support/python.hpp"

#include <atomic>
#include <cstring>
#include <thread>

namespace npb = npybridge;
using Catch::Matchers::Contains;

namespace {

std::atomic<int> deleted{0};

/// A DLPack producer over its own six floats, with a deleter that counts.
struct producer {
    float values[6] = {0, 1, 2, 3, 4, 5};
    std::int64_t shape[2] = {2, 3};
    npb::dlpack::DLManagedTensorVersioned versioned{};
    npb::dlpack::DLManagedTensor legacy{};

    npb::dlpack::DLTensor view() {
        return {values, {npb::dlpack::kDLCPU, 0}, 2, {npb::dlpack::kDLFloat, 32, 1}, shape, nullptr, 0};
    }
};

void count_versioned(npb::dlpack::DLManagedTensorVersioned* self) {
    delete static_cast<producer*>(self->manager_ctx);
    ++deleted;
}
void count_legacy(npb::dlpack::DLManagedTensor* self) {
    delete static_cast<producer*>(self->manager_ctx);
    ++deleted;
}

/// A capsule as a producer makes it; its destructor deletes an unconsumed tensor (the protocol's rule).
test::owned versioned_capsule(std::uint64_t flags = 0, npb::dlpack::DLPackVersion version = npb::dlpack::supported) {
    auto* p = new producer;
    p->versioned = {version, p, &count_versioned, flags, p->view()};
    return test::owned{PyCapsule_New(&p->versioned, "dltensor_versioned", [](PyObject* capsule) {
        if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
            auto* m = static_cast<npb::dlpack::DLManagedTensorVersioned*>(
                PyCapsule_GetPointer(capsule, "dltensor_versioned"));
            m->deleter(m);
        }
    })};
}

test::owned legacy_capsule() {
    auto* p = new producer;
    p->legacy = {p->view(), p, &count_legacy};
    return test::owned{PyCapsule_New(&p->legacy, "dltensor", [](PyObject* capsule) {
        if (PyCapsule_IsValid(capsule, "dltensor")) {
            auto* m = static_cast<npb::dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
            m->deleter(m);
        }
    })};
}

/// A tensor type that cannot mark memory read-only, as MegBrain's HostTensorND: writable() is always true.
struct unmarked_tensor : megbrain_like::host_tensor {};

}  // namespace

template <>
struct npybridge::tensor_adapter<unmarked_tensor> : npybridge::tensor_adapter<megbrain_like::host_tensor> {
    using base = npybridge::tensor_adapter<megbrain_like::host_tensor>;
    static bool writable(const unmarked_tensor&) { return true; }
    static unmarked_tensor borrow(const dtype& type, void* data, const tensor_layout& layout, bool writable,
                                  owner_handle owner, const placement& where) {
        unmarked_tensor t;
        static_cast<megbrain_like::host_tensor&>(t) =
            base::borrow(type, data, layout, writable, std::move(owner), where);
        t.read_only = false;
        return t;
    }
    static unmarked_tensor make(const dtype& type, const tensor_layout& layout, lowbit_layout packing,
                                const placement& where) {
        unmarked_tensor t;
        static_cast<megbrain_like::host_tensor&>(t) = base::make(type, layout, packing, where);
        return t;
    }
};

TEST_CASE("read-only DLPack memory follows to_tensor's rule in a tensor type that cannot mark it", "[dlpack][plan]") {
    deleted = 0;
    const std::string unmarked =
        "read-only: the array is read-only and this tensor type cannot mark memory read-only, so C++ could write "
        "through it (to_tensor_options().reading_only() borrows it for reading)";
    SECTION("by default a copy, with to_tensor's reason") {
        test::owned capsule = versioned_capsule(npb::dlpack::flag_read_only);
        auto r = npb::from_dlpack<unmarked_tensor>(capsule.get());
        CHECK_FALSE(r.borrowed);
        CHECK(r.copy_reason == unmarked);
        CHECK(static_cast<const float*>(r.tensor.ptr)[5] == 5.0f);
        test::owned array = test::eval("__import__('numpy').arange(6, dtype='float32')");
        PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(array.get()), NPY_ARRAY_WRITEABLE);
        auto same = npb::to_tensor<unmarked_tensor>(array.get());
        CHECK_FALSE(same.borrowed);
        CHECK(same.copy_reason == r.copy_reason);
    }
    SECTION("reading_only() borrows, and the owner remembers the memory is read-only") {
        test::owned capsule = versioned_capsule(npb::dlpack::flag_read_only);
        auto r = npb::from_dlpack<unmarked_tensor>(capsule.get(), npb::to_tensor_options().reading_only());
        CHECK(r.borrowed);
        CHECK_FALSE(npb::is_writable(r.tensor));
    }
    SECTION("must_borrow refuses, naming the reason") {
        test::owned capsule = versioned_capsule(npb::dlpack::flag_read_only);
        CHECK_THAT(test::message_of<npb::conversion_error>([&] {
                       npb::from_dlpack<unmarked_tensor>(
                           capsule.get(), npb::to_tensor_options().with(npb::borrow_policy::must_borrow));
                   }),
                   Contains("must_borrow: cannot share the memory of the array of shape (2, 3) and dtype float32: " +
                            unmarked));
    }
    SECTION("a type that marks memory read-only borrows it read-only") {
        test::owned capsule = versioned_capsule(npb::dlpack::flag_read_only);
        auto r = npb::from_dlpack<megbrain_like::host_tensor>(capsule.get());
        CHECK(r.borrowed);
        CHECK(r.tensor.read_only);
    }
}

TEST_CASE("an imported DLPack tensor calls its producer's deleter exactly once, when the tensor goes", "[dlpack]") {
    deleted = 0;
    SECTION("versioned capsule, borrowed") {
        test::owned capsule = versioned_capsule();
        npb::to_tensor_result<npb::tensor> r = npb::from_dlpack(capsule.get());
        CHECK(r.borrowed);
        CHECK(r.tensor.writable());
        CHECK(static_cast<const float*>(r.tensor.data())[5] == 5.0f);
        CHECK(std::string(PyCapsule_GetName(capsule.get())) == "used_dltensor_versioned");
        capsule.reset();  // a consumed capsule leaves the tensor alone
        CHECK(deleted == 0);
        r.tensor = npb::tensor();
        CHECK(deleted == 1);
    }
    SECTION("legacy capsule") {
        test::owned capsule = legacy_capsule();
        npb::tensor t = npb::from_dlpack(capsule.get()).tensor;
        capsule.reset();
        CHECK(deleted == 0);
        t = npb::tensor();
        CHECK(deleted == 1);
    }
    SECTION("READ_ONLY gives a read-only tensor; writable() in the options makes it a copy") {
        test::owned capsule = versioned_capsule(npb::dlpack::flag_read_only);
        npb::tensor t = npb::from_dlpack(capsule.get()).tensor;
        CHECK_FALSE(t.writable());
        t = npb::tensor();
        CHECK(deleted == 1);
        test::owned again = versioned_capsule(npb::dlpack::flag_read_only);
        auto copied = npb::from_dlpack(again.get(), npb::to_tensor_options().writable());
        CHECK_FALSE(copied.borrowed);
        CHECK(copied.tensor.writable());
        CHECK(deleted == 2);  // the copy holds nothing of the producer's: its memory went as the copy was made
        again.reset();
        CHECK(deleted == 2);
    }
    SECTION("the last reference dropped on another thread, without the GIL") {
        test::owned capsule = versioned_capsule();
        npb::tensor t = npb::from_dlpack(capsule.get()).tensor;
        capsule.reset();
        {
            npb::gil_release unlocked;
            std::thread([moved = std::move(t)]() mutable { moved = npb::tensor(); }).join();
        }
        CHECK(deleted == 1);
    }
    SECTION("a capsule nobody consumed is deleted by its own destructor, once") {
        test::owned capsule = versioned_capsule();
        capsule.reset();
        CHECK(deleted == 1);
    }
    SECTION("a newer major version is refused and left to its destructor") {
        test::owned capsule = versioned_capsule(0, {2, 0});
        CHECK_THAT(test::message_of<npb::dlpack_error>([&] { npb::from_dlpack(capsule.get()); }),
                   Contains("DLPack 2.0 capsule; npybridge reads DLPack 1.x"));
        CHECK(std::string(PyCapsule_GetName(capsule.get())) == "dltensor_versioned");
        capsule.reset();
        CHECK(deleted == 1);
    }
    SECTION("memory on another device is refused, naming it, and deleted once") {
        auto* p = new producer;
        p->versioned = {npb::dlpack::supported, p, &count_versioned, 0, p->view()};
        p->versioned.dl_tensor.device = {2, 1};
        test::owned capsule{PyCapsule_New(&p->versioned, "dltensor_versioned", nullptr)};
        CHECK_THAT(test::message_of<npb::dlpack_error>([&] { npb::from_dlpack(capsule.get()); }),
                   Contains("on CUDA:1; npybridge reads CPU memory only"));
        CHECK(deleted == 1);
    }
    SECTION("a consumed capsule cannot be imported again") {
        test::owned capsule = versioned_capsule();
        npb::tensor t = npb::from_dlpack(capsule.get()).tensor;
        CHECK_THAT(test::message_of<npb::dlpack_error>([&] { npb::from_dlpack(capsule.get()); }),
                   Contains("already consumed ('used_dltensor_versioned')"));
        t = npb::tensor();
        capsule.reset();
        CHECK(deleted == 1);
    }
    SECTION("an error after consuming still deletes once (too many dimensions for the adapter)") {
        auto* p = new producer;
        static std::int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 6};
        p->versioned = {npb::dlpack::supported, p, &count_versioned, 0, p->view()};
        p->versioned.dl_tensor.ndim = 9;
        p->versioned.dl_tensor.shape = shape;
        test::owned capsule{PyCapsule_New(&p->versioned, "dltensor_versioned", nullptr)};
        CHECK_THROWS_AS(npb::from_dlpack(capsule.get()), npb::conversion_error);
        CHECK(deleted == 1);
    }
}

TEST_CASE("an exported capsule keeps the tensor's memory until its consumer lets go, or until it goes unconsumed",
          "[dlpack]") {
    const std::size_t shape[] = {4, 5};
    npb::tensor source = npb::tensor::empty(npb::dtype(npb::dtype_enum::Int16), shape, 2);
    REQUIRE(source.owner().use_count() == 1);
    SECTION("never consumed") {
        test::owned capsule{
            npb::to_dlpack(source, {npb::dlpack::supported, std::nullopt, std::nullopt, false}).release()};
        CHECK(source.owner().use_count() == 2);
        capsule.reset();
        CHECK(source.owner().use_count() == 1);
    }
    SECTION("consumed by npybridge itself: the imported tensor shares the memory and holds it") {
        test::owned capsule{npb::to_dlpack(source).release()};
        npb::to_tensor_result<npb::tensor> r = npb::from_dlpack(capsule.get());
        CHECK(r.tensor.data() == source.data());
        capsule.reset();
        CHECK(source.owner().use_count() == 2);
        r.tensor = npb::tensor();
        CHECK(source.owner().use_count() == 1);
    }
    SECTION("copy=true exports other memory, flagged IS_COPIED") {
        test::owned capsule{npb::to_dlpack(source, {npb::dlpack::supported, std::nullopt, true, false}).release()};
        auto* managed = static_cast<npb::dlpack::DLManagedTensorVersioned*>(
            PyCapsule_GetPointer(capsule.get(), "dltensor_versioned"));
        CHECK(managed->dl_tensor.data != source.data());
        CHECK(managed->flags == npb::dlpack::flag_is_copied);
        CHECK(source.owner().use_count() == 1);
    }
    SECTION("another device is refused, naming it") {
        npb::dlpack_options options;
        options.device = npb::dlpack::DLDevice{2, 1};
        CHECK_THAT(test::message_of<npb::dlpack_error>([&] { npb::to_dlpack(source, options); }), Contains("CUDA:1"));
    }
}

TEST_CASE("sub-byte DLPack data: packed bits are copied into the packed dtype, padded bytes are read by their low bits",
          "[dlpack]") {
    deleted = 0;
    // int4 values -1, 7, -8, 3 (two's complement nibbles), packed: element i at bits 4i.
    static std::uint8_t packed[2] = {0x7F, 0x38};
    // The same values one per byte (IS_SUBBYTE_TYPE_PADDED), upper bits as a producer may leave them.
    static std::uint8_t padded[4] = {0x0F, 0xF7, 0x08, 0x03};
    static std::int64_t shape[1] = {4};
    const npb::dtype qs4 = npb::dtype::quantized(npb::dtype_enum::QuantizedS4, 0.25);
    auto import = [&](void* data, std::uint64_t flags) {
        auto* p = new producer;
        p->versioned = {npb::dlpack::supported,
                        p,
                        &count_versioned,
                        flags,
                        {data, {npb::dlpack::kDLCPU, 0}, 1, {npb::dlpack::kDLInt, 4, 1}, shape, nullptr, 0}};
        test::owned capsule{PyCapsule_New(&p->versioned, "dltensor_versioned", nullptr)};
        return npb::from_dlpack(capsule.get(), npb::to_tensor_options().as(qs4).with(npb::lowbit_layout::compact))
            .tensor;
    };
    for (std::uint64_t flags : {std::uint64_t{0}, npb::dlpack::flag_subbyte_padded}) {
        CAPTURE(flags);
        npb::tensor t = import(flags == 0 ? static_cast<void*>(packed) : static_cast<void*>(padded), flags);
        std::int8_t values[4];
        npb::unpack(npb::dtype_enum::QuantizedS4, t.data(), {4, 4}, values, npb::lowbit_layout::compact);
        CHECK(values[0] == -1);
        CHECK(values[1] == 7);
        CHECK(values[2] == -8);
        CHECK(values[3] == 3);
    }
    CHECK(deleted == 2);  // both producers' memory went once copied
    auto* p = new producer;
    p->versioned = {npb::dlpack::supported,
                    p,
                    &count_versioned,
                    0,
                    {packed, {npb::dlpack::kDLCPU, 0}, 1, {npb::dlpack::kDLInt, 4, 1}, shape, nullptr, 0}};
    test::owned capsule{PyCapsule_New(&p->versioned, "dltensor_versioned", nullptr)};
    CHECK_THAT(test::message_of<npb::dtype_error>([&] { npb::from_dlpack(capsule.get()); }),
               Contains("packed DLPack int4 data needs a packed dtype of that coding as dtype (QuantizedS4"));
}
