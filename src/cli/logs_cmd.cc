// `isb logs`: reads a sandbox's log from a cursor, stdout chunks to stdout and stderr chunks to stderr; with -f,
// polls for more until the sandbox is gone or Ctrl-C.
#include "cli/logs_cmd.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>
#include <vector>

#include "base/units.h"
#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

constexpr std::chrono::milliseconds kPollEvery{200};

struct LogsFlags {
  std::string sandbox{};
  std::string tail{};  // bytes, e.g. 4096 or 4K; empty: all that is kept
  bool follow = false;
};

std::atomic<bool> interrupted{false};

void OnInterrupt(int) { interrupted = true; }

// Ctrl-C ends a follow as its way out, not as a failure; calls under way are restarted, not broken.
void CatchInterrupt() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
}

// Writes one answer's chunks; returns its `next`.
Result<uint64_t> Show(const json& r) {
  if (!r.contains("next") || !r["next"].is_number_unsigned() || !r.contains("chunks") || !r["chunks"].is_array())
    return Error::Of(Code::kInternal, "the isb daemon's sandbox_logs answer has no next or chunks: " + r.dump());
  if (const uint64_t dropped = r.value("dropped", uint64_t{0}); dropped > 0)
    std::fprintf(stderr, "isb: %llu bytes of older output were dropped\n", static_cast<unsigned long long>(dropped));
  for (const json& c : r["chunks"]) {
    const std::string stream = c.value("stream", "");
    if (stream == "exit") {
      WriteOut(stderr, ExitLine(c));
      continue;
    }
    ISB_ASSIGN_OR_RETURN(std::string data, Base64Decode(c.value("data_base64", "")));
    WriteOut(stream == "stderr" ? stderr : stdout, data);
  }
  return r["next"].get<uint64_t>();
}

// Where `--tail` starts: at the first of the last `bytes` output bytes the log keeps (exits are no bytes: one that
// comes later is told, one before is not); 0, the start, when it keeps no more than that. The kept log (at most
// 1 MiB of output) is read for it.
Result<uint64_t> TailStart(const ToolClient& client, const std::string& sandbox, uint64_t bytes) {
  std::vector<std::pair<uint64_t, uint64_t>> outputs;  // each output chunk's cursor and size, oldest first
  uint64_t after = 0, end = 0;
  for (bool first = true; first || after < end; first = false) {
    ISB_ASSIGN_OR_RETURN(json r, client.Call("sandbox_logs",
                                             {{"sandbox", sandbox}, {"after", after}, {"encoding", "base64"}}));
    if (!r.contains("next") || !r["next"].is_number_unsigned() || !r.contains("chunks") || !r["chunks"].is_array())
      return Error::Of(Code::kInternal, "the isb daemon's sandbox_logs answer has no next or chunks: " + r.dump());
    if (first) end = r.value("end", uint64_t{0});
    for (const json& c : r["chunks"]) {
      if (c.value("stream", "") == "exit") continue;
      ISB_ASSIGN_OR_RETURN(std::string data, Base64Decode(c.value("data_base64", "")));
      outputs.emplace_back(c.value("cursor", uint64_t{0}), data.size());
    }
    const uint64_t next = r["next"].get<uint64_t>();
    if (next == after) break;  // no further: never ask again for the same
    after = next;
  }
  if (bytes == 0) return end;
  for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) {
    if (it->second >= bytes) return it->first + it->second - bytes;
    bytes -= it->second;
  }
  return 0;
}

int RunLogs(const ConnectFlags& connect, const LogsFlags& f) {
  Result<uint64_t> tail = f.tail.empty() ? Result<uint64_t>(uint64_t{0}) : ParseSize(f.tail);
  if (!tail.ok()) return ReportUsage(Error::Of(Code::kInvalidArgument, "--tail: " + tail.error().message));
  Result<ToolClient> client = Connect(connect);
  if (!client.ok()) return ReportUsage(client.error());
  uint64_t after = 0;
  if (!f.tail.empty()) {
    Result<uint64_t> start = TailStart(*client, f.sandbox, *tail);
    if (!start.ok()) return Report(start.error());
    after = *start;
  }
  if (f.follow) CatchInterrupt();
  bool found = false;  // once it was there, a sandbox not found is one removed while followed
  uint64_t stop_at = 0;
  while (!interrupted) {
    Result<json> r = client->Call("sandbox_logs", {{"sandbox", f.sandbox}, {"after", after}, {"encoding", "base64"}});
    // Followed to its end: the sandbox was removed.
    if (!r.ok() && f.follow && found && r.error().code == Code::kNotFound) return kExitOk;
    if (!r.ok()) return Report(r.error());
    // Without -f, what the log held at the first read is printed, not what a busy command writes meanwhile.
    if (!found) stop_at = r->value("end", uint64_t{0});
    found = true;
    Result<uint64_t> next = Show(*r);
    if (!next.ok()) return Report(next.error());
    const bool caught_up = *next == after;
    after = *next;
    if (!f.follow && (caught_up || after >= stop_at)) return kExitOk;
    if (!caught_up) continue;
    std::this_thread::sleep_for(kPollEvery);
  }
  return kExitOk;
}

}  // namespace

std::string ExitLine(const json& c) {
  const std::string who = "isb: detached command " + std::to_string(c.value("log_id", 0));
  const int code = c.value("exit_code", -1), signal = c.value("signal", 0);
  if (const std::string error = c.value("error", ""); !error.empty()) return who + " ended: " + error + "\n";
  if (c.value("timed_out", false))
    return who + " timed out and was killed (exit code " + std::to_string(code) + ")\n";
  if (signal != 0)
    return who + " was killed by signal " + std::to_string(signal) + " (exit code " + std::to_string(code) + ")\n";
  return who + " exited with code " + std::to_string(code) + "\n";
}

void AddLogsCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<LogsFlags>();
  auto connect = SharedConnectFlags();
  auto* cmd = app.add_subcommand("logs",
                                 "Print the output of a sandbox's detached commands (isb exec -d): stdout to "
                                 "stdout, stderr and their exits to stderr");
  cmd->add_option("sandbox", flags->sandbox, "The sandbox's id or name")->required();
  cmd->add_option("--tail", flags->tail,
                  "Only the last BYTES of output, with the exits that follow them, e.g. 4096 or 64K (default: all "
                  "that is kept)");
  cmd->add_flag("-f,--follow", flags->follow,
                "Keep printing output as it comes, until the sandbox is removed or Ctrl-C");
  AddConnectOptions(cmd, connect);
  cmd->callback([flags, connect, exit_code] { *exit_code = RunLogs(*connect, *flags); });
}

}  // namespace isb::cli
