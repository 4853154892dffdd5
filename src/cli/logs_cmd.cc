// `isb logs`: reads a sandbox's log from a cursor, stdout chunks to stdout and stderr chunks to stderr; with -f,
// polls for more until the sandbox is gone or Ctrl-C.
#include "cli/logs_cmd.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/units.h"
#include "base/utf8.h"
#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

constexpr std::chrono::milliseconds kPollEvery{200};

struct LogsFlags {
  std::string sandbox{};
  std::string tail{};  // bytes, e.g. 4096 or 4K; empty: all that is kept
  bool follow = false;
  bool raw = false;  // bytes as they are, even to a terminal
};

// Where one stream's output goes: as it is, or through TerminalText.
struct OutputTo {
  FILE* file = nullptr;
  bool escape = false;
  TerminalText text{};

  void Write(std::string_view data) { WriteOut(file, escape ? text.Next(data) : std::string(data)); }
  void End() {
    if (escape) WriteOut(file, text.Rest());
  }
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
Result<uint64_t> Show(const json& r, OutputTo& out, OutputTo& err) {
  if (!r.contains("next") || !r["next"].is_number_unsigned() || !r.contains("chunks") || !r["chunks"].is_array())
    return Error::Of(Code::kInternal, "the isb daemon's sandbox_logs answer has no next or chunks: " + r.dump());
  if (const uint64_t dropped = r.value("dropped", uint64_t{0}); dropped > 0)
    std::fprintf(stderr, "isb: %llu bytes of older output were dropped\n", static_cast<unsigned long long>(dropped));
  for (const json& c : r["chunks"]) {
    const std::string stream = c.value("stream", "");
    if (stream == "exit") {
      err.Write(ExitLine(c));  // its error may quote the sandbox
      continue;
    }
    ISB_ASSIGN_OR_RETURN(std::string data, Base64Decode(c.value("data_base64", "")));
    (stream == "stderr" ? err : out).Write(data);
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
    ISB_ASSIGN_OR_RETURN(json r,
                         client.Call("sandbox_logs", {{"sandbox", sandbox}, {"after", after}, {"encoding", "base64"}}));
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

// Reads the log from `after` and writes it out: what it held at the first read, or with -f on until the sandbox is
// removed or Ctrl-C. Returns the exit code.
int FollowLog(const ToolClient& client, const LogsFlags& f, uint64_t after, OutputTo& out, OutputTo& err) {
  bool found = false;  // once it was there, a sandbox not found is one removed while followed
  uint64_t stop_at = 0;
  while (!interrupted) {
    Result<json> r = client.Call("sandbox_logs", {{"sandbox", f.sandbox}, {"after", after}, {"encoding", "base64"}});
    // Followed to its end: the sandbox was removed.
    if (!r.ok() && f.follow && found && r.error().code == Code::kNotFound) return kExitOk;
    if (!r.ok()) return Report(r.error());
    // Without -f, what the log held at the first read is printed, not what a busy command writes meanwhile.
    if (!found) stop_at = r->value("end", uint64_t{0});
    found = true;
    Result<uint64_t> next = Show(*r, out, err);
    if (!next.ok()) return Report(next.error());
    const bool caught_up = *next == after;
    after = *next;
    if (!f.follow && (caught_up || after >= stop_at)) return kExitOk;
    if (!caught_up) continue;
    std::this_thread::sleep_for(kPollEvery);
  }
  return kExitOk;
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
  // A terminal is shown control characters, not driven by them; a pipe or a file gets the bytes.
  OutputTo out{stdout, !f.raw && ::isatty(STDOUT_FILENO) == 1};
  OutputTo err{stderr, !f.raw && ::isatty(STDERR_FILENO) == 1};
  const int code = FollowLog(*client, f, after, out, err);
  out.End();
  err.End();
  return code;
}

}  // namespace

std::string ExitLine(const json& c) {
  const std::string who = "isb: detached command " + std::to_string(c.value("log_id", 0));
  const int code = c.value("exit_code", -1), signal = c.value("signal", 0);
  if (const std::string error = c.value("error", ""); !error.empty()) return who + " ended: " + error + "\n";
  if (c.value("timed_out", false)) return who + " timed out and was killed (exit code " + std::to_string(code) + ")\n";
  if (signal != 0)
    return who + " was killed by signal " + std::to_string(signal) + " (exit code " + std::to_string(code) + ")\n";
  return who + " exited with code " + std::to_string(code) + "\n";
}

std::string ShowControls(std::string_view data) {
  std::string out;
  out.reserve(data.size());
  char hex[8];
  for (size_t i = 0; i < data.size();) {
    const auto c = static_cast<unsigned char>(data[i]);
    const size_t n = Utf8SequenceLength(data, i);
    const bool crlf = c == '\r' && i + 1 < data.size() && data[i + 1] == '\n';
    if (n == 1 && ((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t' || crlf)) {
      out += data[i++];
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(data[i + 1]) < 0xA0) {  // U+0080 to U+009F
      std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned char>(data[i + 1]));
      out += hex;
      i += 2;
    } else if (n > 1) {
      out.append(data.substr(i, n));
      i += n;
    } else {
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
      ++i;
    }
  }
  return out;
}

std::string TerminalText::Next(std::string_view piece) {
  std::string text = held_ + std::string(piece);
  // A character's first bytes, or a CR whose LF may open the next piece, wait for it.
  size_t hold = Utf8IncompleteTail(text);
  if (hold == 0 && !text.empty() && text.back() == '\r') hold = 1;
  held_ = text.substr(text.size() - hold);
  text.resize(text.size() - held_.size());
  return ShowControls(text);
}

std::string TerminalText::Rest() {
  std::string rest = ShowControls(held_);
  held_.clear();
  return rest;
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
  cmd->add_flag("--raw", flags->raw,
                "Print the output's bytes as they are even to a terminal (by default a terminal is shown its control "
                "characters as \\x1b and the like, so that the output cannot drive it)");
  AddConnectOptions(cmd, connect);
  cmd->callback([flags, connect, exit_code] { *exit_code = RunLogs(*connect, *flags); });
}

}  // namespace isb::cli
