// The route table: its order and checks, the WebSocket upgrade rule, and the real server's table, whose every route
// that needs a login is called without one.
#include "api/router.h"

#include <algorithm>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "api/fake_sandboxes.h"
#include "api/http_server.h"
#include "api/json_util.h"
#include "api/principals.h"
#include "api/raw_http.h"
#include "api/sandbox_tools.h"
#include "api/server_routes.h"

namespace isb::api {
namespace {

Route To(RouteMatch match, Handler handler) { return {.match = std::move(match), .handler = handler}; }

Router Make(std::vector<Route> routes) {
  Result<Router> router = Router::Make(std::move(routes));
  EXPECT_TRUE(router.ok()) << router.error().message;
  return std::move(*router);
}

std::string MakeError(std::vector<Route> routes) {
  Result<Router> router = Router::Make(std::move(routes));
  return router.ok() ? "made" : router.error().message;
}

// Which route of `router` serves `path` on `host`, as Describe names it.
std::string Served(const Router& router, std::string_view path, std::string_view host = "localhost") {
  return Describe(router.Find(host, path).match);
}

std::vector<Route> Mixed() {
  return {To(RouteMatch::Any(), Handler::kNoRoute),          To(RouteMatch::Prefix("/a/"), Handler::kRest),
          To(RouteMatch::Segments("/a/*/c"), Handler::kMcp), To(RouteMatch::Prefix("/a/b/"), Handler::kRest),
          To(RouteMatch::Exact("/a/x/y"), Handler::kHealth), To(RouteMatch::Segments("/a/b/*"), Handler::kMcp)};
}

TEST(RouterTest, TheMostSpecificRouteServesWhateverTheTablesOrder) {
  std::vector<Route> routes = Mixed();
  for (int turn = 0; turn < 2; ++turn) {
    Router router = Make(routes);
    EXPECT_EQ(Served(router, "/a/x/y"), "exact /a/x/y");
    EXPECT_EQ(Served(router, "/a/x/c"), "segments /a/*/c");
    EXPECT_EQ(Served(router, "/a/b/d"), "segments /a/b/*");
    // Both patterns take /a/b/c, with as many literal characters: the one written first serves it.
    EXPECT_EQ(Served(router, "/a/b/c"), turn == 0 ? "segments /a/*/c" : "segments /a/b/*");
    EXPECT_EQ(Served(router, "/a/b/d/e"), "prefix /a/b/");
    EXPECT_EQ(Served(router, "/a/x"), "prefix /a/");
    EXPECT_EQ(Served(router, "/b"), "any");
    EXPECT_EQ(Served(router, "*"), "any");
    EXPECT_EQ(Served(router, "http://localhost/a/b/c"), "any");
    std::reverse(routes.begin(), routes.end());
  }
}

TEST(RouterTest, TheTableIsKeptInMatchOrder) {
  const Router router = Make(Mixed());
  std::vector<std::string> order;
  for (const Route& route : router.routes()) order.push_back(Describe(route.match));
  EXPECT_EQ(order, (std::vector<std::string>{"exact /a/x/y", "segments /a/*/c", "segments /a/b/*", "prefix /a/b/",
                                             "prefix /a/", "any"}));
}

TEST(RouterTest, AStarStandsForExactlyOneNonEmptySegment) {
  Router router =
      Make({To(RouteMatch::Any(), Handler::kNoRoute), To(RouteMatch::Segments("/orgs/*/mcp"), Handler::kMcp)});
  EXPECT_EQ(Served(router, "/orgs/acme/mcp"), "segments /orgs/*/mcp");
  for (std::string_view path : {"/orgs//mcp", "/orgs/a/b/mcp", "/orgs/mcp", "/orgs/acme/mcp/", "/orgs/acme/mcpx",
                                "orgs/acme/mcp", "/orgs/acme"}) {
    EXPECT_EQ(Served(router, path), "any") << path;
  }
}

TEST(RouterTest, AHostRouteComesBeforeEveryPathRoute) {
  Router router = Make({To(RouteMatch::Exact("/healthz"), Handler::kHealth), To(RouteMatch::Any(), Handler::kNoRoute),
                        To(RouteMatch::Any().OnHost("*.Preview.Test"), Handler::kRest),
                        To(RouteMatch::Any().OnHost("*.b.preview.test"), Handler::kMcp),
                        To(RouteMatch::Exact("/healthz").OnHost("a.b.preview.test."), Handler::kSignIn)});
  EXPECT_EQ(Served(router, "/healthz", "sbx1.preview.test"), "any on host *.preview.test");
  EXPECT_EQ(Served(router, "/healthz", "SBX1.PREVIEW.TEST:8092"), "any on host *.preview.test");
  EXPECT_EQ(Served(router, "/healthz", "sbx1.preview.test."), "any on host *.preview.test");
  EXPECT_EQ(Served(router, "/x", "c.b.preview.test"), "any on host *.b.preview.test");
  EXPECT_EQ(Served(router, "/healthz", "a.b.preview.test"), "exact /healthz on host a.b.preview.test");
  EXPECT_EQ(Served(router, "/x", "a.b.preview.test"), "any on host *.b.preview.test");
  // The name itself is not under it; a host that is no host[:port], or none, takes no host route.
  EXPECT_EQ(Served(router, "/healthz", "preview.test"), "exact /healthz");
  EXPECT_EQ(Served(router, "/healthz", "evilpreview.test"), "exact /healthz");
  EXPECT_EQ(Served(router, "/healthz", "[sbx1.preview.test"), "exact /healthz");
  EXPECT_EQ(Served(router, "/healthz", ""), "exact /healthz");
}

TEST(RouterTest, AMalformedTableIsRefusedNamingTheRoute) {
  const Route any = To(RouteMatch::Any(), Handler::kNoRoute);
  EXPECT_EQ(MakeError({To(RouteMatch::Exact("/x"), Handler::kRest)}),
            "the route table has no route for any path (RouteMatch::Any()); add one for the paths no other route "
            "takes");
  EXPECT_EQ(MakeError({any, To(RouteMatch::Any().OnHost("*.p.test"), Handler::kRest)}), "made");
  EXPECT_EQ(MakeError({To(RouteMatch::Any().OnHost("*.p.test"), Handler::kRest)}),
            "the route table has no route for any path (RouteMatch::Any()); add one for the paths no other route "
            "takes");
  EXPECT_EQ(MakeError({any, To(RouteMatch::Prefix("api/"), Handler::kRest)}),
            "route prefix api/: the path must start with \"/\"");
  EXPECT_EQ(MakeError({any, To(RouteMatch::Segments("/orgs//mcp"), Handler::kMcp)}),
            "route segments /orgs//mcp: a segment pattern has no empty segment; remove the extra \"/\"");
  EXPECT_EQ(MakeError({any, To(RouteMatch::Segments("/orgs/a*/mcp"), Handler::kMcp)}),
            "route segments /orgs/a*/mcp: \"*\" stands for a whole segment, not part of one");
  EXPECT_EQ(MakeError({any, To(RouteMatch::Exact("/x"), Handler::kRest), To(RouteMatch::Exact("/x"), Handler::kMcp)}),
            "route exact /x: two routes take the same requests; remove one");
  EXPECT_EQ(MakeError({any, any}), "route any: two routes take the same requests; remove one");
  EXPECT_EQ(MakeError({any, To(RouteMatch::Any().OnHost("a.test"), Handler::kRest),
                       To(RouteMatch::Any().OnHost("A.TEST"), Handler::kRest)}),
            "route any on host a.test: two routes take the same requests; remove one");
  EXPECT_EQ(MakeError({any, To(RouteMatch::Any().OnHost("a b"), Handler::kRest)}),
            "route any on host a b: host pattern contains ' '; write a host name or *. and a host name");
  const std::string ip = MakeError({any, To(RouteMatch::Any().OnHost("*.10.0.0.1"), Handler::kRest)});
  EXPECT_EQ(ip.rfind("route any on host *.10.0.0.1: host pattern ", 0), 0u) << ip;
}

Request Upgrade(std::string_view value) {
  Request req;
  req.method = "GET";
  req.target = "/x";
  req.headers.Add("Connection", "Upgrade");
  req.headers.Add("Upgrade", std::string(value));
  return req;
}

TEST(RouterTest, AWebSocketUpgradeIsRefusedWhereTheRouteTakesNone) {
  const Route plain = To(RouteMatch::Exact("/x"), Handler::kRest);
  Route terminal = plain;
  terminal.websocket = true;
  for (std::string_view value : {"websocket", "WebSocket", "h2c, websocket", " websocket/13 "}) {
    Status refused = CheckUpgrade(plain, Upgrade(value));
    ASSERT_FALSE(refused.ok()) << value;
    EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
    EXPECT_EQ(refused.error().message,
              "no WebSocket is served at this path; send it as a plain HTTP request, without "
              "\"Upgrade: websocket\"");
    EXPECT_TRUE(CheckUpgrade(terminal, Upgrade(value)).ok()) << value;
  }
  // Other upgrades are not WebSocket's: the server answers them in HTTP/1.1.
  for (std::string_view value : {"h2c", "websockets", "", "TLS/1.2"}) {
    EXPECT_TRUE(CheckUpgrade(plain, Upgrade(value)).ok()) << value;
  }
  EXPECT_TRUE(CheckUpgrade(plain, Request{}).ok());
}

// The real server, its table, and a token ("Bearer s3cret") that is a member of "default".
class ServerRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(AddSandboxTools(registry_, fake_).ok());
    HttpServerOptions opts;
    opts.port = 0;
    opts.worker_threads = 4;
    server_ = std::make_unique<HttpServer>(opts, rest_, mcp_, [](const Request& req, bool) -> Result<Identity> {
      if (req.headers.Get("Authorization") == "Bearer s3cret") return UserIn("test");
      return Error::Of(Code::kUnauthenticated, "invalid token");
    });
    Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started.error().message;
  }
  // A request for `target` with a body of {}, sent to `host`.
  Reply Send(const std::string& method, const std::string& target, const std::string& headers,
             const std::string& host = "localhost") {
    const std::string request = method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n" +
                                headers + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    return ParseReply(Exchange(Connect(server_->port()), request));
  }

  FakeSandboxes fake_;
  Registry registry_;
  RestApi rest_{registry_, "test"};
  McpServer mcp_{registry_, McpOptions{}};
  std::unique_ptr<HttpServer> server_;
};

// A path `match` takes, and a Host it takes it on.
std::pair<std::string, std::string> Example(const RouteMatch& match) {
  std::string host = match.host.empty()             ? "localhost"
                     : match.host.starts_with("*.") ? "x" + match.host.substr(1)
                                                    : match.host;
  switch (match.kind) {
    case RouteMatch::Kind::kExact:
      return {match.path, host};
    case RouteMatch::Kind::kPrefix:
      return {match.path + "x", host};
    case RouteMatch::Kind::kAny:
      return {"/no/such/route", host};
    case RouteMatch::Kind::kSegments: {
      std::string path = match.path;
      for (size_t star = path.find('*'); star != std::string::npos; star = path.find('*')) path.replace(star, 1, "x");
      return {path, host};
    }
  }
  return {};
}

// Generated from the table: a route added without a login check, or one the server does not refuse without a login,
// fails here.
TEST_F(ServerRoutesTest, EveryRouteThatNeedsALoginRefusesACallWithoutOne) {
  ASSERT_EQ(server_->routes().size(), ServerRoutes().size());
  size_t checked = 0;
  for (const Route& route : server_->routes()) {
    if (!route.needs_login) continue;
    auto [path, host] = Example(route.match);
    Result<Router> router = Router::Make(ServerRoutes());
    ASSERT_TRUE(router.ok());
    ASSERT_EQ(Describe(router->Find(host, path).match), Describe(route.match)) << path << " is another route's";
    for (const std::string method : {"GET", "POST", "DELETE"}) {
      for (const std::string& headers :
           std::vector<std::string>{"", "Cookie: theme=dark\r\n", "Connection: Upgrade\r\nUpgrade: websocket\r\n",
                                    "Authorization: Basic dXNlcjpwYXNz\r\n", "Authorization: Bearer \r\n"}) {
        SCOPED_TRACE(method + " " + path + " on " + host + " with " + headers);
        Reply r = Send(method, path, headers, host);
        EXPECT_EQ(r.status, 401) << r.raw;
        EXPECT_NE(r.head.find("\r\nWWW-Authenticate: Bearer realm=\"isb\"\r\n"), std::string::npos) << r.head;
        EXPECT_EQ(r.body, R"({"error":"unauthenticated","message":"missing bearer token: send \"Authorization: )"
                          R"(Bearer <token>\""})");
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 4u);  // at least the REST API, /mcp, /orgs/<org>/mcp, and any other path
}

// The metadata URL holds the request's Host: a '"' or a backslash in it cannot end the quoted parameter early.
TEST_F(ServerRoutesTest, TheResourceMetadataParameterIsAQuotedStringWhateverTheHost) {
  server_->Stop();
  HttpServerOptions opts;
  opts.port = 0;
  opts.resource_metadata = [](const Request& req) {
    return "http://" + req.headers.Get("Host") + "/.well-known/oauth-protected-resource/mcp";
  };
  server_ = std::make_unique<HttpServer>(opts, rest_, mcp_, [](const Request&, bool) -> Result<Identity> {
    return Error::Of(Code::kUnauthenticated, "invalid token");
  });
  ASSERT_TRUE(server_->Start().ok());
  Reply r = Send("POST", "/mcp", "", "a\"b\\c");
  EXPECT_EQ(r.status, 401) << r.raw;
  EXPECT_NE(
      r.head.find("\r\nWWW-Authenticate: Bearer realm=\"isb\", resource_metadata=\"http://a\\\"b\\\\c/.well-known/"
                  "oauth-protected-resource/mcp\"\r\n"),
      std::string::npos)
      << r.head;
}

TEST_F(ServerRoutesTest, OnlyHealthSigningInTheWebUiFilesAndOAuthNeedNoLogin) {
  std::set<std::string> open;
  for (const Route& route : server_->routes()) {
    if (!route.needs_login) open.insert(Describe(route.match) + " -> " + std::string(HandlerName(route.handler)));
  }
  EXPECT_EQ(open, (std::set<std::string>{
                      "exact /healthz -> health", "prefix /api/v1/auth/ -> sign_in", "exact / -> web_ui",
                      "prefix /assets/ -> web_ui", "prefix /.well-known/oauth-protected-resource -> oauth",
                      "exact /.well-known/oauth-authorization-server -> oauth", "prefix /oauth/ -> oauth"}));
  std::set<std::string> websockets;
  for (const Route& route : server_->routes()) {
    if (route.websocket) websockets.insert(Describe(route.match) + " -> " + std::string(HandlerName(route.handler)));
  }
  EXPECT_EQ(websockets, (std::set<std::string>{"segments /api/v1/sandboxes/*/terminal -> terminal"}));
}

TEST_F(ServerRoutesTest, AWebSocketUpgradeIsRefusedOnceTheCallerIsKnown) {
  const std::string upgrade = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n";
  const std::string refusal = R"({"error":"invalid_argument","message":"no WebSocket is served at this path; send )"
                              R"(it as a plain HTTP request, without \"Upgrade: websocket\""})";
  Reply health = Send("GET", "/healthz", upgrade);
  EXPECT_EQ(health.status, 400) << health.raw;
  EXPECT_EQ(health.body, refusal);
  Reply tools = Send("GET", "/api/v1/tools", upgrade + "Authorization: Bearer s3cret\r\n");
  EXPECT_EQ(tools.status, 400) << tools.raw;
  EXPECT_EQ(tools.body, refusal);
  // An h2c upgrade (curl --http2) is answered in HTTP/1.1, as before.
  Reply h2c = Send("GET", "/healthz",
                   "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n");
  EXPECT_EQ(h2c.status, 200) << h2c.raw;
  EXPECT_EQ(h2c.body, R"({"ok":true})");
}

TEST_F(ServerRoutesTest, EachRouteReachesItsHandlerWithALogin) {
  const std::string auth = "Authorization: Bearer s3cret\r\n";
  EXPECT_EQ(Send("GET", "/healthz", "").body, R"({"ok":true})");
  // Signing in is not wired here: RestApi has no sign-in routes, so the prefix is the REST API's 404.
  Reply signin = Send("POST", "/api/v1/auth/signin", "");
  EXPECT_EQ(signin.status, 404);
  EXPECT_EQ(signin.body, R"({"error":"not_found","message":"no route for /api/v1/auth/signin; see GET )"
                         R"(/api/v1/openapi.json"})");
  Reply list = Send("POST", "/api/v1/tools/sandbox_list", auth);
  EXPECT_EQ(list.status, 200) << list.raw;
  EXPECT_EQ(list.body, R"({"result":{"sandboxes":[]}})");
  Reply mcp = Send("GET", "/orgs/default/mcp", auth);
  EXPECT_EQ(mcp.status, 405);
  EXPECT_EQ(mcp.body, R"({"error":"method_not_allowed","message":"this server offers no GET stream; POST JSON-RPC )"
                      R"(messages"})");
  Reply other = Send("GET", "/orgs/default/mcp/", auth);
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(other.body, R"({"error":"not_found","message":"no route for /orgs/default/mcp/; see GET )"
                        R"(/api/v1/openapi.json"})");
}

}  // namespace
}  // namespace isb::api
