// escape_helper: runs INSIDE a sandbox and performs one escape attempt, named by its first argument.
//
//   escape_helper [--tag=ANY] ATTACK [ARGS...]
//
// --tag is ignored: the test passes its unique marker that way so that every process of the sandbox (and every
// child they fork) carries the marker in its command line, where the host-side leak check looks for it.
//
// Each attack prints ONE machine-checkable line on stdout ("errno=EPERM", "ok", "key=value ...") and exits 0,
// unless the attack's point is its natural end (a signal, an exit status, an OOM kill). The helper never prints
// the content of a file it managed to read (only byte counts), so secrets cannot reach test output.
//
// Statically linked: it needs nothing from the root it runs in. Plain POSIX and raw syscalls only.
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/vm_sockets.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

// "errno=ENOENT" for a failed call, "ok" for a successful one.
std::string Outcome(long rc, int err) {
  if (rc >= 0) return "ok";
  const char* name = strerrorname_np(err);
  return std::string("errno=") + (name ? name : std::to_string(err).c_str());
}

std::string Errno(int err) { return Outcome(-1, err); }

// Runs `call` and names its outcome; errno is read after the call (not as a sibling argument).
template <typename F>
std::string Attempt(F call) {
  errno = 0;
  long rc = static_cast<long>(call());
  return Outcome(rc, errno);
}

void Say(const std::string& line) {
  std::string l = line + "\n";
  size_t off = 0;
  while (off < l.size()) {
    ssize_t n = write(1, l.data() + off, l.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

[[noreturn]] void Usage(const char* what) {
  fprintf(stderr, "escape_helper: %s\n", what);
  exit(2);
}

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::string ReadAll(const std::string& path, bool* ok) {
  std::string data;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  *ok = fd >= 0;
  if (fd < 0) return data;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return data;
}

// Pids of /proc, and for each the command line (NULs turned into spaces).
struct Proc {
  pid_t pid;
  std::string cmdline;
};
std::vector<Proc> ListProcesses() {
  std::vector<Proc> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    bool ok = false;
    std::string cmd = ReadAll(std::string("/proc/") + e->d_name + "/cmdline", &ok);
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    out.push_back({static_cast<pid_t>(pid), cmd});
  }
  closedir(d);
  return out;
}

int CountMatching(const std::vector<Proc>& procs, const std::string& needle) {
  int n = 0;
  for (const auto& p : procs)
    if (p.cmdline.find(needle) != std::string::npos) ++n;
  return n;
}

// True when this process is inside a user namespace that is not the initial one (a sandbox). Used to refuse
// attacks that must never run on the host itself (anything that could send traffic off the machine).
bool InSandbox() {
  bool ok = false;
  std::string map = ReadAll("/proc/self/uid_map", &ok);
  unsigned long inside = 0, outside = 0, count = 0;
  if (!ok || sscanf(map.c_str(), "%lu %lu %lu", &inside, &outside, &count) != 3) return false;
  return !(inside == 0 && outside == 0 && count == 4294967295ul);
}

double MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double CpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::string Ids() {
  uid_t r = 0, e = 0, s = 0;
  getresuid(&r, &e, &s);
  return "ruid=" + std::to_string(r) + " euid=" + std::to_string(e) + " suid=" + std::to_string(s);
}

bool CopyFile(const std::string& from, const std::string& to, mode_t mode) {
  bool ok = false;
  std::string data = ReadAll(from, &ok);
  if (!ok) return false;
  int fd = open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return false;
  bool good = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  return close(fd) == 0 && good;
}

// --- the attacks ---------------------------------------------------------------------------------------------

// open(PATH, O_RDONLY) and read it to the end: "read=N" (bytes) or "errno=...". Never the content.
int OpenRead(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    Say(Errno(errno));
    return 0;
  }
  size_t total = 0;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Say("read-" + Errno(errno));
      return 0;
    }
    if (n == 0) break;
    total += static_cast<size_t>(n);
  }
  close(fd);
  Say("read=" + std::to_string(total));
  return 0;
}

// The shell's "echo DATA > PATH": O_WRONLY|O_CREAT|O_TRUNC, then write.
int WriteFile(const std::string& path, const std::string& data, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) {
    Say(Errno(errno));
    return 0;
  }
  ssize_t n = write(fd, data.data(), data.size());
  int werr = errno;
  close(fd);
  if (n != static_cast<ssize_t>(data.size())) {
    Say("write-" + Errno(werr));
    return 0;
  }
  Say("ok");
  return 0;
}

int ScanProc(const std::string& needle) {
  auto procs = ListProcesses();
  Say("matches=" + std::to_string(CountMatching(procs, needle)) + " procs=" + std::to_string(procs.size()));
  return 0;
}

int KillPid(pid_t pid, int sig) {
  long rc = kill(pid, sig);
  int err = errno;
  std::string line = Outcome(rc, err);
  if (rc == 0) {
    // Say who it was, so a test can tell "a different process with the same number" from the target.
    bool ok = false;
    std::string cmd = ReadAll("/proc/" + std::to_string(pid) + "/cmdline", &ok);
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    line += " cmdline=" + cmd;
  }
  Say(line);
  return 0;
}

int PtraceAttach(pid_t pid) {
  long rc = ptrace(PTRACE_ATTACH, pid, nullptr, nullptr);
  Say(Outcome(rc, errno));
  if (rc == 0) ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
  return 0;
}

int Modules() {
  // A few bytes that are not a module: without the filter the kernel would answer ENOEXEC/EPERM for other reasons,
  // so "EPERM" from all three together with the others below is the filter's answer.
  static const char junk[64] = "\177ELF not a module";
  long a = syscall(SYS_init_module, junk, sizeof junk, "");
  int ea = errno;
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  long b = syscall(SYS_finit_module, fd, "", 0);
  int eb = errno;
  long c = syscall(SYS_delete_module, "ext4", O_NONBLOCK);
  int ec = errno;
  Say("init_module=" + Outcome(a, ea) + " finit_module=" + Outcome(b, eb) + " delete_module=" + Outcome(c, ec));
  return 0;
}

int Kexec() {
  long a = syscall(SYS_kexec_load, 0ul, 0ul, nullptr, 0ul);
  int ea = errno;
  long b = syscall(SYS_kexec_file_load, -1, -1, 0ul, "", 0ul);
  int eb = errno;
  Say("kexec_load=" + Outcome(a, ea) + " kexec_file_load=" + Outcome(b, eb));
  return 0;
}

int Bpf() {
  bpf_attr attr{};
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  long rc = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
  Say(Outcome(rc, errno));
  return 0;
}

int Keyctl() {
  long a = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1);
  int ea = errno;
  long b = syscall(SYS_add_key, "user", "isb-escape", "x", 1, KEY_SPEC_PROCESS_KEYRING);
  int eb = errno;
  long c = syscall(SYS_request_key, "user", "isb-escape", nullptr, 0);
  int ec = errno;
  Say("keyctl=" + Outcome(a, ea) + " add_key=" + Outcome(b, eb) + " request_key=" + Outcome(c, ec));
  return 0;
}

int IoUring() {
  io_uring_params p{};
  long rc = syscall(SYS_io_uring_setup, 4, &p);
  Say(Outcome(rc, errno));
  return 0;
}

// getpid through the i386 ABI (int 0x80, where it is number 20): "survived" only if the filter let it through.
// x86-64 only ("not x86-64" elsewhere).
int Ia32Syscall() {
#if defined(__x86_64__)
  long ret = 20;
  asm volatile("int $0x80" : "+a"(ret) : : "memory");
  Say(ret > 0 ? "survived" : "survived " + Errno(static_cast<int>(-ret)));
#else
  Say("not x86-64");
#endif
  return 0;
}

// getpid through the x32 ABI (its number with bit 30 set): "survived" with the kernel's answer only if the filter
// let it through.
int X32Syscall() {
  long rc = syscall(0x40000000L | SYS_getpid);
  Say("survived " + Outcome(rc, errno));
  return 0;
}

// The terminal ioctls that type into or take over a terminal, on standard input (which need not be one: the
// kernel alone would answer ENOTTY there, so EPERM is the filter's); also with bits above the 32 the kernel reads
// set in the request, which a filter comparing all 64 would let through.
int TerminalIoctls() {
  char c = 'x';
  const unsigned long high = 1UL << 32;
  Say("TIOCSTI=" + Attempt([&] { return ioctl(0, TIOCSTI, &c); }) +
      " TIOCSTI+high=" + Attempt([&] { return ioctl(0, static_cast<unsigned long>(TIOCSTI) | high, &c); }) +
      " TIOCLINUX=" + Attempt([&] { return ioctl(0, TIOCLINUX, &c); }) +
      " TIOCLINUX+high=" + Attempt([&] { return ioctl(0, static_cast<unsigned long>(TIOCLINUX) | high, &c); }));
  return 0;
}

// The descriptors the command was started with (what /proc/self/fd lists, less the one listing it).
int OpenDescriptors() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return Say(Errno(errno)), 1;
  std::vector<int> fds;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd != dirfd(dir)) fds.push_back(fd);
  }
  closedir(dir);
  std::sort(fds.begin(), fds.end());
  std::string line;
  for (int fd : fds) line += (line.empty() ? "" : " ") + std::to_string(fd);
  Say(line);
  return 0;
}

int Userfaultfd() {
  long rc = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
  Say(Outcome(rc, errno));
  return 0;
}

int PerfEventOpen() {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  long rc = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0ul);
  Say(Outcome(rc, errno));
  return 0;
}

int Unshare(int flags) {
  long rc = unshare(flags);
  Say(Outcome(rc, errno));
  return 0;
}

int CloneFlags(unsigned long flags) {
  long rc = syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, 0ul);
  if (rc == 0) _exit(0);  // the child, had it been created
  int err = errno;
  if (rc > 0) waitpid(static_cast<pid_t>(rc), nullptr, 0);
  Say(Outcome(rc, err));
  return 0;
}

int Clone3() {
  clone_args args{};
  args.exit_signal = SIGCHLD;
  long rc = syscall(SYS_clone3, &args, sizeof args);
  if (rc == 0) _exit(0);
  int err = errno;
  if (rc > 0) waitpid(static_cast<pid_t>(rc), nullptr, 0);
  Say(Outcome(rc, err));
  return 0;
}

int Socket(int domain, int type, int protocol) {
  int fd = socket(domain, type | SOCK_CLOEXEC, protocol);
  Say(Outcome(fd, errno));
  if (fd >= 0) close(fd);
  return 0;
}

// Every address family (a datagram socket of protocol 0, then a stream one): the families whose outcome is not
// EAFNOSUPPORT, as "family:outcome" in order.
int SocketFamilies() {
  std::string line;
  for (int family = 0; family < AF_MAX; ++family) {
    std::string outcome;
    for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
      int fd = socket(family, type | SOCK_CLOEXEC, 0);
      int err = errno;
      if (fd >= 0) close(fd);
      outcome = Outcome(fd, err);
      if (outcome == "ok") break;
    }
    if (outcome != "errno=EAFNOSUPPORT") line += (line.empty() ? "" : " ") + std::to_string(family) + ":" + outcome;
  }
  Say(line);
  return 0;
}

// Every netlink protocol: the ones a datagram socket opens for, and the outcomes other than EPROTONOSUPPORT.
int NetlinkProtocols() {
  std::string line;
  for (int protocol = 0; protocol < 32; ++protocol) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, protocol);
    std::string outcome = Outcome(fd, errno);
    if (fd >= 0) close(fd);
    if (outcome != "errno=EPROTONOSUPPORT")
      line += (line.empty() ? "" : " ") + std::to_string(protocol) + ":" + outcome;
  }
  Say(line);
  return 0;
}

// Binds and listens on a vsock port of any context id: the machine has one vsock port space.
int VsockListen(unsigned port) {
  int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Say("socket=" + Errno(errno)), 0;
  sockaddr_vm addr{};
  addr.svm_family = AF_VSOCK;
  addr.svm_cid = VMADDR_CID_ANY;
  addr.svm_port = port;
  std::string bound = Attempt([&] { return bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr); });
  close(fd);
  Say("socket=ok bind=" + bound);
  return 0;
}

// TCP connect to an outside address. Refused outside a sandbox: it must never send traffic from the host.
int ConnectExternal(const std::string& ip, int port) {
  if (!InSandbox()) {
    Say("refused: not in a sandbox");
    return 3;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    Say("socket-" + Errno(errno));
    return 0;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) Usage("bad address");
  long rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  Say(Outcome(rc, errno));
  close(fd);
  return 0;
}

// A listener on 127.0.0.1, a client connecting to it, one message each way.
int Loopback() {
  int srv = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (srv < 0 || bind(srv, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(srv, 1) != 0 ||
      getsockname(srv, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    Say("listen-" + Errno(errno));
    return 0;
  }
  int cli = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (cli < 0 || connect(cli, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    Say("connect-" + Errno(errno));
    return 0;
  }
  int conn = accept(srv, nullptr, nullptr);
  char buf[16] = {};
  if (conn < 0 || write(cli, "ping", 4) != 4 || read(conn, buf, 4) != 4 || write(conn, "pong", 4) != 4 ||
      read(cli, buf + 4, 4) != 4) {
    Say("exchange-" + Errno(errno));
    return 0;
  }
  Say(std::string("ok exchanged=") + buf);
  return 0;
}

int Hostname(const std::string& want) {
  long rc = sethostname(want.data(), want.size());
  int err = errno;
  utsname u{};
  uname(&u);
  Say("sethostname=" + Outcome(rc, err) + " nodename=" + u.nodename);
  return 0;
}

// As root of the sandbox: copy this binary into DIR, make it setuid root, drop to uid/gid 1000 and exec the copy,
// which reports its ids. A setuid exec that worked would show euid=0.
int SetuidDropExec(const std::string& dir) {
  std::string copy = dir + "/isb-suid";
  if (!CopyFile("/proc/self/exe", copy, 0755)) {
    Say("copy-" + Errno(errno));
    return 0;
  }
  if (chown(copy.c_str(), 0, 0) != 0 || chmod(copy.c_str(), 04755) != 0) {
    Say("chmod-" + Errno(errno));
    return 0;
  }
  struct stat st {};
  if (stat(copy.c_str(), &st) != 0 || !(st.st_mode & S_ISUID) || st.st_uid != 0) {
    Say("setuid bit did not stick");
    return 0;
  }
  fprintf(stderr, "prepared %s mode=%o uid=%u\n", copy.c_str(), st.st_mode & 07777, st.st_uid);
  if (setgroups(0, nullptr) != 0 || setresgid(1000, 1000, 1000) != 0 || setresuid(1000, 1000, 1000) != 0) {
    Say("drop-" + Errno(errno));
    return 0;
  }
  char* const argv[] = {const_cast<char*>(copy.c_str()), const_cast<char*>("ids"), nullptr};
  execv(copy.c_str(), argv);
  Say("exec-" + Errno(errno));
  return 0;
}

// Forks until fork fails; every child waits forever. Reports how many forks succeeded and why the next failed.
int ForkBomb() {
  int forks = 0;
  for (;;) {
    pid_t pid = fork();
    if (pid == 0) {
      for (;;) pause();
    }
    if (pid < 0) {
      Say("forks=" + std::to_string(forks) + " " + Errno(errno));
      return 0;  // the children are left for the sandbox's teardown to kill
    }
    if (++forks > 100000) {
      Say("forks=unbounded");
      return 0;
    }
  }
}

// Allocates and touches MIB mebibytes; prints "survived" only if that worked.
int MemoryHog(long mib) {
  for (long i = 0; i < mib; ++i) {
    void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      Say("mmap-" + Errno(errno) + " at_mib=" + std::to_string(i));
      return 0;
    }
    memset(p, 0xa5, 1 << 20);
  }
  Say("survived mib=" + std::to_string(mib));
  return 0;
}

// Busy-loops for MS milliseconds of wall-clock time; reports wall and own CPU time.
int CpuHog(long ms) {
  double start = MonotonicMs(), cpu0 = CpuMs();
  volatile unsigned long sink = 0;
  while (MonotonicMs() - start < static_cast<double>(ms))
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<unsigned long>(i);
  char line[128];
  snprintf(line, sizeof line, "wall_ms=%.0f cpu_ms=%.0f", MonotonicMs() - start, CpuMs() - cpu0);
  Say(line);
  return 0;
}

// Double fork + setsid: the grandchild re-executes this helper as "daemon-loop" (argv keeps the tag), detached from
// the command; the command itself then sleeps forever.
int Daemonize(char** argv) {
  pid_t child = fork();
  if (child == 0) {
    setsid();
    pid_t grandchild = fork();
    if (grandchild == 0) {
      // Keep --tag (argv[1]); replace the attack with daemon-loop.
      std::vector<char*> args = {argv[0]};
      if (argv[1] && strncmp(argv[1], "--tag=", 6) == 0) args.push_back(argv[1]);
      args.push_back(const_cast<char*>("daemon-loop"));
      args.push_back(nullptr);
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execv("/proc/self/exe", args.data());
      _exit(127);
    }
    _exit(grandchild > 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  Say(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "daemonized" : "daemonize failed");
  for (;;) pause();
}

int DaemonLoop() {
  signal(SIGHUP, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  for (;;) sleep(1);
}

int Flood(long bytes) {
  std::string chunk(65536, 'x');
  long left = bytes;
  while (left > 0) {
    size_t n = static_cast<size_t>(std::min<long>(left, static_cast<long>(chunk.size())));
    ssize_t w = write(1, chunk.data(), n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      fprintf(stderr, "write: %s\n", strerror(errno));
      return 1;
    }
    left -= w;
  }
  return 0;
}

// One of two concurrent sandboxes. Reports the base of its uid_map, then waits for /sync/go-NAME (written by the
// test once both sandboxes run), which holds the host pid of the other sandbox's helper. Scans /proc for the other's
// marker (hex) and its own, and tries to SIGKILL the other's host pid.
int Peer(const std::string& name, const std::string& own_hex, const std::string& other_hex) {
  bool ok = false;
  std::string map = ReadAll("/proc/self/uid_map", &ok);
  unsigned long inside = 0, base = 0, count = 0;
  if (!ok || sscanf(map.c_str(), "%lu %lu %lu", &inside, &base, &count) != 3) {
    Say("uid_map unreadable");
    return 0;
  }
  std::string go = "/sync/go-" + name;
  std::string peer;
  for (int i = 0; i < 1000; ++i) {  // up to 10 s
    peer = ReadAll(go, &ok);
    if (ok && !peer.empty() && peer.back() == '\n') break;
    ok = false;
    usleep(10000);
  }
  if (!ok) {
    Say("no go signal");
    return 0;
  }
  pid_t other_pid = static_cast<pid_t>(atol(peer.c_str()));
  auto procs = ListProcesses();
  long rc = kill(other_pid, SIGKILL);
  int err = errno;
  char line[256];
  snprintf(line, sizeof line, "base=%lu count=%lu other_seen=%d self_seen=%d procs=%zu kill_other=%s", base, count,
           CountMatching(procs, FromHex(other_hex)), CountMatching(procs, FromHex(own_hex)), procs.size(),
           Outcome(rc, err).c_str());
  Say(line);
  return 0;
}

int UidMap() {
  bool ok = false;
  std::string map = ReadAll("/proc/self/uid_map", &ok);
  unsigned long inside = 0, base = 0, count = 0;
  if (!ok || sscanf(map.c_str(), "%lu %lu %lu", &inside, &base, &count) != 3) {
    Say("uid_map unreadable");
    return 0;
  }
  Say("inside=" + std::to_string(inside) + " base=" + std::to_string(base) + " count=" + std::to_string(count));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int i = 1;
  while (i < argc && strncmp(argv[i], "--tag=", 6) == 0) ++i;
  if (i >= argc) Usage("usage: escape_helper [--tag=X] ATTACK [ARGS...]");
  const std::string attack = argv[i];
  std::vector<std::string> a(argv + i + 1, argv + argc);
  auto need = [&](size_t n) {
    if (a.size() != n) Usage(("wrong number of arguments for " + attack).c_str());
  };

  if (attack == "open-read") return need(1), OpenRead(a[0]);
  if (attack == "create") return need(1), WriteFile(a[0], "isb-escape\n", O_WRONLY | O_CREAT | O_EXCL);
  if (attack == "write") return need(2), WriteFile(a[0], a[1], O_WRONLY | O_CREAT | O_TRUNC);
  if (attack == "write-existing") return need(2), WriteFile(a[0], a[1], O_WRONLY);
  if (attack == "mkdir") return need(1), Say(Attempt([&] { return mkdir(a[0].c_str(), 0755); })), 0;
  if (attack == "mount-tmpfs")
    return need(1), Say(Attempt([&] { return mount("tmpfs", a[0].c_str(), "tmpfs", 0, nullptr); })), 0;
  if (attack == "remount-rw") {
    need(1);
    std::string plain = Attempt([&] { return mount(nullptr, a[0].c_str(), nullptr, MS_REMOUNT, nullptr); });
    std::string bind = Attempt([&] { return mount(nullptr, a[0].c_str(), nullptr, MS_REMOUNT | MS_BIND, nullptr); });
    Say("remount=" + plain + " remount_bind=" + bind);
    return 0;
  }
  if (attack == "umount") return need(1), Say(Attempt([&] { return umount2(a[0].c_str(), MNT_DETACH); })), 0;
  if (attack == "fsopen") return need(0), Say(Attempt([] { return syscall(SYS_fsopen, "tmpfs", 0); })), 0;
  if (attack == "open-tree")
    return need(1), Say(Attempt([&] { return syscall(SYS_open_tree, AT_FDCWD, a[0].c_str(), 1 /*OPEN_TREE_CLONE*/); })),
           0;
  if (attack == "scan-proc") return need(1), ScanProc(FromHex(a[0]));
  if (attack == "kill") return need(2), KillPid(static_cast<pid_t>(atol(a[0].c_str())), atoi(a[1].c_str()));
  if (attack == "ptrace-attach") return need(1), PtraceAttach(static_cast<pid_t>(atol(a[0].c_str())));
  if (attack == "modules") return need(0), Modules();
  if (attack == "kexec") return need(0), Kexec();
  if (attack == "bpf") return need(0), Bpf();
  if (attack == "keyctl") return need(0), Keyctl();
  if (attack == "io-uring") return need(0), IoUring();
  if (attack == "userfaultfd") return need(0), Userfaultfd();
  if (attack == "ia32-syscall") return need(0), Ia32Syscall();
  if (attack == "x32-syscall") return need(0), X32Syscall();
  if (attack == "terminal-ioctls") return need(0), TerminalIoctls();
  if (attack == "fds") return need(0), OpenDescriptors();
  if (attack == "perf-event-open") return need(0), PerfEventOpen();
  if (attack == "unshare-user") return need(0), Unshare(CLONE_NEWUSER);
  if (attack == "unshare-net") return need(0), Unshare(CLONE_NEWNET);
  if (attack == "unshare-mount") return need(0), Unshare(CLONE_NEWNS);
  if (attack == "clone-user") return need(0), CloneFlags(CLONE_NEWUSER);
  if (attack == "clone3") return need(0), Clone3();
  if (attack == "raw-socket") return need(0), Socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
  if (attack == "packet-socket") return need(0), Socket(AF_PACKET, SOCK_RAW, 0);
  if (attack == "socket-families") return need(0), SocketFamilies();
  if (attack == "netlink-protocols") return need(0), NetlinkProtocols();
  if (attack == "vsock-listen") return need(1), VsockListen(static_cast<unsigned>(atol(a[0].c_str())));
  if (attack == "connect-external") return need(2), ConnectExternal(a[0], atoi(a[1].c_str()));
  if (attack == "loopback") return need(0), Loopback();
  if (attack == "hostname") return need(1), Hostname(a[0]);
  if (attack == "ids") return need(0), Say(Ids()), 0;
  if (attack == "setuid-drop-exec") return need(1), SetuidDropExec(a[0]);
  if (attack == "fork-bomb") return need(0), ForkBomb();
  if (attack == "memory-hog") return need(1), MemoryHog(atol(a[0].c_str()));
  if (attack == "cpu-hog") return need(1), CpuHog(atol(a[0].c_str()));
  if (attack == "daemonize") return need(0), Daemonize(argv);
  if (attack == "daemon-loop") return need(0), DaemonLoop();
  if (attack == "flood") return need(1), Flood(atol(a[0].c_str()));
  if (attack == "peer") return need(3), Peer(a[0], a[1], a[2]);
  if (attack == "uid-map") return need(0), UidMap();
  if (attack == "argv") {
    // The arguments exactly as received, and whether /injected exists (a bind the caller did not ask for).
    std::string line = "args=";
    for (size_t k = 0; k < a.size(); ++k) line += (k ? "|" : "") + a[k];
    struct stat st {};
    line += std::string(" injected=") + (lstat("/injected", &st) == 0 ? "present" : "absent");
    Say(line);
    return 0;
  }
  if (attack == "exit") return need(1), atoi(a[0].c_str());
  if (attack == "kill-self") {
    need(1);
    kill(getpid(), atoi(a[0].c_str()));
    pause();
    return 0;
  }
  Usage(("unknown attack " + attack).c_str());
}
