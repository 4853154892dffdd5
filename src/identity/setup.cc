// Setup token: a single row, a file on the host, and the first admin.
#include "identity/setup.h"

#include <unistd.h>

#include "base/file.h"
#include "identity/names.h"
#include "identity/passwords.h"
#include "identity/tokens.h"

namespace isb::identity {

Result<std::string> Setup::Prepare() {
  ISB_ASSIGN_OR_RETURN(bool have_admin, users_.AnyPlatformAdmin());
  std::string file = path();
  if (have_admin) {
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) return Error::Sys("remove " + file);
    // A token from before (one a setup did not use up) must not come back if every admin is later disabled.
    ISB_TRY(UseUp());
    return std::string();
  }
  ISB_ASSIGN_OR_RETURN(std::string secret, NewSecret(SecretKind::kSetup));
  // A fresh file: unlinked first, so an old one's mode or owner never carries over.
  if (::unlink(file.c_str()) != 0 && errno != ENOENT) return Error::Sys("remove " + file);
  ISB_TRY(WriteFile(file, secret + "\n", 0600));
  ISB_TRY(
      db_.Exec("INSERT INTO setup_token(id, hash, created_at) VALUES (1, ?1, ?2) ON CONFLICT(id) DO UPDATE SET "
               "hash = excluded.hash, created_at = excluded.created_at, used_at = NULL",
               {SecretHash(secret), now_()}));
  return file;
}

Result<int64_t> Setup::CreateFirstAdmin(std::string_view secret, std::string_view name, std::string_view password) {
  auto kind = ParseSecret(secret);
  if (!kind.ok()) return kind.error();
  if (*kind != SecretKind::kSetup) return Error::Of(Code::kUnauthenticated, "unknown token");
  std::string hash = SecretHash(secret);
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT hash, used_at FROM setup_token WHERE hash = ?1", {hash}));
  if (rows.empty() || !HashesEqual(store::AsText(rows[0][0]), hash))
    return Error::Of(Code::kUnauthenticated, "unknown token");
  if (!std::holds_alternative<std::nullptr_t>(rows[0][1])) return Error::Of(Code::kUnauthenticated, "token used");
  MutexLock lock(first_admin_mu_);
  ISB_ASSIGN_OR_RETURN(bool have_admin, users_.AnyPlatformAdmin());
  if (have_admin) return Error::Of(Code::kConflict, "a platform admin exists already; ask one for an account");
  // Everything that can be refused is checked before the token is used up.
  ISB_TRY(CheckUserName(name));
  ISB_TRY(CheckPasswordPolicy(password));
  if (users_.Find(name).ok()) return Error::Of(Code::kConflict, "user " + std::string(name) + " already exists");
  ISB_ASSIGN_OR_RETURN(auto claimed,
                       db_.Query("UPDATE setup_token SET used_at = ?2 WHERE hash = ?1 AND used_at IS NULL "
                                 "RETURNING id",
                                 {hash, now_()}));
  if (claimed.empty()) return Error::Of(Code::kUnauthenticated, "token used");
  ISB_ASSIGN_OR_RETURN(int64_t user, users_.Create(name, password, true));
  ISB_TRY(
      db_.Exec("INSERT INTO memberships(org_id, user_id, role) SELECT id, ?1, 'owner' FROM orgs WHERE name = "
               "'default'",
               {user}));
  (void)::unlink(path().c_str());
  return user;
}

Result<int64_t> Setup::CreateFirstAdminAsHost(std::string_view name, std::string_view password) {
  MutexLock lock(first_admin_mu_);
  ISB_ASSIGN_OR_RETURN(bool have_admin, users_.AnyPlatformAdmin());
  if (have_admin) return Error::Of(Code::kConflict, "first_admin: a platform admin exists already");
  ISB_ASSIGN_OR_RETURN(int64_t user, users_.Create(name, password, true));
  ISB_TRY(UseUp());
  return user;
}

Result<int64_t> Setup::CreatePlatformAdmin(std::string_view name, std::string_view password) {
  MutexLock lock(first_admin_mu_);
  ISB_ASSIGN_OR_RETURN(int64_t user, users_.Create(name, password, true));
  ISB_TRY(UseUp());
  return user;
}

Status Setup::UseUp() {
  ISB_TRY(db_.Exec("UPDATE setup_token SET used_at = ?1 WHERE used_at IS NULL", {now_()}));
  if (::unlink(path().c_str()) != 0 && errno != ENOENT) return Error::Sys("remove " + path());
  return {};
}

}  // namespace isb::identity
