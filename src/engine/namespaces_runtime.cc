// The namespaces runtime: the spawner's sandboxes behind the runtime interface.
#include "engine/namespaces_runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <set>
#include <utility>

#include "engine/exec_terminal.h"
#include "engine/idmap.h"
#include "engine/launch.h"
#include "engine/namespace_fit.h"

namespace isb::engine {
namespace {

constexpr int kBackgroundNice = 19;

// A terminal's input end over the pty master the sandbox's init handed over: the fast path, on this host.
class PtyInput : public ExecInput {
 public:
  explicit PtyInput(std::shared_ptr<ExecTerminal> terminal) : terminal_(std::move(terminal)) {}
  Status Send(const ExecInputMessage& m, std::chrono::milliseconds timeout) override {
    switch (m.kind) {
      case ExecInputMessage::Kind::kStdin:
        return terminal_->Write(m.data, timeout);
      case ExecInputMessage::Kind::kEof:
        return terminal_->SendEof(timeout);
      case ExecInputMessage::Kind::kResize:
        return terminal_->Resize(m.rows, m.cols);
    }
    return Error::Of(Code::kInvalidArgument, "an exec input message of no known kind");
  }

 private:
  std::shared_ptr<ExecTerminal> terminal_;
};

// One "key=number" field of a record, at its start; advances past it and the space after it.
template <typename T>
bool TakeField(std::string_view& text, std::string_view key, T* value) {
  if (!text.starts_with(key) || text.size() <= key.size() || text[key.size()] != '=') return false;
  text.remove_prefix(key.size() + 1);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  if (ec != std::errc()) return false;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return true;
}

}  // namespace

NamespacesRuntime::NamespacesRuntime(Spawner* spawner, CgroupLayout layout, std::string runtime_dir,
                                     std::string sandboxes_dir)
    : spawner_(spawner),
      layout_(std::move(layout)),
      runtime_dir_(std::move(runtime_dir)),
      sandboxes_dir_(std::move(sandboxes_dir)) {}

std::string NamespacesRuntime::Record(const HostProcess& p) {
  return "pid=" + std::to_string(p.pid) + " start=" + std::to_string(p.start_time) +
         " lease=" + std::to_string(p.lease_index);
}

std::optional<HostProcess> NamespacesRuntime::ParseRecord(std::string_view record) {
  const std::string_view whole = record;
  HostProcess p;
  if (!TakeField(record, "pid", &p.pid) || !TakeField(record, "start", &p.start_time) ||
      !TakeField(record, "lease", &p.lease_index) || !record.empty())
    return std::nullopt;
  // Only what Record writes for a spawned init: a pid above 0, spelt with no sign, padding or missing space.
  if (p.pid <= 0 || Record(p) != whole) return std::nullopt;
  return p;
}

std::string NamespacesRuntime::ControlPath(const std::string& id) const {
  return sandboxes_dir_ + "/" + id + "/control.sock";
}

Status NamespacesRuntime::Start(const StartRequest& request, StartedSandbox* out) {
  out->handle = {request.id, ""};
  ISB_ASSIGN_OR_RETURN(SpawnedSandbox s, spawner_->Spawn(request.config, ControlPath(request.id), request.id));
  out->handle.record = Record({s.pid, s.start_time, s.lease_index});
  out->uid_base = s.uid_base;
  const int normal = ::getpriority(PRIO_PROCESS, 0);  // this thread's nice value, -20..19 (never fails for itself)
  if (request.background && ::setpriority(PRIO_PROCESS, static_cast<id_t>(s.pid), kBackgroundNice) != 0)
    return Error::Sys("lower the priority of a pooled sandbox");
  // Set up in parallel with other starts (the spawner has moved on); on failure the caller kills it by its handle.
  ISB_TRY(WaitForSetup(s.report.get(), request.config, runtime_dir_, nullptr));
  if (request.background && ::setpriority(PRIO_PROCESS, static_cast<id_t>(s.pid), normal) != 0)
    return Error::Sys("restore the priority of a pooled sandbox");
  return {};
}

bool NamespacesRuntime::Running(const RuntimeHandle& handle) const {
  std::optional<HostProcess> p = ParseRecord(handle.record);
  // ProcessStartTime answers 0 for a pid that does not exist, so a record of start 0 would be "running" forever.
  return p && p->pid > 0 && p->start_time != 0 && ProcessStartTime(p->pid) == p->start_time;
}

Status NamespacesRuntime::Kill(const RuntimeHandle& handle, const std::function<void()>& on_killed, bool* oom) {
  std::optional<HostProcess> p = ParseRecord(handle.record);
  if (p && p->pid > 0) {
    if (Fd pidfd = OpenProcess(p->pid, p->start_time); pidfd.valid()) {
      ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
      if (on_killed) on_killed();
      pollfd pfd{pidfd.get(), POLLIN, 0};
      ::poll(&pfd, 1, 10'000);  // killing pid 1 takes the whole pid namespace with it
    }
  }
  Cgroup cg = Cgroup::Adopt(layout_, handle.id);
  if (auto kills = cg.OomKills(); kills.ok()) *oom = *kills > 0;
  Status removed = cg.Remove();
  // Its processes are gone, and with them its hold on the uid range: one try. The range may already be another
  // sandbox's (the spawner reuses a range as soon as it is free); that sandbox's lock is then left alone, where
  // waiting for it used to hold a removal up for a second.
  if (p && p->lease_index >= 0) (void)IdAllocator::ForHost().Reclaim(static_cast<uint32_t>(p->lease_index));
  if (!handle.id.empty()) ::unlink(ControlPath(handle.id).c_str());
  return removed;
}

Status NamespacesRuntime::Release(const std::string& id) { return Cgroup::Adopt(layout_, id).Remove(); }

std::vector<std::string> NamespacesRuntime::Held() const {
  // Only the daemon's sandboxes (sb-*): isb run's (run-*) and other daemons' are not this runtime's to report.
  std::set<std::string> ids;
  for (const std::string* root : {&layout_.memory, &layout_.v2_root}) {
    std::error_code ec;
    if (root->empty()) continue;
    for (const auto& e : std::filesystem::directory_iterator(*root + "/isb", ec)) {
      std::string name = e.path().filename().string();
      if (e.is_directory() && name.starts_with("sb-")) ids.insert(name);
    }
  }
  return {ids.begin(), ids.end()};
}

void NamespacesRuntime::Sweep() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(IdAllocator::kHostLeaseDir, ec)) {
    uint32_t index = 0;
    const std::string name = e.path().filename().string();
    auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), index);
    if (err == std::errc() && end == name.data() + name.size()) (void)IdAllocator::ForHost().Reclaim(index);
  }
}

Result<ExecOutcome> NamespacesRuntime::Exec(const RuntimeHandle& handle, const ExecSpec& spec, const ExecSink& sink,
                                            const ExecInputReady& on_input) {
  ExecSpec local = spec;
  local.on_terminal = nullptr;
  if (spec.tty && on_input)
    local.on_terminal = [&on_input](std::shared_ptr<ExecTerminal> t) { on_input(std::make_shared<PtyInput>(t)); };
  return ExecInSandbox(ControlPath(handle.id), local, sink);
}

Result<Fd> NamespacesRuntime::OpenRoot(const RuntimeHandle& handle) {
  // A pid taken meanwhile by another process is never used: the /proc dir is checked against the start time.
  std::optional<HostProcess> p = ParseRecord(handle.record);
  Fd proc = p ? OpenProcessDir(p->pid, p->start_time) : Fd();
  Fd root(proc.valid() ? ::openat(proc.get(), "root", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1);
  if (!root.valid()) return Error::Of(Code::kConflict, "the sandbox is not running");
  return root;
}

Result<Fd> NamespacesRuntime::OpenNetwork(const RuntimeHandle& handle) {
  // The namespace of its init: opened under the /proc dir of the recorded process (a pid taken meanwhile by another
  // opens nothing there), and that process checked again once it is open, so the namespace of an init that exited
  // in between (a zombie keeps its /proc dir) is never handed out.
  const Error not_running = Error::Of(Code::kConflict, "the sandbox is not running");
  std::optional<HostProcess> p = ParseRecord(handle.record);
  Fd proc = p ? OpenProcessDir(p->pid, p->start_time) : Fd();
  if (!proc.valid()) return not_running;
  Fd netns(::openat(proc.get(), "ns/net", O_RDONLY | O_CLOEXEC));
  const int err = errno;
  if (!OpenProcessDir(p->pid, p->start_time).valid()) return not_running;
  if (!netns.valid()) return Error::Sys("opening ns/net of its init", err);
  return netns;
}

Result<CgroupStats> NamespacesRuntime::Usage(const RuntimeHandle& handle) {
  Cgroup cg = Cgroup::Adopt(layout_, handle.id);
  Result<CgroupStats> stats = cg.ReadStats();
  cg.Release();
  return stats;
}

Status NamespacesRuntime::Fit(const RuntimeHandle& handle, const Refit& fit) {
  if (fit.set_limits) {
    Cgroup cg = Cgroup::Adopt(layout_, handle.id);
    Status set = cg.SetLimits(fit.limits);
    cg.Release();
    ISB_TRY(set);
  }
  std::optional<HostProcess> p = ParseRecord(handle.record);
  if (!p) return Error::Of(Code::kConflict, "the sandbox is not running");
  return FitNamespaces(p->pid, p->start_time, NamespaceFit{fit.hostname, fit.scratch_bytes});
}

HostProcess NamespacesRuntime::Process(const RuntimeHandle& handle) const {
  return ParseRecord(handle.record).value_or(HostProcess{});
}

}  // namespace isb::engine
