// npybridge/policies.hpp — a conversion's policies and options: core/options.hpp under its public name.
#pragma once

#include <npybridge/core/options.hpp>
