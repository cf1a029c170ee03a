// tools/policy_table — prints docs/policies.md's borrow decision table from the planner's own order
// (core/detail/plan.hpp's borrow_causes): the first check that fails is the copy reason.
#include <npybridge/core/detail/plan.hpp>

#include <cstdio>

int main() {
    std::printf("| order | reason begins | when |\n|---|---|---|\n");
    int order = 0;
    for (const auto& row : npybridge::detail::borrow_causes) {
        std::printf("| %d | `%s` | %s |\n", ++order, row.word, row.when);
    }
    return 0;
}
