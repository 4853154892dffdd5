// What /metrics reads from the daemon's parts when it is asked (the rest is counted where it happens).
#pragma once

#include <string>

#include "daemon/egress_service.h"
#include "daemon/sandbox_manager.h"
#include "store/db.h"

namespace isb::daemon {

// Sandboxes by state (from the database), the pools' sizes, the proxy's and DNS responder's counts; then the whole
// registry (metrics::Global()) in the Prometheus text format. `egress` may be null.
std::string RenderDaemonMetrics(store::Db& db, SandboxManager& manager, const EgressService* egress);

}  // namespace isb::daemon
