// The raw test client: plain sockets, so that the tests see exactly what the server wrote.
#include "api/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace isb::api {

Reply ParseReply(const std::string& raw) {
  Reply r;
  r.raw = raw;
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || raw.size() < 12) return r;
  r.status = std::atoi(raw.substr(9, 3).c_str());
  size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  r.head = raw.substr(0, end);
  std::string rest = raw.substr(end + 4);
  if (r.head.find("Transfer-Encoding: chunked") == std::string::npos) {
    r.body = rest;
    return r;
  }
  for (size_t at = 0; at < rest.size();) {
    size_t eol = rest.find("\r\n", at);
    if (eol == std::string::npos) break;
    size_t len = std::strtoul(rest.substr(at, eol - at).c_str(), nullptr, 16);
    if (len == 0) break;
    r.body += rest.substr(eol + 2, len);
    at = eol + 2 + len + 2;
  }
  return r;
}

Fd Connect(uint16_t port, const char* source) {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (source != nullptr) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    EXPECT_EQ(inet_pton(AF_INET, source, &from.sin_addr), 1);
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof from), 0) << std::strerror(errno);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

Fd ConnectUnix(const std::string& path) {
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

std::string Exchange(const Fd& fd, const std::string& data, bool half_close) {
  timeval tv{10, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  for (size_t sent = 0; sent < data.size();) {
    ssize_t n = send(fd.get(), data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early (413); what it answered is still readable
    sent += static_cast<size_t>(n);
  }
  if (half_close) shutdown(fd.get(), SHUT_WR);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string HttpRequest(const std::string& method, const std::string& target, const std::string& body,
                        const std::string& extra_headers) {
  return method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + extra_headers +
         "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace isb::api
