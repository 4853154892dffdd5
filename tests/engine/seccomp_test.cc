#include "engine/seccomp.h"

#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <unistd.h>

#include <set>
#include <string>

#include "engine/child_util.h"

namespace isb::engine {
namespace {

using isb::testing::InChild;

TEST(Seccomp, RefusedListHasTheRequiredSyscallsEachWithAReason) {
  std::set<std::string> names;
  for (const auto& r : RefusedSyscalls()) {
    names.insert(r.syscall);
    EXPECT_GT(std::string(r.why).size(), 5u) << r.syscall;
  }
  for (const char* must : {"kexec_load",
                           "kexec_file_load",
                           "init_module",
                           "finit_module",
                           "delete_module",
                           "bpf",
                           "perf_event_open",
                           "userfaultfd",
                           "keyctl",
                           "add_key",
                           "request_key",
                           "io_uring_setup",
                           "io_uring_enter",
                           "io_uring_register",
                           "open_by_handle_at",
                           "mount",
                           "umount2",
                           "pivot_root",
                           "move_mount",
                           "fsopen",
                           "fsmount",
                           "fsconfig",
                           "fspick",
                           "open_tree",
                           "ptrace"})
    EXPECT_TRUE(names.count(must)) << must;
}

TEST(Seccomp, ProgramCompiles) {
  auto p = BuildSeccompProgram();
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_GT(p->code.size(), 20u);
}

// A name libseccomp cannot resolve must fail the build of the filter, not leave that call allowed; a name it knows
// but this architecture lacks (i386's socketcall here) adds nothing and is no error.
TEST(Seccomp, AnUnknownSyscallNameFailsTheFilter) {
  auto p = BuildSeccompProgram({{"kexec_load", "x"}, {"no_such_syscall", "x"}});
  ASSERT_FALSE(p.ok());
  const scmp_version* v = seccomp_version();
  EXPECT_EQ(p.error().message, "libseccomp " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                                   std::to_string(v->micro) +
                                   " does not know the system call 'no_such_syscall', so the filter could not refuse "
                                   "it; build isb with a libseccomp that does (2.5.4 or later)");
  auto absent = BuildSeccompProgram({{"socketcall", "x"}});
  ASSERT_TRUE(absent.ok()) << absent.error().message;
}

// Installs the filter in a child and returns errno of `call` (0 when it succeeded).
int ErrnoUnderFilter(const std::function<long()>& call) {
  static auto program = BuildSeccompProgram();
  return InChild([&] {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 200;
    auto prog = program->prog();
    if (InstallSeccomp(prog) != 0) return 201;
    errno = 0;
    long rc = call();
    return rc < 0 ? errno : 0;
  });
}

TEST(Seccomp, RefusesWithExactErrno) {
  EXPECT_EQ(ErrnoUnderFilter([] { return ::syscall(SYS_bpf, BPF_PROG_LOAD, nullptr, 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter([] { return ::syscall(SYS_keyctl, 0, 0, 0, 0, 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter([] { return ::syscall(SYS_io_uring_setup, 1, nullptr); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter([] { return ::syscall(SYS_userfaultfd, 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter([] { return ::syscall(SYS_ptrace, 0, 0, 0, 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter([] { return static_cast<long>(::unshare(CLONE_NEWUSER)); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter([] { return ::syscall(SYS_clone3, nullptr, 0); }), ENOSYS);
  EXPECT_EQ(ErrnoUnderFilter([] { return static_cast<long>(::personality(READ_IMPLIES_EXEC)); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter([] { return static_cast<long>(::socket(AF_PACKET, SOCK_RAW, 0)); }), EPERM);
  // The kernel reads the domain as an int: high bits set in the register still make a packet socket.
  EXPECT_EQ(ErrnoUnderFilter([] { return ::syscall(SYS_socket, (1L << 32) | AF_PACKET, SOCK_DGRAM, 0); }), EPERM);
  EXPECT_EQ(
      ErrnoUnderFilter([] { return static_cast<long>(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP)); }),
      EPERM);
}

TEST(Seccomp, RefusesSocketFamiliesASandboxHasNoUseFor) {
  auto open_socket = [](int family, int type, int protocol) {
    return [=] {
      int fd = ::socket(family, type | SOCK_CLOEXEC, protocol);
      return fd < 0 ? -1L : static_cast<long>(::close(fd));
    };
  };
  for (int family : {AF_VSOCK, AF_KEY, AF_ALG, AF_TIPC, AF_RDS, AF_BLUETOOTH, AF_XDP, AF_CAN, AF_X25, AF_UNSPEC})
    EXPECT_EQ(ErrnoUnderFilter(open_socket(family, SOCK_DGRAM, 0)), EAFNOSUPPORT) << family;
  EXPECT_EQ(ErrnoUnderFilter(open_socket(AF_VSOCK, SOCK_STREAM, 0)), EAFNOSUPPORT);
  // High bits in the register do not make another family.
  EXPECT_EQ(ErrnoUnderFilter([] { return ::syscall(SYS_socket, (1L << 32) | AF_VSOCK, SOCK_STREAM, 0); }),
            EAFNOSUPPORT);
  for (int protocol : {NETLINK_AUDIT, NETLINK_KOBJECT_UEVENT, NETLINK_XFRM, NETLINK_NETFILTER, NETLINK_GENERIC})
    EXPECT_EQ(ErrnoUnderFilter(open_socket(AF_NETLINK, SOCK_DGRAM, protocol)), EPROTONOSUPPORT) << protocol;
  for (int family : {AF_UNIX, AF_INET, AF_INET6})
    EXPECT_EQ(ErrnoUnderFilter(open_socket(family, SOCK_STREAM, 0)), 0) << family;
  EXPECT_EQ(ErrnoUnderFilter(open_socket(AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE)), 0);
  // Pairs: unix only.
  EXPECT_EQ(ErrnoUnderFilter([] {
              int sv[2];
              return static_cast<long>(::socketpair(AF_TIPC, SOCK_SEQPACKET, 0, sv));
            }),
            EAFNOSUPPORT);
  EXPECT_EQ(ErrnoUnderFilter([] {
              int sv[2];
              if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return -1L;
              ::close(sv[0]);
              ::close(sv[1]);
              return 0L;
            }),
            0);
  // IPv4 and IPv6 protocols that are modules of their own.
  for (int family : {AF_INET, AF_INET6})
    for (int protocol : {int{IPPROTO_SCTP}, int{IPPROTO_DCCP}, 115, 256})
      EXPECT_EQ(ErrnoUnderFilter(open_socket(family, SOCK_STREAM, protocol)), EPROTONOSUPPORT) << protocol;
  EXPECT_EQ(ErrnoUnderFilter(open_socket(AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG)), 0);
}

TEST(Seccomp, AllowsOrdinaryWork) {
  EXPECT_EQ(ErrnoUnderFilter([] { return static_cast<long>(::getpid()) > 0 ? 0L : -1L; }), 0);
  EXPECT_EQ(ErrnoUnderFilter([] {
              int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
              return fd < 0 ? -1L : static_cast<long>(::close(fd));
            }),
            0);
  EXPECT_EQ(ErrnoUnderFilter([] { return static_cast<long>(::personality(PER_LINUX)); }), 0);
  EXPECT_EQ(ErrnoUnderFilter([] {
              pid_t p = ::fork();
              if (p == 0) ::_exit(0);
              return p > 0 ? 0L : -1L;
            }),
            0);
}

}  // namespace
}  // namespace isb::engine

namespace isb::engine {
namespace {

// What sandboxes run under is the build-time compilation of exactly these rules.
TEST(Seccomp, CompiledProgramIsTheRulesProgram) {
  auto built = BuildSeccompProgram();
  ASSERT_TRUE(built.ok());
  const auto& compiled = CompiledSeccompProgram();
  ASSERT_EQ(compiled.code.size(), built->code.size());
  for (size_t i = 0; i < built->code.size(); ++i) {
    EXPECT_EQ(compiled.code[i].code, built->code[i].code) << i;
    EXPECT_EQ(compiled.code[i].jt, built->code[i].jt) << i;
    EXPECT_EQ(compiled.code[i].jf, built->code[i].jf) << i;
    EXPECT_EQ(compiled.code[i].k, built->code[i].k) << i;
  }
}

}  // namespace
}  // namespace isb::engine
