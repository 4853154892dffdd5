// The seccomp filter as compiled at build time (see seccomp_gen.cc).
#include "engine/seccomp.h"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace isb::engine {

const SeccompProgram& CompiledSeccompProgram() {
  static const SeccompProgram program{{
#include "seccomp_bpf.inc"
  }};
  return program;
}

int InstallSeccomp(const sock_fprog& p) {
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &p));
}

}  // namespace isb::engine
