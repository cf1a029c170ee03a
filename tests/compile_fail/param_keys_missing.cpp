// expect: npybridge: a param struct's field_names must name every field
#include <npybridge/core/reflect.hpp>
#include <array>
#include <string_view>
struct two_fields_one_key {
    float scale;
    int extra;
    static constexpr std::array<std::string_view, 1> field_names{"scale"};
};
static_assert(npybridge::reflect::keys_match_fields<two_fields_one_key>());
