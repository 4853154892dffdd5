// The syscall filter, built with libseccomp and exported as raw BPF.
#include "engine/seccomp.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "base/fd.h"

namespace isb::engine {

const std::vector<SeccompRule>& RefusedSyscalls() {
  static const std::vector<SeccompRule> rules = {
      {"kexec_load", "replaces the host kernel"},
      {"kexec_file_load", "replaces the host kernel"},
      {"init_module", "loads code into the host kernel"},
      {"finit_module", "loads code into the host kernel"},
      {"delete_module", "unloads host kernel modules"},
      {"bpf", "large kernel attack surface; verifier bugs are a recurring escape route"},
      {"perf_event_open", "kernel attack surface and side channels on other tenants"},
      {"userfaultfd", "turns kernel race windows into reliable exploits"},
      {"keyctl", "the kernel keyring is not namespaced"},
      {"add_key", "the kernel keyring is not namespaced"},
      {"request_key", "the kernel keyring is not namespaced"},
      {"io_uring_setup", "large, frequently exploited kernel surface that also bypasses this filter"},
      {"io_uring_enter", "as io_uring_setup"},
      {"io_uring_register", "as io_uring_setup"},
      {"open_by_handle_at", "opens files by handle, outside the sandbox's root"},
      {"name_to_handle_at", "companion of open_by_handle_at"},
      {"mount", "the sandbox's mounts are fixed when it starts"},
      {"umount2", "unmounting could reveal what masks hide"},
      {"pivot_root", "the root is fixed when the sandbox starts"},
      {"move_mount", "new mount API"},
      {"open_tree", "new mount API"},
      {"fsopen", "new mount API"},
      {"fsconfig", "new mount API"},
      {"fsmount", "new mount API"},
      {"fspick", "new mount API"},
      {"mount_setattr", "new mount API"},
      {"ptrace", "inspecting or controlling other processes"},
      {"process_vm_readv", "reads another process's memory"},
      {"process_vm_writev", "writes another process's memory"},
      {"kcmp", "kernel pointer comparisons across processes"},
      {"setns", "joining another namespace"},
      {"swapon", "host swap configuration"},
      {"swapoff", "host swap configuration"},
      {"reboot", "host power state"},
      {"syslog", "the host kernel log"},
      {"acct", "host process accounting"},
      {"settimeofday", "the host clock is not namespaced"},
      {"clock_settime", "the host clock is not namespaced"},
      {"clock_adjtime", "the host clock is not namespaced"},
      {"adjtimex", "the host clock is not namespaced"},
      {"iopl", "raw port I/O"},
      {"ioperm", "raw port I/O"},
      {"quotactl", "host filesystem quotas"},
      {"lookup_dcookie", "kernel profiling interface"},
      {"fanotify_init", "filesystem-wide event monitoring"},
      {"vhangup", "terminal hang-up of the host's tty"},
      {"uselib", "obsolete loader interface"},
      {"nfsservctl", "obsolete"},
  };
  return rules;
}

const std::vector<SocketFamilyRule>& AllowedSocketFamilies() {
  static const std::vector<SocketFamilyRule> families = {
      {AF_UNIX, "AF_UNIX", "local sockets inside the sandbox (bound in its own mount namespace)"},
      {AF_INET, "AF_INET", "IPv4, confined by the sandbox's network namespace and egress rules"},
      {AF_INET6, "AF_INET6", "IPv6, as AF_INET"},
      {AF_NETLINK, "AF_NETLINK", "its own network namespace's addresses and routes (the protocols below only)"},
  };
  return families;
}

const std::vector<SocketFamilyRule>& AllowedNetlinkProtocols() {
  static const std::vector<SocketFamilyRule> protocols = {
      {NETLINK_ROUTE, "NETLINK_ROUTE", "interfaces, addresses and routes of its own namespace (libc, ip)"},
      {NETLINK_SOCK_DIAG, "NETLINK_SOCK_DIAG", "its own namespace's sockets (ss)"},
  };
  return protocols;
}

namespace {

// Netlink protocol numbers the kernel accepts are below this (MAX_LINKS).
constexpr int kNetlinkProtocols = 32;

using Ctx = std::unique_ptr<void, decltype(&seccomp_release)>;

Status Add(scmp_filter_ctx ctx, uint32_t action, const char* name, std::initializer_list<scmp_arg_cmp> args = {}) {
  // A name libseccomp knows but this architecture lacks resolves to a negative pseudo-number, which adds no rule.
  // A name it does not know at all (an older libseccomp than the list was written for) would leave the call
  // allowed: the filter is not built.
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) {
    const scmp_version* v = seccomp_version();
    return Error::Msg("libseccomp " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                      std::to_string(v->micro) + " does not know the system call '" + name +
                      "', so the filter could not refuse it; build isb with a libseccomp that does (2.5.4 or later)");
  }
  int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(args.size()), args.begin());
  if (rc != 0) return Error::Sys(std::string("seccomp rule for ") + name, -rc);
  return {};
}

}  // namespace

Result<SeccompProgram> BuildSeccompProgram() { return BuildSeccompProgram(RefusedSyscalls()); }

Result<SeccompProgram> BuildSeccompProgram(const std::vector<SeccompRule>& refused) {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW), &seccomp_release);
  if (!ctx) return Error::Msg("seccomp_init failed");
  // Syscalls of another ABI (i386 through int 0x80, x32) are not covered by the rules: kill instead of allowing.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc != 0)
    return Error::Sys("seccomp badarch action", -rc);
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (const auto& r : refused) ISB_TRY(Add(ctx.get(), eperm, r.syscall));

  ISB_TRY(Add(ctx.get(), eperm, "unshare", {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)}));
  ISB_TRY(Add(ctx.get(), eperm, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)}));
  ISB_TRY(Add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), "clone3"));

  // personality: only the default. libseccomp cannot compare one argument twice in a rule, so the read-only
  // query (0xffffffff) is refused too; nothing common needs it.
  ISB_TRY(Add(ctx.get(), eperm, "personality", {SCMP_A0(SCMP_CMP_NE, PER_LINUX, 0)}));

  // Packet sockets read and forge any frame; raw sockets forge IP packets.
  ISB_TRY(Add(ctx.get(), eperm, "socket", {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffff, AF_PACKET)}));
  ISB_TRY(Add(ctx.get(), eperm, "socket", {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW)}));
  ISB_TRY(Add(ctx.get(), eperm, "socket", {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_PACKET)}));
  // Every other address family is refused as a kernel without it would: vsock crosses network namespaces (one
  // port space for the machine, and the hypervisor beyond it), and the rest (AF_KEY, AF_ALG, AF_TIPC, AF_RDS,
  // AF_BLUETOOTH, AF_XDP, ...) are kernel surface a sandbox has no use for. The kernel reads the family as an int.
  auto allowed = [](const std::vector<SocketFamilyRule>& list, int v) {
    for (const auto& r : list)
      if (r.family == v) return true;
    return false;
  };
  for (int family = 0; family < AF_MAX; ++family) {
    if (family == AF_PACKET || allowed(AllowedSocketFamilies(), family)) continue;
    ISB_TRY(Add(ctx.get(), SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket",
                {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffff, static_cast<scmp_datum_t>(family))}));
  }
  // A pair of connected sockets is a unix one's business: the kernel makes pairs of some other families too (TIPC),
  // and creates any family's socket before it finds it cannot pair.
  ISB_TRY(Add(ctx.get(), SCMP_ACT_ERRNO(EAFNOSUPPORT), "socketpair", {SCMP_A0(SCMP_CMP_NE, AF_UNIX, 0)}));
  // IPv4 and IPv6 by protocols a sandbox has no use for, each a module of its own: SCTP, DCCP, L2TP, and SMC (which
  // IPPROTO_SMC opens without AF_SMC).
  for (int family : {AF_INET, AF_INET6}) {
    for (int protocol : {int{IPPROTO_SCTP}, int{IPPROTO_DCCP}, 115 /* IPPROTO_L2TP */, 256 /* IPPROTO_SMC */}) {
      ISB_TRY(Add(ctx.get(), SCMP_ACT_ERRNO(EPROTONOSUPPORT), "socket",
                  {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffff, static_cast<scmp_datum_t>(family)),
                   SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffff, static_cast<scmp_datum_t>(protocol))}));
    }
  }
  // Netlink reaches kernel subsystems by protocol: audit and uevents are not namespaced, and xfrm, netfilter
  // and generic netlink are large surface.
  for (int protocol = 0; protocol < kNetlinkProtocols; ++protocol) {
    if (allowed(AllowedNetlinkProtocols(), protocol)) continue;
    ISB_TRY(Add(ctx.get(), SCMP_ACT_ERRNO(EPROTONOSUPPORT), "socket",
                {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffff, AF_NETLINK),
                 SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffff, static_cast<scmp_datum_t>(protocol))}));
  }
  // Faking terminal input would type commands into a terminal outside the sandbox.
  ISB_TRY(Add(ctx.get(), eperm, "ioctl", {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, TIOCSTI)}));
  ISB_TRY(Add(ctx.get(), eperm, "ioctl", {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, TIOCLINUX)}));

  Fd mem(::memfd_create("isb-seccomp", MFD_CLOEXEC));
  if (!mem.valid()) return Error::Sys("memfd_create");
  if (int rc = seccomp_export_bpf(ctx.get(), mem.get()); rc != 0) return Error::Sys("seccomp_export_bpf", -rc);
  off_t size = ::lseek(mem.get(), 0, SEEK_END);
  if (size <= 0 || size % sizeof(sock_filter) != 0) return Error::Msg("seccomp export produced no program");
  SeccompProgram p;
  p.code.resize(static_cast<size_t>(size) / sizeof(sock_filter));
  if (::pread(mem.get(), p.code.data(), static_cast<size_t>(size), 0) != size) return Error::Sys("read bpf");
  return p;
}

}  // namespace isb::engine
