// The accountability tools. The authorizer has checked the caller's role in the call's org; the handlers keep every
// answer inside that org (audit rows by their org column, history through the org's view of the sandboxes).
#include "api/audit_tools.h"

#include "api/org_sandboxes.h"
#include "api/schema.h"
#include "audit/verify_report.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
using identity::Role;
using identity::ScopeKind;

json Page() {
  return {{"after", Int("Only rows with a larger id: the next_after of the previous page.", 0, INT64_MAX)},
          {"limit", Int("At most this many rows (default 100).", 1, audit::kMaxListLimit)}};
}

json Rows(const char* name, json item) {
  return Output({{name, {{"type", "array"}, {"items", std::move(item)}}},
                 {"next_after", {{"type", {"integer", "null"}}, {"description", "Pass as after for the next page."}}}},
                {name, "next_after"});
}

// The last id of a full page, else null: nothing more to fetch.
json NextAfter(size_t rows, int64_t limit, int64_t last_id) {
  return static_cast<int64_t>(rows) >= limit && rows > 0 ? json(last_id) : json(nullptr);
}

int64_t LimitOf(const json& in) { return in.contains("limit") ? in["limit"].get<int64_t>() : 100; }

std::string TextOr(const json& in, const char* key) { return in.contains(key) ? in[key].get<std::string>() : ""; }

Status AddAuditList(Registry& reg, audit::AuditLog& log) {
  json props = Page();
  props["actor"] = Str("Only this actor (\"user:NAME\", \"token:ID\", ...).", 200, 1);
  props["action"] = Str("Only this action: a tool's name or an event such as sign_in.", 100, 1);
  props["since"] = Int("Only rows at or after this time (unix milliseconds).", 0, INT64_MAX);
  props["latest"] = Bool(
      "The last `limit` matching rows instead of the first (still oldest first); next_after is "
      "then null.");
  props["until"] = Int("Only rows before this time (unix milliseconds).", 0, INT64_MAX);
  props["platform"] = Bool(
      "Platform admins: the rows of no org instead of the call's org's: sign-ins and sign-outs, "
      "setup, refused credentials (events before any org is known).");
  json record = Output({{"id", {{"type", "integer"}}},
                        {"time", {{"type", "integer"}}},
                        {"org", {{"type", "string"}}},
                        {"actor", {{"type", "string"}}},
                        {"action", {{"type", "string"}}},
                        {"outcome", {{"type", "string"}}},
                        {"hash", {{"type", "string"}}}},
                       {"id", "time", "org", "actor", "action", "outcome", "hash"});
  return reg.Add(Tool{
      "audit_list", "List the org's audit log",
      "The call's org's audit records in id order (admins): who did what, from where, with what outcome. Page with "
      "after = next_after.",
      Object(std::move(props), {}), Rows("records", std::move(record)),
      ToolAnnotations{.read_only = true, .idempotent = true}, false,
      [&log](const json& in, const CallContext& ctx) -> Result<json> {
        audit::Filter f;
        f.org = ctx.org;  // never another org's rows, whoever calls
        if (in.value("platform", false)) {
          if (!ctx.identity.IsPlatformAdmin())
            return Error::Of(Code::kForbidden, "platform: only platform admins read the rows of no org");
          f.no_org = true;
        }
        f.actor = TextOr(in, "actor");
        f.action = TextOr(in, "action");
        if (in.contains("since")) f.since_ms = in["since"].get<int64_t>();
        if (in.contains("until")) f.until_ms = in["until"].get<int64_t>();
        if (in.contains("after")) f.after_id = in["after"].get<int64_t>();
        f.limit = LimitOf(in);
        f.latest = in.value("latest", false);
        ISB_ASSIGN_OR_RETURN(auto records, log.List(f));
        json out = json::array();
        for (const auto& r : records) out.push_back(audit::ToJson(r));
        return json{
            {"records", std::move(out)},
            {"next_after",
             f.latest ? json(nullptr) : NextAfter(records.size(), f.limit, records.empty() ? 0 : records.back().id)}};
      },
      ToolAccess{.least_role = Role::kAdmin, .kind = ScopeKind::kAdmin}});
}

Status AddAuditVerify(Registry& reg, audit::AuditLog& log, audit::History& history) {
  json report = Output({{"ok", {{"type", "boolean"}}}, {"rows", {{"type", "integer"}}}}, {"ok", "rows"});
  return reg.Add(
      Tool{"audit_verify", "Verify the audit chains",
           "Walks the audit log's and the sandbox history's hash chains (platform admins): ok, row counts, heads, and "
           "the first broken row if any.",
           Object({}, {}), Output({{"audit_log", report}, {"history", report}}, {"audit_log", "history"}),
           ToolAnnotations{.read_only = true, .idempotent = true}, false,
           [&log, &history](const json&, const CallContext&) -> Result<json> {
             ISB_ASSIGN_OR_RETURN(audit::VerifyResult l, log.Verify());
             ISB_ASSIGN_OR_RETURN(audit::VerifyResult h, history.Verify());
             return json{{"audit_log", audit::VerifyReportJson(l)}, {"history", audit::VerifyReportJson(h)}};
           },
           ToolAccess{.least_role = Role::kOwner, .kind = ScopeKind::kAdmin, .org_bound = false, .platform = true}});
}

Status AddHistoryQuery(Registry& reg, audit::History& history, Sandboxes& sandboxes) {
  json props = Page();
  props["sandbox"] = Str("The sandbox's id or name, in the call's org; without it, every sandbox of the org.", 128, 1);
  json event = Output({{"id", {{"type", "integer"}}},
                       {"time", {{"type", "integer"}}},
                       {"sandbox", {{"type", "string"}}},
                       {"event", {{"type", "string"}}},
                       {"actor", {{"type", "string"}}},
                       {"actor_kind", {{"type", "string"}}},
                       {"reason", {{"type", "string"}}}},
                      {"id", "time", "sandbox", "event"});
  return reg.Add(Tool{
      "history_query", "Sandbox history",
      "The lifecycle events of one of the call's org's sandboxes, or without sandbox of all of them, removed ones "
      "included (created, started, stopped, oom, reaped, adopted, removed, extended), who asked and why, in order.",
      Object(std::move(props), {}), Rows("events", std::move(event)),
      ToolAnnotations{.read_only = true, .idempotent = true}, false,
      [&history, &sandboxes](const json& in, const CallContext& ctx) -> Result<json> {
        audit::HistoryFilter f;
        if (in.contains("sandbox")) {
          // Another org's sandbox is "no sandbox 'REF'", as one that does not exist.
          OrgSandboxes mine(sandboxes, ctx);
          ISB_ASSIGN_OR_RETURN(SandboxInfo info, mine.Get(in["sandbox"].get<std::string>()));
          f.sandbox = info.id;  // all its events, also those recorded before history rows carried the org
        } else {
          f.org = ctx.org;  // each event carries its sandbox's org (isb.org label)
        }
        if (in.contains("after")) f.after_id = in["after"].get<int64_t>();
        f.limit = LimitOf(in);
        ISB_ASSIGN_OR_RETURN(auto events, history.Query(f));
        json out = json::array();
        for (const auto& e : events) {
          out.push_back({{"id", e.id},
                         {"time", e.time_ms},
                         {"sandbox", e.entry.sandbox},
                         {"event", e.entry.event},
                         {"actor", e.entry.actor},
                         {"actor_kind", e.entry.actor_kind},
                         {"reason", e.entry.reason},
                         {"request_id", e.entry.request_id}});
        }
        return json{{"events", std::move(out)},
                    {"next_after", NextAfter(events.size(), f.limit, events.empty() ? 0 : events.back().id)}};
      }});
}

}  // namespace

Status AddAuditTools(Registry& registry, audit::AuditLog& log, audit::History& history, Sandboxes& sandboxes) {
  ISB_TRY(AddAuditList(registry, log));
  ISB_TRY(AddAuditVerify(registry, log, history));
  return AddHistoryQuery(registry, history, sandboxes);
}

}  // namespace isb::api
