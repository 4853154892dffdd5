// The scripted test server: one thread, one connection at a time, or a thread per connection.
#include "cli/test_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

namespace isb::cli::testing {

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string JsonAnswer(int status, std::string_view body, std::string_view type) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + std::string(type) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

TestServer::TestServer(Responder respond, bool read_body, bool concurrent)
    : respond_(std::move(respond)), read_body_(read_body), concurrent_(concurrent) {
  char tmpl[] = "/tmp/isb-cli-test-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) std::abort();
  dir_ = tmpl;
  socket_path_ = dir_ + "/isb.sock";
  listener_ = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener_.get(), 16) != 0) {
    std::abort();
  }
  auto pipe = MakePipe();
  if (!pipe.ok()) std::abort();
  stop_ = std::move(*pipe);
  thread_ = std::thread([this] { Loop(); });
}

TestServer::~TestServer() {
  stop_.write.Reset();
  thread_.join();
  for (auto& t : workers_) t.join();
  listener_.Reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::vector<SeenRequest> TestServer::requests() {
  std::lock_guard lock(mu_);
  return requests_;
}

void TestServer::Loop() {
  for (;;) {
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_.read.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    Fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) continue;
    if (concurrent_) {
      workers_.emplace_back([this, c = std::make_shared<Fd>(std::move(conn))] { Serve(std::move(*c)); });
    } else {
      Serve(std::move(conn));
    }
  }
}

void TestServer::Serve(Fd conn) {
  std::string data;
  char buf[65536];
  size_t head_end;
  while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = ::read(conn.get(), buf, sizeof buf);
    if (n <= 0) return;
    data.append(buf, static_cast<size_t>(n));
  }
  SeenRequest req{data.substr(0, head_end + 2), data.substr(head_end + 4)};
  size_t want = 0;
  for (const char* name : {"Content-Length: ", "content-length: "}) {
    if (size_t at = req.head.find(name); at != std::string::npos)
      want = std::strtoul(req.head.c_str() + at + 16, nullptr, 10);
  }
  while (read_body_ && req.body.size() < want) {
    ssize_t n = ::read(conn.get(), buf, sizeof buf);
    if (n <= 0) break;
    req.body.append(buf, static_cast<size_t>(n));
  }
  {
    std::lock_guard lock(mu_);
    requests_.push_back(req);
  }
  respond_(conn.get(), req);
}

}  // namespace isb::cli::testing
