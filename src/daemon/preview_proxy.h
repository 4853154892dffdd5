// Port previews' connections: a client connection the HTTP server gave up because its Host names a preview
// (api/preview_host.h) is served here alone, request by request: a one-time link spent for the isb_preview cookie,
// or a request with that cookie relayed to 127.0.0.1:<port> inside the sandbox's network namespace (no host port is
// published) through the egress proxy's HTTP/1.1 message relay, its head edited by api::PreviewFilter. A WebSocket
// upgrade the app accepts is relayed as bytes. Nothing of isb's (pages, API, headers) is ever answered here.
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

struct PreviewProxyOptions {
  // The network namespace of sandbox `id` while it runs, or why not (its message is the 502's).
  std::function<Result<Fd>(const std::string& id)> netns;
  size_t max_connections = 1024;                                     // past it, a connection given is closed at once
  std::chrono::milliseconds head_timeout{30'000};                    // for a request head, and between requests
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(15)};  // a relayed connection moving nothing
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
  // Closes every open connection whose session has ended (PreviewAccess::on_ended).
  void CutEnded();
  // Closes every connection and stops the thread. The destructor stops.
  void Stop();

  size_t open_connections() const { return open_.load(); }

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<size_t> open_{0};
};

}  // namespace isb::daemon
