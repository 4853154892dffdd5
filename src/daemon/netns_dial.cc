// Dialling a sandbox's loopback from inside its network namespace.
#include "daemon/netns_dial.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace isb::daemon {

Result<Fd> ConnectLoopback(uint16_t port) {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) return Error::Sys("socket");
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)
    return Error::Sys("connecting to 127.0.0.1:" + std::to_string(port));
  return s;
}

namespace {

// Runs `dial` on a thread of its own that has entered `netns` (setns applies to that thread alone).
template <class Dial>
Result<Fd> InNetns(int netns, const Dial& dial) {
  Result<Fd> out = Error::Msg("not dialled");
  std::thread dialer([&] {
    if (::setns(netns, CLONE_NEWNET) != 0) {
      out = Error::Sys("entering the sandbox's network namespace");
      return;
    }
    out = dial();
  });
  dialer.join();
  return out;
}

// A connection to `to` (of `len` bytes) ended within `timeout`: 0, or the errno it ended with.
int ConnectWithin(int s, const sockaddr* to, socklen_t len, std::chrono::milliseconds timeout) {
  if (::connect(s, to, len) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  pollfd ready{s, POLLOUT, 0};
  const int n = ::poll(&ready, 1, static_cast<int>(timeout.count()));
  if (n < 0) return errno;
  if (n == 0) return ETIMEDOUT;
  int err = 0;
  socklen_t err_len = sizeof err;
  if (::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0) return errno;
  return err;
}

}  // namespace

Result<Fd> ConnectLoopbackIn(int netns, uint16_t port) {
  return InNetns(netns, [port] { return ConnectLoopback(port); });
}

Result<Fd> DialLoopback(uint16_t port, std::chrono::milliseconds timeout) {
  const std::string p = std::to_string(port);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto left = [&deadline] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  };
  Fd v4(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!v4.valid()) return Error::Sys("socket");
  sockaddr_in to4{};
  to4.sin_family = AF_INET;
  to4.sin_port = htons(port);
  to4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Half the time at most: when 127.0.0.1's SYN is dropped (a full backlog, a firewall) [::1] still gets its turn.
  const int err4 =
      ConnectWithin(v4.get(), reinterpret_cast<sockaddr*>(&to4), sizeof to4, std::min(left(), timeout / 2));
  if (err4 == 0) return v4;
  Fd v6(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!v6.valid()) return Error::Sys("socket");
  sockaddr_in6 to6{};
  to6.sin6_family = AF_INET6;
  to6.sin6_port = htons(port);
  to6.sin6_addr = in6addr_loopback;
  const int err6 = ConnectWithin(v6.get(), reinterpret_cast<sockaddr*>(&to6), sizeof to6, left());
  if (err6 == 0) return v6;
  return Error::Msg("127.0.0.1:" + p + ": " + std::strerror(err4) + "; [::1]:" + p + ": " + std::strerror(err6));
}

Result<Fd> DialLoopbackIn(int netns, uint16_t port, std::chrono::milliseconds timeout) {
  return InNetns(netns, [port, timeout] { return DialLoopback(port, timeout); });
}

}  // namespace isb::daemon
