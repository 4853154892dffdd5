// The identity store: users, orgs, memberships, tokens, sessions, invitations and the setup token over one Db, and
// Resolve, which turns any presented bearer credential into a Principal.
//
//   auto id = IdentityStore::Open(*db, {.now = UnixNow, .state_dir = state});
//   auto who = (*id)->Resolve(bearer);                       // on every HTTP request
//   (*id)->tokens().Create(who, {.name = "ci", .org = "acme", .scopes = {...}});
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "identity/clock.h"
#include "identity/invitations.h"
#include "identity/oauth_grants.h"
#include "identity/orgs.h"
#include "identity/principal.h"
#include "identity/sessions.h"
#include "identity/setup.h"
#include "identity/token_store.h"
#include "identity/users.h"
#include "store/db.h"

namespace isb::identity {

struct IdentityOptions {
  Clock now = UnixNow;
  std::string state_dir;  // where the setup token file goes
};

// Thread-safe. Holds a reference to `db`, which must outlive it.
class IdentityStore {
 public:
  // REQUIRES: `db` was opened with store::Migrations(). Also prepares the dummy password hash.
  static Result<std::unique_ptr<IdentityStore>> Open(store::Db& db, IdentityOptions options = {});

  // A bearer credential as presented (isb_tok_, isb_sa_, isb_sess_). kUnauthenticated with exactly one of
  // "malformed token", "unknown token" (also a well-formed secret of a kind that is no bearer credential),
  // "token expired", "token revoked", "user disabled". Never echoes the secret.
  Result<Principal> Resolve(std::string_view secret);

  Users& users() { return users_; }
  Orgs& orgs() { return orgs_; }
  Tokens& tokens() { return tokens_; }
  Sessions& sessions() { return sessions_; }
  Invitations& invitations() { return invitations_; }
  Setup& setup() { return setup_; }
  OAuthGrants& oauth() { return oauth_; }

 private:
  IdentityStore(store::Db& db, IdentityOptions options);

  Users users_;
  Orgs orgs_;
  Tokens tokens_;
  Sessions sessions_;
  Invitations invitations_;
  Setup setup_;
  OAuthGrants oauth_;
};

}  // namespace isb::identity
