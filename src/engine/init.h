// The sandbox's init (pid 1): starts the command, reaps orphans, forwards signals, reports the command's status.
#pragma once

namespace isb::engine {

struct ChildPlan;

// Forks the command and waits for it. When the command exits, init writes its wait status to plan.status_fd
// and exits; the kernel then kills whatever else is left in the pid namespace, daemonized descendants included.
// Async-signal-safe. Never returns.
[[noreturn]] void RunInit(const ChildPlan& plan);

}  // namespace isb::engine
