// Capability bounding set and sets, by raw syscalls (no libcap: the child must not allocate).
#include "engine/caps.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace isb::engine {

const std::vector<CapInfo>& KeptCapabilities() {
  // Docker's default set, less NET_RAW (raw sockets), MKNOD (device nodes) and SETFCAP (file capabilities).
  static const std::vector<CapInfo> caps = {
      {CAP_CHOWN, "CAP_CHOWN", "chown files inside the sandbox (package managers)"},
      {CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE", "root reads and writes its own files regardless of mode"},
      {CAP_FOWNER, "CAP_FOWNER", "chmod and utime on files it does not own"},
      {CAP_FSETID, "CAP_FSETID", "keep setgid bits when chowning (no effect: mounts are nosuid)"},
      {CAP_KILL, "CAP_KILL", "signal any process of the sandbox (pid namespace confines it)"},
      {CAP_SETGID, "CAP_SETGID", "switch to another gid of the sandbox's range"},
      {CAP_SETUID, "CAP_SETUID", "switch to another uid of the sandbox's range"},
      {CAP_SETPCAP, "CAP_SETPCAP", "drop capabilities further"},
      {CAP_NET_BIND_SERVICE, "CAP_NET_BIND_SERVICE", "bind ports below 1024 in its own network namespace"},
      {CAP_SYS_CHROOT, "CAP_SYS_CHROOT", "chroot inside its own root"},
      {CAP_AUDIT_WRITE, "CAP_AUDIT_WRITE", "login tools that write audit records"},
  };
  return caps;
}

uint64_t KeptCapabilityMask() {
  uint64_t mask = 0;
  for (const auto& c : KeptCapabilities()) mask |= uint64_t{1} << c.cap;
  return mask;
}

int RestrictCapabilities(uint64_t keep) {
  for (int cap = 0; cap < 64; ++cap) {
    if (keep & (uint64_t{1} << cap)) continue;
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return -errno;  // EINVAL: past last cap
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return -errno;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2];
  for (int i = 0; i < 2; ++i) {
    auto word = static_cast<uint32_t>(keep >> (32 * i));
    data[i].effective = data[i].permitted = word;
    data[i].inheritable = 0;  // nothing to pass to a program's file capabilities (nosuid ignores them anyway)
  }
  if (::syscall(SYS_capset, &header, data) != 0) return -errno;
  return 0;
}

}  // namespace isb::engine
