// pid 1 of every sandbox.
#include "engine/init.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <signal.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sched.h>
#include <termios.h>

#include <cerrno>
#include <cstring>

#include "base/fd_passing.h"
#include "engine/contain.h"
#include "engine/exec_protocol.h"

namespace isb::engine {
namespace {

volatile sig_atomic_t g_command_pid = 0;

// Commands start with clone(CLONE_VM | CLONE_VFORK), as posix_spawn does: no copy of init's address space, and
// init sleeps until the command has exec'd (or failed). The child runs on this stack and writes nothing init reads.
alignas(64) char g_spawn_stack[256 * 1024];

// Makes a started command (and so everything it starts) the OOM killer's first choice, ahead of init, whose death
// would end the sandbox, and ahead of the host's own processes. Raising a score needs no privilege (lowering init's
// would need CAP_SYS_RESOURCE, which hosts may lack). Done from init after the command's exec: before it, the two
// share one mm, and the kernel would apply the score to both.
void RaiseOomScore(pid_t pid) {
  char path[64] = "/proc/";
  char digits[16];
  int k = 0;
  do {
    digits[k++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid > 0);
  size_t n = 6;
  while (k > 0) path[n++] = digits[--k];
  std::memcpy(path + n, "/oom_score_adj", 15);
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::write(fd, "1000", 4);
  ::close(fd);
}

template <typename F>
pid_t SpawnShared(F* body) {
  auto trampoline = [](void* arg) -> int {
    (*static_cast<F*>(arg))();
    return 127;  // not reached: the body execs or exits
  };
  return ::clone(trampoline, g_spawn_stack + sizeof g_spawn_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, body);
}

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

  auto start = [&plan] { ExecCommand(plan); };
  pid_t cmd = SpawnShared(&start);
  if (cmd < 0) ChildFail(plan, Step::kFork, errno);
  RaiseOomScore(cmd);
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

namespace isb::engine {
namespace {

constexpr int kMaxSessions = 128;

struct Session {
  int fd = -1;
  pid_t pid = 0;       // the command, once started
  bool hung_up = false;
};

Session g_sessions[kMaxSessions];
alignas(8) char g_request[kExecMaxMessage];
char g_path[4096];
char* g_argv[4096];
char* g_envp[4096];

void Send(int fd, ExecEventKind kind, int32_t value, int32_t detail = 0) {
  ExecEvent e{kind, value, detail};
  (void)::send(fd, &e, sizeof e, MSG_NOSIGNAL);
}

// kStarted with a terminal's master attached.
void SendStarted(int fd, pid_t pid, int master) {
  ExecEvent e{ExecEventKind::kStarted, pid, 0};
  (void)SendWithFds(fd, &e, sizeof e, &master, 1);
}

// A pty from the sandbox's own devpts instance (mounts.cc mounts it with newinstance), so the slave belongs to the
// sandbox. The slave is opened from the master (TIOCGPTPEER), never by a path the sandbox could swap. On success
// fds[0..2] are the slave (fds[0] owns it) and *master the master; returns 0 or an errno.
int OpenTerminal(const ExecTtySize& size, int* master, int* fds) {
  int m = ::open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (m < 0) return errno;
  int unlock = 0;
  unsigned int index = 0;
  winsize ws{};
  ws.ws_row = size.rows;
  ws.ws_col = size.cols;
  int slave = -1;
  if (::ioctl(m, TIOCGPTN, &index) != 0 || ::ioctl(m, TIOCSPTLCK, &unlock) != 0 || ::ioctl(m, TIOCSWINSZ, &ws) != 0 ||
      (slave = ::ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
    int err = errno;
    ::close(m);
    return err;
  }
  *master = m;
  fds[0] = fds[1] = fds[2] = slave;
  return 0;
}

[[noreturn]] void SessionFail(int fd, Step step, int err) {
  Send(fd, ExecEventKind::kFailed, err, static_cast<int32_t>(step));
  ::_exit(err == ENOENT ? 127 : 126);
}

// Splits `count` NUL-terminated strings starting at *p (bounded by end) into out[]. Returns false if malformed.
bool SplitStrings(char** p, const char* end, uint32_t count, char** out, size_t cap) {
  if (count >= cap) return false;  // never count + 1: a count of 2^32 - 1 would wrap it to 0
  for (uint32_t i = 0; i < count; ++i) {
    char* s = *p;
    char* nul = static_cast<char*>(::memchr(s, '\0', static_cast<size_t>(end - s)));
    if (nul == nullptr) return false;
    out[i] = s;
    *p = nul + 1;
  }
  out[count] = nullptr;
  return true;
}

// In the forked child: become the requested user, attach the received descriptors (or the terminal), exec.
[[noreturn]] void StartCommand(int session_fd, const ExecRequestHeader& h, char** argv, char** envp,
                               const char* workdir, const int* fds) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const bool tty = h.magic == kExecMagicTty;
  if (tty) {
    // A session of its own (so a process group too, killed as one) with the terminal as its controlling tty;
    // the tty is the user's, as a login gives it.
    if (::setsid() < 0 || ::ioctl(fds[0], TIOCSCTTY, 0) != 0 || ::fchown(fds[0], h.uid, static_cast<gid_t>(-1)) != 0)
      SessionFail(session_fd, Step::kStdio, errno);
  } else if (::setsid() < 0) {
    // A session of its own without a terminal: a session leader cannot move to another process group, so a timeout
    // or a cancel, which kills the command's group, always reaches the command itself.
    SessionFail(session_fd, Step::kStdio, errno);
  }
  if (::dup2(fds[0], 0) < 0 || ::dup2(fds[1], 1) < 0 || ::dup2(fds[2], 2) < 0)
    SessionFail(session_fd, Step::kStdio, errno);
  ::syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
  if (::setgroups(0, nullptr) != 0 || ::setresgid(h.gid, h.gid, h.gid) != 0 ||
      ::setresuid(h.uid, h.uid, h.uid) != 0)
    SessionFail(session_fd, Step::kUser, errno);
  if (::chdir(workdir) != 0) SessionFail(session_fd, Step::kWorkdir, errno);
  const char* cmd = argv[0];
  if (std::strchr(cmd, '/') != nullptr) {
    ::execve(cmd, argv, envp);
    SessionFail(session_fd, Step::kExec, errno);
  }
  const char* path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (char** e = envp; *e != nullptr; ++e)
    if (std::strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
  int err = ENOENT;
  const size_t cmd_len = std::strlen(cmd);
  for (const char* p = path;;) {
    const char* colon = std::strchr(p, ':');
    size_t dir_len = colon ? static_cast<size_t>(colon - p) : std::strlen(p);
    if (dir_len + cmd_len + 2 < sizeof g_path) {
      std::memcpy(g_path, dir_len ? p : ".", dir_len ? dir_len : 1);
      size_t n = dir_len ? dir_len : 1;
      g_path[n] = '/';
      std::memcpy(g_path + n + 1, cmd, cmd_len + 1);
      ::execve(g_path, argv, envp);
      if (errno != ENOENT && errno != ENOTDIR) err = errno;
    }
    if (colon == nullptr) break;
    p = colon + 1;
  }
  SessionFail(session_fd, Step::kExec, err);
}

void CloseSession(Session& s) {
  ::close(s.fd);
  s = Session{};
}

// Reads one request from `s` and starts its command.
void HandleRequest(Session& s) {
  int fds[3] = {-1, -1, -1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)];
  iovec iov{g_request, sizeof g_request};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(s.fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  int nfds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      nfds = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      std::memcpy(fds, CMSG_DATA(c), sizeof(int) * static_cast<size_t>(nfds < 3 ? nfds : 3));
      for (int i = 3; i < nfds; ++i) ::close(reinterpret_cast<int*>(CMSG_DATA(c))[i]);
    }
  }
  auto close_fds = [&] {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  };
  ExecRequestHeader h{};
  ExecTtySize size{};
  bool ok = n >= static_cast<ssize_t>(sizeof h) && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
  if (ok) std::memcpy(&h, g_request, sizeof h);
  const bool tty = ok && h.magic == kExecMagicTty;
  const size_t extra = tty ? sizeof size : 0;
  if (ok) {
    ok = (h.magic == kExecMagic && nfds == 3) || (tty && nfds == 0);
    ok = ok && h.argc > 0 && static_cast<size_t>(n) >= sizeof h + extra &&
         sizeof h + extra + h.strings_len == static_cast<size_t>(n) && h.uid < 65536 && h.gid < 65536;
  }
  if (ok && tty) {
    std::memcpy(&size, g_request + sizeof h, sizeof size);
    ok = size.rows > 0 && size.cols > 0;
  }
  char* p = g_request + sizeof h + extra;
  const char* end = g_request + n;
  char* workdir[2] = {nullptr, nullptr};
  ok = ok && SplitStrings(&p, end, h.argc, g_argv, 4096) && SplitStrings(&p, end, h.envc, g_envp, 4096) &&
       SplitStrings(&p, end, 1, workdir, 2);
  if (!ok) {
    close_fds();
    Send(s.fd, ExecEventKind::kFailed, EINVAL, 0);
    CloseSession(s);
    return;
  }
  int master = -1;
  if (tty) {
    if (int err = OpenTerminal(size, &master, fds); err != 0) {
      Send(s.fd, ExecEventKind::kFailed, err, 0);
      CloseSession(s);
      return;
    }
  }
  auto start = [&] { StartCommand(s.fd, h, g_argv, g_envp, workdir[0], fds); };
  pid_t pid = SpawnShared(&start);
  if (tty) fds[1] = fds[2] = -1;  // one slave descriptor, owned by fds[0]
  close_fds();
  if (pid < 0) {
    if (master >= 0) ::close(master);
    Send(s.fd, ExecEventKind::kFailed, errno, static_cast<int32_t>(Step::kFork));
    CloseSession(s);
    return;
  }
  RaiseOomScore(pid);
  s.pid = pid;
  if (master >= 0) {
    // The daemon holds the only master from here: when it goes, the terminal hangs up. (Without a terminal there
    // is nothing to pass: the next event is the command's exit, one wake-up of the daemon per exec.)
    SendStarted(s.fd, pid, master);
    ::close(master);
  }
}

void ReapChildren() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG | __WALL);
    if (pid <= 0) return;
    for (Session& s : g_sessions) {
      if (s.fd >= 0 && s.pid == pid) {
        // What the command left running in the background lives on in the sandbox, as after a shell's exit.
        Send(s.fd, ExecEventKind::kExited, status);
        CloseSession(s);
      }
    }
  }
}

}  // namespace

void ServeInit(const ChildPlan& plan) {
  ::prctl(PR_SET_DUMPABLE, 0);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  // Keep exactly: 0-2 /dev/null, 3 the control socket, 4 the lease (/dev/null for a privileged sandbox, which has
  // none), 5 the signalfd; everything else closes, the error pipe too (ready). What is kept is first copied above
  // those numbers, wherever the parent had it, so that putting one in place never overwrites another.
  // The error pipe is moved up too: a failure is reported on it, and its closing is the report of success.
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const int error_to = ::fcntl(plan.error_fd, F_DUPFD_CLOEXEC, 10);
  if (error_to < 0) ChildFail(plan, Step::kServe, errno);
  auto fail = [error_to](int err) {
    ChildFailure f{Step::kServe, err, 0};
    (void)!::write(error_to, &f, sizeof f);
    ::_exit(125);
  };
  const int control_from = ::fcntl(plan.control_fd, F_DUPFD_CLOEXEC, 10);
  const int lease_from = ::fcntl(plan.lease_fd >= 0 ? plan.lease_fd : devnull, F_DUPFD_CLOEXEC, 10);
  if (devnull < 0 || control_from < 0 || lease_from < 0) fail(errno);
  for (int fd = 0; fd < 3; ++fd) ::dup2(devnull, fd);
  const int control = 3, lease = 4;
  if (::dup3(control_from, control, O_CLOEXEC) < 0 || ::dup3(lease_from, lease, O_CLOEXEC) < 0) fail(errno);
  int sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);  // 5 at the lowest, 0 to 4 being taken
  if (sigfd < 0 || (sigfd != 5 && ::dup3(sigfd, 5, O_CLOEXEC) < 0)) fail(errno);
  sigfd = 5;
  ::syscall(SYS_close_range, 6, ~0U, 0);  // closes the error pipe: the parent reads EOF, meaning ready

  pollfd fds[kMaxSessions + 2];
  for (;;) {
    fds[0] = {control, POLLIN, 0};
    fds[1] = {sigfd, POLLIN, 0};
    for (int i = 0; i < kMaxSessions; ++i)
      fds[i + 2] = {g_sessions[i].hung_up ? -1 : g_sessions[i].fd, POLLIN, 0};
    if (::poll(fds, kMaxSessions + 2, -1) < 0) continue;
    if (fds[1].revents) {
      signalfd_siginfo si;
      while (::read(sigfd, &si, sizeof si) == sizeof si) {
      }
      ReapChildren();
    }
    for (int i = 0; i < kMaxSessions; ++i) {
      Session& s = g_sessions[i];
      short ev = fds[i + 2].revents;
      if (s.fd < 0 || ev == 0) continue;
      if (s.pid == 0 && (ev & POLLIN)) {
        HandleRequest(s);
      } else if (ev & (POLLHUP | POLLERR | POLLIN)) {
        // The daemon went away (cancel, timeout, or its own death): end the command's group.
        if (s.pid > 0) {
          ::kill(-s.pid, SIGKILL);
          s.hung_up = true;  // reaped later by ReapChildren, which closes the session
        } else {
          CloseSession(s);
        }
      }
    }
    if (fds[0].revents & POLLIN) {
      int fd = ::accept4(control, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        Session* free_slot = nullptr;
        for (Session& s : g_sessions)
          if (s.fd < 0) {
            free_slot = &s;
            break;
          }
        if (free_slot == nullptr) {
          Send(fd, ExecEventKind::kFailed, EAGAIN, 0);
          ::close(fd);
        } else {
          free_slot->fd = fd;
        }
      }
    }
  }
}

}  // namespace isb::engine
