// MCP over Streamable HTTP: JSON-RPC framing, sessions (2025-11-25), stateless requests (2026-07-28), tool calls.
#include "api/mcp.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "api/json_util.h"
#include "base/random.h"

namespace isb::api {
namespace {

constexpr std::array<std::string_view, 3> kSessionVersions = {"2025-11-25", "2025-06-18", "2025-03-26"};
constexpr std::string_view kBatchVersion = "2025-03-26";  // the one revision with JSON-RPC batches
constexpr size_t kMaxBatch = 100;
constexpr std::string_view kMetaVersion = "io.modelcontextprotocol/protocolVersion";
constexpr std::string_view kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
constexpr const char* kApprovalInput = "approval";  // the key of a stateless approval's question and its answer

constexpr int kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601, kInvalidParams = -32602;

// Every version this server speaks, the stateless revision first.
json SupportedVersions() {
  json all = json::array({kMcpStatelessVersion});
  for (auto v : kSessionVersions) all.push_back(v);
  return all;
}

bool IsSessionVersion(std::string_view v) {
  for (auto s : kSessionVersions) {
    if (s == v) return true;
  }
  return false;
}

Response RpcError(int status, const json& id, int code, const std::string& message, json data = nullptr) {
  json err = {{"code", code}, {"message", message}};
  if (!data.is_null()) err["data"] = std::move(data);
  return JsonResponse(status, Dump({{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(err)}}));
}

Response RpcResult(const json& id, json result) {
  return JsonResponse(200, Dump({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}));
}

json ToolResult(const Result<json>& result, bool stateless) {
  json out;
  if (result.ok()) {
    out = {{"content", json::array({{{"type", "text"}, {"text", Dump(*result)}}})},
           {"structuredContent", *result},
           {"isError", false}};
  } else {
    std::string text = std::string(CodeName(result.error().code)) + ": " + result.error().message;
    out = {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})}, {"isError", true}};
  }
  if (stateless) out["resultType"] = "complete";
  return out;
}

// Runs an admitted tool, as a tool result. A call that took effect but whose outcome the audit log could not record
// says so in the result's _meta ("isb/audit-unrecorded": why).
json RunTool(const Registry& registry, const Tool& tool, const json& args, const CallContext& ctx, bool stateless) {
  std::string unrecorded;
  json out = ToolResult(registry.Run(tool, args, ctx, &unrecorded), stateless);
  if (!unrecorded.empty()) out["_meta"] = {{"isb/audit-unrecorded", unrecorded}};
  return out;
}

// The question put to a person before a destructive call: elicitation/create's params.
json ApprovalQuestion(const Tool& tool, const json& args) {
  std::string what = Dump(args);
  if (what.size() > 512) what = what.substr(0, 512) + "...";
  return {{"message", "Approve " + tool.name + " " + what + "? " + tool.title + ": it cannot be undone."},
          {"requestedSchema",
           {{"type", "object"},
            {"properties", {{"approve", {{"type", "boolean"}, {"title", "Approve " + tool.name}}}}},
            {"required", {"approve"}}}}};
}

// Whether a client's answer to the question (an ElicitResult, its own to shape) approves: {"action": "accept",
// "content": {"approve": true}} and nothing else is, looked at without ever assuming a member's type.
bool Approves(const json& answer) {
  auto member = [](const json& object, const char* name) -> json {
    return object.is_object() && object.contains(name) ? object[name] : json();
  };
  return member(answer, "action") == json("accept") && member(member(answer, "content"), "approve") == json(true);
}

Error NotApproved(const Tool& tool, const std::string& why) {
  return Error::Of(Code::kForbidden, tool.name + " was not approved: " + why);
}

// A stateless client can be asked when its capabilities declare form elicitation (an empty elicitation object
// declares form, as 2026-07-28 says).
bool CanAskStateless(const json& params) {
  const json& meta = params["_meta"];
  if (!meta[kMetaCapabilities].contains("elicitation")) return false;
  const json& elicitation = meta[kMetaCapabilities]["elicitation"];
  return elicitation.is_object() && (elicitation.empty() || elicitation.contains("form"));
}

// The key sealing the requestStates of stateless approvals: drawn anew by each daemon, so a state does not outlive
// it (after a restart the client is asked again). Empty when none could be drawn: then no state is issued.
std::string ApprovalKey() {
  std::string key(32, '\0');
  if (!RandomBytes(key.data(), key.size()).ok()) return "";
  return key;
}

// A call on the MCP surface in `org` by `identity`, with the client's address and User-Agent for the audit log.
CallContext McpContext(const Request& req, const Identity& identity, std::string org) {
  CallContext ctx;
  ctx.surface = "mcp";
  ctx.org = std::move(org);
  ctx.identity = identity;
  ctx.ip = req.remote_address;
  ctx.user_agent = SanitizeUtf8(std::string_view(req.headers.Get("User-Agent")).substr(0, 256));
  return ctx;
}

}  // namespace

struct McpServer::Call {
  const Request& req;
  std::string org;
  const Identity& identity;
  json id;  // the JSON-RPC id, as sent
  std::string method;
  json params;  // an object (empty when absent)
  bool stateless = false;
  bool in_batch = false;  // one message of a 2025-03-26 batch: answered in the batch's array, never streamed
};

// A tools/call in a session, from its start to its end: its cancel flag is found by notifications/cancelled.
class McpServer::Running {
 public:
  Running(McpServer& server, std::string session, const json& id) : server_(server) {
    if (session.empty()) return;  // stateless: nothing to cancel by
    key_ = {std::move(session), Dump(id)};
    MutexLock lock(server_.mu_);
    server_.running_[key_] = flag_;
  }
  ~Running() {
    if (key_.first.empty()) return;
    MutexLock lock(server_.mu_);
    if (auto it = server_.running_.find(key_); it != server_.running_.end() && it->second == flag_)
      server_.running_.erase(it);
  }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;
  std::shared_ptr<std::atomic<bool>> flag() const { return flag_; }
  bool cancellable() const { return !key_.first.empty(); }  // in a session: a notification can name it

 private:
  McpServer& server_;
  std::pair<std::string, std::string> key_;
  std::shared_ptr<std::atomic<bool>> flag_ = std::make_shared<std::atomic<bool>>(false);
};

McpServer::McpServer(const Registry& registry, McpOptions options)
    : registry_(registry),
      options_(std::move(options)),
      approvals_(ApprovalKey(),
                 std::max(std::chrono::seconds(1), std::chrono::ceil<std::chrono::seconds>(options_.approval_wait)),
                 options_.now) {}

void McpServer::Cancel(const std::string& session, const json& request_id) {
  MutexLock lock(mu_);
  if (auto it = running_.find({session, Dump(request_id)}); it != running_.end()) *it->second = true;
}

std::optional<std::string> McpOrgFromPath(std::string_view path) {
  if (path == "/mcp") return "default";
  constexpr std::string_view kPrefix = "/orgs/", kSuffix = "/mcp";
  if (!path.starts_with(kPrefix) || !path.ends_with(kSuffix) || path.size() <= kPrefix.size() + kSuffix.size()) {
    return std::nullopt;
  }
  std::string_view org = path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size());
  if (org.find('/') != std::string_view::npos) return std::nullopt;
  return std::string(org);
}

bool IsLoopbackOrigin(std::string_view origin) {
  if (origin.starts_with("http://"))
    origin.remove_prefix(7);
  else if (origin.starts_with("https://"))
    origin.remove_prefix(8);
  else
    return false;
  for (std::string_view host : {"localhost", "127.0.0.1", "[::1]"}) {
    if (origin.starts_with(host)) {
      std::string_view rest = origin.substr(host.size());
      if (rest.empty()) return true;
      if (rest[0] != ':' || rest.size() < 2 || rest.size() > 6) return false;
      for (char c : rest.substr(1)) {
        if (c < '0' || c > '9') return false;
      }
      return true;
    }
  }
  return false;
}

size_t McpServer::session_count() const {
  MutexLock lock(mu_);
  return sessions_.size();
}

json McpServer::ServerInfo() const { return {{"name", "isb"}, {"title", "isb"}, {"version", options_.server_version}}; }

Result<std::string> McpServer::NewSession(const std::string& org, const Identity& who, const std::string& version,
                                          bool can_ask) {
  ISB_ASSIGN_OR_RETURN(std::string id, RandomHex(16));
  const std::string subject = who.Subject();
  const std::string account = who.user_id != 0 ? "user:" + std::to_string(who.user_id) : subject;
  const auto now = std::chrono::steady_clock::now();
  MutexLock lock(mu_);
  std::erase_if(sessions_, [&](const auto& s) { return now - s.second.last_used > options_.session_idle_ttl; });
  std::map<std::string, size_t> held;  // sessions per account
  for (const auto& [sid, s] : sessions_) ++held[s.account];
  // The least recently used session of `owner`.
  auto oldest_of = [&](const std::string& owner) ISB_REQUIRES(mu_) {
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.account == owner && (oldest == sessions_.end() || it->second.last_used < oldest->second.last_used))
        oldest = it;
    }
    return oldest;
  };
  if (held[account] >= options_.max_sessions_per_account) {
    sessions_.erase(oldest_of(account));
  } else if (sessions_.size() >= options_.max_sessions) {
    auto most =
        std::max_element(held.begin(), held.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    sessions_.erase(oldest_of(most->first));
  }
  sessions_[id] = Session{org, subject, account, version, now, can_ask};
  return id;
}

std::optional<std::string> McpServer::TouchSession(const std::string& id, const std::string& org,
                                                   const std::string& subject) {
  MutexLock lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  auto now = std::chrono::steady_clock::now();
  if (now - it->second.last_used > options_.session_idle_ttl) {
    sessions_.erase(it);
    return std::nullopt;
  }
  // A session belongs to the org and the caller that opened it; anyone else is told it does not exist.
  if (it->second.org != org || it->second.subject != subject) return std::nullopt;
  it->second.last_used = now;
  return it->second.protocol_version;
}

Response McpServer::Handle(const Request& req, const Identity& identity) {
  std::optional<std::string> org = McpOrgFromPath(req.Path());
  // An org the caller does not reach is answered as one that does not exist, and the attempt is audited (as a
  // refused "mcp" call in that org).
  if (!org || !registry_.Reaches(identity, *org)) {
    Error missing = Error::Of(Code::kNotFound, "no MCP endpoint here; use /mcp");
    if (org) {
      registry_.Refuse("mcp", McpContext(req, identity, SanitizeUtf8(std::string_view(*org).substr(0, 100))), missing);
    }
    return JsonResponse(404, Dump({{"error", "not_found"}, {"message", missing.message}}));
  }
  // DNS rebinding defence: a browser page from elsewhere must not reach a local daemon.
  if (req.headers.Has("Origin") && !IsLoopbackOrigin(req.headers.Get("Origin"))) {
    Error refused = Error::Of(Code::kForbidden, "Origin '" + SanitizeUtf8(req.headers.Get("Origin").substr(0, 200)) +
                                                    "' is not allowed; only loopback origins may call /mcp");
    registry_.Refuse("mcp", McpContext(req, identity, *org), refused);  // the audit log hears of it
    return JsonResponse(403, Dump({{"error", "forbidden"}, {"message", refused.message}}));
  }
  if (req.method == "POST") return HandlePost(req, *org, identity);
  if (req.method == "DELETE") return HandleDelete(req, *org, identity);
  Response r = JsonResponse(405, Dump({{"error", "method_not_allowed"},
                                       {"message", "this server offers no GET stream; POST JSON-RPC messages"}}));
  r.headers.Set("Allow", "POST, DELETE");
  return r;
}

Response McpServer::HandleDelete(const Request& req, const std::string& org, const Identity& identity) {
  std::string sid = req.headers.Get("Mcp-Session-Id");
  if (sid.empty()) return RpcError(400, nullptr, kInvalidRequest, "missing Mcp-Session-Id header");
  if (!TouchSession(sid, org, identity.Subject())) return RpcError(404, nullptr, kInvalidRequest, "unknown session");
  MutexLock lock(mu_);
  sessions_.erase(sid);
  Response r;
  r.status = 204;
  return r;
}

Response McpServer::HandlePost(const Request& req, const std::string& org, const Identity& identity) {
  auto parsed = ParseJson(req.body);
  if (!parsed.ok()) return RpcError(400, nullptr, kParseError, "parse error: " + parsed.error().message);
  if (parsed->is_array()) return HandleBatch(req, org, identity, *parsed);
  return HandleMessage(req, org, identity, *parsed, false);
}

// 2025-03-26 let a POST carry an array of messages; 2025-06-18 removed that. A batch is served only in a session
// that negotiated 2025-03-26: each message as if it came alone, in order, without progress streams (the answers
// travel together), and the answers to its requests come back as one array (none: 202).
Response McpServer::HandleBatch(const Request& req, const std::string& org, const Identity& identity,
                                const json& batch) {
  std::string sid = req.headers.Get("Mcp-Session-Id");
  std::optional<std::string> negotiated;
  if (!sid.empty()) negotiated = TouchSession(sid, org, identity.Subject());
  if (!sid.empty() && !negotiated)
    return RpcError(404, nullptr, kInvalidRequest, "unknown or ended session; send initialize again");
  if (negotiated != kBatchVersion) {
    return RpcError(400, nullptr, kInvalidRequest,
                    "JSON-RPC batches belong to protocol 2025-03-26 only (removed in 2025-06-18), and " +
                        (negotiated ? "this session negotiated " + *negotiated
                                    : std::string("a batch needs a session that negotiated it")) +
                        "; send one message per POST");
  }
  if (batch.empty()) return RpcError(400, nullptr, kInvalidRequest, "an empty batch");
  // Its calls run one after another on one worker, each audited: a bound on what one POST may ask for.
  if (batch.size() > kMaxBatch)
    return RpcError(400, nullptr, kInvalidRequest, "a batch of more than " + std::to_string(kMaxBatch) + " messages");
  json answers = json::array();
  for (const json& msg : batch) {
    Response one = HandleMessage(req, org, identity, msg, true);
    if (one.body.empty()) continue;  // a notification or a response: nothing to answer
    auto answer = ParseJson(one.body);
    if (answer.ok()) {
      answers.push_back(std::move(*answer));
    } else {
      // Every answer here is JSON; one that is not is still answered, never dropped.
      answers.push_back({{"jsonrpc", "2.0"},
                         {"id", msg.is_object() && msg.contains("id") ? msg["id"] : json(nullptr)},
                         {"error", {{"code", -32603}, {"message", "internal error: an answer that is not JSON"}}}});
    }
  }
  if (answers.empty()) return Response{.status = 202, .headers = {}, .body = {}, .stream = {}};
  return JsonResponse(200, Dump(answers));
}

Response McpServer::HandleMessage(const Request& req, const std::string& org, const Identity& identity, const json& msg,
                                  bool in_batch) {
  if (!msg.is_object() || msg.value("jsonrpc", json()) != "2.0") {
    return RpcError(400, nullptr, kInvalidRequest, "expected a JSON-RPC 2.0 object with \"jsonrpc\": \"2.0\"");
  }
  Call call{req, org, identity, msg.contains("id") ? msg["id"] : json(nullptr), "", json::object()};
  call.in_batch = in_batch;
  bool has_method = msg.contains("method");
  bool is_request = has_method && msg.contains("id");
  if (has_method && !msg["method"].is_string()) {
    return RpcError(400, call.id, kInvalidRequest, "method: expected string");
  }
  if (is_request && !call.id.is_string() && !call.id.is_number_integer()) {
    return RpcError(400, nullptr, kInvalidRequest, "id: expected string or integer");
  }
  if (!has_method && !msg.contains("result") && !msg.contains("error")) {
    return RpcError(400, call.id, kInvalidRequest, "neither a request, a notification nor a response");
  }
  if (has_method) call.method = msg["method"].get<std::string>();
  if (auto p = msg.find("params"); p != msg.end() && !p->is_null()) {
    if (!p->is_object()) return RpcError(400, call.id, kInvalidParams, "params: expected object");
    call.params = *p;
  }
  std::string header_method = req.headers.Get("Mcp-Method");
  if (!header_method.empty() && has_method && header_method != call.method) {
    return RpcError(400, call.id, kRpcHeaderMismatch,
                    "Mcp-Method header '" + SanitizeUtf8(header_method.substr(0, 100)) + "' does not match method '" +
                        SanitizeUtf8(call.method.substr(0, 100)) + "'");
  }

  std::string sid = req.headers.Get("Mcp-Session-Id");
  std::string header_version = req.headers.Get("MCP-Protocol-Version");
  const json meta = call.params.value("_meta", json::object());
  bool meta_names_version = meta.is_object() && meta.contains(kMetaVersion);

  if (is_request && call.method == "initialize") {
    if (in_batch) return RpcError(400, call.id, kInvalidRequest, "initialize must not be part of a JSON-RPC batch");
    return Initialize(call);
  }

  if (!sid.empty()) {
    if (!header_version.empty() && !IsSessionVersion(header_version)) {
      return RpcError(400, call.id, kInvalidRequest,
                      "unsupported MCP-Protocol-Version '" + SanitizeUtf8(header_version.substr(0, 40)) +
                          "'; this server supports 2025-11-25, 2025-06-18 and 2025-03-26 with sessions");
    }
    std::optional<std::string> negotiated = TouchSession(sid, org, identity.Subject());
    if (!negotiated) return RpcError(404, call.id, kInvalidRequest, "unknown or ended session; send initialize again");
    // The header carries the version the session negotiated, no other.
    if (!header_version.empty() && header_version != *negotiated) {
      return RpcError(400, call.id, kInvalidRequest,
                      "MCP-Protocol-Version '" + SanitizeUtf8(header_version.substr(0, 40)) +
                          "' is not this session's, which negotiated " + *negotiated);
    }
  } else if (header_version == kMcpStatelessVersion || meta_names_version) {
    call.stateless = true;
    if (!is_request) return Response{.status = 202, .headers = {}, .body = {}, .stream = {}};
    if (!meta_names_version || !meta[kMetaVersion].is_string()) {
      return RpcError(400, call.id, kInvalidParams,
                      "params._meta is missing '" + std::string(kMetaVersion) + "' (required by 2026-07-28)");
    }
    std::string meta_version = meta[kMetaVersion].get<std::string>();
    if (meta_version != kMcpStatelessVersion) {
      return RpcError(400, call.id, kRpcUnsupportedVersion,
                      "unsupported protocol version '" + SanitizeUtf8(meta_version.substr(0, 40)) + "'",
                      {{"supported", SupportedVersions()}, {"requested", SanitizeUtf8(meta_version)}});
    }
    if (header_version != meta_version) {
      return RpcError(
          400, call.id, kRpcHeaderMismatch,
          "MCP-Protocol-Version header must be present and equal params._meta['" + std::string(kMetaVersion) + "']");
    }
    if (!meta.contains(kMetaCapabilities) || !meta[kMetaCapabilities].is_object()) {
      return RpcError(400, call.id, kInvalidParams,
                      "params._meta is missing '" + std::string(kMetaCapabilities) + "' (an object)");
    }
    // 2026-07-28 mirrors the method in a header on every request (one that disagrees was refused above).
    if (header_method.empty())
      return RpcError(400, call.id, kRpcHeaderMismatch, "missing Mcp-Method header (required by 2026-07-28)");
  } else {
    return RpcError(400, call.id, kInvalidRequest,
                    "missing Mcp-Session-Id header: send initialize first (protocol 2025-11-25), or name protocol "
                    "2026-07-28 in MCP-Protocol-Version and params._meta");
  }
  if (!is_request) {
    // A client's cancel of one of its calls in this session: the call's command is stopped (a call of another
    // session, or one already ended, is not found: nothing happens, as the spec allows).
    if (call.method == "notifications/cancelled" && !sid.empty() && call.params.contains("requestId"))
      Cancel(sid, call.params["requestId"]);
    if (!has_method && !sid.empty()) Answered(sid, msg);
    return Response{.status = 202, .headers = {}, .body = {}, .stream = {}};
  }
  return Dispatch(call);
}

Response McpServer::Initialize(Call& call) {
  std::string requested =
      call.params.value("protocolVersion", json("")).is_string() ? call.params.value("protocolVersion", "") : "";
  std::string version = IsSessionVersion(requested) ? requested : std::string(kMcpLatestSessionVersion);
  const json caps = call.params.value("capabilities", json::object());
  const bool can_ask = caps.is_object() && caps.contains("elicitation") && caps["elicitation"].is_object();
  auto sid = NewSession(call.org, call.identity, version, can_ask);
  if (!sid.ok()) return RpcError(503, call.id, -32603, "no session id could be made: " + sid.error().message);
  Response r = RpcResult(call.id, {{"protocolVersion", version},
                                   {"capabilities", {{"tools", {{"listChanged", false}}}}},
                                   {"serverInfo", ServerInfo()},
                                   {"instructions",
                                    "isb runs untrusted code in sandboxes: sandbox_create, then "
                                    "sandbox_exec with an argv; sandbox_remove when done."}});
  r.headers.Set("Mcp-Session-Id", *sid);
  return r;
}

Response McpServer::Dispatch(Call& call) {
  const std::string& m = call.method;
  if (m == "tools/list") {
    json tools = json::array();
    for (const Tool* t : registry_.Visible(call.identity)) tools.push_back(Registry::Describe(*t));
    json result = {{"tools", std::move(tools)}};
    if (call.stateless) result["resultType"] = "complete";
    return RpcResult(call.id, std::move(result));
  }
  if (m == "tools/call") return ToolsCall(call);
  if (m == "ping" && !call.stateless) return RpcResult(call.id, json::object());
  if (m == "server/discover" && call.stateless) {
    return RpcResult(call.id, {{"resultType", "complete"},
                               {"supportedVersions", {kMcpStatelessVersion}},
                               {"capabilities", {{"tools", {{"listChanged", false}}}}},
                               {"serverInfo", ServerInfo()}});
  }
  // The 2026-07-28 transport answers an unknown method with HTTP 404 as well.
  return RpcError(call.stateless ? 404 : 200, call.id, kMethodNotFound,
                  "method '" + SanitizeUtf8(m.substr(0, 100)) + "' not found");
}

Response McpServer::ToolsCall(Call& call) {
  const json& p = call.params;
  if (!p.contains("name") || !p["name"].is_string()) {
    return RpcError(200, call.id, kInvalidParams, "params.name: expected the tool's name as a string");
  }
  std::string name = p["name"].get<std::string>();
  CallContext ctx = McpContext(call.req, call.identity, call.org);
  ctx.request_id = Dump(call.id);
  // Refused before the registry judges it, but a refusal of a call all the same: the audit log hears of it.
  auto refuse = [&](int status, int code, const std::string& message) {
    registry_.Refuse(name, ctx, Error::Of(Code::kInvalidArgument, message));
    return RpcError(status, call.id, code, message);
  };
  std::string header_name = call.req.headers.Get("Mcp-Name");
  if (call.stateless && header_name.empty())
    return refuse(400, kRpcHeaderMismatch, "missing Mcp-Name header (required by 2026-07-28 on tools/call)");
  if (!header_name.empty() && header_name != name) {
    return refuse(400, kRpcHeaderMismatch, "Mcp-Name header does not match params.name");
  }
  json args = p.value("arguments", json::object());
  if (args.is_null()) args = json::object();
  if (!args.is_object()) return refuse(200, kInvalidParams, "params.arguments: expected object");

  auto admitted = registry_.Admit(name, args, ctx);
  if (!admitted.ok()) {
    // A tool the caller cannot see is a protocol error; a refusal or input that fails the schema is a tool error
    // the model can correct (2025-11-25, SEP-1303).
    if (registry_.FindVisible(name, ctx.identity) == nullptr) {
      return RpcError(200, call.id, kInvalidParams, admitted.error().message);
    }
    return RpcResult(call.id, ToolResult(admitted.error(), call.stateless));
  }
  const Tool* tool = *admitted;
  if (tool->annotations.destructive && !tool->annotations.read_only && options_.pre_approved.count(tool->name) == 0) {
    const std::string sid = call.req.headers.Get("Mcp-Session-Id");
    if (!call.stateless && !call.in_batch && !sid.empty() && CanAsk(sid))
      return AskThenRun(call, *tool, args, ctx, sid);
    if (call.stateless && CanAskStateless(p)) return AskByResult(call, *tool, args, ctx);
    Error refused = Error::Of(Code::kForbidden, tool->name +
                                                    " is destructive and runs over MCP only once a person "
                                                    "approves it, and this client cannot be asked (it declared no "
                                                    "elicitation capability); call it through the CLI or REST, or have "
                                                    "the daemon pre-approve it (isb serve --mcp-pre-approve)");
    registry_.Refuse(name, ctx, refused);
    return RpcResult(call.id, ToolResult(refused, call.stateless));
  }

  json token = p.value("_meta", json::object()).is_object()
                   ? p.value("_meta", json::object()).value("progressToken", json())
                   : json();
  if (!tool->streams || call.in_batch || !(token.is_string() || token.is_number_integer())) {
    Running running(*this, call.req.headers.Get("Mcp-Session-Id"), call.id);
    if (running.cancellable()) ctx.cancelled = [flag = running.flag()] { return flag->load(); };
    return RpcResult(call.id, RunTool(registry_, *tool, args, ctx, call.stateless));
  }
  // What is refused before the stream begins (a missing sandbox, a start the audit log cannot record) is a plain
  // tool error, as on the paths above.
  if (Status begun = registry_.Begin(*tool, args, ctx); !begun.ok())
    return RpcResult(call.id, ToolResult(begun.error(), call.stateless));

  Response r;
  r.headers.Set("Content-Type", "text/event-stream");
  r.headers.Set("Cache-Control", "no-cache");
  const Registry& registry = registry_;
  r.stream = [&registry, tool, args = std::move(args), ctx, token, id = call.id, stateless = call.stateless,
              server = this, sid = call.req.headers.Get("Mcp-Session-Id")](const ChunkWriter& write) mutable {
    Running running(*server, sid, id);
    Mutex mu;  // output may arrive from the stdout and the stderr reader at once
    bool client_gone = false;
    double progress = 0;
    auto send = [&](const json& message) {
      if (!client_gone) client_gone = !write(SseEvent("", Dump(message)));
    };
    ctx.progress = [&](std::string_view stream, std::string_view chunk) {
      MutexLock lock(mu);
      progress += static_cast<double>(chunk.size());
      json meta = {{"isb/stream", std::string(stream)}};
      if (stream == "session") meta["isb/session"] = std::string(chunk);
      send({{"jsonrpc", "2.0"},
            {"method", "notifications/progress"},
            {"params",
             {{"progressToken", token},
              {"progress", progress},
              {"message", std::string(chunk)},
              {"_meta", std::move(meta)}}}});
    };
    ctx.cancelled = [&, flag = running.flag()] {
      MutexLock lock(mu);
      if (!client_gone) client_gone = !write(": keep-alive\n\n");
      return client_gone || flag->load();
    };
    json result = RunTool(registry, *tool, args, ctx, stateless);
    MutexLock lock(mu);
    send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  };
  return r;
}

bool McpServer::CanAsk(const std::string& session) {
  MutexLock lock(mu_);
  auto it = sessions_.find(session);
  return it != sessions_.end() && it->second.can_ask;
}

void McpServer::Answered(const std::string& session, const json& message) {
  if (!message.contains("id")) return;
  MutexLock lock(mu_);
  auto it = asks_.find({session, Dump(message["id"])});
  if (it == asks_.end() || it->second) return;  // not an ask of this session's, or answered already
  it->second = message;
  answered_.NotifyAll();
}

Response McpServer::AskThenRun(Call& call, const Tool& tool, json args, CallContext ctx, const std::string& sid) {
  std::string ask_id;
  {
    MutexLock lock(mu_);
    ask_id = "isb-approval-" + std::to_string(++asked_);
  }
  Response r;
  r.headers.Set("Content-Type", "text/event-stream");
  r.headers.Set("Cache-Control", "no-cache");
  const Registry& registry = registry_;
  r.stream = [&registry, &tool, args = std::move(args), ctx = std::move(ctx), id = call.id, server = this, sid, ask_id,
              wait = options_.approval_wait](const ChunkWriter& write) mutable {
    Running running(*server, sid, id);
    const std::pair<std::string, std::string> key{sid, Dump(json(ask_id))};
    json ask = {
        {"jsonrpc", "2.0"}, {"id", ask_id}, {"method", "elicitation/create"}, {"params", ApprovalQuestion(tool, args)}};
    {
      // Waited for from before the question goes out (the answer cannot come sooner), and only while this stream
      // runs: a response that is never streamed leaves nothing behind.
      MutexLock lock(server->mu_);
      server->asks_[key] = std::nullopt;
    }
    bool gone = !write(SseEvent("", Dump(ask)));
    std::optional<json> answer;
    {
      MutexLock lock(server->mu_);
      const auto until = std::chrono::steady_clock::now() + wait;
      while (!gone && !server->asks_[key] && !running.flag()->load() && std::chrono::steady_clock::now() < until) {
        server->answered_.WaitFor(server->mu_, std::chrono::seconds(1));
        if (server->asks_[key]) break;
        lock.Unlock();
        gone = !write(": keep-alive\n\n");  // a client that went away ends the wait
        lock.Lock();
      }
      answer = server->asks_[key];
      server->asks_.erase(key);
    }
    if (gone) {
      registry.Refuse(tool.name, ctx, NotApproved(tool, "the client went away before an answer"));
      return;
    }
    json out;
    if (answer && answer->is_object() && answer->contains("result") && Approves((*answer)["result"])) {
      ctx.cancelled = [flag = running.flag()] { return flag->load(); };
      out = RunTool(registry, tool, args, ctx, false);
    } else {
      const std::string why = answer ? "the person asked did not approve it"
                              : running.flag()->load()
                                  ? "the call was cancelled before an answer"
                                  : "no answer came within " +
                                        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(wait).count()) +
                                        " s";
      Error refused = NotApproved(tool, why);
      registry.Refuse(tool.name, ctx, refused);
      out = ToolResult(refused, false);
    }
    write(SseEvent("", Dump(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(out)}})));
  };
  return r;
}

Response McpServer::AskByResult(Call& call, const Tool& tool, const json& args, CallContext ctx) {
  const json& p = call.params;
  const ApprovalCall asked{CallerOf(call.identity), call.org, tool.name, Dump(args)};
  // Invalid params, refused and audited as ToolsCall's own are.
  auto invalid = [&](const std::string& message) {
    registry_.Refuse(tool.name, ctx, Error::Of(Code::kInvalidArgument, message));
    return RpcError(200, call.id, kInvalidParams, message);
  };
  if (p.contains("requestState")) {
    if (!p["requestState"].is_string()) return invalid("params.requestState: expected the string the server sent");
    const json responses = p.contains("inputResponses") ? p["inputResponses"] : json::object();
    if (!responses.is_object()) return invalid("params.inputResponses: expected an object");
    if (Status redeemed = approvals_.Redeem(p["requestState"].get<std::string>(), asked); !redeemed.ok()) {
      registry_.Refuse(tool.name, ctx, redeemed.error());
      return RpcResult(call.id, ToolResult(redeemed.error(), true));
    }
    if (responses.contains(kApprovalInput)) {
      if (Approves(responses[kApprovalInput])) return RpcResult(call.id, RunTool(registry_, tool, args, ctx, true));
      Error refused = NotApproved(tool, "the person asked did not approve it");
      registry_.Refuse(tool.name, ctx, refused);
      return RpcResult(call.id, ToolResult(refused, true));
    }
    // A retry without the answer asked for is asked again (as 2026-07-28 says), under a new state.
  }
  auto state = approvals_.Issue(asked);
  if (!state.ok()) {
    registry_.Refuse(tool.name, ctx, state.error());
    return RpcResult(call.id, ToolResult(state.error(), true));
  }
  json question = ApprovalQuestion(tool, args);
  question["mode"] = "form";
  return RpcResult(call.id, {{"resultType", "input_required"},
                             {"inputRequests",
                              {{kApprovalInput, {{"method", "elicitation/create"}, {"params", std::move(question)}}}}},
                             {"requestState", std::move(*state)}});
}

}  // namespace isb::api
