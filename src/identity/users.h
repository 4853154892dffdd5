// Users: accounts, their passwords and flags, and password sign-in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "identity/clock.h"
#include "identity/principal.h"
#include "store/db.h"

namespace isb::identity {

struct User {
  int64_t id = 0;
  std::string name;
  bool platform_admin = false;
  bool disabled = false;
  bool has_password = false;
  int64_t created_at = 0;
};

// Thread-safe (the Db is).
class Users {
 public:
  Users(store::Db& db, Clock now) : db_(db), now_(std::move(now)) {}

  // Returns the new user's id. `password` "" leaves the account without one (no password sign-in until set);
  // otherwise it must pass CheckPasswordPolicy. A taken name is kConflict.
  Result<int64_t> Create(std::string_view name, std::string_view password, bool platform_admin = false);
  // Replaces the password and revokes every session of the user and every OAuth grant made in one (codes, refresh
  // and access tokens); API tokens the user made stay.
  Status SetPassword(int64_t user, std::string_view password);
  Status SetPlatformAdmin(int64_t user, bool on);
  // A disabled user cannot sign in, and none of its tokens or sessions resolve.
  Status SetDisabled(int64_t user, bool on);
  // Takes an account away: disabled (it cannot sign in and none of its credentials resolve, from this statement
  // on), then its sessions and tokens revoked too, so enabling it again brings none of them back. Its memberships
  // stay, for the record. The last enabled platform admin is kConflict; a revoked account succeeds again.
  Status Revoke(int64_t user);

  Result<User> Get(int64_t user);
  Result<User> Find(std::string_view name);
  Result<std::vector<User>> List();
  Result<bool> AnyPlatformAdmin();

  // The user's principal for a password sign-in: kUnauthenticated "invalid credentials" for an unknown user, a wrong
  // password, a user without a password and a disabled user alike, after the same argon2id work in every case.
  // Rate limiting is the caller's (SignInLimiter), before this.
  Result<Principal> SignIn(std::string_view name, std::string_view password);

  // The principal of an enabled user with its memberships, as `kind`; a disabled or missing user is
  // kUnauthenticated `disabled_message`.
  Result<Principal> PrincipalOf(int64_t user, PrincipalKind kind, std::string_view disabled_message);

 private:
  // Revokes every live session of `user` as of `now`, and the OAuth grants the user approved.
  Status EndSessions(int64_t user, int64_t now);  // in one write transaction
  Status EndSessionsNow(int64_t user, int64_t now);
  Status Update(int64_t user, const std::string& sql, const std::vector<store::Value>& args);

  store::Db& db_;
  Clock now_;
};

}  // namespace isb::identity
