// Wiring of the identity store and credential resolution by prefix.
#include "identity/store.h"

#include "identity/passwords.h"
#include "identity/tokens.h"

namespace isb::identity {

IdentityStore::IdentityStore(store::Db& db, IdentityOptions options)
    : users_(db, options.now),
      orgs_(db, options.now),
      tokens_(db, options.now, users_),
      sessions_(db, options.now, users_),
      invitations_(db, options.now, orgs_),
      setup_(db, options.now, users_, options.state_dir),
      oauth_(db, options.now, tokens_) {}

Result<std::unique_ptr<IdentityStore>> IdentityStore::Open(store::Db& db, IdentityOptions options) {
  if (!options.now) return Error::Msg("identity store: no clock");
  ISB_ASSIGN_OR_RETURN(auto tables, db.Query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tokens'"));
  if (tables.empty()) return Error::Msg("identity store: the database lacks the identity tables (migration 2)");
  PreparePasswords();
  return std::unique_ptr<IdentityStore>(new IdentityStore(db, std::move(options)));
}

Result<Principal> IdentityStore::Resolve(std::string_view secret) {
  ISB_ASSIGN_OR_RETURN(SecretKind kind, ParseSecret(secret));
  switch (kind) {
    case SecretKind::kToken:
    case SecretKind::kSuperadmin:
      return tokens_.Resolve(secret, kind);
    case SecretKind::kSession:
      return sessions_.Resolve(secret);
    default:
      return Error::Of(Code::kUnauthenticated, "unknown token");
  }
}

}  // namespace isb::identity
