// A fake OpenAI-compatible chat-completions server on 127.0.0.1 for the judge's tests: in-process, one thread per
// connection, plain HTTP or TLS. It records each request and answers with what the test's handler says.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace isb::testing {

struct ChatRequest {
  std::string head;  // request line and header fields
  std::string body;
};

// The raw response bytes to send, or nullopt to say nothing until the client gives up (a hung judge).
using ChatHandler = std::function<std::optional<std::string>(const ChatRequest&)>;

class FakeChatServer {
 public:
  // `tls`: when set, connections are TLS with its certificate (the server owns a reference to it).
  explicit FakeChatServer(ChatHandler handler, SSL_CTX* tls = nullptr);
  ~FakeChatServer();  // stops accepting, ends every connection, joins every thread

  uint16_t port() const { return port_; }
  std::vector<ChatRequest> requests() const;
  size_t request_count() const;
  // Blocks until `n` requests have arrived (or 10 s passed: false).
  bool WaitForRequests(size_t n) const;

 private:
  void AcceptLoop();
  void Serve(Fd conn);

  ChatHandler handler_;
  SSL_CTX* tls_;
  Fd listener_;
  Fd stop_read_, stop_write_;
  uint16_t port_ = 0;
  std::thread acceptor_;
  mutable std::mutex mu_;
  mutable std::condition_variable arrived_;
  std::vector<ChatRequest> requests_;
  std::vector<std::thread> connections_;
};

// An HTTP/1.1 response with `status`, a JSON content type and `body`, framed by Content-Length.
std::string HttpResponseWith(int status, const std::string& body);
// A 200 chat completion whose first choice's message content is `content`.
std::string ChatCompletion(const std::string& content);

// A gate the handler can wait at until the test opens it (ends waiting after 10 s so a failing test still ends).
class Gate {
 public:
  void Open();
  void Wait();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace isb::testing
