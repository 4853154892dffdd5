// RunProgram: posix_spawn, not fork, since the daemon is multi-threaded.
#include "base/program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "base/fd.h"

extern char** environ;

namespace isb {

bool ProgramExit::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

namespace {

// Reads what `fd` has into `out`, up to `limit` bytes kept (the rest read and dropped); false at its end.
bool ReadInto(int fd, std::string& out, size_t limit) {
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  if (out.size() < limit) out.append(buf, std::min(static_cast<size_t>(n), limit - out.size()));
  return true;
}

void TrimNewlines(std::string& s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
}

}  // namespace

Result<ProgramExit> RunProgram(const std::vector<std::string>& argv, std::string_view input, size_t stdout_limit,
                               std::chrono::milliseconds timeout) {
  if (argv.empty()) return Error::Msg("no program to run");
  ISB_ASSIGN_OR_RETURN(Pipe in, MakePipe());
  ISB_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  Pipe out_pipe;
  if (stdout_limit > 0) {
    ISB_ASSIGN_OR_RETURN(out_pipe, MakePipe());
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in.read.get(), 0);
  posix_spawn_file_actions_adddup2(&fa, err.write.get(), 2);
  if (stdout_limit > 0)
    posix_spawn_file_actions_adddup2(&fa, out_pipe.write.get(), 1);
  else
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  // The daemon blocks its stop signals and ignores SIGPIPE; the program gets the defaults back.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error::Sys("start " + argv[0], rc);
  in.read.Reset();
  err.write.Reset();
  out_pipe.write.Reset();
  // The input written and the output read as each is ready, until the program has closed its ends (or the time is
  // up): a program that reports before it has read its input, or fills one pipe before the other, cannot deadlock.
  if (input.empty()) in.write.Reset();
  if (in.write.valid()) ::fcntl(in.write.get(), F_SETFL, O_NONBLOCK);
  // A program that exits without reading all its input: the write fails with EPIPE, and the SIGPIPE it raises is
  // taken back here, whatever this process does with the signal (a test binary leaves it fatal).
  sigset_t pipe_only, old_mask, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
  sigemptyset(&pending);
  ::sigpending(&pending);
  const bool pipe_was_pending = sigismember(&pending, SIGPIPE) == 1;
  using Clock = std::chrono::steady_clock;
  // 0 or less, or more than a year: no limit.
  const bool limited = timeout.count() > 0 && timeout < std::chrono::hours(24 * 365);
  const Clock::time_point deadline = limited ? Clock::now() + timeout : Clock::time_point::max();
  ProgramExit out;
  size_t written = 0;
  bool timed_out = false;
  int poll_errno = 0;
  while (in.write.valid() || out_pipe.read.valid() || err.read.valid()) {
    // Checked on every pass: a program that keeps a pipe busy would otherwise never let poll time out.
    if (Clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    pollfd fds[3] = {{in.write.valid() ? in.write.get() : -1, POLLOUT, 0},
                     {out_pipe.read.valid() ? out_pipe.read.get() : -1, POLLIN, 0},
                     {err.read.valid() ? err.read.get() : -1, POLLIN, 0}};
    int wait_ms = -1;
    if (deadline != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      wait_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
    }
    const int n = ::poll(fds, 3, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // the time is up (or poll failed): the program is killed below
      timed_out = n == 0;
      poll_errno = errno;
      break;
    }
    if (fds[0].revents != 0) {
      const ssize_t w = ::write(in.write.get(), input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno == EPIPE && !pipe_was_pending) {
        const timespec now{};
        ::sigtimedwait(&pipe_only, nullptr, &now);
      }
      if ((w < 0 && errno != EINTR && errno != EAGAIN) || written == input.size()) in.write.Reset();
    }
    if (fds[1].revents != 0 && !ReadInto(out_pipe.read.get(), out.stdout_text, stdout_limit)) out_pipe.read.Reset();
    if (fds[2].revents != 0 && !ReadInto(err.read.get(), out.stderr_text, 4096)) err.read.Reset();
  }
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  const bool io_done = !(in.write.valid() || out_pipe.read.valid() || err.read.valid());
  bool reaped = false;
  if (!io_done) {
    ::kill(pid, SIGKILL);
  } else if (deadline != Clock::time_point::max()) {
    // Its ends are closed, and it exits next; within the time left, or it is killed.
    for (;;) {
      const pid_t r = ::waitpid(pid, &out.status, WNOHANG);
      if (r == pid) {
        reaped = true;
        break;
      }
      if (r < 0 && errno != EINTR) break;
      if (Clock::now() >= deadline) {
        timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  while (!reaped && ::waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return Error::Of(Code::kTimeout,
                     argv[0] + " did not finish within " + std::to_string(timeout.count()) + " ms and was killed");
  if (!io_done) return Error::Sys("wait for " + argv[0], poll_errno);
  TrimNewlines(out.stdout_text);
  TrimNewlines(out.stderr_text);
  return out;
}

}  // namespace isb
