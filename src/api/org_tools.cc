// The org tools. The authorizer has checked the caller's role in the call's org; Orgs then checks the rules that
// depend on the data (only owners touch owners, the last owner stays).
#include "api/org_tools.h"

#include "api/schema.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
using identity::Role;
using identity::ScopeKind;

json OrgJson(const identity::Org& o) {
  return {{"id", o.id},
          {"name", o.name},
          {"created_at", o.created_at},
          {"display_name", o.display_name},
          {"description", o.description}};
}

json OrgSchema() {
  return Output({{"id", {{"type", "integer"}}},
                 {"name", {{"type", "string"}}},
                 {"created_at", {{"type", "integer"}}},
                 {"display_name", {{"type", "string"}}},
                 {"description", {{"type", "string"}}}},
                {"id", "name"});
}

json QuotaJson(const identity::Quota& q) {
  json out = json::object();
  out["cpus"] = q.cpus ? json(*q.cpus) : json(nullptr);
  out["memory"] = q.memory ? json(*q.memory) : json(nullptr);
  out["instances"] = q.instances ? json(*q.instances) : json(nullptr);
  out["disk"] = q.disk ? json(*q.disk) : json(nullptr);
  out["pids"] = q.pids ? json(*q.pids) : json(nullptr);
  return out;
}

json QuotaSchema() {
  return {{"type", "object"},
          {"description", "null: no limit."},
          {"properties",
           {{"cpus", {{"type", {"number", "null"}}}},
            {"memory", {{"type", {"integer", "null"}}}},
            {"instances", {{"type", {"integer", "null"}}}},
            {"disk", {{"type", {"integer", "null"}}}},
            {"pids", {{"type", {"integer", "null"}}}}}}};
}

json MemberJson(const identity::Member& m) {
  return {{"user_id", m.user_id}, {"user", m.user_name}, {"role", identity::RoleName(m.role)}};
}

json RoleField(const char* desc) {
  return {{"type", "string"}, {"enum", {"viewer", "member", "admin", "owner"}}, {"description", desc}};
}

json OrgName() { return Str("The org's name: lower-case letters, digits and '-'.", 64, 1); }
json UserName() { return Str("The user's name.", 64, 1); }

Result<int64_t> UserId(identity::IdentityStore& store, const json& in) {
  ISB_ASSIGN_OR_RETURN(identity::User user, store.users().Find(in["user"].get<std::string>()));
  return user.id;
}

Status AddOrgLifecycle(Registry& reg, identity::IdentityStore& store) {
  ISB_TRY(reg.Add(Tool{"org_list", "List orgs", "The orgs the caller reaches.", Object({}, {}),
                       Output({{"orgs", {{"type", "array"}, {"items", OrgSchema()}}}}, {"orgs"}),
                       ToolAnnotations{.read_only = true, .idempotent = true}, false,
                       [&store](const json&, const CallContext& ctx) -> Result<json> {
                         ISB_ASSIGN_OR_RETURN(auto orgs, store.orgs().ListFor(ctx.identity));
                         json out = json::array();
                         for (const auto& o : orgs) out.push_back(OrgJson(o));
                         return json{{"orgs", std::move(out)}};
                       },
                       ToolAccess{.kind = ScopeKind::kRead, .org_bound = false}}));

  json with_quota = OrgSchema();
  with_quota["properties"]["quota"] = QuotaSchema();
  ISB_TRY(reg.Add(Tool{"org_get", "Get the org", "The org the call acts in, with its quota.", Object({}, {}),
                       with_quota, ToolAnnotations{.read_only = true, .idempotent = true}, false,
                       [&store](const json&, const CallContext& ctx) -> Result<json> {
                         ISB_ASSIGN_OR_RETURN(identity::Org org, store.orgs().Get(ctx.org));
                         ISB_ASSIGN_OR_RETURN(identity::Quota quota, store.orgs().GetQuota(ctx.org));
                         json out = OrgJson(org);
                         out["quota"] = QuotaJson(quota);
                         return out;
                       }}));

  ISB_TRY(reg.Add(
      Tool{"org_update", "Change the org",
           "Changes the call's org's display name and description (owners). An absent field stays as it is. The org's "
           "name is its identifier (in URLs, token scopes and the audit log) and does not change.",
           Object({{"display_name", Str("What people see; \"\" for none.", 128)},
                   {"description", Str("A line about the org; \"\" for none.", 1024)}},
                  {}),
           OrgSchema(), ToolAnnotations{.idempotent = true}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             identity::OrgUpdate update;
             if (in.contains("display_name")) update.display_name = in["display_name"].get<std::string>();
             if (in.contains("description")) update.description = in["description"].get<std::string>();
             ISB_ASSIGN_OR_RETURN(identity::Org org, store.orgs().Update(ctx.identity, ctx.org, update));
             return OrgJson(org);
           },
           ToolAccess{.least_role = Role::kOwner, .kind = ScopeKind::kAdmin}}));

  ISB_TRY(reg.Add(Tool{
      "org_quota_set", "Set the org's quota",
      "Replaces the call's org's quota (platform admins): the most cpus, memory (bytes), disk (bytes of writable "
      "layers and of the org's images), pids (processes and threads) and sandboxes its sandboxes "
      "may be allocated in all, running or stopped. An absent field is no limit. sandbox_create is refused beyond it, "
      "naming the quota and the current use.",
      Object({{"cpus", {{"type", "number"}, {"minimum", 0.001}, {"maximum", 1e6}, {"description", "Cores."}}},
              {"memory", Int("Bytes.", 1, INT64_MAX)},
              {"instances", Int("Sandboxes.", 0, 1000000)},
              {"disk", Int("Bytes of writable layers (each sandbox's disk) and of the org's images.", 1, INT64_MAX)},
              {"pids", Int("Processes and threads (each sandbox's pids).", 1, INT64_MAX)}},
             {}),
      with_quota, ToolAnnotations{.idempotent = true}, false,
      [&store](const json& in, const CallContext& ctx) -> Result<json> {
        identity::Quota q;
        if (in.contains("cpus")) q.cpus = in["cpus"].get<double>();
        if (in.contains("memory")) q.memory = in["memory"].get<int64_t>();
        if (in.contains("instances")) q.instances = in["instances"].get<int64_t>();
        if (in.contains("disk")) q.disk = in["disk"].get<int64_t>();
        if (in.contains("pids")) q.pids = in["pids"].get<int64_t>();
        if (Status set = store.orgs().SetQuota(ctx.identity, ctx.org, q); !set.ok()) return set.error();
        ISB_ASSIGN_OR_RETURN(identity::Org org, store.orgs().Get(ctx.org));
        json out = OrgJson(org);
        out["quota"] = QuotaJson(q);
        return out;
      },
      ToolAccess{.least_role = Role::kOwner, .kind = ScopeKind::kAdmin, .platform = true}}));

  ISB_TRY(reg.Add(
      Tool{"org_create", "Create an org", "Creates an org (platform admins). Its members are added with member_add.",
           Object({{"name", OrgName()}}, {"name"}), OrgSchema(), ToolAnnotations{}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             std::string name = in["name"].get<std::string>();
             // (not ISB_TRY: this lambda sits inside one)
             if (auto created = store.orgs().Create(ctx.identity, name); !created.ok()) return created.error();
             ISB_ASSIGN_OR_RETURN(identity::Org org, store.orgs().Get(name));
             return OrgJson(org);
           },
           ToolAccess{.least_role = Role::kOwner, .kind = ScopeKind::kAdmin, .org_bound = false, .platform = true}}));

  return reg.Add(
      Tool{"org_delete", "Delete an org",
           "Deletes an org with its memberships, tokens and invitations (platform admins). The default org cannot be "
           "deleted, nor an org that still has sandboxes (remove them first). Its audit records and history keep its "
           "name, which no new org can take while they do.",
           Object({{"name", OrgName()}}, {"name"}),
           Output({{"name", {{"type", "string"}}}, {"deleted", {{"type", "boolean"}}}}, {"name", "deleted"}),
           ToolAnnotations{.destructive = true}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             std::string name = in["name"].get<std::string>();
             ISB_TRY(store.orgs().Delete(ctx.identity, name));
             return json{{"name", name}, {"deleted", true}};
           },
           ToolAccess{.least_role = Role::kOwner, .kind = ScopeKind::kAdmin, .org_bound = false, .platform = true}});
}

Status AddMemberTools(Registry& reg, identity::IdentityStore& store) {
  json member =
      Output({{"user_id", {{"type", "integer"}}}, {"user", {{"type", "string"}}}, {"role", {{"type", "string"}}}},
             {"user", "role"});
  ToolAccess admin{.least_role = Role::kAdmin, .kind = ScopeKind::kAdmin};
  ISB_TRY(reg.Add(Tool{"member_list", "List the org's members", "Every member of the call's org with its role.",
                       Object({}, {}), Output({{"members", {{"type", "array"}, {"items", member}}}}, {"members"}),
                       ToolAnnotations{.read_only = true, .idempotent = true}, false,
                       [&store](const json&, const CallContext& ctx) -> Result<json> {
                         ISB_ASSIGN_OR_RETURN(auto members, store.orgs().Members(ctx.org));
                         json out = json::array();
                         for (const auto& m : members) out.push_back(MemberJson(m));
                         return json{{"members", std::move(out)}};
                       }}));

  auto change = [&store](bool add) {
    return [&store, add](const json& in, const CallContext& ctx) -> Result<json> {
      ISB_ASSIGN_OR_RETURN(int64_t user, UserId(store, in));
      ISB_ASSIGN_OR_RETURN(Role role, identity::ParseRole(in["role"].get<std::string>()));
      Status changed = add ? store.orgs().AddMember(ctx.identity, ctx.org, user, role)
                           : store.orgs().ChangeRole(ctx.identity, ctx.org, user, role);
      if (!changed.ok()) return changed.error();
      return json{{"user_id", user}, {"user", in["user"]}, {"role", identity::RoleName(role)}};
    };
  };
  json user_role =
      Object({{"user", UserName()}, {"role", RoleField("viewer < member < admin < owner.")}}, {"user", "role"});
  ISB_TRY(reg.Add(Tool{"member_add", "Add a member", "Adds a user to the call's org (admins; owners add owners).",
                       user_role, member, ToolAnnotations{}, false, change(true), admin}));
  ISB_TRY(reg.Add(Tool{"member_update", "Change a member's role",
                       "Changes a member's role (admins; only owners make or unmake owners; the last owner stays).",
                       user_role, member, ToolAnnotations{.idempotent = true}, false, change(false), admin}));
  return reg.Add(Tool{"member_remove", "Remove a member",
                      "Removes a user from the call's org (admins; the last owner stays).",
                      Object({{"user", UserName()}}, {"user"}),
                      Output({{"user", {{"type", "string"}}}, {"removed", {{"type", "boolean"}}}}, {"user", "removed"}),
                      ToolAnnotations{.destructive = true, .idempotent = true}, false,
                      [&store](const json& in, const CallContext& ctx) -> Result<json> {
                        ISB_ASSIGN_OR_RETURN(int64_t user, UserId(store, in));
                        ISB_TRY(store.orgs().RemoveMember(ctx.identity, ctx.org, user));
                        return json{{"user", in["user"]}, {"removed", true}};
                      },
                      admin});
}

Status AddInvitationAndSessionTools(Registry& reg, identity::IdentityStore& store) {
  ISB_TRY(reg.Add(
      Tool{"invitation_create", "Invite someone to the org",
           "Mints an isb_inv_ invitation to the call's org with a role (admins; owners invite owners), valid 7 days. "
           "The secret is in the result once; hand it to the invitee, who accepts it with invitation_accept.",
           Object({{"role", RoleField("The role the invitee gets.")}}, {"role"}),
           Output({{"invitation", {{"type", "string"}}},
                   {"id", {{"type", "integer"}}},
                   {"org", {{"type", "string"}}},
                   {"role", {{"type", "string"}}},
                   {"expires_at", {{"type", "integer"}}}},
                  {"invitation", "id", "org", "role", "expires_at"}),
           ToolAnnotations{}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             ISB_ASSIGN_OR_RETURN(Role role, identity::ParseRole(in["role"].get<std::string>()));
             ISB_ASSIGN_OR_RETURN(identity::NewInvitation inv, store.invitations().Create(ctx.identity, ctx.org, role));
             return json{{"invitation", inv.secret},
                         {"id", inv.id},
                         {"org", inv.org},
                         {"role", identity::RoleName(inv.role)},
                         {"expires_at", inv.expires_at}};
           },
           ToolAccess{.least_role = Role::kAdmin, .kind = ScopeKind::kAdmin}}));

  json invitation = Output({{"id", {{"type", "integer"}}},
                            {"role", {{"type", "string"}}},
                            {"created_by", {{"type", "string"}}},
                            {"created_at", {{"type", "integer"}}},
                            {"expires_at", {{"type", "integer"}}},
                            {"state", {{"type", "string"}, {"enum", {"pending", "accepted", "revoked", "expired"}}}}},
                           {"id", "role", "created_at", "expires_at", "state"});
  ISB_TRY(reg.Add(Tool{"invitation_list", "List the org's invitations",
                       "The call's org's invitations, newest first, with their state (admins). Never their secrets.",
                       Object({}, {}),
                       Output({{"invitations", {{"type", "array"}, {"items", invitation}}}}, {"invitations"}),
                       ToolAnnotations{.read_only = true, .idempotent = true}, false,
                       [&store](const json&, const CallContext& ctx) -> Result<json> {
                         ISB_ASSIGN_OR_RETURN(auto list, store.invitations().List(ctx.identity, ctx.org));
                         json out = json::array();
                         for (const auto& i : list) {
                           out.push_back({{"id", i.id},
                                          {"role", identity::RoleName(i.role)},
                                          {"created_by", i.created_by},
                                          {"created_at", i.created_at},
                                          {"expires_at", i.expires_at},
                                          {"state", i.state}});
                         }
                         return json{{"invitations", std::move(out)}};
                       },
                       ToolAccess{.least_role = Role::kAdmin, .kind = ScopeKind::kAdmin}}));

  ISB_TRY(reg.Add(
      Tool{"invitation_revoke", "Revoke an invitation",
           "Revokes a pending invitation of the call's org so it can no longer be accepted (admins; owners for an "
           "invitation to owner). An accepted one is refused: remove the member with member_remove.",
           Object({{"id", Int("The invitation's id (invitation_list).", 1, INT64_MAX)}}, {"id"}),
           Output({{"id", {{"type", "integer"}}}, {"revoked", {{"type", "boolean"}}}}, {"id", "revoked"}),
           ToolAnnotations{.destructive = true, .idempotent = true}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             int64_t id = in["id"].get<int64_t>();
             if (Status revoked = store.invitations().Revoke(ctx.identity, ctx.org, id); !revoked.ok())
               return revoked.error();
             return json{{"id", id}, {"revoked", true}};
           },
           ToolAccess{.least_role = Role::kAdmin, .kind = ScopeKind::kAdmin}}));

  ISB_TRY(reg.Add(
      Tool{"invitation_accept", "Accept an invitation",
           "Joins the org an invitation names, with its role, as the calling user.",
           Object({{"invitation", Str("The isb_inv_ secret.", 128, 1)}}, {"invitation"}),
           Output({{"org", {{"type", "string"}}}, {"user", {{"type", "string"}}}, {"role", {{"type", "string"}}}},
                  {"org", "user", "role"}),
           ToolAnnotations{}, false,
           [&store](const json& in, const CallContext& ctx) -> Result<json> {
             if (ctx.identity.user_id == 0) return Error::Of(Code::kForbidden, "only a user can accept an invitation");
             auto accepted = store.invitations().Accept(in["invitation"].get<std::string>(), ctx.identity.user_id);
             // The invitation is an argument, not the call's credential: a bad one is 403, never the 401 that tells a
             // client to sign in again.
             if (!accepted.ok() && accepted.error().code == Code::kUnauthenticated)
               return Error::Of(Code::kForbidden, "invitation: " + accepted.error().message);
             if (!accepted.ok()) return accepted.error();
             return json{{"org", accepted->org},
                         {"user", accepted->member.user_name},
                         {"role", identity::RoleName(accepted->member.role)}};
           },
           ToolAccess{.kind = ScopeKind::kDeploy, .org_bound = false, .account_wide = true}}));

  json session = Output({{"id", {{"type", "integer"}}},
                         {"created_at", {{"type", "integer"}}},
                         {"expires_at", {{"type", "integer"}}},
                         {"ip", {{"type", "string"}}},
                         {"user_agent", {{"type", "string"}}},
                         {"current", {{"type", "boolean"}, {"description", "The session this call came with."}}}},
                        {"id", "created_at", "expires_at"});
  ISB_TRY(reg.Add(Tool{"session_list", "List your browser sessions",
                       "The calling user's live browser sessions, newest first.", Object({}, {}),
                       Output({{"sessions", {{"type", "array"}, {"items", session}}}}, {"sessions"}),
                       ToolAnnotations{.read_only = true, .idempotent = true}, false,
                       [&store](const json&, const CallContext& ctx) -> Result<json> {
                         json out = json::array();
                         if (ctx.identity.user_id == 0) return json{{"sessions", std::move(out)}};
                         ISB_ASSIGN_OR_RETURN(auto sessions, store.sessions().List(ctx.identity.user_id));
                         for (const auto& s : sessions) {
                           const bool current = ctx.identity.kind == identity::PrincipalKind::kSession &&
                                                ctx.identity.credential_id == s.id;
                           out.push_back({{"id", s.id},
                                          {"created_at", s.created_at},
                                          {"expires_at", s.expires_at},
                                          {"ip", s.ip},
                                          {"user_agent", s.user_agent},
                                          {"current", current}});
                         }
                         return json{{"sessions", std::move(out)}};
                       },
                       ToolAccess{.kind = ScopeKind::kRead, .org_bound = false, .account_wide = true}}));

  return reg.Add(Tool{"session_revoke", "Sign a browser session out",
                      "Ends one of the calling user's browser sessions (platform admins: anyone's).",
                      Object({{"id", Int("The session's id (session_list).", 1, INT64_MAX)}}, {"id"}),
                      Output({{"id", {{"type", "integer"}}}, {"revoked", {{"type", "boolean"}}}}, {"id", "revoked"}),
                      ToolAnnotations{.destructive = true, .idempotent = true}, false,
                      [&store](const json& in, const CallContext& ctx) -> Result<json> {
                        int64_t id = in["id"].get<int64_t>();
                        ISB_TRY(store.sessions().Revoke(ctx.identity, id));
                        return json{{"id", id}, {"revoked", true}};
                      },
                      ToolAccess{.kind = ScopeKind::kAdmin, .org_bound = false, .account_wide = true}});
}

}  // namespace

Status AddOrgTools(Registry& registry, identity::IdentityStore& store) {
  ISB_TRY(AddOrgLifecycle(registry, store));
  ISB_TRY(AddMemberTools(registry, store));
  return AddInvitationAndSessionTools(registry, store);
}

}  // namespace isb::api
