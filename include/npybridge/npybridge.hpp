// npybridge/npybridge.hpp — the umbrella: everything npybridge offers, in one include.
#pragma once

#include <npybridge/config.hpp>
#include <npybridge/dtype.hpp>
#include <npybridge/numpy.hpp>
#include <npybridge/scalar_types.hpp>
