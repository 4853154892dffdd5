// API tokens (isb_tok_) and superadmin tokens (isb_sa_): minted once, stored as SHA-256, resolved to a principal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "identity/clock.h"
#include "identity/principal.h"
#include "identity/tokens.h"
#include "identity/users.h"
#include "store/db.h"

namespace isb::identity {

struct TokenSpec {
  // Default member initializers on every field, so callers may name only the fields they set ({.name = "ci"}).
  std::string name{};                   // what the owner calls it; not unique
  std::string org{};                    // "": platform-wide (every org the user reaches)
  std::optional<Role> role_cap{};       // caps the user's role in every org it reaches
  std::vector<Scope> scopes{};          // empty: unscoped
  std::optional<int64_t> expires_at{};  // unix seconds; must be in the future
  int64_t user_id = 0;                  // 0: the caller's own user; another user only for the host
  std::string resource{};               // an OAuth access token's audience, the MCP URL it is for; "": any
};

struct TokenRecord {
  int64_t id = 0;
  SecretKind kind = SecretKind::kToken;  // kToken or kSuperadmin
  std::string name;
  std::string org;      // "": platform-wide
  int64_t user_id = 0;  // 0 for a superadmin token
  std::optional<Role> role_cap;
  std::vector<Scope> scopes;
  int64_t created_at = 0;
  std::optional<int64_t> expires_at;
  std::optional<int64_t> revoked_at;
  std::optional<int64_t> last_used_at;
  std::string resource;  // "": any
};

// The secret, to be shown exactly once, and what is stored of it besides its hash.
struct NewToken {
  std::string secret;
  TokenRecord record;
};

// Thread-safe.
class Tokens {
 public:
  Tokens(store::Db& db, Clock now, Users& users) : db_(db), now_(std::move(now)), users_(users) {}

  // A token principal can never mint a token (kForbidden "a token cannot create a token"). An org-scoped token needs
  // the user to reach that org, and a role cap no higher than the user's role there.
  Result<NewToken> Create(const Principal& caller, const TokenSpec& spec);
  // An OAuth access token for spec.user_id, which the user approved on the consent page (api/oauth_server.h) for
  // spec.org at spec.role_cap, bound to spec.resource. The caller checked the role; this checks it again.
  Result<NewToken> CreateGranted(const TokenSpec& spec);
  // Only the host (PrincipalKind::kSuperadmin): no credential presented over HTTP becomes a durable superadmin one.
  Result<NewToken> CreateSuperadmin(const Principal& caller, std::string_view name, std::optional<int64_t> expires_at);
  // The owner, an admin of the token's org, a platform admin or a superadmin; anyone else gets kNotFound, as for a
  // token that does not exist. Revoking twice is fine.
  Status Revoke(const Principal& caller, int64_t id);
  // The caller's own tokens; for the host every token. Newest first.
  Result<std::vector<TokenRecord>> List(const Principal& caller);
  // The tokens scoped to `org`, for its admins.
  Result<std::vector<TokenRecord>> ListOrg(const Principal& caller, std::string_view org);

  // REQUIRES: ParseSecret(secret) gave kToken or kSuperadmin. kUnauthenticated "unknown token", "token revoked",
  // "token expired", or "user disabled".
  Result<Principal> Resolve(std::string_view secret, SecretKind kind);

 private:
  // Create's checks of the spec against `caller`, the user the token is for (or the host naming another user).
  Result<NewToken> CreateChecked(const Principal& caller, const TokenSpec& spec);
  Result<NewToken> Insert(SecretKind kind, const TokenSpec& spec, int64_t user);
  Result<std::vector<TokenRecord>> Select(const std::string& where, const std::vector<store::Value>& args);

  store::Db& db_;
  Clock now_;
  Users& users_;
};

}  // namespace isb::identity
