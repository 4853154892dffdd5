// Users table and password sign-in.
#include "identity/users.h"

#include "identity/names.h"
#include "identity/passwords.h"

namespace isb::identity {
namespace {

constexpr char kUserColumns[] = "id, name, platform_admin, disabled, password_hash != '', created_at";

User UserOf(const store::Row& r) {
  return User{store::AsInt(r[0]),      store::AsText(r[1]),     store::AsInt(r[2]) != 0,
              store::AsInt(r[3]) != 0, store::AsInt(r[4]) != 0, store::AsInt(r[5])};
}

Error NoSuchUser(int64_t user) { return Error::Of(Code::kNotFound, "user " + std::to_string(user) + " not found"); }

Error InvalidCredentials() { return Error::Of(Code::kUnauthenticated, "invalid credentials"); }

}  // namespace

Result<int64_t> Users::Create(std::string_view name, std::string_view password, bool platform_admin) {
  ISB_TRY(CheckUserName(name));
  std::string hash;
  if (!password.empty()) {
    ISB_ASSIGN_OR_RETURN(hash, HashPassword(password));
  }
  auto rows = db_.Query(
      "INSERT INTO users(name, password_hash, platform_admin, created_at) VALUES (?1, ?2, ?3, ?4) RETURNING id",
      {std::string(name), hash, int64_t{platform_admin ? 1 : 0}, now_()});
  if (!rows.ok() && rows.error().code == Code::kConflict)
    return Error::Of(Code::kConflict, "user " + std::string(name) + " already exists");
  if (!rows.ok()) return rows.error();
  return store::AsInt((*rows)[0][0]);
}

Status Users::Update(int64_t user, const std::string& sql, const std::vector<store::Value>& args) {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query(sql, args));
  if (rows.empty()) return NoSuchUser(user);
  return {};
}

Status Users::EndSessions(int64_t user, int64_t now) {
  return db_.Immediate([&]() -> Status { return EndSessionsNow(user, now); });
}

Status Users::EndSessionsNow(int64_t user, int64_t now) {
  ISB_TRY(db_.Exec("UPDATE sessions SET revoked_at = ?2 WHERE user_id = ?1 AND revoked_at IS NULL", {user, now}));
  // What the user approved for OAuth clients in a session ends with the sessions: codes not yet exchanged, the
  // grants' refresh tokens and their access tokens (a password changed because it leaked leaves no client behind).
  ISB_TRY(db_.Exec("UPDATE oauth_codes SET used_at = ?2 WHERE user_id = ?1 AND used_at IS NULL", {user, now}));
  ISB_TRY(
      db_.Exec("UPDATE tokens SET revoked_at = ?2 WHERE revoked_at IS NULL AND id IN (SELECT r.access_token_id "
               "FROM oauth_refresh r JOIN oauth_codes c ON c.id = r.family WHERE c.user_id = ?1)",
               {user, now}));
  return db_.Exec(
      "UPDATE oauth_refresh SET revoked_at = ?2 WHERE revoked_at IS NULL AND family IN (SELECT id FROM "
      "oauth_codes WHERE user_id = ?1)",
      {user, now});
}

Status Users::SetPassword(int64_t user, std::string_view password) {
  ISB_ASSIGN_OR_RETURN(std::string hash, HashPassword(password));
  ISB_TRY(Update(user, "UPDATE users SET password_hash = ?2 WHERE id = ?1 RETURNING id", {user, hash}));
  return EndSessions(user, now_());
}

Status Users::SetPlatformAdmin(int64_t user, bool on) {
  return Update(user, "UPDATE users SET platform_admin = ?2 WHERE id = ?1 RETURNING id", {user, int64_t{on ? 1 : 0}});
}

Status Users::SetDisabled(int64_t user, bool on) {
  return Update(user, "UPDATE users SET disabled = ?2 WHERE id = ?1 RETURNING id", {user, int64_t{on ? 1 : 0}});
}

Status Users::Revoke(int64_t user) {
  ISB_ASSIGN_OR_RETURN(User u, Get(user));
  // One statement, so two platform admins revoking each other cannot both succeed.
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("UPDATE users SET disabled = 1 WHERE id = ?1 AND (platform_admin = 0 OR "
                                            "disabled = 1 OR EXISTS (SELECT 1 FROM users WHERE platform_admin = 1 "
                                            "AND disabled = 0 AND id != ?1)) RETURNING id",
                                            {user}));
  if (rows.empty())
    return Error::Of(Code::kConflict, "user " + u.name + " is the last platform admin; make another one first");
  int64_t now = now_();
  ISB_TRY(EndSessions(user, now));
  return db_.Exec("UPDATE tokens SET revoked_at = ?2 WHERE user_id = ?1 AND revoked_at IS NULL", {user, now});
}

Result<User> Users::Get(int64_t user) {
  ISB_ASSIGN_OR_RETURN(auto rows,
                       db_.Query(std::string("SELECT ") + kUserColumns + " FROM users WHERE id = ?1", {user}));
  if (rows.empty()) return NoSuchUser(user);
  return UserOf(rows[0]);
}

Result<User> Users::Find(std::string_view name) {
  ISB_ASSIGN_OR_RETURN(
      auto rows, db_.Query(std::string("SELECT ") + kUserColumns + " FROM users WHERE name = ?1", {std::string(name)}));
  if (rows.empty()) return Error::Of(Code::kNotFound, "user " + std::string(name) + " not found");
  return UserOf(rows[0]);
}

Result<std::vector<User>> Users::List() {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query(std::string("SELECT ") + kUserColumns + " FROM users ORDER BY name"));
  std::vector<User> out;
  for (const auto& r : rows) out.push_back(UserOf(r));
  return out;
}

Result<bool> Users::AnyPlatformAdmin() {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT 1 FROM users WHERE platform_admin = 1 AND disabled = 0 LIMIT 1"));
  return !rows.empty();
}

Result<Principal> Users::SignIn(std::string_view name, std::string_view password) {
  ISB_ASSIGN_OR_RETURN(auto rows,
                       db_.Query("SELECT id, password_hash, disabled FROM users WHERE name = ?1", {std::string(name)}));
  if (rows.empty()) {
    VerifyDummy(password);
    return InvalidCredentials();
  }
  int64_t id = store::AsInt(rows[0][0]);
  std::string hash = store::AsText(rows[0][1]);
  bool ok = VerifyPassword(hash, password);  // first, so a disabled account costs the same
  if (!ok || store::AsInt(rows[0][2]) != 0) return InvalidCredentials();
  if (NeedsRehash(hash)) {
    auto fresh = HashPassword(password);
    if (fresh.ok()) (void)db_.Exec("UPDATE users SET password_hash = ?2 WHERE id = ?1", {id, *fresh});
  }
  auto principal = PrincipalOf(id, PrincipalKind::kUser, "invalid credentials");
  return principal;
}

Result<Principal> Users::PrincipalOf(int64_t user, PrincipalKind kind, std::string_view disabled_message) {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT name, platform_admin, disabled FROM users WHERE id = ?1", {user}));
  if (rows.empty() || store::AsInt(rows[0][2]) != 0)
    return Error::Of(Code::kUnauthenticated, std::string(disabled_message));
  Principal p;
  p.kind = kind;
  p.user_id = user;
  p.user_name = store::AsText(rows[0][0]);
  p.platform_admin = store::AsInt(rows[0][1]) != 0;
  ISB_ASSIGN_OR_RETURN(auto roles, db_.Query("SELECT o.name, m.role FROM memberships m JOIN orgs o ON o.id = m.org_id "
                                             "WHERE m.user_id = ?1",
                                             {user}));
  for (const auto& r : roles) {
    auto role = ParseRole(store::AsText(r[1]));
    if (role.ok()) p.roles.emplace(store::AsText(r[0]), *role);
  }
  return p;
}

}  // namespace isb::identity
