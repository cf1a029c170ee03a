// tools/policy_table — prints docs/policies.md's borrow decision table from the planner's own order
// (core/detail/plan.hpp's borrow_causes): the first check that fails is the copy reason. With --kernels, prints
// docs/performance.md's kernel table (core/detail/kernel_table.hpp's rows): the first row that takes a fill's facts
// names the code that runs.
#include <npybridge/core/detail/kernel_table.hpp>
#include <npybridge/core/detail/plan.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

using namespace npybridge::detail;

/// The members of `set` by name ("any" for all of them).
template <std::size_t N>
std::string members(std::uint32_t set, const char* const (&names)[N]) {
    const std::uint32_t all = (std::uint32_t{1} << N) - 1;
    if ((set & all) == all) return "any";
    std::string text;
    if constexpr (N == source_type_count) {  // the eight integer types as one word
        constexpr std::uint32_t integers = kernel_sets::integers;
        if ((set & integers) == integers) {
            text = "integers";
            set &= ~integers;
        }
    }
    for (std::size_t i = 0; i < N; ++i) {
        if ((set >> i & 1u) == 0) continue;
        text += (text.empty() ? "" : ", ") + std::string(names[i]);
    }
    return text;
}

constexpr const char* route_names[] = {"nothing", "same", "narrow", "convert", "pack", "refuse"};
constexpr const char* check_names[] = {"none", "range", "exact", "overflow", "whole"};
constexpr const char* source_names[] = {"bool",       "int8",      "int16",      "int32",       "int64",    "uint8",
                                        "uint16",     "uint32",    "uint64",     "float16",     "float32",  "float64",
                                        "longdouble", "complex64", "complex128", "clongdouble", "bfloat16", "other"};
constexpr const char* layout_names[] = {"contiguous", "rows", "narrowing transpose",
                                        "transposed", "slab", "undescribed"};
constexpr const char* target_names[] = {"Float32", "Float16", "BFloat16", "Complex64", "integer storage", "other"};

static_assert(sizeof(source_names) / sizeof(*source_names) == source_type_count);
static_assert(sizeof(layout_names) / sizeof(*layout_names) == source_layout_count);
static_assert(sizeof(target_names) / sizeof(*target_names) == target_class_count);

void print_kernels() {
    std::printf(
        "| order | kernel | routes | checks | sources | targets | layouts | needs |\n"
        "|---|---|---|---|---|---|---|---|\n");
    int order = 0;
    for (const kernel_row& row : kernel_rows) {
        std::string needs;
        const auto need = [&](bool required, const char* what) {
            if (required) needs += (needs.empty() ? "" : ", ") + std::string(what);
        };
        need(row.native_aligned, "native, aligned");
        need(row.same_size, "same item size");
        need(row.fresh, "new memory");
        need(row.apart, "apart from the source");
        std::printf("| %d | `%s` | %s | %s | %s | %s | %s | %s |\n", ++order,
                    std::string(kernel_name(row.kernel)).c_str(), members(row.routes, route_names).c_str(),
                    members(row.checks, check_names).c_str(), members(row.sources, source_names).c_str(),
                    members(row.targets, target_names).c_str(), members(row.layouts, layout_names).c_str(),
                    needs.empty() ? "-" : needs.c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--kernels") == 0) {
        print_kernels();
        return 0;
    }
    std::printf("| order | reason begins | when |\n|---|---|---|\n");
    int order = 0;
    for (const auto& row : borrow_causes) {
        std::printf("| %d | `%s` | %s |\n", ++order, row.word, row.when);
    }
    return 0;
}
