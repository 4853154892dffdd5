// Fitting a sandbox launched ahead (the pool's) to the create that takes it, from outside: its hostname and its
// scratch tmpfs sizes, which a cold launch would have set up from the spec.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/result.h"

namespace isb::engine {

struct NamespaceFit {
  std::string hostname;        // with /etc/hostname and /etc/hosts; empty: kept
  uint64_t scratch_bytes = 0;  // the size of the /tmp and /dev/shm tmpfs (engine::ScratchTmpfs); 0: kept
};

// Applies `fit` in the namespaces of the sandbox whose init is `pid` since `start_time`, from a thread of its own
// that enters its UTS and mount namespaces and ends right after (nothing else ever runs in them by accident; the
// daemon never forks). Only for a sandbox that has run nothing yet: its /etc files are written through its view.
Status FitNamespaces(pid_t pid, uint64_t start_time, const NamespaceFit& fit);

}  // namespace isb::engine
