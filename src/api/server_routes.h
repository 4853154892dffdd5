// The routes isb's HTTP server answers: the one table that says which paths need a login.
#pragma once

#include <vector>

#include "api/router.h"

namespace isb::api {

// /healthz and /api/v1/auth/ (signing in, which is how a caller gets a credential) need no login; the REST API
// (/api/v1/), MCP (/mcp, /orgs/<org>/mcp) and every other path do. None takes a WebSocket upgrade yet.
std::vector<Route> ServerRoutes();

}  // namespace isb::api
