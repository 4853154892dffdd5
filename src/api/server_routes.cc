// The HTTP server's route table.
#include "api/server_routes.h"

namespace isb::api {

std::vector<Route> ServerRoutes() {
  return {
      {.match = RouteMatch::Exact("/healthz"), .handler = Handler::kHealth, .needs_login = false},
      {.match = RouteMatch::Prefix("/api/v1/auth/"), .handler = Handler::kSignIn, .needs_login = false},
      {.match = RouteMatch::Prefix("/api/v1/"), .handler = Handler::kRest},
      // The web UI's page and files hold no data: a browser loads them before anyone signs in.
      {.match = RouteMatch::Exact("/"), .handler = Handler::kWebUi, .needs_login = false},
      {.match = RouteMatch::Prefix("/assets/"), .handler = Handler::kWebUi, .needs_login = false},
      {.match = RouteMatch::Segments("/api/v1/sandboxes/*/terminal"), .handler = Handler::kTerminal, .websocket = true},
      {.match = RouteMatch::Exact("/api/v1/events"), .handler = Handler::kEvents},
      // A login, or a loopback caller without one under --metrics-public (HttpServerOptions::metrics_public).
      {.match = RouteMatch::Exact("/metrics"), .handler = Handler::kMetrics},
      // OAuth for MCP clients: metadata, registration, consent and tokens come before any credential (the consent
      // page reads the session cookie itself).
      {.match = RouteMatch::Prefix("/.well-known/oauth-protected-resource"),
       .handler = Handler::kOAuth,
       .needs_login = false},
      {.match = RouteMatch::Exact("/.well-known/oauth-authorization-server"),
       .handler = Handler::kOAuth,
       .needs_login = false},
      {.match = RouteMatch::Prefix("/oauth/"), .handler = Handler::kOAuth, .needs_login = false},
      {.match = RouteMatch::Exact("/mcp"), .handler = Handler::kMcp},
      {.match = RouteMatch::Segments("/orgs/*/mcp"), .handler = Handler::kMcp},
      // A path nothing serves is 404, after the login every path but those above needs: without one, the caller
      // learns nothing of which paths exist.
      {.match = RouteMatch::Any(), .handler = Handler::kNoRoute},
  };
}

}  // namespace isb::api
