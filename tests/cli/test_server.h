// A tiny scripted HTTP server on a unix socket in a temp dir, for testing the CLI's client without a daemon.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/fd.h"

namespace isb::cli::testing {

// One request as the server read it.
struct SeenRequest {
  std::string head;  // request line and headers
  std::string body;  // Content-Length bytes
};

// Writes all of `data` to `fd`; false when the peer is gone.
bool SendAll(int fd, std::string_view data);

class TestServer {
 public:
  // `respond` writes the answer on the connection's fd; the server closes it afterwards.
  // With `read_body` false the server answers after the headers, without reading the body.
  using Responder = std::function<void(int fd, const SeenRequest& request)>;
  // With `concurrent`, each connection is served on a thread of its own (a streaming call and the calls made
  // while it runs); else one at a time.
  explicit TestServer(Responder respond, bool read_body = true, bool concurrent = false);
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  const std::string& socket_path() const { return socket_path_; }
  const std::string& dir() const { return dir_; }
  std::vector<SeenRequest> requests();

 private:
  void Loop();
  void Serve(Fd conn);

  Responder respond_;
  bool read_body_;
  bool concurrent_;
  std::vector<std::thread> workers_;
  std::string dir_, socket_path_;
  Fd listener_;
  Pipe stop_;
  std::mutex mu_;
  std::vector<SeenRequest> requests_;
  std::thread thread_;
};

// "HTTP/1.1 <status> X\r\nContent-Type: <type>\r\nContent-Length: N\r\n\r\n<body>".
std::string JsonAnswer(int status, std::string_view body, std::string_view type = "application/json");

}  // namespace isb::cli::testing
