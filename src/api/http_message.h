// The Beast-free HTTP request and response the REST and MCP handlers work on; the server converts to and from them.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/ascii.h"

namespace isb::api {

// Header names compare case-insensitively; order is kept.
class Headers {
 public:
  void Add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }
  void Set(std::string_view name, std::string value);
  // The first value of `name`, or "" when absent.
  std::string Get(std::string_view name) const;
  bool Has(std::string_view name) const;
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, as sent
  Headers headers;
  std::string body;
  bool via_unix_socket = false;
  std::string remote_address;  // the TCP peer's address ("" on the unix socket)

  std::string_view Path() const;   // target without the query
  std::string_view Query() const;  // after '?', or ""
  // The value of a query parameter (no percent-decoding; our parameters are plain), or "" when absent.
  std::string QueryParam(std::string_view name) const;
};

// Writes one chunk of a streamed body; returns false once the client is gone (stop producing then).
using ChunkWriter = std::function<bool(std::string_view chunk)>;

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
  // When set, the server sends status and headers, then calls `stream` on a worker thread, sending each chunk as it
  // is written (chunked transfer encoding); `body` is ignored.
  std::function<void(const ChunkWriter& write)> stream;
  // When set (with status 101), the server sends status and headers, then hands the connection over on a worker
  // thread: `fd` is the socket (non-blocking; poll it), `pending` what the client sent past the request, `stopping`
  // whether the server is stopping. The server closes the socket once it returns.
  std::function<void(int fd, std::string_view pending, const std::function<bool()>& stopping)> upgraded = {};
};

// A JSON response with Content-Type application/json.
Response JsonResponse(int status, std::string body);

// One Server-Sent Events message: "event: NAME\n" (omitted when empty), a "data: " line per line of `data`, "\n".
std::string SseEvent(std::string_view event, std::string_view data);

using isb::EqualsIgnoreCase;

}  // namespace isb::api
