// RunSandbox: lease ids, make the cgroup, clone, map, release the child, relay output, collect the outcome.
#include "engine/run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "base/fd.h"
#include "base/file.h"
#include "engine/launch.h"

namespace isb::engine {
namespace {

using Clock = std::chrono::steady_clock;

class Stream {
 public:
  Stream(Fd fd, int sink, bool capture, uint64_t limit, std::string* data, bool* truncated)
      : fd_(std::move(fd)), sink_(sink), capture_(capture), limit_(limit), data_(data), truncated_(truncated) {}
  bool open() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  // Reads what is available; past the limit output is read and dropped, so the writer never blocks on isb.
  void Pump() {
    char buf[65536];
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      fd_.Reset();
      return;
    }
    size_t keep = static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(n), limit_ - used_));
    if (keep < static_cast<size_t>(n)) *truncated_ = true;
    used_ += keep;
    if (keep == 0) return;
    if (capture_) {
      data_->append(buf, keep);
    } else {
      for (size_t off = 0; off < keep;) {
        ssize_t w = ::write(sink_, buf + off, keep - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;  // our own output is gone: keep draining
        off += static_cast<size_t>(w);
      }
    }
  }

 private:
  Fd fd_;
  int sink_;
  bool capture_;
  uint64_t limit_;
  uint64_t used_ = 0;
  std::string* data_;
  bool* truncated_;
};

}  // namespace

Result<RunResult> RunSandbox(const SandboxConfig& config, const RunOptions& options) {
  // Signals are taken through a signalfd; the child unblocks them before exec.
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  if (options.forward_signals)
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&forwarded, s);
  ::sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
  struct RestoreMask {
    sigset_t m;
    ~RestoreMask() { ::sigprocmask(SIG_SETMASK, &m, nullptr); }
  } restore{old_mask};
  Fd sigfd(::signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd.valid()) return Error::Sys("signalfd");

  const auto start = Clock::now();
  LaunchOptions lo;
  lo.runtime_dir = options.runtime_dir;
  lo.stdin_fd = options.stdin_fd;
  ISB_ASSIGN_OR_RETURN(Launched child, Launch(config, lo));
  RunResult result;
  if (child.exec_errno != 0) {
    result.exit_code = child.exec_errno == ENOENT ? 127 : 126;
    result.exec_error = config.argv[0] + ": " +
                        (child.exec_errno == ENOENT ? std::string("command not found in the sandbox")
                                                    : std::string(std::strerror(child.exec_errno)));
  }
  Stream streams[2] = {Stream(std::move(child.stdout_read), options.stdout_fd, options.capture, config.output_limit,
                              &result.stdout_data, &result.stdout_truncated),
                       Stream(std::move(child.stderr_read), options.stderr_fd, options.capture, config.output_limit,
                              &result.stderr_data, &result.stderr_truncated)};
  const auto deadline = config.timeout.count() > 0 ? start + config.timeout : Clock::time_point::max();
  bool init_done = false;
  int init_status = 0;
  while (!init_done || streams[0].open() || streams[1].open()) {
    pollfd fds[4] = {{streams[0].fd(), POLLIN, 0},
                     {streams[1].fd(), POLLIN, 0},
                     {init_done ? -1 : child.pidfd(), POLLIN, 0},
                     {sigfd.get(), POLLIN, 0}};
    int wait_ms = -1;
    if (!init_done && deadline != Clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      wait_ms = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 1 << 30)));
    }
    int n = ::poll(fds, 4, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("poll");
    if (n == 0 && !init_done) {
      // Killing pid 1 kills every process in the pid namespace, daemonized ones included.
      result.timed_out = true;
      ::kill(child.pid(), SIGKILL);
      continue;
    }
    for (int i = 0; i < 2; ++i)
      if (fds[i].revents) streams[i].Pump();
    if (fds[2].revents) {
      init_status = child.Wait();
      init_done = true;
    }
    if (fds[3].revents) {
      signalfd_siginfo si{};
      while (::read(sigfd.get(), &si, sizeof si) == sizeof si)
        if (!init_done) ::kill(child.pid(), static_cast<int>(si.ssi_signo));
    }
  }
  const auto end = Clock::now();

  int cmd_status = 0;
  bool have_status = ::read(child.status_read.get(), &cmd_status, sizeof cmd_status) == sizeof cmd_status;
  if (!have_status) cmd_status = init_status;  // init itself was killed (timeout, OOM)
  if (options.usage) {
    ISB_ASSIGN_OR_RETURN(CgroupStats stats, child.cgroup().ReadStats());
    result.oom_killed = stats.oom_kills > 0;
    result.peak_memory_bytes = stats.peak_memory_bytes;
    result.cpu_ms = static_cast<double>(stats.cpu_usec) / 1000.0;
  } else {
    ISB_ASSIGN_OR_RETURN(uint64_t oom_kills, child.cgroup().OomKills());
    result.oom_killed = oom_kills > 0;
  }
  result.wall_ms = std::chrono::duration<double, std::milli>(end - start).count();
  if (!result.exec_error.empty()) {
    // exit_code set above
  } else if (WIFSIGNALED(cmd_status)) {
    result.signal = WTERMSIG(cmd_status);
    result.exit_code = 128 + result.signal;
  } else if (WIFEXITED(cmd_status)) {
    result.exit_code = WEXITSTATUS(cmd_status);
  }
  if (result.timed_out) {
    result.signal = SIGKILL;
    result.exit_code = 124;
  }
  ISB_TRY(child.cgroup().Remove());
  Clock::time_point last = start;
  auto add = [&](const std::string& name, Clock::time_point at) {
    result.steps_ms.emplace_back(name, std::chrono::duration<double, std::milli>(at - last).count());
    last = at;
  };
  for (const auto& [name, at] : child.steps) add(name, at);
  add("command", end);
  add("cleanup", Clock::now());
  return result;
}

}  // namespace isb::engine
