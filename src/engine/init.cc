// pid 1 of every sandbox.
#include "engine/init.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "engine/contain.h"

namespace isb::engine {
namespace {

volatile sig_atomic_t g_command_pid = 0;

void Forward(int sig) {
  if (g_command_pid > 0) ::kill(g_command_pid, sig);
}

[[noreturn]] void ExecCommand(const ChildPlan& plan) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::dup2(plan.stdin_fd, 0) < 0 || ::dup2(plan.stdout_fd, 1) < 0 || ::dup2(plan.stderr_fd, 2) < 0)
    ChildFail(plan, Step::kStdio, errno);
  // Every other descriptor closes at exec, the error pipe included: its EOF tells the parent exec succeeded.
  ::syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
  if (plan.gid != 0 || plan.uid != 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(plan.gid, plan.gid, plan.gid) != 0 ||
        ::setresuid(plan.uid, plan.uid, plan.uid) != 0)
      ChildFail(plan, Step::kUser, errno);
  }
  if (::chdir(plan.workdir) != 0) ChildFail(plan, Step::kWorkdir, errno);
  int err = ENOENT;
  for (char* const* c = plan.exec_candidates.data(); *c != nullptr; ++c) {
    ::execve(*c, plan.argv.data(), plan.envp.data());
    // Like a shell: keep looking after ENOENT, remember that a match was not executable.
    if (errno != ENOENT && errno != ENOTDIR) err = errno;
  }
  ChildFail(plan, Step::kExec, err);
}

}  // namespace

void RunInit(const ChildPlan& plan) {
  // Nothing in the sandbox may read init's memory through /proc/1/mem or attach to it.
  ::prctl(PR_SET_DUMPABLE, 0);
  struct sigaction sa{};
  sa.sa_handler = Forward;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) ::sigaction(sig, &sa, nullptr);

  pid_t cmd = ::fork();
  if (cmd < 0) ChildFail(plan, Step::kFork, errno);
  if (cmd == 0) ExecCommand(plan);
  g_command_pid = cmd;
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  // init keeps only the status pipe (as fd 3); the command holds the rest.
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3; ++fd) ::dup2(devnull, fd);
  const int status_fd = 3;
  if (::dup2(plan.status_fd, status_fd) < 0) ::_exit(125);
  ::syscall(SYS_close_range, status_fd + 1, ~0U, 0);

  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, __WALL);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) ::_exit(125);  // ECHILD: cannot happen while the command lives
    if (pid != cmd) continue;   // an orphan, reaped
    ssize_t n = ::write(status_fd, &status, sizeof status);
    (void)n;
    ::_exit(0);
  }
}

}  // namespace isb::engine
