// A raw blocking HTTP/1.1 client for the api tests: bytes on the wire out, the status, head and body back.
#pragma once

#include <cstdint>
#include <string>

#include "base/fd.h"

namespace isb::api {

struct Reply {
  int status = 0;
  std::string head;
  std::string body;  // de-chunked
  std::string raw;
};

Reply ParseReply(const std::string& raw);

// A connection to 127.0.0.1:`port`, from `source` when given (any of 127.0.0.0/8 is the host's own).
Fd Connect(uint16_t port, const char* source = nullptr);
Fd ConnectUnix(const std::string& path);

// Sends `data` (optionally half-closing), then reads until the server closes.
std::string Exchange(const Fd& fd, const std::string& data, bool half_close = false);

// A request with Host: localhost, Connection: close, a JSON Content-Type and `extra_headers` (each ending "\r\n").
std::string HttpRequest(const std::string& method, const std::string& target, const std::string& body = "",
                        const std::string& extra_headers = "");

}  // namespace isb::api
