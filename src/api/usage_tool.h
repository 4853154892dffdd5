// sandbox_usage: a sandbox's sampled CPU, memory and pids over the last hour (2 s) or day (1 min).
#pragma once

#include "api/registry.h"
#include "api/sandboxes.h"
#include "api/usage_store.h"

namespace isb::api {

// Viewers and the read scope, in the sandbox's org, as sandbox_get. `usage` null: the tool answers kUnavailable
// (this daemon samples nothing). `sandboxes` and `usage` must outlive `registry`.
Status AddUsageTool(Registry& registry, Sandboxes& sandboxes, const UsageStore* usage);

}  // namespace isb::api
