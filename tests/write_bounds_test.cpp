// tests/write_bounds_test.cpp — the promise "no bit outside the destination changes", swept over packed views.
//
// For every packed dtype, both bit layouts, parent shapes of one to three dimensions and views of them (every
// axis: prefixes, offsets, steps of 1 and 2, reversed where the adapter allows it), copy_into a view and compare
// the parent bit for bit with what the view's elements alone may change. The expected bits come from element
// positions computed here, not from npybridge's own packing code.
#include <catch2/catch.hpp>

#include <npybridge/convert.hpp>

#include "tests/support/megbrain_like.hpp"
#include "tests/support/python.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace npb = npybridge;

namespace {

using megbrain_like::host_tensor;

struct packed_case {
    npb::dtype type;
    npb::lowbit_layout packing;
};

std::vector<packed_case> packed_cases() {
    std::vector<packed_case> cases;
    for (const npb::dtype_info& entry : npb::dtype_table) {
        if (!entry.is_packed) continue;
        const npb::dtype type = !entry.is_quantized                            ? npb::dtype(entry.id)
                                : entry.id == npb::dtype_enum::Quantized4Asymm ? npb::dtype::quantized(entry.id, 0.5, 3)
                                                                               : npb::dtype::quantized(entry.id, 0.5);
        for (auto packing : {npb::lowbit_layout::compact, npb::lowbit_layout::row_aligned}) {
            cases.push_back({type, packing});
        }
    }
    return cases;
}

/// The values a packed dtype can hold, as the int8 / uint8 codes an array carries.
std::vector<int> valid_values(const npb::dtype_info& entry) {
    const npb::detail::lowbit_codec codec = npb::detail::make_codec(entry);
    std::vector<int> values;
    for (unsigned code = 0; code < (1u << entry.bits); ++code) values.push_back(codec.decode[code]);
    return values;
}

/// An int8 (uint8 for unsigned codes) array of `shape` holding `values` in C order.
test::owned array_of(const npb::dtype_info& entry, const std::vector<std::size_t>& shape,
                     const std::vector<int>& values) {
    const bool is_unsigned = entry.range.lo >= 0;
    std::vector<npy_intp> dims(shape.begin(), shape.end());
    test::owned array{
        PyArray_SimpleNew(static_cast<int>(dims.size()), dims.data(), is_unsigned ? NPY_UINT8 : NPY_INT8)};
    auto* data = static_cast<std::uint8_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.get())));
    for (std::size_t i = 0; i < values.size(); ++i) data[i] = static_cast<std::uint8_t>(values[i]);
    return array;
}

std::size_t storage_bytes(const host_tensor& t) {
    return npb::tensor::storage_bytes_for(t.type, npb::tensor_layout::contiguous(t.shape, t.ndim), t.packing);
}

/// A fresh packed tensor of `shape` in `packing` (MegBrain's strides for it), every element valid.
host_tensor make_parent(const packed_case& c, const std::vector<std::size_t>& shape, std::mt19937& random) {
    npb::tensor_layout layout = npb::tensor_layout::contiguous(shape.data(), shape.size());
    if (c.packing == npb::lowbit_layout::row_aligned) {
        layout = npb::tensor_layout::row_aligned(c.type.id(), shape.data(), shape.size());
    }
    host_tensor t = npb::tensor_adapter<host_tensor>::make(c.type, layout, c.packing, {});
    const std::size_t bytes = storage_bytes(t);
    auto* data = static_cast<std::uint8_t*>(t.ptr);
    for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::uint8_t>(random());  // padding too
    return t;
}

}  // namespace

TEST_CASE("copy_into a packed view changes no bit outside the view's elements", "[lowbit][convert][property]") {
    std::mt19937 random(20261203);  // fixed: a failure replays
    const std::vector<std::vector<std::size_t>> shapes = {{1},    {3},    {4},    {5},    {8},    {9},       {17},
                                                          {2, 3}, {2, 4}, {3, 5}, {2, 8}, {3, 9}, {2, 2, 3}, {2, 3, 4}};
    std::size_t views_checked = 0;
    for (const packed_case& c : packed_cases()) {
        const npb::dtype_info& entry = c.type.info();
        const std::vector<int> valid = valid_values(entry);
        for (const auto& shape : shapes) {
            // Per axis: (start, count, step). Prefixes and suffixes on every axis, then a random sample of the rest.
            std::vector<std::vector<std::array<std::size_t, 3>>> views;
            for (std::size_t axis = 0; axis < shape.size(); ++axis) {
                for (std::size_t count = 1; count <= shape[axis]; ++count) {
                    for (std::size_t start : {std::size_t{0}, shape[axis] - count}) {
                        std::vector<std::array<std::size_t, 3>> view;
                        for (std::size_t d = 0; d < shape.size(); ++d) {
                            view.push_back(d == axis ? std::array<std::size_t, 3>{start, count, 1}
                                                     : std::array<std::size_t, 3>{0, shape[d], 1});
                        }
                        views.push_back(view);
                    }
                }
            }
            for (int sample = 0; sample < 40; ++sample) {
                std::vector<std::array<std::size_t, 3>> view;
                for (std::size_t extent : shape) {
                    const std::size_t step = 1 + random() % 2;
                    const std::size_t start = random() % extent;
                    const std::size_t most = (extent - start + step - 1) / step;
                    view.push_back({start, 1 + random() % most, step});
                }
                views.push_back(view);
            }
            for (const auto& view : views) {
                host_tensor parent = make_parent(c, shape, random);
                // The view's first element must start on a whole byte (MegBrain's sub-tensors do).
                std::ptrdiff_t first_element = 0;
                for (std::size_t d = 0; d < shape.size(); ++d) {
                    first_element += static_cast<std::ptrdiff_t>(view[d][0]) * parent.stride[d];
                }
                if ((first_element * static_cast<std::ptrdiff_t>(entry.bits)) % 8 != 0) continue;
                host_tensor sub = parent;
                sub.ptr = static_cast<std::uint8_t*>(parent.ptr) + first_element * entry.bits / 8;
                std::vector<std::size_t> sub_shape;
                for (std::size_t d = 0; d < shape.size(); ++d) {
                    sub.shape[d] = view[d][1];
                    sub.stride[d] = parent.stride[d] * static_cast<std::ptrdiff_t>(view[d][2]);
                    sub_shape.push_back(view[d][1]);
                }
                const std::size_t bytes = storage_bytes(parent);
                const auto* parent_bytes = static_cast<const std::uint8_t*>(parent.ptr);
                const std::vector<std::uint8_t> before(parent_bytes, parent_bytes + bytes);
                // Which parent bits the view's elements own, and the values written there.
                std::vector<std::uint8_t> owned_bits(bytes, 0);
                std::vector<int> values;
                npb::detail::for_each_packed_bit(
                    entry.bits, sub.shape, sub.stride, sub.ndim, [&](std::size_t, std::ptrdiff_t bit) {
                        const std::ptrdiff_t at = first_element * static_cast<std::ptrdiff_t>(entry.bits) + bit;
                        owned_bits[static_cast<std::size_t>(at / 8)] |=
                            static_cast<std::uint8_t>(((1u << entry.bits) - 1u) << (at % 8));
                        values.push_back(valid[random() % valid.size()]);
                    });
                test::owned source = array_of(entry, sub_shape, values);
                npb::copy_into(source.get(), sub);
                ++views_checked;
                CAPTURE(c.type.to_string(), static_cast<int>(c.packing), npb::tuple_text(shape.data(), shape.size()),
                        npb::tuple_text(sub.shape, sub.ndim), npb::tuple_text(sub.stride, sub.ndim), first_element);
                for (std::size_t i = 0; i < bytes; ++i) {
                    CAPTURE(i);
                    REQUIRE((parent_bytes[i] & ~owned_bits[i]) == (before[i] & ~owned_bits[i]));
                }
                // The view's elements hold the values written, read from the bits directly.
                const npb::detail::lowbit_codec codec = npb::detail::make_codec(entry);
                std::size_t next = 0;
                npb::detail::for_each_packed_bit(
                    entry.bits, sub.shape, sub.stride, sub.ndim, [&](std::size_t, std::ptrdiff_t bit) {
                        const std::ptrdiff_t at = first_element * static_cast<std::ptrdiff_t>(entry.bits) + bit;
                        const unsigned code = (parent_bytes[at / 8] >> (at % 8)) & codec.code_mask;
                        CAPTURE(next);
                        REQUIRE(static_cast<int>(codec.decode[code]) == values[next++]);
                    });
            }
        }
    }
    CHECK(views_checked > 2000);  // the sweep reached its cases (the byte-start filter drops some)
}

TEST_CASE("copy_into a view of a plain tensor changes no byte outside the view's elements", "[convert][property]") {
    std::mt19937 random(39);  // fixed: a failure replays
    const std::vector<std::vector<std::size_t>> shapes = {{7}, {3, 5}, {4, 4}, {2, 3, 4}};
    std::size_t views_checked = 0;
    for (const char* numpy_name : {"int8", "int16", "float32", "complex64"}) {
        test::owned descr_object = test::eval(std::string("np.dtype('") + numpy_name + "')");
        const npb::dtype type =
            npb::from_numpy_dtype(reinterpret_cast<PyArray_Descr*>(descr_object.get()), npb::narrowing::reject).type;
        const std::size_t itemsize = type.info().element_size;
        for (const auto& shape : shapes) {
            for (int sample = 0; sample < 60; ++sample) {
                const npb::tensor_layout layout = npb::tensor_layout::contiguous(shape.data(), shape.size());
                host_tensor parent =
                    npb::tensor_adapter<host_tensor>::make(type, layout, npb::lowbit_layout::compact, {});
                const std::size_t bytes = layout.count() * itemsize;
                auto* data = static_cast<std::uint8_t*>(parent.ptr);
                for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::uint8_t>(random());
                const std::vector<std::uint8_t> before(data, data + bytes);
                host_tensor sub = parent;
                std::ptrdiff_t first = 0;
                std::vector<std::size_t> sub_shape;
                for (std::size_t d = 0; d < shape.size(); ++d) {
                    const std::size_t step = 1 + random() % 2, start = random() % shape[d];
                    const std::size_t count = 1 + random() % ((shape[d] - start + step - 1) / step);
                    first += static_cast<std::ptrdiff_t>(start) * parent.stride[d];
                    sub.shape[d] = count;
                    sub.stride[d] = parent.stride[d] * static_cast<std::ptrdiff_t>(step);
                    sub_shape.push_back(count);
                }
                sub.ptr = data + first * static_cast<std::ptrdiff_t>(itemsize);
                // The bytes the view's elements own, and new values for them (small integers: exact in every type).
                std::vector<bool> owned(bytes, false);
                std::string values = "[";
                npb::detail::for_each_packed_bit(
                    8, sub.shape, sub.stride, sub.ndim, [&](std::size_t, std::ptrdiff_t bit) {
                        const auto at = static_cast<std::size_t>(first + bit / 8) * itemsize;
                        for (std::size_t b = 0; b < itemsize; ++b) owned[at + b] = true;
                        values += std::to_string(static_cast<int>(random() % 100)) + ",";
                    });
                values += "]";
                std::string dims = "(";
                for (std::size_t extent : sub_shape) dims += std::to_string(extent) + ",";
                test::owned source =
                    test::eval("np.array(" + values + ", dtype='" + numpy_name + "').reshape(" + dims + "))");
                npb::copy_into(source.get(), sub);
                ++views_checked;
                CAPTURE(numpy_name, npb::tuple_text(shape.data(), shape.size()), npb::tuple_text(sub.shape, sub.ndim),
                        npb::tuple_text(sub.stride, sub.ndim), first);
                for (std::size_t i = 0; i < bytes; ++i) {
                    if (owned[i]) continue;
                    CAPTURE(i);
                    REQUIRE(data[i] == before[i]);
                }
                npb::object back = npb::to_array(sub);
                test::owned equal{PyObject_RichCompare(back.get(), source.get(), Py_EQ)};
                REQUIRE(PyObject_IsTrue(test::owned{PyObject_CallMethod(equal.get(), "all", nullptr)}.get()) == 1);
            }
        }
    }
    CHECK(views_checked == 4 * 4 * 60);
}
