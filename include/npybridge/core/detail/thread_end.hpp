// npybridge/core/detail/thread_end.hpp — whether Python has ended a thread inside npybridge.
#pragma once

#include <npybridge/core/config.hpp>

#include <atomic>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {
namespace detail {

/// Set once Python ended a thread inside npybridge (gil_release during finalization); references are then dropped
/// without a decref, as the process is exiting.
inline std::atomic<bool> python_ended_a_thread{false};

}  // namespace detail
}  // namespace npybridge
