// The routes isb's HTTP server answers: the one table that says which paths need a login.
#pragma once

#include <vector>

#include "api/router.h"

namespace isb::api {

// /healthz, /api/v1/auth/ (signing in, which is how a caller gets a credential) and the web UI's files (/, /assets/)
// need no login; the REST API (/api/v1/), MCP (/mcp, /orgs/<org>/mcp) and every other path do. Only a sandbox's
// terminal (/api/v1/sandboxes/<id>/terminal) takes a WebSocket upgrade.
std::vector<Route> ServerRoutes();

}  // namespace isb::api
