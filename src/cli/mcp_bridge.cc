// The stdio-to-Streamable-HTTP bridge behind `isb mcp`. It holds no MCP logic of its own: tools, approvals (the
// daemon's elicitation/create travels out as one more line, the client's answer back as one more POST) and the
// audit log are the daemon's, exactly as for a client that speaks HTTP.
#include "cli/mcp_bridge.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

constexpr int kRpcInternalError = -32603;
constexpr int kRpcParseError = -32700;

std::string Compact(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

bool IsRequest(const json& m) { return m.is_object() && m.contains("method") && m.contains("id"); }

// Whether a message, or a batch, holds a request (something the daemon answers).
bool HasRequest(const json& m) {
  if (!m.is_array()) return IsRequest(m);
  for (const json& e : m) {
    if (IsRequest(e)) return true;
  }
  return false;
}

// Reads `fd` a line at a time; a line past kMaxMcpLineBytes is given whole as far as it went and marked.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  // false at the end of input; *line without its "\n" (and "\r").
  Result<bool> Next(std::string* line, bool* too_long) {
    *too_long = false;
    for (;;) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        *line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        if (!line->empty() && line->back() == '\r') line->pop_back();
        if (skipping_) {
          skipping_ = false;
          *too_long = true;
        }
        return true;
      }
      if (buf_.size() > kMaxMcpLineBytes) {
        buf_.clear();
        skipping_ = true;
      }
      if (eof_) {
        if (buf_.empty() && !skipping_) return false;
        *line = std::move(buf_);
        buf_.clear();
        *too_long = skipping_;
        skipping_ = false;
        return true;
      }
      char chunk[65536];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::Sys("reading the MCP client's messages on stdin");
      if (n == 0)
        eof_ = true;
      else
        buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buf_;
  bool eof_ = false;
  bool skipping_ = false;  // the line under way grew past the limit: its bytes are dropped up to its end
};

}  // namespace

McpBridge::McpBridge(HttpClient http, std::string token, std::string org, int max_inflight)
    : http_(std::move(http)),
      token_(std::move(token)),
      path_(org.empty() ? "/mcp" : "/orgs/" + org + "/mcp"),
      max_inflight_(max_inflight) {}

json McpBridge::Undeliverable(const json& message, const std::string& why) {
  if (!IsRequest(message)) return json();
  return {{"jsonrpc", "2.0"}, {"id", message["id"]}, {"error", {{"code", kRpcInternalError}, {"message", why}}}};
}

void McpBridge::WriteLine(const json& message) {
  std::string line = Compact(message) + "\n";
  MutexLock lock(out_mu_);
  std::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::write(out_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client is gone; what it did not read is lost with it
    rest.remove_prefix(static_cast<size_t>(n));
  }
}

void McpBridge::Say(const std::string& text) { std::fprintf(stderr, "isb mcp: %s\n", text.c_str()); }

HttpRequest McpBridge::Post(const json& message) {
  HttpRequest req;
  req.method = "POST";
  req.target = path_;
  req.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}};
  if (http_.endpoint().unix_path.empty() && !token_.empty())
    req.headers.emplace_back("Authorization", "Bearer " + token_);
  // The stateless revision names itself in each request's _meta and wants it, and the method, mirrored in headers;
  // a session names its version once, in initialize's answer.
  std::string version;
  if (message.is_object() && message.contains("method") && message["method"].is_string()) {
    req.headers.emplace_back("Mcp-Method", message["method"].get<std::string>());
    const json params = message.value("params", json::object());
    if (message["method"] == "tools/call" && params.is_object() && params.contains("name") &&
        params["name"].is_string())
      req.headers.emplace_back("Mcp-Name", params["name"].get<std::string>());
    const json meta = params.is_object() ? params.value("_meta", json::object()) : json::object();
    if (meta.is_object() && meta.contains("io.modelcontextprotocol/protocolVersion") &&
        meta["io.modelcontextprotocol/protocolVersion"].is_string())
      version = meta["io.modelcontextprotocol/protocolVersion"].get<std::string>();
  }
  {
    MutexLock lock(mu_);
    if (!session_.empty()) req.headers.emplace_back("Mcp-Session-Id", session_);
    if (version.empty()) version = protocol_version_;
  }
  if (!version.empty()) req.headers.emplace_back("MCP-Protocol-Version", version);
  req.body = Compact(message);
  return req;
}

void McpBridge::Forward(const std::string& line) {
  json message = json::parse(line, nullptr, false);
  if (message.is_discarded()) {
    WriteLine({{"jsonrpc", "2.0"},
               {"id", nullptr},
               {"error", {{"code", kRpcParseError}, {"message", "isb mcp: a line on stdin that is not JSON"}}}});
    return;
  }
  const bool initialize = message.is_object() && message.value("method", json()) == "initialize";
  SseHandler relay = [this](const SseEvent& ev) {
    json m = json::parse(ev.data, nullptr, false);
    if (m.is_discarded())
      Say("the daemon sent an event that is not JSON: " + ev.data.substr(0, 200));
    else
      WriteLine(m);
    return true;
  };
  Result<HttpResponse> sent = http_.SendStreaming(Post(message), relay);
  if (!sent.ok()) {
    const std::string why = "isb mcp: " + sent.error().message;
    if (json answer = Undeliverable(message, why); !answer.is_null())
      WriteLine(answer);
    else
      Say(sent.error().message);
    return;
  }
  const HttpResponse& resp = *sent;
  if (initialize && resp.status == 200) {
    MutexLock lock(mu_);
    session_ = resp.Header("Mcp-Session-Id");
    json body = json::parse(resp.body, nullptr, false);
    if (body.is_object() && body.contains("result") && body["result"].is_object())
      protocol_version_ = body["result"].value("protocolVersion", "");
  }
  if (resp.body.empty()) return;  // 202 for a notification or a response, or an answer that came as events
  json answer = json::parse(resp.body, nullptr, false);
  const bool rpc = !answer.is_discarded() && (answer.is_array() || (answer.is_object() && answer.contains("jsonrpc")));
  if (rpc) {
    WriteLine(answer);
    return;
  }
  // An answer that is not JSON-RPC (a 401 for a missing token, a proxy's page): the client is told in its own terms.
  Error e = DaemonError(resp.status, resp.body);
  const std::string why = "isb mcp: the daemon answered HTTP " + std::to_string(resp.status) + ": " + e.message;
  if (json failed = Undeliverable(message, why); !failed.is_null())
    WriteLine(failed);
  else
    Say(why);
}

void McpBridge::Enqueue(std::string line, json id) {
  MutexLock lock(mu_);
  while (!queued_.empty() && (queued_.size() >= kMaxMcpQueued || queued_bytes_ + line.size() > kMaxMcpQueuedBytes))
    answered_.Wait(mu_);
  queued_bytes_ += line.size();
  queued_.push_back(Queued{std::move(line), std::move(id)});
  if (senders_ >= max_inflight_) return;  // a sender takes it when its request is answered
  ++senders_;
  std::thread([this] { Send(); }).detach();
}

void McpBridge::Cancel(const json& id) {
  MutexLock lock(mu_);
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if (it->id == id) {
      queued_bytes_ -= it->line.size();
      queued_.erase(it);
      answered_.NotifyAll();
      return;
    }
  }
}

void McpBridge::Send() {
  for (;;) {
    std::string line;
    {
      MutexLock lock(mu_);
      if (queued_.empty()) {
        --senders_;
        answered_.NotifyAll();
        return;
      }
      line = std::move(queued_.front().line);
      queued_.pop_front();
      queued_bytes_ -= line.size();
      answered_.NotifyAll();
    }
    Forward(line);
  }
}

void McpBridge::EndSession() {
  HttpRequest req;
  {
    MutexLock lock(mu_);
    if (session_.empty()) return;
    req.headers.emplace_back("Mcp-Session-Id", session_);
    if (!protocol_version_.empty()) req.headers.emplace_back("MCP-Protocol-Version", protocol_version_);
  }
  req.method = "DELETE";
  req.target = path_;
  if (http_.endpoint().unix_path.empty() && !token_.empty())
    req.headers.emplace_back("Authorization", "Bearer " + token_);
  (void)http_.Send(req);  // a session not ended here ends when idle
}

int McpBridge::Run(int in, int out) {
  out_ = out;
  LineReader reader(in);
  int rc = kExitOk;
  for (;;) {
    std::string line;
    bool too_long = false;
    auto more = reader.Next(&line, &too_long);
    if (!more.ok()) {
      Say(more.error().message);
      rc = kExitIsbFailed;
      break;
    }
    if (!*more) break;
    if (too_long) {
      WriteLine({{"jsonrpc", "2.0"},
                 {"id", nullptr},
                 {"error",
                  {{"code", kRpcParseError},
                   {"message",
                    "isb mcp: a message longer than " + std::to_string(kMaxMcpLineBytes) + " bytes was dropped"}}}});
      continue;
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    // initialize is answered before anything else is sent: the session it opens is what the next messages carry.
    json peek = json::parse(line, nullptr, false);
    if (!peek.is_discarded() && peek.is_object() && peek.value("method", json()) == "initialize") {
      Forward(line);
      continue;
    }
    // A cancellation takes its request out of the line if it is still there (it is never sent), and goes on to the
    // daemon for one already sent.
    if (peek.is_object() && peek.value("method", json()) == "notifications/cancelled" && peek.contains("params") &&
        peek["params"].is_object() && peek["params"].contains("requestId"))
      Cancel(peek["params"]["requestId"]);
    // A response (the client's answer to an approval), a notification, or a batch of only those goes now: a queued
    // request may be the very call that waits for it.
    if (!peek.is_discarded() && !HasRequest(peek)) {
      Forward(line);
      continue;
    }
    Enqueue(std::move(line), peek.is_object() ? peek["id"] : json());
  }
  {
    MutexLock lock(mu_);
    while (senders_ > 0) answered_.Wait(mu_);
  }
  EndSession();
  return rc;
}

void AddMcpCommand(CLI::App& app, int* exit_code) {
  auto connect = SharedConnectFlags();
  auto* cmd = app.add_subcommand(
      "mcp",
      "A stdio MCP server for local clients (\"command\": \"isb\", \"args\": [\"mcp\"]), passing every message "
      "to the daemon: its tools, approvals and audit log");
  AddConnectOptions(cmd, connect);
  cmd->callback([connect, exit_code] {
    auto client = Connect(*connect);
    if (!client.ok()) {
      *exit_code = ReportUsage(client.error());
      return;
    }
    const char* token = std::getenv("ISB_TOKEN");
    const char* env_org = std::getenv("ISB_ORG");
    std::string org = !connect->org.empty() ? connect->org : env_org != nullptr ? env_org : "";
    McpBridge bridge(HttpClient(client->endpoint()), token != nullptr ? token : "", org);
    *exit_code = bridge.Run(STDIN_FILENO, STDOUT_FILENO);
  });
}

}  // namespace isb::cli
