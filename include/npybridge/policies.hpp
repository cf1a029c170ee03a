// npybridge/policies.hpp — the choices a conversion takes (borrow / share policies, narrowing, to_tensor's
// options and result): the Python-free vocabulary of core/options.hpp, under its public name.
#pragma once

#include <npybridge/core/options.hpp>
