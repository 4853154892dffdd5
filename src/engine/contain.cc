// The containment sequence, in the order it runs.
#include "engine/contain.h"

#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "engine/caps.h"
#include "engine/image_trees.h"
#include "engine/init.h"
#include "engine/mounts.h"
#include "engine/namespaces.h"

namespace isb::engine {

const char* StepName(Step s) {
  switch (s) {
    case Step::kSync:
      return "waiting for the parent";
    case Step::kIds:
      return "switching to the sandbox's uid range";
    case Step::kCgroupNs:
      return "creating the cgroup namespace";
    case Step::kRootfs:
      return "building the root filesystem";
    case Step::kHostname:
      return "setting the hostname";
    case Step::kLoopback:
      return "bringing up loopback";
    case Step::kRlimits:
      return "setting rlimits";
    case Step::kSession:
      return "starting a new session";
    case Step::kCaps:
      return "dropping capabilities";
    case Step::kNoNewPrivs:
      return "setting no_new_privs";
    case Step::kSeccomp:
      return "installing the seccomp filter";
    case Step::kFork:
      return "starting the command";
    case Step::kUser:
      return "switching to the command's user";
    case Step::kWorkdir:
      return "entering the working directory";
    case Step::kStdio:
      return "connecting standard streams";
    case Step::kExec:
      return "executing the command";
    case Step::kServe:
      return "starting the control socket";
  }
  return "unknown step";
}

std::vector<std::string> SandboxEnvironment(const std::vector<std::string>& env) {
  std::vector<std::string> out = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
                                  "TERM=xterm"};
  for (const auto& kv : env) {
    std::string key = kv.substr(0, kv.find('='));
    std::erase_if(out, [&](const std::string& e) { return e.substr(0, e.find('=')) == key; });
    out.push_back(kv);
  }
  return out;
}

Status PrepareChildPlan(const SandboxConfig& config, ChildPlan* plan) {
  if (!plan->service && (config.argv.empty() || config.argv[0].empty())) return Error::Msg("no command given");
  auto keep = [plan](const std::string& s) { return plan->strings.emplace_back(s).data(); };
  for (const auto& a : config.argv) plan->argv.push_back(keep(a));
  plan->argv.push_back(nullptr);
  std::string path;
  for (const auto& kv : SandboxEnvironment(config.env)) {
    if (kv.find('=') == std::string::npos || kv.front() == '=')
      return Error::Msg("invalid environment entry '" + kv.substr(0, kv.find('=')) + "': expected KEY=VALUE");
    if (kv.starts_with("PATH=")) path = kv.substr(5);
    plan->envp.push_back(keep(kv));
  }
  plan->envp.push_back(nullptr);
  // PATH is searched in the sandbox's own terms, so the candidates are computed here and tried there.
  const std::string cmd = config.argv.empty() ? "" : config.argv[0];
  if (cmd.find('/') != std::string::npos) {
    plan->exec_candidates.push_back(keep(cmd));
  } else {
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string dir = path.substr(start, end - start);
      plan->exec_candidates.push_back(keep((dir.empty() ? "." : dir) + "/" + cmd));
      start = end + 1;
    }
  }
  plan->exec_candidates.push_back(nullptr);
  plan->hostname = keep(config.hostname);
  plan->hostname_len = config.hostname.size();
  plan->workdir = keep(config.workdir);
  plan->uid = config.uid;
  plan->gid = config.gid;
  plan->rlimits = SandboxRlimits();
  plan->capabilities = KeptCapabilityMask();
  return {};
}

namespace {
char* g_args_start = nullptr;
size_t g_args_len = 0;
}  // namespace

void RememberProcessArgs(int argc, char** argv) {
  if (argc <= 0) return;
  g_args_start = argv[0];
  g_args_len = static_cast<size_t>(argv[argc - 1] + std::strlen(argv[argc - 1]) - argv[0]);
}

void ChildFail(const ChildPlan& plan, Step step, int err, int detail) {
  ChildFailure f{step, err, detail};
  ssize_t n = ::write(plan.error_fd, &f, sizeof f);
  (void)n;
  ::_exit(125);
}

void ChildMain(const ChildPlan& plan) {
  // Every signal back to its default action. What the launcher ignored (a daemon ignores SIGPIPE, and systemd
  // starts services with it ignored) would otherwise stay ignored in init and in every command it starts, since an
  // exec keeps ignored signals: `yes | head` would get EPIPE instead of ending. Through the system call itself:
  // the C library's sigaction refuses the two real-time signals it keeps for itself, which a launcher may ignore
  // all the same.
  struct {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    uint64_t mask;
  } default_action{SIG_DFL, 0, nullptr, 0};
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      (void)::syscall(SYS_rt_sigaction, sig, &default_action, nullptr, sizeof default_action.mask);
  if (plan.die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::prctl(PR_SET_NAME, "isb-init");
  if (g_args_start != nullptr) {
    std::memset(g_args_start, 0, g_args_len);
    std::memcpy(g_args_start, "isb-init", std::min<size_t>(g_args_len, 8));
  }
  // The clone copied the parent's end of the sync pipe too: without closing it here, a parent that dies before
  // writing "go" would leave this process waiting forever, outside any cgroup, holding its uid-range lease.
  if (plan.sync_write_fd >= 0) ::close(plan.sync_write_fd);
  // One byte means go; the image's idmapped trees may come with it. EOF means the parent died.
  ssize_t got = ReceiveGo(plan.sync_fd);
  if (got != 1) ChildFail(plan, Step::kSync, got < 0 ? errno : 0);

  // The parent has written uid_map/gid_map: become the namespace's root (host uid = the range's base, or the host's
  // root itself in a privileged sandbox, which has no user namespace of its own).
  if (::setresgid(0, 0, 0) != 0 || ::setgroups(0, nullptr) != 0 || ::setresuid(0, 0, 0) != 0)
    ChildFail(plan, Step::kIds, errno);
  if (plan.die_with_parent) {
    // The switch of ids may have cleared the parent-death signal set above (the kernel drops it on any change of
    // euid or egid, as in a privileged sandbox's): set it again, then make sure the parent did not die in between,
    // which no signal would report. The
    // parent holds the error pipe's read end until this setup ends: a write end with no reader is POLLERR.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    pollfd parent{plan.error_fd, POLLOUT, 0};
    if (::poll(&parent, 1, 0) == 1 && (parent.revents & POLLERR)) ::_exit(125);
  }
  if (int i = ExecuteRootfs(plan.rootfs); i >= 0) ChildFail(plan, Step::kRootfs, errno, i);
  if (int rc = SetHostname(plan.hostname, plan.hostname_len); rc != 0) ChildFail(plan, Step::kHostname, -rc);
  if (int rc = BringUpLoopback(); rc != 0) ChildFail(plan, Step::kLoopback, -rc);
  // The parent moves this process into its cgroup while the steps above run; a second byte says it is done. Nothing of
  // the sandbox's own has run yet: the cgroup's limits hold from its first instruction on, and the namespace made next
  // has that cgroup for its root. (What the steps above allocated stays charged where it was: the mounts' kernel
  // objects and a few tmpfs pages.)
  char joined = 0;
  while ((got = ::read(plan.sync_fd, &joined, 1)) < 0 && errno == EINTR) {
  }
  if (got != 1 || joined != 'j') ChildFail(plan, Step::kSync, got < 0 ? errno : 0);
  ::close(plan.sync_fd);
  if (::unshare(CLONE_NEWCGROUP) != 0) ChildFail(plan, Step::kCgroupNs, errno);
  if (int rc = ApplyRlimits(plan.rlimits.data(), plan.rlimits.size()); rc != 0) ChildFail(plan, Step::kRlimits, -rc);
  if (::setsid() < 0) ChildFail(plan, Step::kSession, errno);
  if (int rc = RestrictCapabilities(plan.capabilities); rc != 0) ChildFail(plan, Step::kCaps, -rc);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ChildFail(plan, Step::kNoNewPrivs, errno);
  sock_fprog prog = plan.seccomp.prog();
  if (InstallSeccomp(prog) != 0) ChildFail(plan, Step::kSeccomp, errno);
  if (plan.service) ServeInit(plan);
  RunInit(plan);
}

}  // namespace isb::engine
