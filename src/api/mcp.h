// The MCP surface: Streamable HTTP at /mcp and /orgs/<org>/mcp, protocol revisions 2025-11-25 (sessions) and
// 2026-07-28 (stateless, per-request _meta).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/http_message.h"
#include "api/mcp_approval.h"
#include "api/registry.h"
#include "base/mutex.h"

namespace isb::api {

inline constexpr std::string_view kMcpLatestSessionVersion = "2025-11-25";
inline constexpr std::string_view kMcpStatelessVersion = "2026-07-28";

struct McpOptions {
  std::string server_version = "0.0.0";
  size_t max_sessions = 4096;            // beyond: the account holding the most gives up its least recently used
  size_t max_sessions_per_account = 64;  // beyond: the account's own least recently used session is dropped
  std::chrono::seconds session_idle_ttl{24 * 3600};
  // A destructive tool (destructiveHint) called over MCP runs only once a person approved it: the client is asked
  // when it declared it can be (elicitation), and the call is refused when it cannot be asked. In a session the
  // question is an elicitation/create on the call's event stream; over 2026-07-28 it is the call's result
  // (resultType "input_required"), which the client answers by calling again with inputResponses and requestState.
  // These tools need no approval: their reach is the caller's own sandbox (and the keystrokes of an exec already
  // running).
  std::set<std::string> pre_approved = {"sandbox_exec", "sandbox_exec_input", "sandbox_file_write"};
  // No answer by then: not approved (a session's wait; a stateless question's requestState lapses then).
  std::chrono::milliseconds approval_wait{std::chrono::minutes(5)};
  identity::Clock now = identity::UnixNow;  // for the requestState's expiry
};

// JSON-RPC error codes used beyond the standard ones.
inline constexpr int kRpcHeaderMismatch = -32020;      // 2026-07-28: a header disagrees with the body
inline constexpr int kRpcUnsupportedVersion = -32022;  // 2026-07-28: data.supported lists ours

// Thread-safe. The registry must outlive it and any streaming response it returned.
//
// 2025-11-25: initialize creates a session (Mcp-Session-Id response header); later messages carry it (missing:
// 400, unknown or ended: 404) and, optionally, a supported MCP-Protocol-Version header (unsupported: 400; absent:
// taken as 2025-03-26 as the spec says). Notifications and responses: 202. DELETE ends a session. GET: 405.
// 2026-07-28: a request without a session whose MCP-Protocol-Version header or params._meta names 2026-07-28 is
// served statelessly; params._meta must carry io.modelcontextprotocol/protocolVersion (= the header) and
// io.modelcontextprotocol/clientCapabilities. server/discover replaces initialize; results carry resultType; a
// destructive call's approval is asked by multi round-trip requests (an "input_required" result, then the call again).
// Both: Mcp-Method (and Mcp-Name for tools/call), when sent, must match the body (400); a non-loopback Origin: 403;
// JSON-RPC batches: served in a session that negotiated 2025-03-26 (an array of answers, or 202), else refused (400).
class McpServer {
 public:
  McpServer(const Registry& registry, McpOptions options);

  // `req` is for an MCP path (see McpOrgFromPath); the caller has authenticated `identity`.
  Response Handle(const Request& req, const Identity& identity);
  size_t session_count() const;

 private:
  struct Session {
    std::string org;
    std::string subject;
    std::string account;  // the user (every credential of one user counts together), else the subject
    std::string protocol_version;
    std::chrono::steady_clock::time_point last_used;
    bool can_ask = false;  // the client declared elicitation: a person can be asked to approve a call
  };
  struct Call;  // one JSON-RPC message being served

  Response HandlePost(const Request& req, const std::string& org, const Identity& identity);
  Response HandleBatch(const Request& req, const std::string& org, const Identity& identity,
                       const nlohmann::json& batch);
  Response HandleMessage(const Request& req, const std::string& org, const Identity& identity,
                         const nlohmann::json& msg, bool in_batch);
  Response HandleDelete(const Request& req, const std::string& org, const Identity& identity);
  Response Dispatch(Call& call);
  Response Initialize(Call& call);
  Response ToolsCall(Call& call);
  // One caller's sessions never take another's: past its own limit it loses its own oldest, and a full table is
  // made room in by whoever holds the most (after sessions idle past the TTL go).
  Result<std::string> NewSession(const std::string& org, const Identity& who, const std::string& version, bool can_ask);
  // The session's protocol version, or nullopt when the id is unknown, expired or not this caller's.
  std::optional<std::string> TouchSession(const std::string& id, const std::string& org, const std::string& subject);
  nlohmann::json ServerInfo() const;

  // notifications/cancelled: the flag of the call with that id in that session (Running registers it).
  void Cancel(const std::string& session, const nlohmann::json& request_id);
  // A destructive tool's call, once a person approved it: asks on the call's event stream, waits for the answer,
  // then runs it (or answers that it was not approved).
  Response AskThenRun(Call& call, const Tool& tool, nlohmann::json args, CallContext ctx, const std::string& sid);
  bool CanAsk(const std::string& session);
  // A destructive tool's call over 2026-07-28 from a client that can be asked: without a requestState, the question
  // as the call's result; with one (redeemed once, for this caller, org, tool and arguments only), the answer:
  // approved, the tool runs; else the refusal a session's client gets.
  Response AskByResult(Call& call, const Tool& tool, const nlohmann::json& args, CallContext ctx);
  // A response the client POSTed in `session`: the answer to one of its asks, if it is one.
  void Answered(const std::string& session, const nlohmann::json& message);
  class Running;

  const Registry& registry_;
  McpOptions options_;
  mutable Mutex mu_;
  std::map<std::string, Session> sessions_ ISB_GUARDED_BY(mu_);
  // Calls running in a session, by (session id, request id as JSON text): set when the client cancels one.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<std::atomic<bool>>> running_ ISB_GUARDED_BY(mu_);
  // Approvals asked of clients, by (session id, the ask's id as JSON text): the client's response once it came.
  std::map<std::pair<std::string, std::string>, std::optional<nlohmann::json>> asks_ ISB_GUARDED_BY(mu_);
  CondVar answered_;
  uint64_t asked_ ISB_GUARDED_BY(mu_) = 0;
  ApprovalStates approvals_;  // the requestStates of stateless questions
};

// "/mcp" -> "default"; "/orgs/<org>/mcp" -> org; any other path -> nullopt.
std::optional<std::string> McpOrgFromPath(std::string_view path);
// http(s)://localhost, 127.0.0.1 or [::1], with an optional port.
bool IsLoopbackOrigin(std::string_view origin);

}  // namespace isb::api
