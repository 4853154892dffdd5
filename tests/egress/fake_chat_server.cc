#include "fake_chat_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include <nlohmann/json.hpp>

namespace isb::testing {
namespace {

// Reads one request (head, then a Content-Length body) through `read`; false when the client went away first.
bool ReadRequest(const std::function<ssize_t(char*, size_t)>& read, ChatRequest* out) {
  std::string bytes;
  char buf[4096];
  size_t end = std::string::npos;
  size_t length = 0;
  for (;;) {
    if (end == std::string::npos && (end = bytes.find("\r\n\r\n")) != std::string::npos) {
      out->head = bytes.substr(0, end);
      std::string lower = out->head;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t at = lower.find("\r\ncontent-length:");
      if (at != std::string::npos) length = std::stoul(lower.substr(at + 17));
    }
    if (end != std::string::npos && bytes.size() >= end + 4 + length) {
      out->body = bytes.substr(end + 4, length);
      return true;
    }
    ssize_t n = read(buf, sizeof buf);
    if (n <= 0) return false;
    bytes.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

FakeChatServer::FakeChatServer(ChatHandler handler, SSL_CTX* tls) : handler_(std::move(handler)), tls_(tls) {
  if (tls_ != nullptr) SSL_CTX_up_ref(tls_);
  listener_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener_.get(), 64) != 0)
    std::abort();
  socklen_t len = sizeof a;
  ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) std::abort();
  stop_read_ = Fd(p[0]);
  stop_write_ = Fd(p[1]);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FakeChatServer::~FakeChatServer() {
  stop_write_.Reset();  // every poll on stop_read_ wakes
  acceptor_.join();
  for (std::thread& t : connections_) t.join();
  if (tls_ != nullptr) SSL_CTX_free(tls_);
}

void FakeChatServer::AcceptLoop() {
  for (;;) {
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;
    if (p[1].revents != 0) return;
    Fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) continue;
    std::lock_guard lock(mu_);
    connections_.emplace_back([this, c = conn.Release()] { Serve(Fd(c)); });
  }
}

void FakeChatServer::Serve(Fd conn) {
  // Waits until the client sends something, closes, or the server stops; false for the latter two.
  SSL* ssl = nullptr;
  auto readable = [&] {
    if (ssl != nullptr && SSL_pending(ssl) > 0) return true;
    pollfd p[2] = {{conn.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    while (::poll(p, 2, -1) < 0) {
    }
    return p[1].revents == 0;
  };
  if (tls_ != nullptr) {
    ssl = SSL_new(tls_);
    SSL_set_fd(ssl, conn.get());
    if (!readable() || SSL_accept(ssl) != 1) {
      SSL_free(ssl);
      return;
    }
  }
  auto read = [&](char* buf, size_t n) -> ssize_t {
    if (!readable()) return -1;
    return ssl != nullptr ? SSL_read(ssl, buf, static_cast<int>(n)) : ::recv(conn.get(), buf, n, 0);
  };
  ChatRequest request;
  if (ReadRequest(read, &request)) {
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
    }
    arrived_.notify_all();
    std::optional<std::string> response = handler_(request);
    if (response) {
      if (ssl != nullptr) {
        SSL_write(ssl, response->data(), static_cast<int>(response->size()));
        SSL_shutdown(ssl);
      } else {
        ::send(conn.get(), response->data(), response->size(), MSG_NOSIGNAL);
      }
    } else {
      char sink[256];
      while (read(sink, sizeof sink) > 0) {
      }
    }
  }
  if (ssl != nullptr) SSL_free(ssl);
}

std::vector<ChatRequest> FakeChatServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

size_t FakeChatServer::request_count() const {
  std::lock_guard lock(mu_);
  return requests_.size();
}

bool FakeChatServer::WaitForRequests(size_t n) const {
  std::unique_lock lock(mu_);
  return arrived_.wait_for(lock, std::chrono::seconds(10), [&] { return requests_.size() >= n; });
}

std::string HttpResponseWith(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

std::string ChatCompletion(const std::string& content) {
  nlohmann::json body = {
      {"id", "chatcmpl-1"},
      {"object", "chat.completion"},
      {"choices",
       nlohmann::json::array(
           {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", "stop"}}})}};
  return HttpResponseWith(200, body.dump());
}

void Gate::Open() {
  std::lock_guard lock(mu_);
  open_ = true;
  cv_.notify_all();
}

void Gate::Wait() {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(10), [&] { return open_; });
}

}  // namespace isb::testing
