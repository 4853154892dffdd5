// The fixture of the boundary suite: runs `isb run` as a real subprocess, parses its JSON, and after every test
// asserts that nothing was left behind (processes, cgroups, leases, mounts, the per-test temp dir).
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#ifndef ISB_BINARY
#error "ISB_BINARY must be defined (path of the built isb)"
#endif
#ifndef ESCAPE_HELPER
#error "ESCAPE_HELPER must be defined (path of the built escape_helper)"
#endif

namespace isb::escape {

using namespace std::chrono_literals;

// What one `isb ...` invocation did, seen from outside.
struct IsbOutcome {
  int exit_status = -1;            // isb's own exit status; -1 if it ended by a signal
  int term_signal = 0;             // the signal that ended isb itself, if any
  bool killed_by_fixture = false;  // it outlived the fixture's deadline and was SIGKILLed
  std::string out;                 // isb's stdout (with --json: the one JSON line)
  std::string err;                 // isb's stderr
  nlohmann::json json;             // `out` parsed, when it is exactly one JSON object on one line; else null

  bool has_json() const { return json.is_object(); }
  // Fields of the JSON result (the test fails, rather than throws, when one is missing).
  int exit_code() const;
  int signal() const;
  bool flag(const char* name) const;
  double number(const char* name) const;
  std::string text(const char* name) const;  // "stdout", "stderr", "exec_error"
  // For assertion messages: everything about the run except the captured streams' bulk.
  std::string Describe() const;
};

// An `isb` process started by the fixture and not yet waited for.
class IsbProcess {
 public:
  IsbProcess(pid_t pid, int out_fd, int err_fd) : pid_(pid), out_fd_(out_fd), err_fd_(err_fd) {}
  IsbProcess(const IsbProcess&) = delete;
  IsbProcess& operator=(const IsbProcess&) = delete;
  ~IsbProcess();

  pid_t pid() const { return pid_; }
  bool done() const { return done_; }
  // Collects output until isb exits. Past `deadline` isb is SIGKILLed and the outcome says so.
  IsbOutcome Wait(std::chrono::milliseconds deadline = 30s);
  // Asks isb to stop (SIGTERM, which it forwards into the sandbox), then SIGKILL after `grace`; reaps it.
  void Stop(std::chrono::milliseconds grace = 5s);

 private:
  pid_t pid_;
  int out_fd_, err_fd_;
  bool done_ = false;
  IsbOutcome outcome_;
};

class EscapeTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Runs `isb run [options] --json --runtime-dir <per-test> -- cmd...` to completion.
  IsbOutcome Run(const std::vector<std::string>& options, const std::vector<std::string>& cmd,
                 std::chrono::milliseconds deadline = 30s);
  // Starts it without waiting; the fixture stops and reaps whatever the test did not wait for.
  IsbProcess* Start(const std::vector<std::string>& options, const std::vector<std::string>& cmd);
  // Runs `isb ARGS...` verbatim (no --json, no runtime dir added), for testing the CLI itself.
  IsbOutcome RunIsbVerbatim(const std::vector<std::string>& args, std::chrono::milliseconds deadline = 30s);

  // The helper inside the sandbox: bound read-only at /opt/escape, tagged with this test's marker.
  static constexpr const char* kHelperPath = "/opt/escape";
  std::vector<std::string> HelperBind() const { return {"--bind", std::string(ESCAPE_HELPER) + ":" + kHelperPath}; }
  std::vector<std::string> Helper(const std::vector<std::string>& args) const;
  // Run(options + HelperBind(), Helper(args)).
  IsbOutcome RunHelper(const std::vector<std::string>& options, const std::vector<std::string>& args,
                       std::chrono::milliseconds deadline = 30s);
  // RunHelper with no options, asserting isb and the helper exited 0; returns the helper's stdout.
  std::string Attack(const std::vector<std::string>& args, const std::vector<std::string>& options = {});

  // A process on the host (not in a sandbox), stdio on /dev/null; killed and reaped in TearDown if still alive.
  pid_t StartHostProcess(const std::string& path, const std::vector<std::string>& argv);
  void KillHostProcess(pid_t pid);

  // This test's unique marker: in the command line of every process the test starts (host or sandbox).
  const std::string& marker() const { return marker_; }
  // The per-test host temp dir (mode 0711, so the sandbox's unprivileged host uid can traverse it).
  const std::string& temp_dir() const { return temp_dir_; }
  const std::string& runtime_dir() const { return runtime_dir_; }
  // Extra environment for the isb processes this test starts (on top of the test's own).
  void AddIsbEnvironment(const std::string& kv) { extra_env_.push_back(kv); }

 private:
  IsbOutcome Exec(const std::vector<std::string>& argv, std::chrono::milliseconds deadline);
  IsbProcess* Spawn(const std::vector<std::string>& argv);
  std::vector<std::string> RunArgv(const std::vector<std::string>& options, const std::vector<std::string>& cmd) const;
  void CheckNothingLeaked();

  bool ready_ = false;
  std::string marker_, temp_dir_, runtime_dir_;
  std::vector<std::string> extra_env_;
  std::vector<std::unique_ptr<IsbProcess>> started_;
  std::vector<pid_t> host_processes_;
  // Before the test: sandbox cgroup dirs that already existed, and the host's mount count.
  std::map<std::string, std::set<std::string>> cgroups_before_;
  std::set<std::string> leases_before_;  // entries of the host's lease directory (/run/isb/ids)
  size_t mounts_before_ = 0;
};

// ---- host-side utilities --------------------------------------------------------------------------------------

// Host processes (other than this one) whose command line, NULs read as spaces, contains `needle`.
std::vector<std::pair<pid_t, std::string>> HostProcessesMatching(const std::string& needle);
std::string ReadHostFile(const std::string& path, bool* ok = nullptr);
std::string HostHostname();
std::string RandomHex(size_t bytes);
std::string ToHex(const std::string& s);
// The directories under which isb makes its per-sandbox cgroups on this host (those that exist).
std::vector<std::string> IsbCgroupParents();

}  // namespace isb::escape
