// tools/dtype_table — prints npybridge's dtype table as markdown, from the compile-time data.
#include <npybridge/core/dtype.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace {

using npybridge::dtype_info;
using npybridge::numpy_form;

std::string category_text(const dtype_info& entry) {
    const std::string name(npybridge::category_name(entry.category));
    return entry.is_quantized && entry.is_packed ? name + " lowbit" : name;
}

std::string number_text(double value) {
    char buffer[32];
    if (std::fabs(value) < 1e15 && value == std::floor(value)) {
        std::snprintf(buffer, sizeof buffer, "%.0f", value);
    } else {
        std::snprintf(buffer, sizeof buffer, "%.7g", value);
    }
    return buffer;
}

std::string numpy_text(const dtype_info& entry) {
    const std::string name(entry.numpy_name());
    switch (entry.form) {
        case numpy_form::builtin: return entry.is_quantized ? name + " + metadata" : name;
        case numpy_form::user_dtype: return name + " (user dtype)";
        case numpy_form::none: return "none";
    }
    return "?";
}

std::string param_text(const dtype_info& entry) {
    if (entry.param_fields == 0) return "–";
    std::string text;
    for (std::size_t i = 0; i < entry.param_fields; ++i) {
        if (i) text += ", ";
        text += entry.param_keys[i];
    }
    return text;
}

std::string range_text(const dtype_info& entry) {
    std::string text = "[" + number_text(entry.range.lo) + ", " + number_text(entry.range.hi) + "]";
    return entry.coding == npybridge::lowbit_coding::odd ? "odd in " + text : text;
}

}  // namespace

int main() {
    std::printf("| name | enum | storage | bits | category | signed | numpy | param | range |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    for (const dtype_info& entry : npybridge::dtype_table) {
        const std::string storage =
            entry.is_packed ? "packed " + std::string(entry.storage) : std::string(entry.storage);
        std::printf("| %.*s | %u | %s | %u | %s | %s | %s | %s | %s |\n", static_cast<int>(entry.name.size()),
                    entry.name.data(), entry.value(), storage.c_str(), entry.bits, category_text(entry).c_str(),
                    entry.is_signed ? "yes" : "no", numpy_text(entry).c_str(), param_text(entry).c_str(),
                    range_text(entry).c_str());
    }
    return 0;
}
