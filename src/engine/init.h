// The sandbox's init (pid 1): starts the command, reaps orphans, forwards signals, reports the command's status.
#pragma once

namespace isb::engine {

struct ChildPlan;

// Forks the command and waits for it. When the command exits, init writes its wait status to plan.status_fd
// and exits; the kernel then kills whatever else is left in the pid namespace, daemonized descendants included.
// Async-signal-safe. Never returns.
[[noreturn]] void RunInit(const ChildPlan& plan);

// A long-lived sandbox's init: reports ready (closes the error pipe), then serves exec sessions on
// plan.control_fd (exec_protocol.h) until the sandbox is killed. Each command runs in its own process group,
// killed when its session's connection closes. Holds plan.lease_fd for the sandbox's lifetime. Allocates nothing.
[[noreturn]] void ServeInit(const ChildPlan& plan);

}  // namespace isb::engine
