// Token rows: insert by hash, look up by hash and compare again in constant time.
#include "identity/token_store.h"

#include <algorithm>

#include "identity/names.h"
#include "identity/rows.h"

namespace isb::identity {
namespace {

constexpr char kColumns[] =
    "t.id, t.kind, t.name, coalesce(o.name, ''), coalesce(t.user_id, 0), t.role_cap, t.scopes, t.created_at, "
    "t.expires_at, t.revoked_at, t.last_used_at, t.hash, coalesce(t.resource, '')";
constexpr char kFrom[] = " FROM tokens t LEFT JOIN orgs o ON o.id = t.org_id ";
// last_used_at is written at most this often per token, not on every call.
constexpr int64_t kLastUsedGranularity = 60;

Error Unknown() { return Error::Of(Code::kUnauthenticated, "unknown token"); }

std::string_view KindText(SecretKind kind) { return kind == SecretKind::kSuperadmin ? "superadmin" : "token"; }

TokenRecord RecordOf(const store::Row& r) {
  TokenRecord t;
  t.id = store::AsInt(r[0]);
  t.kind = store::AsText(r[1]) == "superadmin" ? SecretKind::kSuperadmin : SecretKind::kToken;
  t.name = store::AsText(r[2]);
  t.org = store::AsText(r[3]);
  t.user_id = store::AsInt(r[4]);
  if (auto role = ParseRole(store::AsText(r[5])); role.ok()) t.role_cap = *role;
  if (auto scopes = ParseScopes(store::AsText(r[6])); scopes.ok()) t.scopes = *scopes;
  t.created_at = store::AsInt(r[7]);
  t.expires_at = OptInt(r[8]);
  t.revoked_at = OptInt(r[9]);
  t.last_used_at = OptInt(r[10]);
  t.resource = store::AsText(r[12]);
  return t;
}

Status CheckExpiry(std::optional<int64_t> expires_at, int64_t now) {
  if (expires_at && *expires_at <= now)
    return Error::Of(Code::kInvalidArgument, "expires_at: " + std::to_string(*expires_at) + " is not in the future");
  return {};
}

}  // namespace

Result<NewToken> Tokens::Insert(SecretKind kind, const TokenSpec& spec, int64_t user) {
  ISB_ASSIGN_OR_RETURN(std::string secret, NewSecret(kind));
  store::Value org = nullptr;
  if (!spec.org.empty()) {
    ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT id FROM orgs WHERE name = ?1", {spec.org}));
    if (rows.empty()) return Error::Of(Code::kNotFound, "org " + spec.org + " not found");
    org = rows[0][0];
  }
  store::Value cap = nullptr;
  if (spec.role_cap) cap = std::string(RoleName(*spec.role_cap));
  int64_t now = now_();
  ISB_ASSIGN_OR_RETURN(
      auto rows, db_.Query("INSERT INTO tokens(hash, kind, name, org_id, user_id, role_cap, scopes, created_at, "
                           "expires_at, resource) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING id",
                           {SecretHash(secret), std::string(KindText(kind)), spec.name, org, NullIfZero(user), cap,
                            FormatScopes(spec.scopes), now, OrNull(spec.expires_at),
                            spec.resource.empty() ? store::Value(nullptr) : store::Value(spec.resource)}));
  TokenRecord rec{
      store::AsInt(rows[0][0]), kind,         spec.name,    spec.org,     user, spec.role_cap, spec.scopes, now,
      spec.expires_at,          std::nullopt, std::nullopt, spec.resource};
  return NewToken{std::move(secret), std::move(rec)};
}

Result<NewToken> Tokens::Create(const Principal& caller, const TokenSpec& spec) {
  if (caller.kind == PrincipalKind::kToken)
    return Error::Of(Code::kForbidden, "a token cannot create a token; sign in, or use the unix socket on the host");
  if (!spec.resource.empty())
    return Error::Of(Code::kInvalidArgument, "resource: only the OAuth token endpoint binds a token to a resource");
  return CreateChecked(caller, spec);
}

Result<NewToken> Tokens::CreateGranted(const TokenSpec& spec) {
  if (spec.org.empty() || !spec.role_cap || spec.resource.empty() || spec.user_id == 0 || !spec.expires_at)
    return Error::Of(Code::kInternal, "an OAuth grant's token needs a user, an org, a role, a resource and an expiry");
  ISB_ASSIGN_OR_RETURN(Principal owner, users_.PrincipalOf(spec.user_id, PrincipalKind::kUser, "user disabled"));
  return CreateChecked(owner, spec);
}

Result<NewToken> Tokens::CreateChecked(const Principal& caller, const TokenSpec& spec) {
  ISB_TRY(CheckTokenName(spec.name));
  ISB_TRY(CheckExpiry(spec.expires_at, now_()));
  int64_t user = spec.user_id == 0 ? caller.user_id : spec.user_id;
  if (user != caller.user_id && caller.kind != PrincipalKind::kSuperadmin)
    return Error::Of(Code::kForbidden, "only the host creates tokens for another user");
  if (user == 0) return Error::Of(Code::kInvalidArgument, "user_id: the host names the user a token is for");
  ISB_ASSIGN_OR_RETURN(Principal owner, users_.PrincipalOf(user, PrincipalKind::kUser, "user disabled"));
  if (!spec.org.empty()) {
    owner.platform_admin = false;  // as Resolve will see it: an org-scoped token reaches the org by membership only
    auto role = owner.RoleIn(spec.org);
    if (!role) return Error::Of(Code::kNotFound, "org " + spec.org + " not found");
    if (spec.role_cap && *spec.role_cap > *role)
      return Error::Of(Code::kForbidden, "role_cap " + std::string(RoleName(*spec.role_cap)) + " is above the role " +
                                             std::string(RoleName(*role)) + " in org " + spec.org);
  }
  const bool metrics =
      std::any_of(spec.scopes.begin(), spec.scopes.end(), [](const Scope& s) { return s.kind == ScopeKind::kMetrics; });
  if (metrics && !owner.platform_admin)
    return Error::Of(Code::kForbidden, "scope metrics: only a platform admin's platform-wide token may carry it");
  return Insert(SecretKind::kToken, spec, user);
}

Result<NewToken> Tokens::CreateSuperadmin(const Principal& caller, std::string_view name,
                                          std::optional<int64_t> expires_at) {
  if (caller.kind != PrincipalKind::kSuperadmin)
    return Error::Of(Code::kForbidden, "superadmin tokens are minted only on the host (isb token create --superadmin)");
  ISB_TRY(CheckTokenName(name));
  ISB_TRY(CheckExpiry(expires_at, now_()));
  TokenSpec spec;
  spec.name = std::string(name);
  spec.expires_at = expires_at;
  return Insert(SecretKind::kSuperadmin, spec, 0);
}

Result<std::vector<TokenRecord>> Tokens::Select(const std::string& where, const std::vector<store::Value>& args) {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query(std::string("SELECT ") + kColumns + kFrom + where, args));
  std::vector<TokenRecord> out;
  for (const auto& r : rows) out.push_back(RecordOf(r));
  return out;
}

Status Tokens::Revoke(const Principal& caller, int64_t id) {
  ISB_ASSIGN_OR_RETURN(auto found, Select("WHERE t.id = ?1", {id}));
  const Error not_found = Error::Of(Code::kNotFound, "token " + std::to_string(id) + " not found");
  if (found.empty()) return not_found;
  const TokenRecord& t = found[0];
  // An org-scoped token's own are the tokens of its org: the user's others reach further than it does.
  bool own = t.user_id != 0 && t.user_id == caller.user_id && (!caller.OrgScoped() || t.org == caller.org_scope);
  auto role = t.org.empty() ? std::nullopt : caller.RoleIn(t.org);
  bool allowed = own || caller.IsPlatformAdmin() || (role && *role >= Role::kAdmin);
  if (t.kind == SecretKind::kSuperadmin) allowed = caller.superadmin;
  if (!allowed) return not_found;
  return db_.Exec("UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL", {id, now_()});
}

Result<std::vector<TokenRecord>> Tokens::List(const Principal& caller) {
  if (caller.kind == PrincipalKind::kSuperadmin) return Select("ORDER BY t.id DESC", {});
  if (caller.OrgScoped())
    return Select("WHERE t.user_id = ?1 AND o.name = ?2 ORDER BY t.id DESC", {caller.user_id, caller.org_scope});
  return Select("WHERE t.user_id = ?1 ORDER BY t.id DESC", {caller.user_id});
}

Result<std::vector<TokenRecord>> Tokens::ListOrg(const Principal& caller, std::string_view org) {
  ISB_TRY(RequireRole(caller, org, Role::kAdmin, "list the tokens of org " + std::string(org)));
  return Select("WHERE o.name = ?1 ORDER BY t.id DESC", {std::string(org)});
}

Result<Principal> Tokens::Resolve(std::string_view secret, SecretKind kind) {
  std::string hash = SecretHash(secret);
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query(std::string("SELECT ") + kColumns + kFrom + "WHERE t.hash = ?1", {hash}));
  if (rows.empty() || !HashesEqual(store::AsText(rows[0][11]), hash)) return Unknown();
  TokenRecord t = RecordOf(rows[0]);
  if (t.kind != kind) return Unknown();
  int64_t now = now_();
  if (t.revoked_at) return Error::Of(Code::kUnauthenticated, "token revoked");
  if (t.expires_at && *t.expires_at <= now) return Error::Of(Code::kUnauthenticated, "token expired");
  Principal p;
  if (kind == SecretKind::kSuperadmin) {
    p.superadmin = true;
  } else {
    ISB_ASSIGN_OR_RETURN(p, users_.PrincipalOf(t.user_id, PrincipalKind::kToken, "user disabled"));
    p.org_scope = t.org;
    if (!t.org.empty()) p.platform_admin = false;
    p.role_cap = t.role_cap;
    p.scopes = t.scopes;
    p.resource = t.resource;
  }
  p.kind = PrincipalKind::kToken;
  p.credential_id = t.id;
  p.credential_name = t.name;
  if (!t.last_used_at || *t.last_used_at + kLastUsedGranularity <= now)
    (void)db_.Exec("UPDATE tokens SET last_used_at = ?2 WHERE id = ?1", {t.id, now});
  return p;
}

}  // namespace isb::identity
