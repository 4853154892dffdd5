// The HTTP/1.1 server (Asio + Beast) that carries REST and MCP over TCP and the unix socket.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/http_message.h"
#include "api/mcp.h"
#include "api/registry.h"
#include "api/rest.h"
#include "api/router.h"
#include "base/result.h"

namespace isb::api {

// Decides who a TCP request is. Called only for TCP requests to a route that needs a login (see ServerRoutes) and
// that carry "Authorization: Bearer ..." or a session cookie (the server answers 401 itself when neither is there;
// unix-socket callers are always Identity::Host(), so via_unix_socket is false today). Return kUnauthenticated (401)
// or kForbidden (403) to refuse. May block: it runs on a worker thread.
using Authenticator = std::function<Result<Identity>(const Request& req, bool via_unix_socket)>;

struct HttpServerOptions {
  bool listen_tcp = true;
  std::string host = "127.0.0.1";  // must pass CheckListenAddress
  uint16_t port = 8092;            // 0: a free port, see HttpServer::port()
  std::string unix_socket_path;    // empty: none. Created 0600; its directory is made 0700.
  // Threads reading and writing connections; tool calls run on the worker threads. One by default: more share one
  // asio scheduler, and every call's hand-offs then wake threads through its lock (44 futex calls per exec with
  // four, 12.5 with one, on 2 cores).
  int io_threads = 1;
  int worker_threads = 256;  // tool calls block, an exec for up to 15 minutes; one thread per call
  // The unix socket's calls run on workers of their own: TCP callers that hold every worker (up to
  // max_calls_per_account each) never lock the host's caller out.
  int unix_worker_threads = 128;
  size_t max_body_bytes = 8 << 20;  // larger bodies get 413
  size_t max_header_bytes = 64 << 10;
  // Connections open at once, over TCP and over the unix socket each (so TCP clients never lock the host's caller
  // out); past it, a new one gets 503 and is closed.
  size_t max_connections = 2048;
  // TCP connections one remote address (a tailnet peer) may have open at once; past it, 503 and closed.
  size_t max_connections_per_address = 256;
  // Whether loopback peers are held to max_connections_per_address too. They are not by default: a tunnel or
  // reverse proxy in front of isb (how it is reached from elsewhere) brings every user from a loopback address,
  // and guards against slow clients itself.
  bool limit_loopback_peers = false;
  // Calls one account (a user, whatever credential it uses; a token of no user counts alone) may have running at
  // once over TCP; past it, 429. Each call holds a worker thread until it returns (an exec up to its timeout), so
  // without it one account could take every worker from every org. The unix socket's caller is not counted.
  size_t max_calls_per_account = 64;
  // Told of a request turned away before any tool or MCP message saw it: with no credential at all (401, `who` null)
  // or past max_calls_per_account (429, `who` the caller), with the surface it came for ("rest" or "mcp"), for the
  // audit log; and of one refused as malformed or too large before it could be read (400, 413, 431: surface
  // "http", `who` null, only the address known). At most kRefusalRowsPerMinute a minute per account, or per address for
  // no credential (loopback addresses counting as one), and ten times that in all: past that they are refused alike,
  // untold.
  std::function<void(const Request& req, const Identity* who, std::string_view surface, const Error& error)> on_refused;
  // The web UI's page and files (Handler::kWebUi; api/web_ui.h) and a sandbox's terminal over a WebSocket
  // (Handler::kTerminal, after the login; api/terminal_socket.h). Unset: 404.
  std::function<Response(const Request& req)> web_ui;
  std::function<Response(const Request& req, const Identity& who)> terminal;
  // GET /api/v1/events (api/events_stream.h), and the text of GET /metrics (api/metrics_endpoint.h): 404 when unset.
  std::function<Response(const Request& req, const Identity& who)> events;
  std::function<std::string()> metrics;
  // OAuth for MCP clients (Handler::kOAuth; api/oauth_server.h), and where a 401 from MCP points a client for it:
  // the URL of the resource's RFC 9728 metadata, sent as WWW-Authenticate's resource_metadata. Unset: 404, and none.
  std::function<Response(const Request& req)> oauth;
  std::function<std::string(const Request& req)> resource_metadata;
  // Loopback callers without a credential may read /metrics (isb serve --metrics-public), when their Host names
  // loopback too.
  bool metrics_public = false;
  // Event streams and terminals over TCP, each of which holds a worker thread for as long as it is open: at most
  // this many per account and in all (past them, 429), so that callers who open them cannot take every worker.
  size_t max_streams_per_account = 16;
  size_t max_streams = 64;
  // How often an open stream or terminal asks the authenticator again who its caller is: it ends once the
  // credential is refused (revoked, expired) or the caller's access changed (a role, a membership, a scope).
  std::chrono::milliseconds reauthorize_every{5'000};
  // Port previews (daemon/preview_proxy.h): a TCP request whose Host (or absolute-form target) `preview_takes`
  // names is taken before anything else: its connection goes to `preview` (a descriptor of its own, then the head as
  // read and what followed it) and nothing of isb's answers it. Unset: none.
  std::function<bool(std::string_view host, std::string_view target)> preview_takes;
  std::function<void(int fd, std::string pending)> preview;
  // A head too large (431) or malformed (400) that names a preview (by the fields parsed before the fault, else by
  // ScanRequestNames): its connection goes to `preview_refused` with the status, for the preview proxy's own
  // answer. Unset: isb's own 400 or 431.
  std::function<void(int fd, int status)> preview_refused;
  std::chrono::milliseconds header_timeout{30'000};  // also the keep-alive idle limit
  std::chrono::milliseconds body_timeout{120'000};
  std::chrono::milliseconds write_timeout{60'000};
};

inline constexpr int kRefusalRowsPerMinute = 60;

// Routes by ServerRoutes() (api/server_routes.h): /mcp and /orgs/<org>/mcp to `mcp`, /healthz, /api/v1/auth/ and
// /api/v1/ to `rest`, any other path 404; all but /healthz and /api/v1/auth/ need a login (401 without one, before
// the 404). A WebSocket upgrade is refused (400, after the login) where the route takes none. Malformed HTTP gets a
// 4xx (400 malformed or truncated, 413 body too large, 431 headers too large) and the connection is closed; the
// server keeps serving others.
//
// Lifetime: rest, mcp and the authenticator must outlive the server. Start once, Stop once (the destructor stops).
class HttpServer {
 public:
  HttpServer(HttpServerOptions options, RestApi& rest, McpServer& mcp, Authenticator authenticate);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the threads; returns once it accepts connections. Errors say which address failed.
  Status Start();
  // The bound TCP port (useful with port 0); 0 before Start or without TCP.
  uint16_t port() const;
  // Stops accepting, drops open connections, waits for running tool calls, removes the unix socket file.
  void Stop();
  // The route table this server dispatches by, in match order.
  const std::vector<Route>& routes() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace isb::api
