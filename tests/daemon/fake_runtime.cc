// The fake runtime's table.
#include "daemon/fake_runtime.h"

#include <fcntl.h>

#include <filesystem>
#include <thread>

namespace isb::daemon {
namespace {

// A terminal's input end that keeps what it is sent in its runtime's list.
class RecordingInput : public engine::ExecInput {
 public:
  RecordingInput(std::mutex* mu, std::vector<std::string>* into) : mu_(mu), into_(into) {}
  Status Send(const engine::ExecInputMessage& m, std::chrono::milliseconds) override {
    std::lock_guard lock(*mu_);
    switch (m.kind) {
      case engine::ExecInputMessage::Kind::kStdin:
        into_->push_back("stdin:" + m.data);
        break;
      case engine::ExecInputMessage::Kind::kEof:
        into_->push_back("eof");
        break;
      case engine::ExecInputMessage::Kind::kResize:
        into_->push_back("resize:" + std::to_string(m.rows) + "x" + std::to_string(m.cols));
        break;
    }
    return {};
  }

 private:
  std::mutex* mu_;
  std::vector<std::string>* into_;
};

}  // namespace

std::vector<std::string> FakeRuntime::Calls() {
  std::lock_guard lock(mu_);
  return calls_;
}

FakeRuntime::Sandbox FakeRuntime::Get(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(id);
  return it == sandboxes_.end() ? Sandbox{} : it->second;
}

void FakeRuntime::Die(const std::string& id) {
  std::lock_guard lock(mu_);
  sandboxes_[id].running = false;
}

void FakeRuntime::HoldOrphan(const std::string& id) {
  std::lock_guard lock(mu_);
  orphans_.insert(id);
}

void FakeRuntime::SetUsage(const std::string& id, const engine::CgroupStats& usage) {
  std::lock_guard lock(mu_);
  sandboxes_[id].usage = usage;
}

void FakeRuntime::SetExitCode(int code) {
  std::lock_guard lock(mu_);
  exit_code_ = code;
}

void FakeRuntime::HoldTerminals() {
  std::lock_guard lock(mu_);
  hold_terminals_ = true;
}

std::vector<std::string> FakeRuntime::TerminalInput() {
  std::lock_guard lock(mu_);
  return terminal_input_;
}

Status FakeRuntime::Start(const engine::StartRequest& request, engine::StartedSandbox* out) {
  std::error_code ec;
  std::filesystem::create_directories(Root(request.id), ec);
  if (ec) return Error::Msg("fake runtime: make " + Root(request.id) + ": " + ec.message());
  std::lock_guard lock(mu_);
  Sandbox& sb = sandboxes_[request.id];
  sb.record = "fake-" + std::to_string(++next_);
  sb.running = true;
  sb.background = request.background;
  sb.config = request.config;
  calls_.push_back("start " + request.id);
  out->handle = {request.id, sb.record};
  out->uid_base = 0;
  return {};
}

bool FakeRuntime::RunningLocked(const engine::RuntimeHandle& handle) const {
  auto it = sandboxes_.find(handle.id);
  return it != sandboxes_.end() && it->second.running && it->second.record == handle.record;
}

bool FakeRuntime::Running(const engine::RuntimeHandle& handle) const {
  std::lock_guard lock(mu_);
  return RunningLocked(handle);
}

Status FakeRuntime::Kill(const engine::RuntimeHandle& handle, const std::function<void()>& on_killed, bool* oom) {
  bool was_running;
  {
    std::lock_guard lock(mu_);
    calls_.push_back("kill " + handle.id);
    was_running = RunningLocked(handle);
    auto it = sandboxes_.find(handle.id);
    if (it != sandboxes_.end()) {
      *oom = it->second.usage.oom_kills > 0;
      sandboxes_.erase(it);
    }
  }
  if (was_running && on_killed) on_killed();
  return {};
}

Status FakeRuntime::Release(const std::string& id) {
  std::lock_guard lock(mu_);
  calls_.push_back("release " + id);
  sandboxes_.erase(id);
  orphans_.erase(id);
  return {};
}

std::vector<std::string> FakeRuntime::Held() const {
  std::lock_guard lock(mu_);
  std::set<std::string> ids = orphans_;
  for (const auto& [id, sb] : sandboxes_) ids.insert(id);
  return {ids.begin(), ids.end()};
}

Result<engine::ExecOutcome> FakeRuntime::Exec(const engine::RuntimeHandle& handle, const engine::ExecSpec& spec,
                                              const engine::ExecSink& sink, const engine::ExecInputReady& on_input) {
  engine::ExecOutcome out;
  {
    std::lock_guard lock(mu_);
    calls_.push_back("exec " + handle.id + " " + (spec.argv.empty() ? "" : spec.argv[0]));
    if (!RunningLocked(handle)) return Error::Of(Code::kNotFound, "fake runtime: no sandbox " + handle.id);
    out.exit_code = exit_code_;
  }
  if (spec.tty && on_input) on_input(std::make_shared<RecordingInput>(&mu_, &terminal_input_));
  bool hold = false;
  {
    std::lock_guard lock(mu_);
    hold = hold_terminals_ && spec.tty;
  }
  while (hold && spec.cancelled) {
    if (spec.cancelled()) return Error::Of(Code::kUnavailable, "the caller went away or cancelled the call");
    if (sink) sink(1, "tick\n");  // a command that prints all the time
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  out.stdout_data = "ran " + (spec.argv.empty() ? std::string() : spec.argv[0]) + "\n";
  if (sink) sink(1, out.stdout_data);
  return out;
}

Result<Fd> FakeRuntime::OpenRoot(const engine::RuntimeHandle& handle) {
  if (!Running(handle)) return Error::Of(Code::kConflict, "the sandbox is not running");
  Fd root(::open(Root(handle.id).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return Error::Sys("open " + Root(handle.id));
  return root;
}

Result<Fd> FakeRuntime::OpenNetwork(const engine::RuntimeHandle& handle) {
  if (!Running(handle)) return Error::Of(Code::kConflict, "the sandbox is not running");
  Fd netns(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!netns.valid()) return Error::Sys("open /proc/self/ns/net");
  return netns;
}

Result<engine::CgroupStats> FakeRuntime::Usage(const engine::RuntimeHandle& handle) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(handle.id);
  if (it == sandboxes_.end()) return Error::Of(Code::kNotFound, "fake runtime: no sandbox " + handle.id);
  return it->second.usage;
}

Status FakeRuntime::Fit(const engine::RuntimeHandle& handle, const engine::Refit& fit) {
  std::lock_guard lock(mu_);
  if (!RunningLocked(handle)) return Error::Of(Code::kConflict, "the sandbox is not running");
  sandboxes_[handle.id].fits.push_back(fit);
  return {};
}

}  // namespace isb::daemon
