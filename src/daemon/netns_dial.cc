// Dialling a sandbox's loopback from inside its network namespace.
#include "daemon/netns_dial.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <thread>

namespace isb::daemon {

Result<Fd> OpenNetns(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
  Fd netns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!netns.valid()) return Error::Sys("opening " + path);
  return netns;
}

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

Result<Fd> ConnectLoopbackIn(int netns, uint16_t port) {
  Result<Fd> out = Error::Msg("not dialled");
  std::thread dialer([&] {
    if (::setns(netns, CLONE_NEWNET) != 0) {
      out = Error::Sys("entering the sandbox's network namespace");
      return;
    }
    out = ConnectLoopback(port);
  });
  dialer.join();
  return out;
}

}  // namespace isb::daemon
