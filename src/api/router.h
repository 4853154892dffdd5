// The HTTP server's route table: which handler a request goes to, whether it needs a login, whether it may upgrade.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/http_message.h"
#include "base/result.h"

namespace isb::api {

// What serves a route; the HTTP server maps each to its handler.
enum class Handler {
  kHealth,    // GET /healthz
  kSignIn,    // /api/v1/auth/: how a caller gets a credential
  kRest,      // the REST API (RestApi)
  kMcp,       // MCP (McpServer)
  kWebUi,     // the web UI's page and assets (WebUi)
  kTerminal,  // a sandbox's terminal over a WebSocket (TerminalSocket)
  kEvents,    // GET /api/v1/events: lifecycle events as Server-Sent Events (events_stream.h)
  kMetrics,   // GET /metrics: the Prometheus text (metrics_endpoint.h)
  kOAuth,     // OAuth for MCP clients: the .well-known metadata and /oauth/ (oauth_server.h)
  kNoRoute,   // a path nothing serves: 404
};
std::string_view HandlerName(Handler handler);
// The surface a request refused before its handler saw it is recorded under in the audit log: "mcp" or "rest".
std::string_view SurfaceOf(Handler handler);

// Which requests a route takes, by path and, optionally, by the Host they were sent to.
struct RouteMatch {
  enum class Kind {
    kExact,     // the path is `path`
    kSegments,  // as many segments as `path`; each "*" in it stands for one non-empty segment ("/orgs/*/mcp")
    kPrefix,    // the path starts with `path`
    kAny,       // every path (`path` is empty): the route for what no other route takes
  };
  Kind kind = Kind::kAny;
  std::string path;  // compared byte for byte with the request's path (its target without the query)
  // Empty: any Host. "name": that host name; "*.name": any name under it, not the name itself. Compared without case,
  // port or trailing dot.
  std::string host;

  static RouteMatch Exact(std::string path) { return {Kind::kExact, std::move(path), ""}; }
  static RouteMatch Segments(std::string pattern) { return {Kind::kSegments, std::move(pattern), ""}; }
  static RouteMatch Prefix(std::string prefix) { return {Kind::kPrefix, std::move(prefix), ""}; }
  static RouteMatch Any() { return {Kind::kAny, "", ""}; }
  RouteMatch OnHost(std::string host_pattern) && {
    host = std::move(host_pattern);
    return std::move(*this);
  }
};

// "exact /healthz", "segments /orgs/*/mcp", "prefix /api/v1/", "any", with " on host *.preview.test" when it has one.
std::string Describe(const RouteMatch& match);

struct Route {
  RouteMatch match;
  Handler handler = Handler::kNoRoute;
  // A request without a credential is refused (401) before its handler sees it. Over the unix socket nobody logs in:
  // its caller is the host.
  bool needs_login = true;
  // Whether a WebSocket upgrade may be asked for here; elsewhere it is refused (see CheckUpgrade).
  bool websocket = false;
};

// An immutable, validated table. Order, most specific first, whatever the order the table was written in:
//   1. routes with a Host match before every route without: a preview host is taken by its Host whatever its path;
//      an exact host before a "*." one, a longer "*." suffix before a shorter;
//   2. then by path: exact, then segments (more literal characters first), then prefix (longer first), then any;
//   3. routes equal in all that (two segment patterns with as many literal characters) keep the table's order.
// The first route in that order that takes the request serves it. Thread-safe (read only).
class Router {
 public:
  // Refuses a table with a path that does not start with "/", a segment pattern with an empty segment, a host
  // pattern that is not a host name, two routes with the same match, or no route of kind kAny without a host (what
  // answers a path nothing serves).
  static Result<Router> Make(std::vector<Route> routes);

  // The route for a request to `path` (no query) sent with Host `host` (as sent: port and case allowed). Always one:
  // the table has a route for any path.
  const Route& Find(std::string_view host, std::string_view path) const;
  const Route& Find(const Request& req) const { return Find(req.headers.Get("Host"), req.Path()); }
  // The table in match order.
  const std::vector<Route>& routes() const { return routes_; }

 private:
  explicit Router(std::vector<Route> routes) : routes_(std::move(routes)) {}
  std::vector<Route> routes_;
};

// Whether `headers` ask for a WebSocket upgrade: an Upgrade header listing "websocket" (any case). Other upgrades
// (h2c, which curl --http2 asks for) are not refused: the server ignores them and answers in HTTP/1.1, as HTTP allows.
bool AsksForWebSocket(const Headers& headers);

// kInvalidArgument (400) when `req` asks for a WebSocket upgrade on a route that takes none.
Status CheckUpgrade(const Route& route, const Request& req);

}  // namespace isb::api
