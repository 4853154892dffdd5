// A small blocking HTTP/1.1 client for the daemon's own requests out (the judge): one request per connection, the
// connection dialled through the SSRF-safe dialer, https verified (stream.h), everything within one deadline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "egress/dialer.h"
#include "egress/stream.h"

namespace isb::egress {

struct HttpUrl {
  bool tls = false;    // https
  std::string host;    // a name (normalized) or an address literal, without brackets
  uint16_t port = 0;   // as written, else 443 for https and 80 for http
  std::string target;  // path and query, "/" when empty
  bool operator==(const HttpUrl&) const = default;
};

// "http://HOST[:PORT][/PATH]" or "https://...". No user info, no fragment. Errors (kInvalidArgument) name the URL.
Result<HttpUrl> ParseHttpUrl(std::string_view url);

struct HttpReply {
  int status = 0;
  std::string body;
};

struct HttpPostRequest {
  std::vector<std::pair<std::string, std::string>> headers;  // Host, Content-Length, Connection are added
  std::string body;
  size_t max_response_body = 1 << 20;
};

// POSTs `request` to `url` and reads the response. `trust` is needed for https. Errors: the dialer's, the TLS
// handshake's (kUnavailable), kTimeout when the deadline passed, kUnavailable for a malformed or cut-off response.
// Messages never contain the request's header values.
Result<HttpReply> HttpPost(const Dialer& dialer, const TlsTrust* trust, const HttpUrl& url,
                           const HttpPostRequest& request, Deadline deadline);

}  // namespace isb::egress
