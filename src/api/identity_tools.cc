// The identity tools. The authorizer has judged role and scope before a handler runs; the store then judges what
// the data decides (whose token, which org), so neither check stands alone.
#include "api/identity_tools.h"

#include <ctime>

#include "api/schema.h"
#include "identity/tokens.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
using identity::Principal;

json RolesJson(const Principal& who) {
  json roles = json::object();
  for (const auto& [org, role] : who.roles) {
    if (auto effective = who.RoleIn(org)) roles[org] = identity::RoleName(*effective);
  }
  return roles;
}

json TokenJson(const identity::TokenRecord& t) {
  json out = {{"id", t.id},
              {"name", t.name},
              {"kind", t.kind == identity::SecretKind::kSuperadmin ? "superadmin" : "token"},
              {"org", t.org},
              {"user_id", t.user_id},
              {"scopes", identity::FormatScopes(t.scopes)},
              {"created_at", t.created_at}};
  out["role"] = t.role_cap ? json(identity::RoleName(*t.role_cap)) : json(nullptr);
  out["expires_at"] = t.expires_at ? json(*t.expires_at) : json(nullptr);
  out["revoked_at"] = t.revoked_at ? json(*t.revoked_at) : json(nullptr);
  out["last_used_at"] = t.last_used_at ? json(*t.last_used_at) : json(nullptr);
  return out;
}

json TokenSchema() {
  return Output({{"id", {{"type", "integer"}}},
                 {"name", {{"type", "string"}}},
                 {"kind", {{"type", "string"}, {"enum", {"token", "superadmin"}}}},
                 {"org", {{"type", "string"}, {"description", "\"\": every org the user reaches."}}},
                 {"user_id", {{"type", "integer"}}},
                 {"role", {{"type", {"string", "null"}}}},
                 {"scopes", {{"type", "string"}}},
                 {"created_at", {{"type", "integer"}}},
                 {"expires_at", {{"type", {"integer", "null"}}}},
                 {"revoked_at", {{"type", {"integer", "null"}}}},
                 {"last_used_at", {{"type", {"integer", "null"}}}}},
                {"id", "name", "kind", "org", "scopes", "created_at"});
}

json UserJson(const identity::User& u) {
  return {{"id", u.id},
          {"name", u.name},
          {"platform_admin", u.platform_admin},
          {"disabled", u.disabled},
          {"has_password", u.has_password},
          {"created_at", u.created_at}};
}

// About the caller itself: no org to reach; scopes still narrow it.
ToolAccess Self(identity::ScopeKind kind) { return ToolAccess{.kind = kind, .org_bound = false}; }

// expires_in (seconds from now) as unix seconds; unset without it.
std::optional<int64_t> ExpiresAt(const json& in) {
  if (!in.contains("expires_in")) return std::nullopt;
  return static_cast<int64_t>(std::time(nullptr)) + in["expires_in"].get<int64_t>();
}

Result<identity::TokenSpec> TokenSpecFrom(const json& in, identity::IdentityStore& store, const Principal& caller) {
  identity::TokenSpec spec;
  spec.name = in.value("name", "");
  spec.org = in.value("org", "");
  if (in.contains("role")) {
    ISB_ASSIGN_OR_RETURN(identity::Role role, identity::ParseRole(in["role"].get<std::string>()));
    spec.role_cap = role;
  }
  ISB_ASSIGN_OR_RETURN(spec.scopes, identity::ParseScopes(in.value("scopes", "")));
  spec.expires_at = ExpiresAt(in);
  if (in.contains("user")) {
    if (!caller.superadmin) return Error::Of(Code::kForbidden, "user: only the host mints a token for another user");
    ISB_ASSIGN_OR_RETURN(identity::User user, store.users().Find(in["user"].get<std::string>()));
    spec.user_id = user.id;
  }
  return spec;
}

Status AddTokenTools(Registry& reg, identity::IdentityStore& store) {
  ISB_TRY(reg.Add(Tool{
      "token_create", "Create an API token",
      "Mints an isb_tok_ bearer token for the caller (a signed-in user or the host; a token can never mint a token). "
      "The secret is in the result once and never again; isb keeps only its SHA-256. org scopes it to one org; "
      "role caps the role; scopes (comma-separated: read, deploy, admin, metrics, tool:GLOB) only narrow it. "
      "superadmin (host only) mints an isb_sa_ token instead.",
      Object({{"name", Str("What you call it.", 64, 1)},
              {"org", Str("The one org it reaches; absent: every org the user reaches.", 64)},
              {"role",
               {{"type", "string"},
                {"enum", {"viewer", "member", "admin", "owner"}},
                {"description", "A cap on the user's role."}}},
              {"scopes", Str("Comma-separated scopes: read, deploy, admin, metrics, tool:GLOB.", 1024)},
              {"expires_in", Int("Seconds until it expires; absent: never.", 60, 10LL * 365 * 86400)},
              {"user", Str("Host only: the user it is minted for.", 64, 1)},
              {"superadmin", Bool("Host only: a superadmin token (isb_sa_).")}},
             {"name"}),
      Output({{"token", {{"type", "string"}, {"description", "The secret, shown once."}}}, {"record", TokenSchema()}},
             {"token", "record"}),
      ToolAnnotations{}, false,
      [&store](const json& in, const CallContext& ctx) -> Result<json> {
        Result<identity::NewToken> minted = Error::Of(Code::kInternal, "unset");
        if (in.value("superadmin", false)) {
          minted = store.tokens().CreateSuperadmin(ctx.identity, in["name"].get<std::string>(), ExpiresAt(in));
        } else {
          ISB_ASSIGN_OR_RETURN(identity::TokenSpec spec, TokenSpecFrom(in, store, ctx.identity));
          minted = store.tokens().Create(ctx.identity, spec);
        }
        if (!minted.ok()) return minted.error();
        return json{{"token", minted->secret}, {"record", TokenJson(minted->record)}};
      },
      Self(identity::ScopeKind::kAdmin)}));

  ISB_TRY(reg.Add(Tool{
      "token_list", "List API tokens",
      "The caller's own tokens, newest first (the host: every token). With org: the tokens scoped to that org, for "
      "its admins. Never a secret.",
      Object({{"org", Str("List the tokens scoped to this org (admins of it).", 64, 1)}}, {}),
      Output({{"tokens", {{"type", "array"}, {"items", TokenSchema()}}}}, {"tokens"}),
      ToolAnnotations{.read_only = true, .idempotent = true}, false,
      [&store](const json& in, const CallContext& ctx) -> Result<json> {
        auto list = in.contains("org") ? store.tokens().ListOrg(ctx.identity, in["org"].get<std::string>())
                                       : store.tokens().List(ctx.identity);
        if (!list.ok()) return list.error();
        json out = json::array();
        for (const auto& t : *list) out.push_back(TokenJson(t));
        return json{{"tokens", std::move(out)}};
      },
      Self(identity::ScopeKind::kRead)}));

  return reg.Add(Tool{
      "token_revoke", "Revoke an API token",
      "Revokes a token at once: the owner, an admin of its org or a platform admin may. A token the caller may not "
      "revoke is reported as not found. An OAuth client's token ends the client's whole grant.",
      Object({{"id", Int("The token's id (token_list).", 1, INT64_MAX)}}, {"id"}),
      Output({{"id", {{"type", "integer"}}}, {"revoked", {{"type", "boolean"}}}}, {"id", "revoked"}),
      ToolAnnotations{.destructive = true, .idempotent = true}, false,
      [&store](const json& in, const CallContext& ctx) -> Result<json> {
        int64_t id = in["id"].get<int64_t>();
        ISB_TRY(store.tokens().Revoke(ctx.identity, id));
        // An OAuth client's access token ends its whole grant: the newer access token and the refresh token too.
        ISB_TRY(store.oauth().RevokeGrantOf(id));
        return json{{"id", id}, {"revoked", true}};
      },
      Self(identity::ScopeKind::kAdmin)});
}

Status AddUserTools(Registry& reg, identity::IdentityStore& store) {
  json user_schema = Output({{"id", {{"type", "integer"}}},
                             {"name", {{"type", "string"}}},
                             {"platform_admin", {{"type", "boolean"}}},
                             {"disabled", {{"type", "boolean"}}},
                             {"has_password", {{"type", "boolean"}}},
                             {"created_at", {{"type", "integer"}}}},
                            {"id", "name"});
  ISB_TRY(reg.Add(Tool{
      "user_create", "Create a user",
      "Creates an account (platform admins). Without a password it cannot sign in until one is set; it can still "
      "be given tokens by the host.",
      Object({{"name", Str("Letters, digits, '.', '_', '-'.", 64, 1)},
              {"password", Str("At least 12 characters.", 1024)},
              {"platform_admin", Bool("Platform admin: every org, creates and removes orgs.")},
              {"first_admin", Bool("isb setup: the first platform admin, made only while no enabled one exists (that "
                                   "check and the creation are one step); the setup token is used up.")}},
             {"name"}),
      user_schema, ToolAnnotations{}, false,
      [&store](const json& in, const CallContext&) -> Result<json> {
        const bool first = in.value("first_admin", false);
        const bool admin = first || in.value("platform_admin", false);
        const std::string name = in["name"].get<std::string>(), password = in.value("password", "");
        // Any platform admin ends the setup token (it must not come back to life when every admin is disabled),
        // under the lock the setup route takes: one cannot slip in between.
        ISB_ASSIGN_OR_RETURN(int64_t id, first   ? store.setup().CreateFirstAdminAsHost(name, password)
                                         : admin ? store.setup().CreatePlatformAdmin(name, password)
                                                 : store.users().Create(name, password, false));
        ISB_ASSIGN_OR_RETURN(identity::User user, store.users().Get(id));
        return UserJson(user);
      },
      ToolAccess{.least_role = identity::Role::kOwner,
                 .kind = identity::ScopeKind::kAdmin,
                 .org_bound = false,
                 .platform = true}}));

  ISB_TRY(reg.Add(Tool{"user_list", "List users", "Every account (platform admins).", Object({}, {}),
                       Output({{"users", {{"type", "array"}, {"items", user_schema}}}}, {"users"}),
                       ToolAnnotations{.read_only = true, .idempotent = true}, false,
                       [&store](const json&, const CallContext&) -> Result<json> {
                         ISB_ASSIGN_OR_RETURN(auto users, store.users().List());
                         json out = json::array();
                         for (const auto& u : users) out.push_back(UserJson(u));
                         return json{{"users", std::move(out)}};
                       },
                       ToolAccess{.least_role = identity::Role::kViewer,
                                  .kind = identity::ScopeKind::kAdmin,
                                  .org_bound = false,
                                  .platform = true}}));

  ISB_TRY(reg.Add(
      Tool{"user_revoke", "Revoke a user",
           "Takes an account away (platform admins): it can no longer sign in, and every session and token it has is "
           "revoked at once. Its memberships stay, for the record. The last platform admin cannot be revoked.",
           Object({{"name", Str("The account's name.", 64, 1)}}, {"name"}),
           Output({{"name", {{"type", "string"}}}, {"revoked", {{"type", "boolean"}}}}, {"name", "revoked"}),
           ToolAnnotations{.destructive = true, .idempotent = true}, false,
           [&store](const json& in, const CallContext&) -> Result<json> {
             std::string name = in["name"].get<std::string>();
             ISB_ASSIGN_OR_RETURN(identity::User user, store.users().Find(name));
             if (Status revoked = store.users().Revoke(user.id); !revoked.ok()) return revoked.error();
             return json{{"name", name}, {"revoked", true}};
           },
           ToolAccess{.least_role = identity::Role::kOwner,
                      .kind = identity::ScopeKind::kAdmin,
                      .org_bound = false,
                      .platform = true}}));

  return reg.Add(
      Tool{"whoami", "Who am I",
           "The caller as isb sees it: subject, kind, user, the orgs it reaches with its role in each, and its token's "
           "scopes.",
           Object({}, {}),
           Output({{"subject", {{"type", "string"}}},
                   {"kind", {{"type", "string"}}},
                   {"user", {{"type", "string"}}},
                   {"superadmin", {{"type", "boolean"}}},
                   {"platform_admin", {{"type", "boolean"}}},
                   {"org_scope", {{"type", "string"}}},
                   {"roles", {{"type", "object"}}},
                   {"scopes", {{"type", "string"}}},
                   {"org", {{"type", "string"}, {"description", "The org this call acted in."}}}},
                  {"subject", "kind"}),
           ToolAnnotations{.read_only = true, .idempotent = true}, false,
           [](const json&, const CallContext& ctx) -> Result<json> {
             const Principal& who = ctx.identity;
             return json{{"subject", who.Subject()},
                         {"kind", identity::PrincipalKindName(who.kind)},
                         {"user", who.user_name},
                         {"superadmin", who.superadmin},
                         {"platform_admin", who.IsPlatformAdmin()},
                         {"org_scope", who.org_scope},
                         {"roles", RolesJson(who)},
                         {"scopes", identity::FormatScopes(who.scopes)},
                         {"org", ctx.org}};
           },
           Self(identity::ScopeKind::kRead)});
}

}  // namespace

Status AddIdentityTools(Registry& registry, identity::IdentityStore& store) {
  ISB_TRY(AddUserTools(registry, store));
  return AddTokenTools(registry, store);
}

}  // namespace isb::api
