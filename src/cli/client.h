// A small blocking HTTP/1.1 client over plain sockets: how the CLI reaches the daemon (unix socket or http://).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace isb::cli {

// Where the daemon listens: a unix socket path, or a TCP host and port.
struct Endpoint {
  std::string unix_path;  // non-empty: a unix socket
  std::string host;       // TCP otherwise
  uint16_t port = 0;

  // "unix:/var/lib/isb/api/isb.sock" or "http://127.0.0.1:8092", as users write it.
  std::string Describe() const;
};

// Accepts "http://HOST[:PORT][/]" (IPv6 as [ADDR]) and "unix:PATH". https is refused with how to get by without it.
Result<Endpoint> ParseUrl(std::string_view url);

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";
  std::string target = "/";  // path and query
  Headers headers;           // Host, Content-Length and Connection are added by the client
  std::string body;
};

struct HttpResponse {
  int status = 0;
  Headers headers;
  std::string body;  // empty when the body was delivered as SSE events

  // The first header named `name` (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

// One Server-Sent Event: its name ("message" when the stream named none) and its data lines joined by '\n'.
struct SseEvent {
  std::string event;
  std::string data;
};
// Return false to stop reading the stream.
using SseHandler = std::function<bool(const SseEvent&)>;

struct ClientLimits {
  size_t max_body_bytes = 64u << 20;  // also the most one SSE event may carry
  size_t max_header_bytes = 64u << 10;
  std::chrono::milliseconds connect_timeout{10'000};
  // Longest silence while waiting for the daemon; an exec may run 15 minutes without printing anything.
  std::chrono::milliseconds idle_timeout{20 * 60'000};
};

// Incremental SSE parsing (the WHATWG event-stream rules): feed bytes as they arrive, events come out whole.
class SseParser {
 public:
  explicit SseParser(size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}
  // Calls `handler` per complete event. Fails when an event grows past the limit; *stop is set when the handler
  // asked to stop.
  Status Feed(std::string_view bytes, const SseHandler& handler, bool* stop);

 private:
  void Line(std::string_view line, const SseHandler& handler, bool* stop);

  size_t max_event_bytes_;
  std::string line_;
  std::string event_, data_;
  bool data_seen_ = false;
  bool after_cr_ = false;  // a '\r' ended the last line; a '\n' right after it belongs to it
};

// One connection per request ("Connection: close"): the CLI makes a handful of calls, so reuse buys nothing.
class HttpClient {
 public:
  explicit HttpClient(Endpoint endpoint, ClientLimits limits = {});

  // Sends the request and reads the whole response (Content-Length, chunked, or until close).
  Result<HttpResponse> Send(const HttpRequest& request) const;
  // As Send, but a 2xx `text/event-stream` response is read incrementally: `on_event` runs per event as it arrives
  // and the returned body stays empty. Any other response is read whole, as Send does.
  Result<HttpResponse> SendStreaming(const HttpRequest& request, const SseHandler& on_event) const;

  const Endpoint& endpoint() const { return endpoint_; }

 private:
  Result<HttpResponse> Exchange(const HttpRequest& request, const SseHandler* on_event) const;

  Endpoint endpoint_;
  ClientLimits limits_;
};

}  // namespace isb::cli
