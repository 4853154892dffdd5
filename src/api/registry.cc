// Registry: lookup, input validation before every handler, and the one description all surfaces publish.
#include "api/registry.h"

#include "api/json_schema.h"
#include "api/json_util.h"
#include "api/tool_policy.h"

namespace isb::api {

using json = nlohmann::json;

Registry::Registry() = default;
Registry::~Registry() = default;

int HttpStatusFor(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
      return 400;
    case Code::kUnauthenticated:
      return 401;
    case Code::kForbidden:
      return 403;
    case Code::kNotFound:
      return 404;
    case Code::kConflict:
      return 409;
    case Code::kTooLarge:
      return 413;
    case Code::kTimeout:
      return 504;
    case Code::kUnavailable:
      return 503;
    case Code::kTooManyRequests:
      return 429;
    case Code::kInternal:
      break;
  }
  return 500;
}

Status Registry::Add(Tool tool) {
  if (!IsToolName(tool.name) || !tool.handler || !tool.input_schema.is_object() || !tool.output_schema.is_object()) {
    return Error::Of(Code::kInternal,
                     "tool '" + tool.name + "' needs a name (a-z, 0-9, _), a handler and object schemas");
  }
  MutexLock lock(mu_);
  if (tools_.count(tool.name) != 0) return Error::Of(Code::kInternal, "tool '" + tool.name + "' registered twice");
  std::string name = tool.name;
  tools_.emplace(std::move(name), std::make_unique<Tool>(std::move(tool)));
  return {};
}

const Tool* Registry::Find(std::string_view name) const {
  MutexLock lock(mu_);
  auto it = tools_.find(name);
  return it == tools_.end() ? nullptr : it->second.get();
}

std::vector<const Tool*> Registry::List() const {
  MutexLock lock(mu_);
  std::vector<const Tool*> out;
  for (const auto& [name, tool] : tools_) out.push_back(tool.get());
  return out;
}

std::vector<const Tool*> Registry::Visible(const Identity& identity) const {
  std::vector<const Tool*> out;
  for (const Tool* tool : List()) {
    if (MaySee(*tool, identity)) out.push_back(tool);
  }
  return out;
}

ToolAccess DefaultAccess(const ToolAnnotations& annotations) {
  if (annotations.read_only) return ToolAccess{};
  return ToolAccess{.least_role = identity::Role::kMember, .kind = identity::ScopeKind::kDeploy};
}

Status Registry::Authorize(const Tool& tool, const CallContext& ctx) const {
  const Identity& who = ctx.identity;
  ToolAccess access = tool.access.value_or(DefaultAccess(tool.annotations));
  if (access.platform && !who.IsPlatformAdmin()) {
    return Error::Of(Code::kForbidden, tool.name + " needs a platform admin");
  }
  if (access.account_wide && who.OrgScoped()) {
    return Error::Of(Code::kForbidden, "a token scoped to org '" + who.org_scope + "' may not call " + tool.name +
                                           ", which acts beyond that org");
  }
  identity::Role role = identity::Role::kOwner;  // about the caller itself: only its cap and scopes narrow it
  if (access.org_bound) {
    if (!Reaches(who, ctx.org)) return Error::Of(Code::kNotFound, "no org '" + ctx.org + "'");
    role = *who.RoleIn(ctx.org);
  } else if (who.role_cap) {
    role = std::min(role, *who.role_cap);
  }
  // A viewer calls read-only tools only, whatever a tool declares (a token capped at viewer included).
  identity::Role least = access.least_role;
  if (!tool.annotations.read_only) least = std::max(least, identity::Role::kMember);
  return identity::May(role, who.scopes, least, access.kind, tool.name);
}

Status Registry::ValidateInput(const Tool& tool, const json& input) const {
  if (!input.is_object()) {
    return Error::Of(Code::kInvalidArgument, std::string("input: expected object, got ") + JsonTypeName(input));
  }
  return Validate(tool.input_schema, input);
}

Result<const Tool*> Registry::Admit(std::string_view name, const json& input, const CallContext& ctx) const {
  const Tool* tool = Find(name);
  auto refuse = [&](Error error) -> Result<const Tool*> {
    (void)Report(name, tool, input, ctx, Result<json>(error));
    return error;
  };
  if (tool == nullptr || !MaySee(*tool, ctx.identity)) {
    tool = nullptr;
    return refuse(Error::Of(Code::kNotFound, "unknown tool '" + SanitizeUtf8(name.substr(0, 100)) + "'"));
  }
  if (Status st = Authorize(*tool, ctx); !st.ok()) return refuse(st.error());
  if (Status st = ValidateInput(*tool, input); !st.ok()) return refuse(st.error());
  return tool;
}

Result<json> Registry::Call(std::string_view name, const json& input, const CallContext& ctx) const {
  ISB_ASSIGN_OR_RETURN(const Tool* tool, Admit(name, input, ctx));
  return Run(*tool, input, ctx);
}

namespace {

// What a tool's code returns, or kInternal for what it throws: never an exception out of the registry.
template <class R, class F>
R Guarded(const Tool& tool, F run) {
  try {
    return run();
  } catch (const std::exception& e) {
    return Error::Of(Code::kInternal, "tool " + tool.name + " failed: " + e.what());
  }
}

}  // namespace

Status Registry::Recheck(std::string_view name, const json& input, const CallContext& ctx) const {
  const Tool* tool = FindVisible(name, ctx.identity);
  if (tool == nullptr) return Error::Of(Code::kNotFound, "unknown tool '" + SanitizeUtf8(name.substr(0, 100)) + "'");
  ISB_TRY(Authorize(*tool, ctx));
  ISB_TRY(ValidateInput(*tool, input));
  if (!tool->precheck) return {};
  return Guarded<Status>(*tool, [&] { return tool->precheck(input, ctx); });
}

Status Registry::Precheck(const Tool& tool, const json& input, const CallContext& ctx) const {
  if (!tool.precheck) return {};
  Status checked = Guarded<Status>(tool, [&] { return tool.precheck(input, ctx); });
  if (!checked.ok()) (void)Report(tool.name, &tool, input, ctx, Result<json>(checked.error()));
  return checked;
}

Status Registry::RecordIntent(const Tool& tool, const json& input, const CallContext& ctx) const {
  if (tool.annotations.read_only || !intent_observer_ || ctx.intent_recorded) return {};
  Status recorded = Guarded<Status>(tool, [&] { return intent_observer_(tool.name, tool, input, ctx); });
  if (recorded.ok()) return {};
  return Error::Of(Code::kUnavailable, tool.name + " was not run, so nothing changed: " + recorded.error().message);
}

Status Registry::Begin(const Tool& tool, const json& input, CallContext& ctx) const {
  ISB_TRY(Precheck(tool, input, ctx));
  ISB_TRY(RecordIntent(tool, input, ctx));
  ctx.intent_recorded = true;
  return {};
}

Result<json> Registry::Run(const Tool& tool, const json& input, const CallContext& ctx, std::string* unrecorded) const {
  ISB_TRY(RecordIntent(tool, input, ctx));
  Result<json> result = Guarded<Result<json>>(tool, [&] { return tool.handler(input, ctx); });
  Status recorded = Guarded<Status>(tool, [&] { return Report(tool.name, &tool, input, ctx, result); });
  if (!recorded.ok() && unrecorded != nullptr) *unrecorded = recorded.error().message;
  return result;
}

json Registry::Describe(const Tool& tool) {
  const ToolAnnotations& a = tool.annotations;
  json annotations = {{"title", tool.title},
                      {"readOnlyHint", a.read_only},
                      {"destructiveHint", !a.read_only && a.destructive},
                      {"idempotentHint", a.idempotent},
                      {"openWorldHint", a.open_world}};
  return {{"name", tool.name},
          {"title", tool.title},
          {"description", tool.description},
          {"inputSchema", tool.input_schema},
          {"outputSchema", tool.output_schema},
          {"annotations", std::move(annotations)}};
}

}  // namespace isb::api
