// Loopback sockets and child programs for the wire tests, over poll(2) with deadlines so no test can hang.
#include "net/loopback.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

extern char** environ;

namespace isb::testing {
namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

Result<Socket> Bind(int type) {
  Socket s;
  s.fd = Fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  if (!s.fd.valid()) return Error::Sys("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(s.fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return Error::Sys("bind");
  if (type == SOCK_STREAM && ::listen(s.fd.get(), 8) != 0) return Error::Sys("listen");
  socklen_t len = sizeof addr;
  if (::getsockname(s.fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) return Error::Sys("getsockname");
  s.port = ntohs(addr.sin_port);
  return s;
}

}  // namespace

Result<Child> Child::Start(const std::vector<std::string>& argv) {
  ISB_ASSIGN_OR_RETURN(Pipe out, MakePipe());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write.get(), 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error::Sys("spawn " + argv[0], rc);
  return Child(pid, std::move(out.read));
}

Child::Child(Child&& o) noexcept : pid_(std::exchange(o.pid_, -1)), out_(std::move(o.out_)) {}

Child::~Child() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::string Child::Output(int timeout_ms) {
  std::string out = ReadUntil(
      out_.get(), [](const std::string&) { return false; }, timeout_ms);
  out_.Reset();
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  return out;
}

Result<Socket> ListenTcp() { return Bind(SOCK_STREAM); }
Result<Socket> BindUdp() { return Bind(SOCK_DGRAM); }

Result<uint16_t> FreeTcpPort() {
  ISB_ASSIGN_OR_RETURN(Socket s, Bind(SOCK_STREAM));
  return s.port;
}

Result<Fd> ConnectTcp(uint16_t port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::Sys("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return Error::Sys("connect");
  return fd;
}

Result<Fd> AcceptWithin(int listener, int timeout_ms) {
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return Error::Msg("no connection within the time limit");
  Fd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn.valid()) return Error::Sys("accept");
  return conn;
}

std::string ReadUntil(int fd, const std::function<bool(const std::string&)>& done, int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string got;
  while (!done(got)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) != 1) break;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

Result<std::string> CaptureClient(std::vector<std::string> argv, const std::function<bool(const std::string&)>& done) {
  ISB_ASSIGN_OR_RETURN(Socket listener, ListenTcp());
  for (std::string& a : argv) {
    if (size_t at = a.find("PORT"); at != std::string::npos) a.replace(at, 4, std::to_string(listener.port));
  }
  ISB_ASSIGN_OR_RETURN(Child child, Child::Start(argv));
  auto conn = AcceptWithin(listener.fd.get(), 10000);
  if (!conn.ok()) return Error::Msg(argv[0] + " did not connect: " + conn.error().message);
  return ReadUntil(conn->get(), done, 10000);
}

}  // namespace isb::testing
