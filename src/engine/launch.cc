// Launch: lease ids, make the cgroup, clone, map ids, release the child, move it into its cgroup (while it builds
// its root), wait for its setup report.
#include "engine/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <dirent.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "base/file.h"
#include "base/units.h"
#include "base/unix_address.h"
#include "engine/contain.h"
#include "engine/image_trees.h"
#include "engine/mounts.h"
#include "engine/namespaces.h"
#include "engine/spawner.h"

namespace isb::engine {
namespace {

// A cgroup made without a name (`isb run`'s) is named for the process that made it and the uid range it leases:
// run-<pid>-<start time>[-<range>]. A run killed before it could clean up (SIGKILL, the OOM killer) leaves its
// cgroup directories and its lease file behind; the next run removes those of every run whose maker is gone.
std::string RunName(const IdLease& lease) {
  const pid_t self = ::getpid();
  std::string name = "run-" + std::to_string(self) + "-" + std::to_string(ProcessStartTime(self));
  if (lease.held()) name += "-" + std::to_string(lease.index());
  return name;
}

struct RunMaker {
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::optional<uint32_t> range;
};

// Who made a run cgroup, from its name; nullopt for any other name (a daemon's sandbox, an older isb's run).
std::optional<RunMaker> ParseRunName(std::string_view name) {
  if (!name.starts_with("run-")) return std::nullopt;
  std::vector<std::string_view> parts;
  for (size_t at = 4;;) {
    size_t dash = name.find('-', at);
    parts.push_back(name.substr(at, dash == std::string_view::npos ? std::string_view::npos : dash - at));
    if (dash == std::string_view::npos) break;
    at = dash + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  auto pid = ParseDecimal<pid_t>(parts[0]);
  auto start = ParseDecimal<uint64_t>(parts[1]);
  if (!pid || !start || *pid <= 0 || *start == 0) return std::nullopt;
  RunMaker m{*pid, *start, std::nullopt};
  if (parts.size() == 3) {
    m.range = ParseDecimal<uint32_t>(parts[2]);
    if (!m.range) return std::nullopt;
  }
  return m;
}

// Removes the cgroups (and frees the lease files) of runs whose maker has exited. Only empty ones: their processes
// die with their run (the parent-death signal), and a cgroup that still holds some is left as it is, never killed
// (it could be the run of an isb in another pid namespace, which looks dead from here). Best effort: a failure
// costs only the leftovers.
void SweepDeadRuns(const CgroupLayout& layout) {
  const std::string parent = (layout.v2 ? layout.v2_root : layout.memory) + "/isb";
  std::vector<std::string> names;
  if (DIR* d = ::opendir(parent.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_type == DT_DIR && std::string_view(e->d_name).starts_with("run-")) names.push_back(e->d_name);
    ::closedir(d);
  }
  for (const std::string& name : names) {
    std::optional<RunMaker> maker = ParseRunName(name);
    if (!maker || ProcessStartTime(maker->pid) == maker->start_time) continue;  // not a run's, or its maker lives
    Cgroup cg = Cgroup::Adopt(layout, name);
    bool gone = true;
    for (const std::string& dir : cg.dirs())
      if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) gone = false;
    cg.Release();
    if (gone && maker->range) (void)IdAllocator::ForHost().Reclaim(*maker->range);
  }
}

Error SetupFailure(const ChildFailure& f, const RootfsPlan& rootfs) {
  std::string what = StepName(f.step);
  if (f.step == Step::kRootfs) what += " (" + rootfs.Describe(static_cast<size_t>(f.detail)) + ")";
  std::string hint;
  if (f.step == Step::kRootfs && f.err == EPERM)
    hint = "; the kernel refused a mount inside a user namespace (check that /proc is fully visible to isb)";
  if (f.step == Step::kRootfs && f.err == EACCES)
    hint =
        "; the sandbox's root is an unprivileged host uid: the path and its parents must be world-searchable "
        "(chmod o+x) and an image world-readable";
  if (f.step == Step::kWorkdir) hint = "; does the directory exist in the sandbox?";
  return Error{"sandbox setup failed while " + what + ": " + std::strerror(f.err) + hint, f.err, Code::kUnavailable};
}

Result<Fd> ListenControl(const std::string& path) {
  ISB_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  Fd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::Sys("socket");
  ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return Error::Sys("bind " + path);
  if (::chmod(path.c_str(), 0600) != 0) return Error::Sys("chmod " + path);
  if (::listen(fd.get(), 64) != 0) return Error::Sys("listen " + path);
  return fd;
}

// The child's report: nothing (EOF, success) or one ChildFailure; kUnavailable when none came within `timeout`
// (negative: no limit).
Result<std::optional<ChildFailure>> ReadSetupReport(int fd,
                                                    std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
  if (timeout.count() >= 0) {
    using Clock = std::chrono::steady_clock;
    pollfd p{fd, POLLIN, 0};
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0)));
      if (n > 0) break;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::Sys("wait for the sandbox's setup report");
      if (Clock::now() < deadline) continue;  // woken a little early
      return Error::Of(Code::kUnavailable,
                       "the sandbox's setup did not finish within " + std::to_string(timeout.count()) + " ms");
    }
  }
  ChildFailure failure{};
  ssize_t got;
  while ((got = ::read(fd, &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  if (got == 0) return std::optional<ChildFailure>();
  if (got != static_cast<ssize_t>(sizeof failure)) return Error::Sys("read the sandbox's setup report");
  return std::optional<ChildFailure>(failure);
}

}  // namespace

Status WaitForSetup(int report_fd, const SandboxConfig& config, const std::string& runtime_dir, int* exec_errno,
                    std::chrono::milliseconds timeout) {
  ISB_ASSIGN_OR_RETURN(auto report, ReadSetupReport(report_fd, timeout));
  if (!report.has_value()) return {};
  if (report->step == Step::kExec && exec_errno != nullptr) {
    *exec_errno = report->err;
    return {};
  }
  // The plan is a pure function of the config and the host's directories: planned again, it names the step.
  auto plan = PlanRootfs(config, StagingDir(runtime_dir));
  return SetupFailure(*report, plan.ok() ? *plan : RootfsPlan());
}

Launched::~Launched() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    Wait();
  }
}

Launched& Launched::operator=(Launched&& o) noexcept {
  if (this == &o) return *this;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    Wait();
  }
  stdout_read = std::move(o.stdout_read);
  stderr_read = std::move(o.stderr_read);
  status_read = std::move(o.status_read);
  exec_errno = o.exec_errno;
  report_read = std::move(o.report_read);
  steps = std::move(o.steps);
  pid_ = std::exchange(o.pid_, 0);
  pidfd_ = std::move(o.pidfd_);
  lease_ = std::move(o.lease_);
  cgroup_ = std::move(o.cgroup_);
  return *this;
}

int Launched::Wait() {
  int status = 0;
  while (pid_ > 0 && ::waitpid(pid_, &status, __WALL) < 0 && errno == EINTR) {
  }
  pid_ = 0;
  return status;
}

std::string Launched::Detach() {
  pid_ = 0;
  pidfd_.Reset();
  lease_.Detach();
  return cgroup_.Release();
}

Result<Launched> Launch(const SandboxConfig& config, const LaunchOptions& options) {
  std::vector<std::pair<const char*, std::chrono::steady_clock::time_point>> steps;
  auto step = [&steps](const char* name) { steps.emplace_back(name, std::chrono::steady_clock::now()); };
  ISB_TRY(ValidateHostname(config.hostname));
  ISB_TRY(ValidateIdMappings(config.idmap, config.privileged));
  static const Result<CgroupLayout> layout = DetectCgroupLayout();
  if (!layout.ok()) return layout.error();
  // The child is moved into its cgroup by its pid while it may already have failed and exited: a child the kernel
  // reaps on its own (SIGCHLD ignored or SA_NOCLDWAIT, which survive the exec of whoever started isb) would free
  // that pid for another process. Children stay zombies until waited for.
  struct sigaction chld {};
  if (::sigaction(SIGCHLD, nullptr, &chld) == 0 && (chld.sa_handler == SIG_IGN || (chld.sa_flags & SA_NOCLDWAIT))) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigemptyset(&dfl.sa_mask);
    ::sigaction(SIGCHLD, &dfl, nullptr);
  }

  ChildPlan plan;
  plan.service = options.mode == InitMode::kService;
  plan.die_with_parent = options.die_with_parent;
  ISB_TRY(PrepareChildPlan(config, &plan));
  const std::string staging = StagingDir(options.runtime_dir);
  ISB_TRY(MakeDirs(staging, 0755));
  // The child works as the sandbox's root, an unprivileged host uid: it must be able to reach the staging dir.
  if (::chmod(options.runtime_dir.c_str(), 0711) != 0 || ::chmod(staging.c_str(), 0755) != 0)
    return Error::Sys("chmod " + options.runtime_dir);
  ISB_ASSIGN_OR_RETURN(plan.rootfs, PlanRootfs(config, staging));
  plan.seccomp = CompiledSeccompProgram();

  step("plan");
  Launched l;
  // A privileged sandbox keeps the host's ids: no range of its own to lease, and its ids map to themselves.
  if (!config.privileged) {
    ISB_ASSIGN_OR_RETURN(l.lease_, IdAllocator::ForHost().Acquire());
  }
  step("lease");
  const uid_t base = l.lease_.base();
  if (!config.writable_dir.empty()) {
    const uid_t root_uid = HostIdOf(base, config.idmap, IdMapKind::kUid, 0);
    const gid_t root_gid = HostIdOf(base, config.idmap, IdMapKind::kGid, 0);
    ISB_TRY(PrepareWritableDir(config.writable_dir, base, root_uid, root_gid, !ImageLayers(config).empty()));
  }
  const bool run = options.cgroup_name.empty();
  ISB_ASSIGN_OR_RETURN(l.cgroup_,
                       Cgroup::Create(*layout, run ? RunName(l.lease_) : options.cgroup_name, config.limits));
  step("cgroup");
  Fd control;
  if (plan.service) {
    ISB_ASSIGN_OR_RETURN(control, ListenControl(options.control_path));
    plan.control_fd = control.get();
    plan.lease_fd = l.lease_.fd();
  }
  // The go signal, and with it the image's idmapped trees: a socket pair, so descriptors can ride along.
  Pipe sync;
  {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return Error::Sys("socketpair");
    sync.read.Reset(sv[0]);
    sync.write.Reset(sv[1]);
  }
  ISB_ASSIGN_OR_RETURN(Pipe errors, MakePipe());
  ISB_ASSIGN_OR_RETURN(Pipe status, MakePipe());
  ISB_ASSIGN_OR_RETURN(Pipe out, MakePipe());
  ISB_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  plan.sync_fd = sync.read.get();
  plan.sync_write_fd = sync.write.get();
  plan.error_fd = errors.write.get();
  plan.status_fd = status.write.get();
  plan.stdin_fd = options.stdin_fd;
  plan.stdout_fd = out.write.get();
  plan.stderr_fd = err.write.get();

  int pidfd = -1;
  pid_t pid;
  {
    // The sandbox's user namespace is owned by its range's first host uid, which no one else has, not by the
    // host's root. The kernel charges what a namespace's processes hold to its owner in the parent namespace as
    // well (inotify instances and watches, POSIX message queue bytes, pending signals): owned by root, every
    // sandbox together would spend root's budget, and with it the host's own services' (a sandbox holding 128
    // inotify instances left root none).
    std::optional<NamespaceOwner> owner;
    if (!config.privileged) {
      ISB_ASSIGN_OR_RETURN(NamespaceOwner o, NamespaceOwner::Become(base, base));
      owner.emplace(std::move(o));
    }
    pid = CloneWithPidfd(config.privileged ? kCloneNamespaces & ~CLONE_NEWUSER : kCloneNamespaces, &pidfd);
    if (pid == 0) ChildMain(plan);  // never returns: the owner's ids are put back in this process only
  }
  if (pid < 0)
    return Error{
        std::string("clone of the sandbox failed: ") + std::strerror(-pid) +
            (-pid == EPERM || -pid == ENOSPC ? " (are user namespaces enabled? check user.max_user_namespaces)" : ""),
        -pid, Code::kUnavailable};
  step("clone");
  l.pid_ = pid;
  l.pidfd_.Reset(pidfd);
  sync.read.Reset();
  errors.write.Reset();
  status.write.Reset();
  out.write.Reset();
  err.write.Reset();
  control.Reset();

  if (!config.privileged) ISB_TRY(WriteIdMaps(pid, base, config.idmap));
  step("id_maps");
  // An image is seen through the sandbox's own id mapping (IdmappedTrees, one per layer), made here: only the
  // host's root may idmap a mount of the host's filesystem.
  std::vector<Fd> image_trees;
  const std::vector<std::string> layers = ImageLayers(config);
  if (!config.privileged && !layers.empty() && config.idmap_image && OverlayTakesIdmappedLayers()) {
    Fd userns(::open(("/proc/" + std::to_string(pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    if (!userns.valid()) return Error::Sys("open the sandbox's user namespace");
    image_trees = IdmappedTrees(layers, userns.get());
  }
  if (SendGo(sync.write.get(), image_trees) != 1) return Error::Sys("start the sandbox");
  image_trees.clear();  // the child holds them now
  step("go");
  // The child is moved into its cgroup while it builds its root filesystem: it runs nothing of the sandbox's before
  // the second byte. (The move waits for an RCU grace period on cgroup v1, most of a millisecond here; the cgroup
  // itself is made before the clone: made while the child works, its mkdirs waited for the child's CPU as well.)
  auto joined = [&]() -> Status {
    ISB_TRY(l.cgroup_.AddProcess(pid));
    step("cgroup_join");
    const char j = 'j';
    if (::send(sync.write.get(), &j, 1, MSG_NOSIGNAL) != 1) return Error::Sys("start the sandbox");
    return {};
  }();
  sync.write.Reset();
  if (!joined.ok()) {
    // The child may have failed before the parent could place it (its exit is then why the move failed): its own
    // report names the step. A child still waiting sees EOF and reports that it waited, which is this error's.
    auto report = ReadSetupReport(errors.read.get(), std::chrono::seconds(5));
    if (plan.service) ::unlink(options.control_path.c_str());
    if (report.ok() && report->has_value() && (*report)->step != Step::kSync && (*report)->step != Step::kExec)
      return SetupFailure(**report, plan.rootfs);
    return joined.error();
  }
  // While the sandbox sets itself up: what earlier runs killed outright left.
  if (run) SweepDeadRuns(*layout);

  if (!options.wait_for_setup) {
    l.report_read = std::move(errors.read);
    l.steps = std::move(steps);
    return l;
  }
  // EOF: every step succeeded (run-once: the command was executed; service: init is serving).
  auto report = ReadSetupReport(errors.read.get());
  if (!report.ok()) return report.error();
  if (report->has_value()) {
    if ((*report)->step != Step::kExec) return SetupFailure(**report, plan.rootfs);
    l.exec_errno = (*report)->err;
  }
  step("setup");
  l.stdout_read = std::move(out.read);
  l.stderr_read = std::move(err.read);
  l.status_read = std::move(status.read);
  l.steps = std::move(steps);
  return l;
}

}  // namespace isb::engine
