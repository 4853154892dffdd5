// pid 1 of every sandbox.
#include "engine/init.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <signal.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <linux/magic.h>
#include <sched.h>
#include <termios.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/fd_passing.h"
#include "engine/contain.h"
#include "engine/exec_protocol.h"
#include "engine/raw_syscall.h"

namespace isb::engine {
namespace {

volatile sig_atomic_t g_command_pid = 0;

// The command of `isb run` starts with clone(CLONE_VM | CLONE_VFORK), as posix_spawn does: no copy of init's address
// space, and init sleeps until the command has exec'd (or failed). The child runs on this stack and writes nothing
// init reads. Nothing else runs in that sandbox yet, so nothing can stop the child before its exec; a service
// sandbox's commands start another way (Launch, below).
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
  struct sigaction sa {};
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

// What one command's child reads until it execs: the request (argv, environment, working directory), its
// descriptors, and below them its stack, all in a mapping of the session's own. Init does not wait for the exec,
// as it would with CLONE_VFORK: a process in the sandbox may stop the child before its exec (SIGSTOP needs only the
// same user), and would so stop init, and every exec after it, for good.
// A command of init's own user (the sandbox's root, the usual case) shares init's memory until its exec (clone with
// CLONE_VM: no copy of init's address space), and runs beside init: it reads nothing init writes later and writes
// nothing init reads, makes its system calls itself (RawSyscall, no errno, which is init's), and the mapping goes
// only when the session closes, once the child is reaped. A command of another user gets a copy instead (a plain
// fork), so that it changes user in memory of its own: the kernel makes memory whose user changed dumpable as
// fs.suid_dumpable says, and memory shared with init would let that user, who may signal the child, trace it
// (suid_dumpable 1) or have a core dump take init with it (2, kernels before 5.16).
struct Launch {
  int session_fd;
  int exec_watch;       // the write end of the session's exec watch
  bool copied;          // the child has a copy of init's memory (a command of another user), not init's own
  const void* mapping;  // the session's mapping, which holds this
  int fds[3];
  ExecRequestHeader h;
  const char* workdir;
  char* argv[kExecMaxStrings + 1];
  char* envp[kExecMaxStrings + 1];
  char path[4096];
  alignas(8) char message[kExecMaxMessage];
};
constexpr size_t kLaunchStack = 64 * 1024;

struct Session {
  int fd = -1;
  pid_t pid = 0;  // the command, once started
  bool hung_up = false;
  int exec_watch = -1;  // read end of a pipe whose write end the child holds until its exec (close-on-exec)
  void* mapping = nullptr;
  size_t mapping_size = 0;
  size_t message_len = 0;  // the request's bytes in the mapping, cleared before the mapping is used again
};

Session g_sessions[kMaxSessions];
// Mappings of closed sessions, kept for the next ones: a new mapping costs an mmap, a munmap (a TLB flush on every
// core the child ran on) and a page fault per page the next child touches. Cleared of the request they held.
constexpr int kMaxSpareMappings = 8;
struct Spare {
  void* mapping;
  size_t size;
};
Spare g_spares[kMaxSpareMappings];
int g_spare_count = 0;
uid_t g_init_uid = 0;
gid_t g_init_gid = 0;

Launch* LaunchOf(const Session& s) {
  return reinterpret_cast<Launch*>(static_cast<char*>(s.mapping) + s.mapping_size - sizeof(Launch));
}

// The mapping: a guard page, the child's stack, then the Launch (at the end, whole pages before it).
bool MapLaunch(Session& s) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t size = page + kLaunchStack + (sizeof(Launch) + page - 1) / page * page;
  if (g_spare_count > 0) {
    s.mapping = g_spares[--g_spare_count].mapping;
    s.mapping_size = size;
    return true;
  }
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return false;
  if (::mprotect(m, page, PROT_NONE) != 0) {
    ::munmap(m, size);
    return false;
  }
  s.mapping = m;
  s.mapping_size = size;
  return true;
}

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

// In the command's child (RawSyscall only: see Launch).
[[noreturn]] void SessionFail(int fd, Step step, long ret) {
  const int err = static_cast<int>(-ret);
  ExecEvent e{ExecEventKind::kFailed, err, static_cast<int32_t>(step)};
  RawSyscall(SYS_sendto, fd, reinterpret_cast<long>(&e), sizeof e, MSG_NOSIGNAL);
  for (;;) RawSyscall(SYS_exit_group, err == ENOENT ? 127 : 126);
}

// The command's child: become the requested user, attach the received descriptors (or the terminal), exec.
[[noreturn]] void StartCommand(Launch& l) {
  const int fd = l.session_fd;
  const ExecRequestHeader& h = l.h;
  const uint64_t none = 0;
  RawSyscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&none), 0, sizeof none);
  // A session of its own: a session leader cannot move to another process group, so a timeout or a cancel, which
  // kills the command's group, always reaches the command itself. With a terminal, the terminal becomes its
  // controlling tty, and the tty is the user's, as a login gives it.
  long r = RawSyscall(SYS_setsid);
  if (r < 0) SessionFail(fd, Step::kStdio, r);
  if (h.magic == kExecMagicTty) {
    if ((r = RawSyscall(SYS_ioctl, l.fds[0], TIOCSCTTY, 0)) < 0 ||
        (r = RawSyscall(SYS_fchown, l.fds[0], h.uid, static_cast<gid_t>(-1))) < 0)
      SessionFail(fd, Step::kStdio, r);
  }
  // The descriptors are all above 2 (init keeps 0 to 2 on /dev/null), so dup3 never meets its own number.
  for (int i = 0; i < 3; ++i)
    if ((r = RawSyscall(SYS_dup3, l.fds[i], i, 0)) < 0) SessionFail(fd, Step::kStdio, r);
  // Nothing else of init's stays open in the child (other sessions' sockets, the control socket), even while it
  // is stopped before its exec; the session and the watch close at the exec.
  const unsigned low = static_cast<unsigned>(std::min(fd, l.exec_watch));
  const unsigned high = static_cast<unsigned>(std::max(fd, l.exec_watch));
  if (low > 3) RawSyscall(SYS_close_range, 3, low - 1, 0);
  if (high > low + 1) RawSyscall(SYS_close_range, low + 1, high - 1, 0);
  RawSyscall(SYS_close_range, high + 1, ~0U, 0);
  // A copy of init's memory holds the other sessions' requests too (their argv and environment): gone before the
  // change of user, after which that user may read what is left (fs.suid_dumpable permitting).
  if (l.copied) {
    for (const Session& other : g_sessions)
      if (other.mapping != nullptr && other.mapping != l.mapping)
        RawSyscall(SYS_munmap, reinterpret_cast<long>(other.mapping), static_cast<long>(other.mapping_size));
    for (int i = 0; i < g_spare_count; ++i)
      RawSyscall(SYS_munmap, reinterpret_cast<long>(g_spares[i].mapping), static_cast<long>(g_spares[i].size));
  }
  if ((r = RawSyscall(SYS_setgroups, 0, 0)) < 0 || (r = RawSyscall(SYS_setresgid, h.gid, h.gid, h.gid)) < 0 ||
      (r = RawSyscall(SYS_setresuid, h.uid, h.uid, h.uid)) < 0)
    SessionFail(fd, Step::kUser, r);
  if ((r = RawSyscall(SYS_chdir, reinterpret_cast<long>(l.workdir))) < 0) SessionFail(fd, Step::kWorkdir, r);
  auto exec = [&l](const char* file) {
    return RawSyscall(SYS_execve, reinterpret_cast<long>(file), reinterpret_cast<long>(l.argv),
                      reinterpret_cast<long>(l.envp));
  };
  const char* cmd = l.argv[0];
  if (std::strchr(cmd, '/') != nullptr) SessionFail(fd, Step::kExec, exec(cmd));
  const char* path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (char** e = l.envp; *e != nullptr; ++e)
    if (std::strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
  long failed = -ENOENT;
  const size_t cmd_len = std::strlen(cmd);
  for (const char* p = path;;) {
    const char* colon = std::strchr(p, ':');
    size_t dir_len = colon ? static_cast<size_t>(colon - p) : std::strlen(p);
    if (dir_len + cmd_len + 2 < sizeof l.path) {
      std::memcpy(l.path, dir_len ? p : ".", dir_len ? dir_len : 1);
      size_t n = dir_len ? dir_len : 1;
      l.path[n] = '/';
      std::memcpy(l.path + n + 1, cmd, cmd_len + 1);
      r = exec(l.path);
      // Like a shell: keep looking after ENOENT, remember that a match was not executable.
      if (r != -ENOENT && r != -ENOTDIR) failed = r;
    }
    if (colon == nullptr) break;
    p = colon + 1;
  }
  SessionFail(fd, Step::kExec, failed);
}

// Only once no child runs on the session's mapping: it was never started, or it has been reaped.
void CloseSession(Session& s) {
  ::close(s.fd);
  if (s.exec_watch >= 0) ::close(s.exec_watch);
  if (s.mapping != nullptr) {
    if (g_spare_count < kMaxSpareMappings) {
      // The next session's child may be of another user, who may read its memory before its exec: nothing of this
      // request (its environment may hold secrets) is left for it.
      Launch& l = *LaunchOf(s);
      std::memset(l.message, 0, s.message_len);
      std::memset(l.path, 0, sizeof l.path);
      g_spares[g_spare_count++] = Spare{s.mapping, s.mapping_size};
    } else {
      ::munmap(s.mapping, s.mapping_size);
    }
  }
  s = Session{};
}

// Reads one request from `s` and starts its command.
void HandleRequest(Session& s) {
  if (s.mapping == nullptr && !MapLaunch(s)) {
    Send(s.fd, ExecEventKind::kFailed, ENOMEM, static_cast<int32_t>(Step::kFork));
    CloseSession(s);
    return;
  }
  Launch& l = *LaunchOf(s);
  int* fds = l.fds;
  fds[0] = fds[1] = fds[2] = -1;
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))];
  iovec iov{l.message, sizeof l.message};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(s.fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n > 0) s.message_len = std::max(s.message_len, static_cast<size_t>(n));
  int nfds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      nfds = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      std::memcpy(fds, CMSG_DATA(c), sizeof(int) * static_cast<size_t>(nfds < 3 ? nfds : 3));
      for (int i = 3; i < nfds; ++i) ::close(reinterpret_cast<int*>(CMSG_DATA(c))[i]);
    }
  }
  auto close_fds = [fds] {
    for (int i = 0; i < 3; ++i)
      if (fds[i] >= 0) ::close(fds[i]);
  };
  ExecRequestParts parts{};
  const bool ok =
      n > 0 && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
      DecodeExecRequest(l.message, static_cast<size_t>(n), nfds, &parts, l.argv, l.envp, kExecMaxStrings + 1);
  if (!ok) {
    close_fds();
    Send(s.fd, ExecEventKind::kFailed, EINVAL, 0);
    CloseSession(s);
    return;
  }
  ExecRequestHeader& h = l.h;
  h = parts.header;
  const bool tty = parts.tty;
  const ExecTtySize size = parts.size;
  l.workdir = parts.workdir;
  l.session_fd = s.fd;
  int master = -1;
  if (tty) {
    if (int err = OpenTerminal(size, &master, fds); err != 0) {
      Send(s.fd, ExecEventKind::kFailed, err, 0);
      CloseSession(s);
      return;
    }
  }
  int watch[2];
  pid_t pid = -1;
  int err = 0;
  if (::pipe2(watch, O_CLOEXEC) != 0) {
    err = errno;
  } else {
    auto entry = [](void* arg) -> int { StartCommand(*static_cast<Launch*>(arg)); };
    char* stack_top = reinterpret_cast<char*>(&l);  // the stack lies below the Launch
    stack_top -= reinterpret_cast<uintptr_t>(stack_top) % 64;
    l.exec_watch = watch[1];
    l.mapping = s.mapping;
    l.copied = h.uid != g_init_uid || h.gid != g_init_gid;
    pid = ::clone(entry, stack_top, (l.copied ? 0 : CLONE_VM) | SIGCHLD, &l);
    err = errno;
    ::close(watch[1]);
    if (pid < 0) ::close(watch[0]);
  }
  // Init's copies close; the child's own (its descriptor table is a copy) stay, and l.fds, which it reads, is left
  // alone. With a terminal, the three are one slave descriptor.
  ::close(fds[0]);
  if (!tty) {
    ::close(fds[1]);
    ::close(fds[2]);
  }
  if (pid < 0) {
    if (master >= 0) ::close(master);
    Send(s.fd, ExecEventKind::kFailed, err, static_cast<int32_t>(Step::kFork));
    CloseSession(s);
    return;
  }
  s.pid = pid;
  s.exec_watch = watch[0];
  if (master >= 0) {
    // The daemon holds the only master from here: when it goes, the terminal hangs up. (Without a terminal there
    // is nothing to pass: the next event is the command's exit, one wake-up of the daemon per exec.)
    SendStarted(s.fd, pid, master);
    ::close(master);
  }
}

// The session id in /proc/<name>/stat under `proc`, or -1 (gone, not a process, or a zombie: killed already).
pid_t SessionOf(int proc, const char* name) {
  char path[32];
  size_t len = std::strlen(name);
  if (len + sizeof "/stat" > sizeof path) return -1;
  std::memcpy(path, name, len);
  std::memcpy(path + len, "/stat", sizeof "/stat");
  int fd = ::openat(proc, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) return -1;
  char buf[256];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  // "pid (comm) state ppid pgrp session ...": comm (at most 15 bytes) may hold anything, ')' too; what follows it
  // holds none.
  char* p = std::strrchr(buf, ')');
  if (p == nullptr || p[1] != ' ' || p[2] == '\0' || p[2] == 'Z' || p[2] == 'X') return -1;
  p += 3;
  for (int field = 0; field < 3; ++field) {  // ppid, pgrp, then session
    while (*p == ' ') ++p;
    if (field == 2) break;
    while (*p != ' ' && *p != '\0') ++p;
  }
  pid_t sid = 0;
  if (*p < '0' || *p > '9') return -1;
  for (; *p >= '0' && *p <= '9'; ++p) sid = sid * 10 + (*p - '0');
  return sid;
}

// SIGKILLs every process of the session `sid` leads: a cancelled terminal's shell, and the jobs an interactive shell
// put in process groups of their own (killing the command's group misses them). A few passes, for what forks
// while one runs. A process that left the session (setsid) is not found, as one that double-forked away is not.
void KillSession(pid_t sid) {
  alignas(8) static char entries[4096];
  for (int pass = 0; pass < 4; ++pass) {
    int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc < 0) return;
    // Only the kernel's: the sandbox's root may have mounted something else over /proc (a FIFO for a stat file
    // would hold init, and every exec with it).
    struct statfs fs {};
    if (::fstatfs(proc, &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC) {
      ::close(proc);
      return;
    }
    bool found = false;
    long n = 0;
    while ((n = ::syscall(SYS_getdents64, proc, entries, sizeof entries)) > 0) {
      for (long at = 0; at < n;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(entries + at);
        at += d->d_reclen;
        if (d->d_name[0] < '1' || d->d_name[0] > '9' || SessionOf(proc, d->d_name) != sid) continue;
        pid_t pid = 0;
        for (const char* c = d->d_name; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
        if (pid > 1 && ::kill(pid, SIGKILL) == 0) found = true;
      }
    }
    ::close(proc);
    if (!found) return;
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
  // (The kernel resets dumpable only when the effective ids change: a command of these shares init's memory.)
  g_init_uid = ::geteuid();
  g_init_gid = ::getegid();
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

  // fds: the control socket, the signalfd, each session's socket, then each session's exec watch.
  pollfd fds[2 * kMaxSessions + 2];
  for (;;) {
    fds[0] = {control, POLLIN, 0};
    fds[1] = {sigfd, POLLIN, 0};
    for (int i = 0; i < kMaxSessions; ++i) {
      fds[i + 2] = {g_sessions[i].hung_up ? -1 : g_sessions[i].fd, POLLIN, 0};
      fds[i + 2 + kMaxSessions] = {g_sessions[i].exec_watch, POLLIN, 0};
    }
    if (::poll(fds, 2 * kMaxSessions + 2, -1) < 0) {
      // EINVAL if something in the sandbox lowered init's RLIMIT_NOFILE below the array (its root may), ENOMEM
      // under pressure: wait a little rather than spin on the sandbox's CPU.
      if (errno != EINTR) ::usleep(10000);
      continue;
    }
    if (fds[1].revents) {
      signalfd_siginfo si;
      while (::read(sigfd, &si, sizeof si) == sizeof si) {
      }
      ReapChildren();
    }
    for (int i = 0; i < kMaxSessions; ++i) {
      Session& s = g_sessions[i];
      if (s.exec_watch >= 0 && fds[i + 2 + kMaxSessions].revents != 0) {
        // The child exec'd (or failed and exited): it no longer shares init's memory, so the score is its own.
        RaiseOomScore(s.pid);
        ::close(s.exec_watch);
        s.exec_watch = -1;
      }
      short ev = fds[i + 2].revents;
      if (s.fd < 0 || ev == 0) continue;
      if (s.pid == 0 && (ev & POLLIN)) {
        HandleRequest(s);
      } else if (ev & (POLLHUP | POLLERR | POLLIN)) {
        // The daemon went away (cancel, timeout, or its own death): end the command's group, the command itself,
        // which has no group of its own if it was stopped before its setsid, and the rest of its session.
        if (s.pid > 0) {
          ::kill(-s.pid, SIGKILL);
          ::kill(s.pid, SIGKILL);
          KillSession(s.pid);
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
          // The daemon sends its request right after connecting: it is usually here already, so it is read now
          // rather than after another poll (HandleRequest leaves a session whose request has not come yet).
          free_slot->fd = fd;
          HandleRequest(*free_slot);
        }
      }
    }
  }
}

}  // namespace isb::engine
