// GET /metrics: its authorization and its response.
#include "api/metrics_endpoint.h"

#include <algorithm>

#include "api/rest.h"

namespace isb::api {

Status MayReadMetrics(const Identity& who) {
  if (who.IsPlatformAdmin()) return {};
  const identity::Scope metrics{identity::ScopeKind::kMetrics, ""};
  // A platform admin's token narrowed to the metrics scope (for a scraper): only a platform admin's (or the host's)
  // credential reads the platform's figures, whatever its scopes.
  if ((who.superadmin || who.platform_admin) &&
      std::find(who.scopes.begin(), who.scopes.end(), metrics) != who.scopes.end())
    return {};
  return Error::Of(Code::kForbidden,
                   "metrics are for platform admins: use a platform admin's token, or one of theirs "
                   "with the metrics scope (isb token create --scopes metrics)");
}

Response ServeMetrics(const std::function<std::string()>& render, const Request& req, const Identity* who) {
  if (who != nullptr) {
    if (Status may = MayReadMetrics(*who); !may.ok()) return ErrorResponse(may.error());
  }
  if (req.method != "GET" && req.method != "HEAD") return MethodNotAllowed("GET");
  Response r;
  r.headers.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
  r.headers.Set("Cache-Control", "no-store");
  r.body = render();
  return r;
}

}  // namespace isb::api
