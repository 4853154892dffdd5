// The spawner process and its request protocol (one JSON message each way over a SOCK_SEQPACKET pair).
#include "engine/spawner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/fd_passing.h"
#include "base/file.h"
#include "engine/launch.h"

namespace isb::engine {
namespace {

using nlohmann::json;
constexpr size_t kMaxMessage = 1 << 20;

// One message, with at most one descriptor riding along (SCM_RIGHTS) when `pass_fd` >= 0.
Status SendText(int fd, const std::string& s, int pass_fd = -1) {
  if (s.size() > kMaxMessage) return Error::Msg("spawner message too large");
  if (SendWithFds(fd, s.data(), s.size(), &pass_fd, pass_fd >= 0 ? 1 : 0) != static_cast<ssize_t>(s.size()))
    return Error::Sys("send");
  return {};
}

// One message, and the descriptor that came with it (if any) into *received.
Result<std::string> RecvText(int fd, Fd* received = nullptr) {
  // The message's length first (MSG_TRUNC on a peek tells it), so the buffer is just that big: a zeroed 1 MiB
  // buffer per message cost the spawner hundreds of copy-on-write faults after each clone.
  char probe = 0;
  ssize_t len;
  while ((len = ::recv(fd, &probe, 1, MSG_PEEK | MSG_TRUNC)) < 0 && errno == EINTR) {
  }
  if (len < 0) return Error::Sys("recv");
  if (len == 0) return Error::Msg("the spawner exited");
  if (static_cast<size_t>(len) > kMaxMessage) return Error::Msg("spawner message too large");
  std::string buf(static_cast<size_t>(len), '\0');
  int got = -1;
  ssize_t n = RecvWithFd(fd, buf.data(), buf.size(), &got);
  if (got >= 0) {
    if (received != nullptr)
      received->Reset(got);
    else
      ::close(got);
  }
  if (n < 0) return Error::Sys("recv");
  if (n == 0) return Error::Msg("the spawner exited");
  buf.resize(static_cast<size_t>(n));
  return buf;
}

std::string Handle(const std::string& request, const std::string& runtime_dir, Fd* report) {
  json req = json::parse(request, nullptr, false);
  if (req.is_discarded()) return json{{"error", "malformed request"}}.dump();
  auto config = ConfigFromJson(req.value("config", ""));
  if (!config.ok()) return json{{"error", config.error().message}}.dump();
  LaunchOptions lo;
  lo.runtime_dir = runtime_dir;
  lo.mode = InitMode::kService;
  lo.control_path = req.value("control_path", "");
  lo.die_with_parent = false;
  lo.cgroup_name = req.value("cgroup_name", "");
  lo.wait_for_setup = false;  // the daemon waits; this process goes on to the next clone
  lo.stdin_fd = -1;
  auto launched = Launch(*config, lo);
  if (!launched.ok())
    return json{{"error", launched.error().message}, {"code", static_cast<int>(launched.error().code)}}.dump();
  json reply{{"pid", launched->pid()},
             {"start_time", ProcessStartTime(launched->pid())},
             {"lease_index", launched->lease().held() ? int64_t{launched->lease().index()} : int64_t{-1}},
             {"uid_base", launched->lease().base()}};
  *report = std::move(launched->report_read);
  reply["cgroup"] = launched->Detach();
  return reply.dump();
}

[[noreturn]] void SpawnerMain(int sock, const std::string& runtime_dir) {
  ::prctl(PR_SET_NAME, "isb-spawner");
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  int sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  for (;;) {
    pollfd p[2] = {{sock, POLLIN, 0}, {sigfd, POLLIN, 0}};
    int n = ::poll(p, 2, sigfd < 0 ? 1000 : -1);
    signalfd_siginfo si;
    while (sigfd >= 0 && ::read(sigfd, &si, sizeof si) == sizeof si) {
    }
    // Sandboxes whose init exited while this process is their parent are reaped here.
    while (::waitpid(-1, nullptr, WNOHANG | __WALL) > 0) {
    }
    if (n <= 0 || !(p[0].revents)) continue;
    auto req = RecvText(sock);
    if (!req.ok()) ::_exit(0);  // the daemon is gone; the sandboxes stay
    Fd report;
    std::string reply = Handle(*req, runtime_dir, &report);  // before report.get(): it fills `report`
    if (!SendText(sock, reply, report.get()).ok()) ::_exit(0);
  }
}

}  // namespace

Spawner::~Spawner() {
  sock_.Reset();  // EOF ends the spawner's loop
  if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
}

Status Spawner::Start(const std::string& runtime_dir) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return Error::Sys("socketpair");
  pid_t pid = ::fork();
  if (pid < 0) return Error::Sys("fork the spawner");
  if (pid == 0) {
    ::close(sv[0]);
    SpawnerMain(sv[1], runtime_dir);
  }
  ::close(sv[1]);
  MutexLock lock(mu_);
  sock_.Reset(sv[0]);
  pid_ = pid;
  return {};
}

Result<SpawnedSandbox> Spawner::Spawn(const SandboxConfig& config, const std::string& control_path,
                                      const std::string& cgroup_name) {
  MutexLock lock(mu_);
  if (!sock_.valid()) return Error::Msg("the spawner is not running");
  ISB_TRY(SendText(
      sock_.get(),
      json{{"config", ConfigToJson(config)}, {"control_path", control_path}, {"cgroup_name", cgroup_name}}.dump()));
  Fd report;
  ISB_ASSIGN_OR_RETURN(std::string text, RecvText(sock_.get(), &report));
  json r = json::parse(text, nullptr, false);
  if (r.is_discarded()) return Error::Msg("malformed reply from the spawner");
  if (r.contains("error"))
    return Error::Of(static_cast<Code>(r.value("code", static_cast<int>(Code::kUnavailable))),
                     r["error"].get<std::string>());
  SpawnedSandbox s;
  s.pid = r["pid"].get<pid_t>();
  s.start_time = r["start_time"].get<uint64_t>();
  s.cgroup = r["cgroup"].get<std::string>();
  s.lease_index = r["lease_index"].get<int64_t>();
  s.uid_base = r["uid_base"].get<uint32_t>();
  s.report = std::move(report);
  return s;
}

namespace {

// Field 22 of a /proc/PID/stat text; 0 for a zombie or a text that is not one.
uint64_t StartTimeOf(const std::string& stat) {
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  size_t p = stat.rfind(')');
  if (p == std::string::npos || p + 2 > stat.size()) return 0;
  std::string rest = stat.substr(p + 2);
  if (rest.empty() || rest[0] == 'Z' || rest[0] == 'X') return 0;  // exited, not yet reaped: not alive
  size_t field = 3, pos = 0;
  while (field < 22 && pos != std::string::npos) {
    pos = rest.find(' ', pos);
    if (pos != std::string::npos) ++pos;
    ++field;
  }
  if (pos == std::string::npos) return 0;
  return std::strtoull(rest.c_str() + pos, nullptr, 10);
}

// The start time of the process whose /proc directory `dir` is.
uint64_t StartTimeAt(int dir) {
  Fd stat(::openat(dir, "stat", O_RDONLY | O_CLOEXEC));
  if (!stat.valid()) return 0;
  char buf[1024];
  ssize_t n = ::read(stat.get(), buf, sizeof buf - 1);
  if (n <= 0) return 0;
  return StartTimeOf(std::string(buf, static_cast<size_t>(n)));
}

}  // namespace

uint64_t ProcessStartTime(pid_t pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  return stat.ok() ? StartTimeOf(*stat) : 0;
}

Fd OpenProcess(pid_t pid, uint64_t start_time) {
  if (pid <= 0 || start_time == 0) return Fd();
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid() || ProcessStartTime(pid) != start_time) return Fd();
  return pidfd;
}

Fd OpenProcessDir(pid_t pid, uint64_t start_time) {
  if (pid <= 0 || start_time == 0) return Fd();
  Fd dir(::open(("/proc/" + std::to_string(pid)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid() || StartTimeAt(dir.get()) != start_time) return Fd();
  return dir;
}

std::string ConfigToJson(const SandboxConfig& c) {
  json binds = json::array();
  for (const auto& b : c.binds)
    binds.push_back({{"source", b.source}, {"target", b.target}, {"read_only", b.read_only}});
  return json{{"argv", c.argv},
              {"env", c.env},
              {"workdir", c.workdir},
              {"hostname", c.hostname},
              {"resolv_conf", c.resolv_conf},
              {"secrets_tmpfs", c.secrets_tmpfs},
              {"uid", c.uid},
              {"gid", c.gid},
              {"privileged", c.privileged},
              {"idmap", c.idmap},
              {"image", c.image},
              {"image_layers", c.image_layers},
              {"idmap_image", c.idmap_image},
              {"writable_dir", c.writable_dir},
              {"binds", binds},
              {"memory_bytes", c.limits.memory_bytes},
              {"millicpus", c.limits.millicpus},
              {"pids", c.limits.pids},
              {"timeout_ms", c.timeout.count()},
              {"output_limit", c.output_limit}}
      .dump();
}

Result<SandboxConfig> ConfigFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::Msg("malformed sandbox config");
  try {
    SandboxConfig c;
    c.argv = j.at("argv").get<std::vector<std::string>>();
    c.env = j.at("env").get<std::vector<std::string>>();
    c.workdir = j.at("workdir").get<std::string>();
    c.hostname = j.at("hostname").get<std::string>();
    c.resolv_conf = j.value("resolv_conf", "");
    c.secrets_tmpfs = j.value("secrets_tmpfs", false);
    c.uid = j.at("uid").get<uid_t>();
    c.gid = j.at("gid").get<gid_t>();
    c.privileged = j.value("privileged", false);
    c.idmap = j.value("idmap", std::vector<IdMapping>{});
    c.image = j.at("image").get<std::string>();
    c.image_layers = j.value("image_layers", std::vector<std::string>{});
    c.idmap_image = j.value("idmap_image", false);
    c.writable_dir = j.at("writable_dir").get<std::string>();
    for (const auto& b : j.at("binds"))
      c.binds.push_back(
          {b.at("source").get<std::string>(), b.at("target").get<std::string>(), b.at("read_only").get<bool>()});
    c.limits.memory_bytes = j.at("memory_bytes").get<uint64_t>();
    c.limits.millicpus = j.at("millicpus").get<uint32_t>();
    c.limits.pids = j.at("pids").get<uint32_t>();
    c.timeout = std::chrono::milliseconds(j.at("timeout_ms").get<int64_t>());
    c.output_limit = j.at("output_limit").get<uint64_t>();
    return c;
  } catch (const json::exception& e) {
    return Error::Msg(std::string("malformed sandbox config: ") + e.what());
  }
}

}  // namespace isb::engine
