// The sandbox commands' logic apart from CLI11: flags -> tool input, daemon answers -> output and exit codes.
// Declared here so that tests can drive it without a daemon.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/base64.h"
#include "base/result.h"
#include "cli/client.h"
#include "spec/exec_request.h"
#include "spec/sandbox_spec.h"

#include <memory>

#include <CLI/CLI.hpp>

namespace isb::cli {

using nlohmann::json;

constexpr int kExitOk = 0;
constexpr int kExitRefused = 1;      // the daemon said no (a 4xx): bad input, unknown sandbox, conflict, no access
constexpr int kExitUsage = 2;        // the command line itself is wrong
constexpr int kExitIsbFailed = 125;  // isb could not do its part: daemon unreachable, 5xx, malformed answer

constexpr const char* kDefaultSocket = "/var/lib/isb/api/isb.sock";
using spec::kMaxExecTimeoutS;                    // sandbox_exec's longest timeout
using spec::kMaxStdinBytes;                      // sandbox_exec's stdin limit
constexpr size_t kMaxFileWriteBytes = 2u << 20;  // sandbox_file_write's content limit

// Where to find the daemon: --url over --socket over ISB_URL over ISB_SOCKET over the default socket.
// REQUIRES: env values may be null (unset).
struct ConnectFlags {
  std::string url{};
  std::string socket{};
  std::string org{};  // --org, else ISB_ORG; empty: the daemon's default org
};
Result<Endpoint> ChooseEndpoint(const ConnectFlags& flags, const char* env_url, const char* env_socket);
// The one ConnectFlags of this process: every command binds its --url, --socket and --org to it, and so does the
// top level, so `isb --org acme invitation create ...` acts in acme whichever command follows.
std::shared_ptr<ConnectFlags> SharedConnectFlags();

// 1 for refusals (a 4xx-class error), 125 for everything that is isb's own failure.
int ExitCodeFor(const Error& error);
// A mistake on the command line (exit code 2 through ReportUsage).
Error Usage(std::string message);
// `j` as text (bytes that are not UTF-8 replaced), indented by `indent` (-1: one line).
std::string Dump(const json& j, int indent = 2);

// An error answer ({"error": CODE, "message": ...}) as an Error whose code follows the HTTP status.
Error DaemonError(int http_status, std::string_view body);

struct CreateFlags {
  std::string name, image, cpus, memory, disk, pids, workdir, user, expires, idle_timeout;
  std::vector<std::string> env, labels;  // K=V each
  std::vector<std::string> mounts;       // SRC[:DST][:ro|:rw] each
  std::vector<std::string> publish;      // [ADDR:]HOSTPORT:PORT each
  std::vector<std::string> egress;       // "none", "open", or host[:port] entries (repeatable, or comma-separated)
  std::vector<std::string> idmap;        // KIND:HOST:SANDBOX[:COUNT] each
  std::vector<std::string> secrets;      // NAME or NAME=ENV each: the org secret as a placeholder in ENV
  bool privileged = false;
};
Result<json> CreateInput(const CreateFlags& flags);
// Host entries as --egress and `isb egress set` take them (repeatable, or comma-separated): a JSON list of strings.
// A URL or a comma typed for a dot is refused, naming `flag`.
Result<json> EgressEntries(const std::string& flag, const std::vector<std::string>& values);

struct ExecFlags {
  std::string sandbox;
  std::vector<std::string> command;
  std::vector<std::string> env;
  std::string workdir, timeout;
  bool interactive = false, tty = false, json = false;
  bool detach = false;  // -d: started, its output to the sandbox's log (isb logs)
};
// `stdin_data` is sent only with -i and without -t (a terminal's input goes to its session instead).
Result<json> ExecInput(const ExecFlags& flags, const std::string& stdin_data);

Result<json> ExtendInput(const std::string& sandbox, const std::string& duration);

// One side of `isb cp`: a sandbox path (sandbox non-empty), a local path, or "-" (stdin/stdout).
struct CpSide {
  std::string sandbox;
  std::string path;
  bool remote() const { return !sandbox.empty(); }
};
struct CpPlan {
  CpSide src, dst;
};
Result<CpPlan> ParseCpArgs(const std::string& src, const std::string& dst);

// "K=V" -> {K, V}; `flag` names the option in the error.
Result<std::pair<std::string, std::string>> ParseKeyValue(const std::string& flag, const std::string& text);
// Whole seconds from "30s", "5m", "2h"...; `flag` names the option in the error.
Result<int64_t> ParseSeconds(const std::string& flag, const std::string& text);

// `isb ls`'s table of a sandbox_list result, given the time now (unix seconds).
std::string ListTable(const json& result, int64_t now);
// 45 -> "45s", 300 -> "5m", 7200 -> "2h", 7260 -> "2h1m", 3 days and 5 hours -> "3d5h".
std::string ShortDuration(int64_t seconds);
// 536870912 -> "512M", 1536 -> "1.5K".
std::string ShortBytes(uint64_t bytes);

// Calls tools over an HttpClient, adding the bearer token on TCP.
class ToolClient {
 public:
  ToolClient(HttpClient http, std::string token, std::string org = "")
      : http_(std::move(http)), token_(std::move(token)), org_(std::move(org)) {}

  // The tool's result, or the daemon's error.
  Result<json> Call(const std::string& tool, const json& input) const;
  // Streams output (`on_output("stdout"|"stderr", text)`) as it is produced, then returns the final result. A
  // terminal exec's session id comes first as on_output("session", id).
  Result<json> CallStreaming(const std::string& tool, const json& input,
                             const std::function<void(const std::string&, const std::string&)>& on_output) const;
  // A GET of `target` (the bearer token and org added as for a call) whose text/event-stream answer is read as it
  // comes; `extra` headers besides.
  Result<HttpResponse> Follow(const std::string& target, const Headers& extra, const SseHandler& on_event) const;
  const Endpoint& endpoint() const { return http_.endpoint(); }

 private:
  HttpRequest Request(const std::string& tool, const json& input, bool stream) const;

  HttpClient http_;
  std::string token_;
  std::string org_;
};

// A client for `flags` (ISB_TOKEN, ISB_ORG); fails only on unusable --url/--socket/environment (a usage error).
Result<ToolClient> Connect(const ConnectFlags& flags);
// Prints "isb: MESSAGE" on stderr; returns ExitCodeFor(e), or kExitUsage for ReportUsage.
int Report(const Error& e);
int ReportUsage(const Error& e);
// Indented JSON and a newline on stdout.
void Print(const json& j);
// `data` as it is, flushed.
void WriteOut(FILE* f, std::string_view data);
// The connection options every command takes: --url, --socket, --org.
void AddConnectOptions(CLI::App* cmd, const std::shared_ptr<ConnectFlags>& connect);

}  // namespace isb::cli
