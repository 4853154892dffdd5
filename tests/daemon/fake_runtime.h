// A runtime that runs nothing: its sandboxes are entries in a table and their roots directories of the test's, so
// the daemon's own rules (the pool's choice, adoption, file access) are tested without a real engine.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/runtime.h"

namespace isb::daemon {

class FakeRuntime : public engine::Runtime {
 public:
  // Each sandbox's root is <roots_dir>/<id>, made at its start and kept for the test to fill.
  explicit FakeRuntime(std::string roots_dir) : roots_dir_(std::move(roots_dir)) {}

  struct Sandbox {
    std::string record;
    bool running = false;
    bool background = false;  // started for the pool
    engine::SandboxConfig config;
    std::vector<engine::Refit> fits;
    engine::CgroupStats usage;
  };

  // What the daemon asked, in order: "start sb-…", "kill sb-…", "release sb-…", "exec sb-… ARGV0".
  std::vector<std::string> Calls();
  // A copy of the table's entry for `id` (an empty one when there is none).
  Sandbox Get(const std::string& id);
  // As if the sandbox's processes had exited on their own.
  void Die(const std::string& id);
  // Something the runtime holds for `id` with no sandbox of the daemon's (an orphan).
  void HoldOrphan(const std::string& id);
  void SetUsage(const std::string& id, const engine::CgroupStats& usage);
  // The exit code of the next execs (0 unless set).
  void SetExitCode(int code);
  // From now on a terminal exec runs until its `cancelled` says so (asked every 10 ms), printing "tick\n" to its
  // sink each time, then returns the real runtime's kUnavailable, as a busy shell nobody exits does.
  void HoldTerminals();
  std::string Root(const std::string& id) const { return roots_dir_ + "/" + id; }

  std::string_view Name() const override { return "fake"; }
  Status Start(const engine::StartRequest& request, engine::StartedSandbox* out) override;
  bool Running(const engine::RuntimeHandle& handle) const override;
  Status Kill(const engine::RuntimeHandle& handle, const std::function<void()>& on_killed, bool* oom) override;
  Status Release(const std::string& id) override;
  std::vector<std::string> Held() const override;
  void Sweep() override {}
  // Writes "ran ARGV0" to stdout; with a terminal, hands over an input that records what it was sent.
  Result<engine::ExecOutcome> Exec(const engine::RuntimeHandle& handle, const engine::ExecSpec& spec,
                                   const engine::ExecSink& sink, const engine::ExecInputReady& on_input) override;
  Result<Fd> OpenRoot(const engine::RuntimeHandle& handle) override;
  // The test's own network namespace (its sandboxes share the test's network, as their roots are its directories).
  Result<Fd> OpenNetwork(const engine::RuntimeHandle& handle) override;
  Result<engine::CgroupStats> Usage(const engine::RuntimeHandle& handle) override;
  Status Fit(const engine::RuntimeHandle& handle, const engine::Refit& fit) override;
  engine::HostProcess Process(const engine::RuntimeHandle&) const override { return {}; }

  // What terminal sessions were sent, as "stdin:DATA", "eof", "resize:ROWSxCOLS".
  std::vector<std::string> TerminalInput();

 private:
  bool RunningLocked(const engine::RuntimeHandle& handle) const;

  const std::string roots_dir_;
  mutable std::mutex mu_;
  std::map<std::string, Sandbox> sandboxes_;
  std::set<std::string> orphans_;
  std::vector<std::string> calls_;
  std::vector<std::string> terminal_input_;
  int next_ = 0;
  int exit_code_ = 0;
  bool hold_terminals_ = false;
};

}  // namespace isb::daemon
