// Loopback helpers for the wire tests: TCP and UDP sockets on 127.0.0.1, and real client programs (openssl, curl,
// dig) run as children that are always killed and reaped.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/result.h"

namespace isb::testing {

// A program started from PATH with stdin and stderr on /dev/null and stdout in a pipe.
class Child {
 public:
  static Result<Child> Start(const std::vector<std::string>& argv);
  Child(Child&& o) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  ~Child();  // kills and reaps a child still running

  // Reads stdout until EOF or `timeout_ms`, then kills (if needed) and reaps the child.
  std::string Output(int timeout_ms);

 private:
  Child(pid_t pid, Fd out) : pid_(pid), out_(std::move(out)) {}
  pid_t pid_ = -1;
  Fd out_;
};

struct Socket {
  Fd fd;
  uint16_t port = 0;
};

// A TCP listener or a UDP socket bound to 127.0.0.1 on a port the kernel picks.
Result<Socket> ListenTcp();
Result<Socket> BindUdp();

// A TCP port on 127.0.0.1 that was free a moment ago (bound and closed again), for a server the test starts.
Result<uint16_t> FreeTcpPort();

// A blocking TCP connection to 127.0.0.1:`port`.
Result<Fd> ConnectTcp(uint16_t port);

// Accepts one connection within `timeout_ms`.
Result<Fd> AcceptWithin(int listener, int timeout_ms);

// Reads from `fd` until `done(bytes so far)` is true, EOF, or `timeout_ms` passes; returns what was read.
std::string ReadUntil(int fd, const std::function<bool(const std::string&)>& done, int timeout_ms);

// Starts `argv` with each "PORT" replaced by the port of a fresh loopback listener, accepts the program's
// connection and returns what it sent, read until `done(bytes so far)`, EOF or 10 s. The program is then killed.
Result<std::string> CaptureClient(std::vector<std::string> argv, const std::function<bool(const std::string&)>& done);

}  // namespace isb::testing
