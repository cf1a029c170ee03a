// Entry point for the static_assert files: their facts were checked when they
// compiled, so reaching main is the whole test.
int main() { return 0; }
