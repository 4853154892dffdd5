// GET /metrics: who may read the Prometheus text, and the response that carries it.
#pragma once

#include <functional>
#include <string>

#include "api/http_message.h"
#include "api/registry.h"
#include "base/result.h"

namespace isb::api {

// The host, a platform admin, or a token with the metrics scope minted by one (identity/roles.h): OK; anyone else
// kForbidden, saying what would do.
Status MayReadMetrics(const Identity& who);

// `who` null: a loopback caller without a credential, let in by `isb serve --metrics-public`. A GET gets 200 with
// `render()` as text/plain; version=0.0.4; another method 405; a caller MayReadMetrics refuses 403.
Response ServeMetrics(const std::function<std::string()>& render, const Request& req, const Identity* who);

}  // namespace isb::api
