// Port previews' connections: a client connection the HTTP server gave up because its Host names a preview
// (api/preview_host.h) is served here alone, request by request: a one-time link spent for the isb_preview cookie,
// or a request with that cookie relayed to 127.0.0.1:<port> (or [::1]:<port>) inside the sandbox's network namespace
// (no host port is published) through the egress proxy's HTTP/1.1 message relay, its head edited by
// api::PreviewFilter. A WebSocket upgrade the app accepts is relayed as bytes. The namespace is looked up and the app
// dialled on worker threads, off the event loop. Nothing of isb's (pages, API, headers) is ever answered here.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "api/preview_access.h"
#include "base/fd.h"
#include "base/result.h"

namespace isb::daemon {

// How long a request relayed whole to the app may wait for the first byte of a response before the proxy answers
// 504 Gateway Timeout and closes the app's connection (--preview-response-timeout). Long enough for a dev server's
// first compile of a page or a long poll of a minute; under the 100 s after which a Cloudflare tunnel in front of
// isb would answer its own 524 instead.
inline constexpr std::chrono::seconds kPreviewResponseTimeout{90};
// The idle timeout of a preview connection; a response timeout must be shorter to be met before it.
inline constexpr std::chrono::minutes kPreviewIdleTimeout{15};

struct PreviewProxyOptions {
  // The network namespace of sandbox `id` while it runs, or why not (its message is the 502's). Called on a dial
  // worker, never on the event loop: it may block (a database query).
  std::function<Result<Fd>(const std::string& id)> netns;
  // Past either, a connection given is answered 503 (all) or 429 (its client address) and closed.
  size_t max_connections = 1024;
  size_t max_connections_per_address = 64;
  // Whether loopback peers are held to max_connections_per_address too: as the HTTP server's
  // (api::HttpServerOptions::limit_loopback_peers), not by default, since a tunnel or reverse proxy in front of isb
  // brings every user from a loopback address and one user's 64 connections would block every preview.
  bool limit_loopback_peers = false;
  // A whole request head, from its first byte or the end of the previous exchange (a slowloris client is closed).
  std::chrono::milliseconds head_timeout{30'000};
  // An exchange or an upgraded connection moving no byte either way: a stalled body, a response that stops coming.
  // Both sides are closed.
  std::chrono::milliseconds idle_timeout{kPreviewIdleTimeout};
  // A request relayed whole and no byte of a response from the app since: 504, and the app's connection closed.
  // Once a response has begun, only idle_timeout holds.
  std::chrono::milliseconds response_timeout{kPreviewResponseTimeout};
  // A dial of the app (127.0.0.1, then [::1], in the sandbox's namespace) that has not connected: 502.
  std::chrono::milliseconds dial_timeout{10'000};
  size_t dial_workers = 4;  // threads the netns lookups and dials run on
  // Dials of one sandbox's previews waiting or running at once; past it, 503: one sandbox whose app never answers
  // cannot hold every worker. While a dial waits or runs, its client is watched: one that hangs up (or is closed,
  // or whose proxy stops) before a worker takes its dial has it dropped unmade, and the connection of a dial that was
  // under way is closed as soon as it is made, never handed to the app's side.
  size_t max_dials_per_sandbox = 16;
};

class PreviewProxy {
 public:
  // `access` must outlive the proxy. Its thread starts here.
  PreviewProxy(api::PreviewAccess& access, PreviewProxyOptions options);
  ~PreviewProxy();
  PreviewProxy(const PreviewProxy&) = delete;
  PreviewProxy& operator=(const PreviewProxy&) = delete;

  // Whether a request with this Host field and target (absolute-form names its own host) is a preview's.
  bool Takes(std::string_view host_field, std::string_view target) const;
  // Serves the TCP connection `fd` (now the proxy's own) from here on; `pending`: the bytes read from it so far, a
  // request head first.
  void Take(int fd, std::string pending);
  // Answers the TCP connection `fd` (now the proxy's own), whose head named a preview but was too large (431) or
  // malformed (400) for the HTTP server, with the proxy's own minimal response, then closes it once the client has
  // finished sending (or head_timeout has passed, or 1 MiB more has come). It counts against the caps as any
  // connection.
  void TakeRefused(int fd, int status);
  // Closes every open connection whose session has ended (PreviewAccess::on_ended).
  void CutEnded();
  // Closes every connection and stops the thread. The destructor stops.
  void Stop();

  size_t open_connections() const { return open_.load(); }
  // Dials waiting for a worker or running, of every sandbox (what max_dials_per_sandbox counts).
  size_t dials() const { return dials_.load(); }

 private:
  class Impl;
  std::atomic<size_t> open_{0};
  std::atomic<size_t> dials_{0};
  std::unique_ptr<Impl> impl_;
};

}  // namespace isb::daemon
