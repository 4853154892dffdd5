// A process of the test's standing in for a sandbox's init, for the daemon's users of a sandbox's network namespace.
// Header-only, so any test binary may use it.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "daemon/netns_dial.h"
#include "engine/namespaces_runtime.h"
#include "engine/spawner.h"

namespace isb::testing {

// Opens the network namespace of the process `pid` as the namespaces runtime does for a sandbox whose init it is,
// started at `start_time`: only while that process runs, kConflict "the sandbox is not running" otherwise.
inline daemon::NetnsOpener ProcessNetns(pid_t pid, uint64_t start_time) {
  return [pid, start_time] {
    engine::NamespacesRuntime runtime(nullptr, {}, "/run/isb", "/nonexistent");
    return runtime.OpenNetwork({"sb", engine::NamespacesRuntime::Record({pid, start_time, -1})});
  };
}

// The same for the process `pid` as it runs now (one that does not run never opens).
inline daemon::NetnsOpener ProcessNetns(pid_t pid) { return ProcessNetns(pid, engine::ProcessStartTime(pid)); }

}  // namespace isb::testing
