// The tool registry: every operation declared once (name, schemas, annotations, handler) and served by every surface.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "base/result.h"
#include "identity/principal.h"
#include "identity/roles.h"

namespace isb::api {

// Who is calling: the unix socket is always the host (Principal::Host()); an HTTP caller is whoever the credential it
// presented resolves to.
using Identity = identity::Principal;

// Output produced while a tool runs: stream is "stdout" or "stderr"; or "session" once, before any output, with
// the id of a terminal session as the chunk.
using ProgressFn = std::function<void(std::string_view stream, std::string_view chunk)>;

struct CallContext {
  std::string surface = "cli";  // "rest" | "mcp" | "unix" | "cli"
  std::string request_id;
  std::string org = "default";  // the org the call acts in
  Identity identity;
  std::string ip, user_agent;  // of an HTTP caller, for the audit log
  ProgressFn progress;         // empty: the caller does not stream
  // True once the caller has gone away (a streaming caller) or cancelled the call (MCP's notifications/cancelled).
  // Asked about once a second by long work.
  std::function<bool()> cancelled;
  // Set by Registry::Begin once the call's start is recorded: Run records none of its own.
  bool intent_recorded = false;
  // Server-only (no JSON input can set it; only isb's own web terminal does): a tty sandbox_exec runs as a person's
  // interactive terminal, ended after idle_timeout with no input or resize, and at the latest after timeout (up to
  // spec::kMaxInteractiveTimeoutS), instead of the public 15-minute limit.
  struct Interactive {
    std::chrono::milliseconds idle_timeout{0};
    std::chrono::milliseconds timeout{0};
  };
  std::optional<Interactive> interactive;
};

struct ToolAnnotations {
  bool read_only = false;    // readOnlyHint
  bool destructive = false;  // destructiveHint (meaningful only when !read_only)
  bool idempotent = false;   // idempotentHint
  bool open_world = false;   // openWorldHint
};

// Who may call a tool. The authorizer judges every call by it before the handler runs.
struct ToolAccess {
  identity::Role least_role = identity::Role::kViewer;    // in the call's org
  identity::ScopeKind kind = identity::ScopeKind::kRead;  // which token scopes cover it
  bool org_bound = true;  // acts in the call's org, so the caller must reach it; false: about the caller itself
  bool platform = false;  // platform admins and superadmins only
  // Acts on what reaches beyond any one org (the caller's memberships, its browser sessions): never for a
  // credential scoped to one org.
  bool account_wide = false;
  // A read the audit log records even when it succeeds (a secret's value read): other read-only calls are recorded
  // only when refused.
  bool audit_reads = false;
};

// Read-only tools: viewers and the read scope; the rest: members and the deploy scope.
ToolAccess DefaultAccess(const ToolAnnotations& annotations);

using ToolHandler = std::function<Result<nlohmann::json>(const nlohmann::json& input, const CallContext& ctx)>;

struct Tool {
  std::string name;  // [a-z_]+, unique
  std::string title;
  std::string description;
  nlohmann::json input_schema;   // an object schema
  nlohmann::json output_schema;  // an object schema
  ToolAnnotations annotations;
  bool streams = false;  // the handler reports output through ctx.progress when it is set
  ToolHandler handler;
  std::optional<ToolAccess> access{};  // unset: DefaultAccess(annotations)
  // A streaming call's check of what it acts on, before its response begins (REST sends a stream's status first):
  // what it refuses (a sandbox that does not exist) gets its own status instead of an error event after a 200.
  std::function<Status(const nlohmann::json& input, const CallContext& ctx)> precheck{};
};

// CodeName (base/result.h) names an error code as REST and MCP publish it: "invalid_argument", "not_found", ...
// The HTTP status a code maps to: 400, 401, 403, 404, 409, 413, 429, 504, 503, 500.
int HttpStatusFor(Code code);

// Told of every call once it has an outcome: the tool (null when none has that name), its input as sent, the
// caller, and the result. The daemon's audit log listens here, so no surface can call a tool unrecorded. An error is
// an outcome it could not record: the operator has been told, and Run tells the caller.
using CallObserver = std::function<Status(std::string_view name, const Tool* tool, const nlohmann::json& input,
                                          const CallContext& ctx, const Result<nlohmann::json>& result)>;

// Told of a call that may change something (a tool that is not read-only) once it is admitted, before its handler
// runs, with the name, tool, input and caller the call observer will be told of once it ends. The daemon records it
// ("started"), so that a call whose outcome cannot be recorded (a full disk, a daemon that dies during an exec) is in
// the log all the same. An error means it could not be recorded, and the call is not run: nothing changes unrecorded.
using IntentObserver =
    std::function<Status(std::string_view name, const Tool& tool, const nlohmann::json& input, const CallContext& ctx)>;

// Whether a caller that is not a superadmin may see and call a tool (the daemon's --allow-tools/--deny-tools).
using ToolFilter = std::function<bool(std::string_view tool)>;

// Thread-safe after start-up: Add, SetObserver and SetToolFilter during wiring, then Find/Call from any thread.
class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // REQUIRES: a unique name, object schemas and a handler. A duplicate is a wiring bug: returns kInternal.
  Status Add(Tool tool);
  // nullptr when no tool has that name.
  const Tool* Find(std::string_view name) const;
  // In name order.
  std::vector<const Tool*> List() const;

  // nullptr when no tool has that name or `identity` may not see it.
  const Tool* FindVisible(std::string_view name, const Identity& identity) const {
    const Tool* tool = Find(name);
    return tool != nullptr && MaySee(*tool, identity) ? tool : nullptr;
  }
  // The tools `identity` may see: all of them for a superadmin, else those the tool filter lets through.
  std::vector<const Tool*> Visible(const Identity& identity) const;

  // Admit, then run the handler. Exceptions from a handler become kInternal, never escape. The observer sees the
  // outcome.
  Result<nlohmann::json> Call(std::string_view name, const nlohmann::json& input, const CallContext& ctx) const;
  // Everything that is judged before a handler runs, in this order: the tool exists and the caller may see it
  // (kNotFound "unknown tool 'NAME'"), the caller reaches the org (kNotFound "no org 'ORG'") and may call the tool
  // there (Authorize), and the input passes the schema (kInvalidArgument naming the field). A refusal is reported to
  // the observer. Surfaces that must answer before running (a stream) call this, then Run.
  Result<const Tool*> Admit(std::string_view name, const nlohmann::json& input, const CallContext& ctx) const;
  // A call refused before its input could be judged (a body that is not JSON or is too large, arguments that are
  // not an object): reported to the observer like Admit's refusals, with an empty input.
  void Refuse(std::string_view name, const CallContext& ctx, const Error& error) const {
    (void)Report(name, FindVisible(name, ctx.identity), nlohmann::json::object(), ctx, Result<nlohmann::json>(error));
  }
  // What Admit and Precheck judge of a call of `name`, reporting nothing: for a surface that carries on a call already
  // running (a web terminal attached again to its shell) and records that under an action of its own (Record).
  Status Recheck(std::string_view name, const nlohmann::json& input, const CallContext& ctx) const;
  // An act of a surface that is no tool call of its own (a web terminal attached again to its shell), told to the
  // observer as a call of `action` with this input, caller and outcome. An error: it could not be recorded.
  Status Record(std::string_view action, const nlohmann::json& input, const CallContext& ctx,
                const Status& outcome) const {
    return Report(
        action, nullptr, input, ctx,
        outcome.ok() ? Result<nlohmann::json>(nlohmann::json::object()) : Result<nlohmann::json>(outcome.error()));
  }
  // Runs an admitted tool's precheck (when it has one); a refusal is reported to the observer like Admit's.
  Status Precheck(const Tool& tool, const nlohmann::json& input, const CallContext& ctx) const;
  // For a surface that must answer before running (a stream): the precheck, then the intent Run would record, so
  // that a call the audit log cannot take is refused with its own status (503) before a response begins. Marks
  // `ctx` (intent_recorded) for the Run that follows.
  Status Begin(const Tool& tool, const nlohmann::json& input, CallContext& ctx) const;
  // Runs an admitted tool's handler and reports the outcome to the observer. A tool that is not read-only is first
  // reported to the intent observer; when that fails, the handler does not run and the call fails with kUnavailable
  // "TOOL was not run, so nothing changed: WHY". When the outcome could not be recorded, `unrecorded` (if given) is
  // set to why: the surface tells the caller that its call took effect but is in the log only as started.
  Result<nlohmann::json> Run(const Tool& tool, const nlohmann::json& input, const CallContext& ctx,
                             std::string* unrecorded = nullptr) const;
  // The authorizer: role in the call's org, token scopes, platform tools. OK, kNotFound (the org is not reached: as
  // if it did not exist) or kForbidden naming what is missing.
  Status Authorize(const Tool& tool, const CallContext& ctx) const;
  Status ValidateInput(const Tool& tool, const nlohmann::json& input) const;
  void SetObserver(CallObserver observer) { observer_ = std::move(observer); }
  void SetIntentObserver(IntentObserver observer) { intent_observer_ = std::move(observer); }
  void SetToolFilter(ToolFilter filter) { filter_ = std::move(filter); }
  // Whether `identity` reaches `org` and it exists.
  bool Reaches(const Identity& identity, std::string_view org) const {
    return identity.RoleIn(org).has_value() && (!org_exists_ || org_exists_(org));
  }
  // Whether an org exists (the daemon asks its identity store); unset: every org a caller reaches exists.
  void SetOrgCheck(std::function<bool(std::string_view org)> exists) { org_exists_ = std::move(exists); }

  // The tool as GET /api/v1/tools and MCP tools/list describe it (name, title, description, inputSchema,
  // outputSchema, annotations).
  static nlohmann::json Describe(const Tool& tool);

 private:
  Status Report(std::string_view name, const Tool* tool, const nlohmann::json& input, const CallContext& ctx,
                const Result<nlohmann::json>& result) const {
    return observer_ ? observer_(name, tool, input, ctx, result) : Status{};
  }
  // The tool filter (--allow-tools, --deny-tools) holds for every caller of a listener, superadmin tokens included;
  // only the host (the unix socket, the CLI on the host) has every tool.
  // The intent observer's row for a call that may change something, unless Begin wrote it; kUnavailable when it
  // cannot be recorded.
  Status RecordIntent(const Tool& tool, const nlohmann::json& input, const CallContext& ctx) const;
  bool MaySee(const Tool& tool, const Identity& identity) const {
    return identity.kind == identity::PrincipalKind::kSuperadmin || !filter_ || filter_(tool.name);
  }
  CallObserver observer_;
  IntentObserver intent_observer_;
  ToolFilter filter_;
  std::function<bool(std::string_view)> org_exists_;
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Tool>, std::less<>> tools_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::api
