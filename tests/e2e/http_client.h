// A deliberately small HTTP/1.1 client over a raw socket (unix or TCP on 127.0.0.1): exact bytes out, exact bytes
// in. The suite uses it where curl cannot say what it must (truncated and malformed requests, a client that
// vanishes mid-call, timing of streamed chunks, many connections from threads).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace isb::e2e {

// `text` with every isb secret in it (isb_tok_, isb_sa_, isb_sess_, isb_inv_, isb_rst_, isb_setup_ and what follows)
// cut to its prefix and "[redacted]": what a failing test prints never shows a credential.
std::string RedactSecrets(std::string text);

using json = nlohmann::json;
using namespace std::chrono_literals;

// Where a daemon listens: its unix socket, or 127.0.0.1:port.
struct Endpoint {
  std::string unix_path;  // non-empty: connect here
  uint16_t port = 0;      // else: 127.0.0.1:port
  std::string Describe() const { return unix_path.empty() ? "127.0.0.1:" + std::to_string(port) : "unix:" + unix_path; }
};

struct HttpResponse {
  int status = 0;                              // 0: no response (see error)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
  json j;                                      // body parsed when it is JSON; else null
  std::string error;                           // transport failure, if any

  std::string Header(const std::string& lower_name) const;
  std::string Describe() const;  // for assertion messages
};

// Parses a whole response (status line, headers, body with Content-Length or chunked, or up to EOF); 1xx interim
// responses are skipped. `decoded`: the body is already de-chunked (curl's output), whatever the headers say.
HttpResponse ParseHttpResponse(const std::string& raw, bool decoded = false);

// One connection. Every call that can fail records why in error().
class RawConnection {
 public:
  explicit RawConnection(const Endpoint& ep);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0 && error_.empty(); }
  const std::string& error() const { return error_; }
  bool Send(std::string_view bytes);  // all of it (MSG_NOSIGNAL); false when the peer is gone
  void ShutdownWrite();
  // Both directions: the peer sees the connection end, and a ReadAll on another thread returns.
  void Shutdown();
  void Close();
  // Reads until EOF or `timeout`; `on_data` (optional) sees each piece as it arrives.
  std::string ReadAll(std::chrono::milliseconds timeout = 30s,
                      const std::function<void(std::string_view)>& on_data = nullptr);

 private:
  int fd_ = -1;
  std::string error_;
};

// "METHOD target HTTP/1.1" with Host, Connection: close, Content-Length and the extra header lines (each "Name: v").
std::string BuildRequest(const std::string& method, const std::string& target, const std::string& body,
                         const std::vector<std::string>& headers = {});

// One request on a fresh connection, the whole response read back.
HttpResponse Http(const Endpoint& ep, const std::string& method, const std::string& target,
                  const std::string& body = "", const std::vector<std::string>& headers = {},
                  std::chrono::milliseconds timeout = 60s);

}  // namespace isb::e2e
