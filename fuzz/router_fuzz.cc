// Fuzzes what any client picks its route with: the Host header, the request target and the Upgrade header.
// Input: three lines (Host, target, Upgrade; a line "-" leaves that header out).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/mcp.h"
#include "api/router.h"
#include "api/server_routes.h"

using namespace isb;

namespace {

const api::Router& Server() {
  static const api::Router router = [] {
    auto made = api::Router::Make(api::ServerRoutes());
    if (!made.ok()) abort();
    return std::move(*made);
  }();
  return router;
}

// The server's routes with preview hosts in front of them.
const api::Router& WithHosts() {
  static const api::Router router = [] {
    std::vector<api::Route> routes = api::ServerRoutes();
    routes.push_back({.match = api::RouteMatch::Any().OnHost("*.preview.test"), .handler = api::Handler::kRest});
    routes.push_back({.match = api::RouteMatch::Exact("/x").OnHost("a.preview.test"), .handler = api::Handler::kMcp});
    auto made = api::Router::Make(std::move(routes));
    if (!made.ok()) abort();
    return std::move(*made);
  }();
  return router;
}

std::string_view NextLine(std::string_view& in) {
  size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  api::Request req;
  req.method = "GET";
  std::string_view host = NextLine(in);
  if (host != "-") req.headers.Add("Host", std::string(host));
  req.target = std::string(NextLine(in));
  std::string_view upgrade = NextLine(in);
  if (upgrade != "-") req.headers.Add("Upgrade", std::string(upgrade));

  // Only liveness, signing in, the web UI's page and files (which hold no data) and OAuth's discovery, registration,
  // authorization and token endpoints (the OAuth server itself) are served without a login, whatever the bytes; MCP
  // is what McpServer takes.
  const api::Route& route = Server().Find(req);
  const std::string_view path = req.Path();
  const bool oauth = path.starts_with("/oauth/") || path.starts_with("/.well-known/oauth-protected-resource") ||
                     path == "/.well-known/oauth-authorization-server";
  if (!route.needs_login && path != "/healthz" && !path.starts_with("/api/v1/auth/") && path != "/" &&
      !path.starts_with("/assets/") && !oauth)
    abort();
  if ((route.handler == api::Handler::kOAuth) != oauth) abort();
  if ((route.handler == api::Handler::kMcp) != api::McpOrgFromPath(path).has_value()) abort();
  // Only the terminal route takes an upgrade; every other refuses one asked for.
  if (route.websocket != (route.handler == api::Handler::kTerminal)) abort();
  if (api::CheckUpgrade(route, req).ok() != (!api::AsksForWebSocket(req.headers) || route.websocket)) abort();

  // A host route serves only requests sent to its host (in any case); every other request is routed as without them.
  const api::Route& hosted = WithHosts().Find(req);
  std::string lower(host);
  for (char& c : lower) c = AsciiLower(c);
  if (!hosted.match.host.empty() && lower.find("preview.test") == std::string::npos) abort();
  if (hosted.match.host.empty() && api::Describe(hosted.match) != api::Describe(route.match)) abort();
  return 0;
}
