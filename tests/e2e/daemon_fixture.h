// The e2e fixture: a real `isb serve` on a fresh temp state dir and a free port, clients that are real programs
// (curl, node, the isb CLI), and after every test the proof that nothing was left behind.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "e2e/all_tools.h"
#include "e2e/audit_ledger.h"
#include "e2e/http_client.h"

#ifndef ISB_BINARY
#error "ISB_BINARY must be defined (path of the built isb)"
#endif
#ifndef ISB_E2E_NODE_DIR
#error "ISB_E2E_NODE_DIR must be defined (where the MCP SDK is installed and mcp_client.mjs is copied)"
#endif

namespace isb::e2e {

// The nftables table and veth prefix of the suite's daemons.
inline constexpr const char* kEgressTable = "isbe2e";

// What a finished child process did.
struct ProcResult {
  int exit_status = -1;  // -1: it did not exit normally
  int term_signal = 0;
  bool killed_at_deadline = false;
  std::string out, err;
  std::string Describe() const;
};

// Runs `argv` (argv[0] a path or a name looked up in PATH) without a shell; `stdin_data` is fed to its stdin.
// Past `deadline` it is SIGKILLed. `extra_env`: "K=V" sets K in its environment, a bare "K" removes K.
ProcResult RunProcess(const std::vector<std::string>& argv, const std::string& stdin_data = "",
                      std::chrono::milliseconds deadline = 60s, const std::vector<std::string>& extra_env = {});

// The full path of `name` in PATH, or "" when absent.
std::string FindProgram(const std::string& name);

// Host processes other than this one whose command line (NULs read as spaces) contains `needle`.
std::vector<std::pair<pid_t, std::string>> ProcessesMatching(const std::string& needle);
// The pid of the sandbox's init on the host (cmdline "isb-init", cgroup path naming `id`), or 0.
pid_t SandboxInitPid(const std::string& id);
bool ProcessAlive(pid_t pid);
std::string ReadFileOrEmpty(const std::string& path);
std::string Base64(const std::string& bytes);
std::string RandomHex(size_t bytes);

// A response from curl: its exit status and the HTTP response it printed (-D - then the body).
struct CurlResult {
  ProcResult proc;
  HttpResponse http;
  std::string Describe() const;
};

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // ---- the daemon ----
  // Starts `isb serve --listen 127.0.0.1:0 --state-dir <state> [extra...]`, parses its port from stderr and waits
  // for /healthz. A test may restart it any number of times; the state dir stays.
  void StartDaemon(const std::vector<std::string>& extra_args = {});
  // SIGTERM; returns its exit status (-1 if it had to be SIGKILLed after 10 s).
  int StopDaemon();
  // SIGKILL, as a crash would.
  void KillDaemon();
  // Counts every sandbox with a state dir (the daemon's pool included) as this test's, for the leak check: what
  // the daemon launched ahead and still held when it stopped must be gone too, whatever else runs on the host.
  void TrackStateDir();
  bool daemon_running() const { return daemon_pid_ > 0; }
  // The extra arguments the daemon was last started with.
  const std::vector<std::string>& daemon_args() const { return daemon_args_; }
  pid_t daemon_pid() const { return daemon_pid_; }
  // Everything the daemon has written to stderr since it was last started.
  std::string DaemonLog() const;

  Endpoint unix_endpoint() const { return Endpoint{socket_path_, 0}; }
  Endpoint tcp_endpoint() const { return Endpoint{"", port_}; }
  const std::string& socket_path() const { return socket_path_; }
  const std::string& state_dir() const { return state_dir_; }
  const std::string& temp_dir() const { return temp_dir_; }
  uint16_t port() const { return port_; }
  const std::string& token() const { return token_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // ---- clients ----
  // Every tool call made through these helpers is logged with the audit row it must leave (see ExpectAudit).
  // One request with the raw client (http_client.h), on a fresh connection.
  HttpResponse Request(const Endpoint& ep, const std::string& method, const std::string& target,
                       const std::string& body = "", const std::vector<std::string>& headers = {},
                       std::chrono::milliseconds timeout = 60s);
  // POST /api/v1/tools/<tool> over the unix socket with the raw client (set-up steps; tests of a surface use curl).
  // `headers`: extra header lines (an org: "X-Isb-Org: acme").
  HttpResponse Tool(const std::string& tool, const json& input, const std::vector<std::string>& headers = {},
                    std::chrono::milliseconds timeout = 60s);
  // The result of a tool call that must succeed (the test fails otherwise; returns null then).
  json MustTool(const std::string& tool, const json& input);
  // sandbox_create that must succeed; returns the id.
  std::string CreateSandbox(const json& spec = json::object());
  json Exec(const std::string& sandbox, const std::vector<std::string>& argv, const json& extra = json::object());

  // curl over the unix socket, or over TCP with `bearer` (empty: no Authorization header).
  CurlResult CurlUnix(const std::string& method, const std::string& path, const std::string& body = "",
                      const std::vector<std::string>& headers = {}, const std::vector<std::string>& curl_args = {});
  CurlResult CurlTcp(const std::string& method, const std::string& path, const std::string& body = "",
                     const std::vector<std::string>& headers = {}, const std::string& bearer = "<token>",
                     const std::vector<std::string>& curl_args = {});

  // An isb CLI invocation, talking to this daemon's socket.
  ProcResult Isb(const std::vector<std::string>& args, const std::string& stdin_data = "");

  // ---- the audit log ----
  // After the test, before its state dir goes, the audit log must hold exactly the rows of the calls the test made
  // (every call but a read-only one that succeeded), each with its action, surface, outcome, actor_kind and org, in
  // the order made, and `isb audit verify` must find the chain whole. The helpers above log their calls; a test
  // declares here the calls that its other clients made (the isb CLI, node, a raw connection), in the order made.
  // The calls of one declaration may have overlapped. `where` names them in a failure.
  void ExpectAudit(const std::string& where, std::vector<ExpectedRow> calls);
  // The row a call over the unix socket leaves: the host's superadmin in the default org.
  static ExpectedRow Unix(const std::string& action, const std::string& outcome = "ok");
  // ... over TCP with a token (rest or mcp).
  static ExpectedRow ByToken(const std::string& surface, const std::string& action, const std::string& outcome = "ok");
  // A test that edits the audit log on purpose: the check is skipped.
  void SkipAuditCheck() { audit_check_ = false; }

  // Ids the test saw; the leak check holds the test to each of them.
  void Track(const std::string& id);
  void TrackFrom(const json& j);

 private:
  CurlResult Curl(std::vector<std::string> args, const std::string& method, const std::string& url,
                  const std::string& body, const std::vector<std::string>& headers);
  // Logs a tool call that got `answer`: the row it must leave, if any.
  void LogRestCall(const std::string& tool, const std::string& surface, const std::string& actor_kind,
                   const std::string& org, const std::string& request_id, const HttpResponse& answer, uint64_t started,
                   const std::string& where);
  // Before a request to `target` (path and query): a REST tool call gets a request id of the fixture's unless the
  // test sent one; returns it ("" when the call is matched by its order).
  std::string LabelCall(const std::string& method, const std::string& target, std::vector<std::string>* headers,
                        uint64_t started);
  // After it: logs the tool call, sign-in or refused credential it made, if any.
  void LogCall(bool via_unix, const std::string& method, const std::string& target,
               const std::vector<std::string>& headers, const std::string& body, const HttpResponse& answer,
               uint64_t started, const std::string& request_id);
  void CheckReadOnlyTools();
  void CheckAuditLog();
  void RemoveAllSandboxes();
  void CheckNothingLeaked();
  bool ForeignIsbRunning() const;

  bool ready_ = false;
  std::string temp_dir_, state_dir_, socket_path_, token_, log_path_;
  std::vector<std::string> daemon_args_;
  pid_t daemon_pid_ = 0;
  uint16_t port_ = 0;
  int daemon_starts_ = 0;
  std::mutex mu_;
  AuditLedger audit_;
  bool audit_check_ = true;
  std::set<std::string> ids_;
  int body_files_ = 0;
  // Before the test: sb-* cgroup dirs per controller, uid-range leases, the host's mount count.
  std::map<std::string, std::set<std::string>> cgroups_before_;
  std::set<std::string> leases_before_;
  size_t mounts_before_ = 0;
};

}  // namespace isb::e2e
