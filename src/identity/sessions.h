// Browser sessions (isb_sess_): minted at sign-in, stored as SHA-256, resolved to the user's principal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "identity/clock.h"
#include "identity/principal.h"
#include "identity/users.h"
#include "store/db.h"

namespace isb::identity {

inline constexpr int64_t kSessionTtl = 12 * 3600;

struct SessionRecord {
  int64_t id = 0;
  int64_t user_id = 0;
  int64_t created_at = 0;
  int64_t expires_at = 0;
  std::string ip;
  std::string user_agent;
  std::optional<int64_t> revoked_at;
};

struct NewSession {
  std::string secret;  // the cookie's value, shown once
  SessionRecord record;
};

// Thread-safe.
class Sessions {
 public:
  Sessions(store::Db& db, Clock now, Users& users) : db_(db), now_(std::move(now)), users_(users) {}

  // After a good sign-in. `user_agent` is kept to its first 256 bytes.
  Result<NewSession> Create(int64_t user, std::string_view ip, std::string_view user_agent,
                            int64_t ttl_seconds = kSessionTtl);
  // REQUIRES: ParseSecret(secret) gave kSession. kUnauthenticated "unknown token", "token revoked", "token expired"
  // or "user disabled".
  Result<Principal> Resolve(std::string_view secret);
  // The caller's own sessions, or any for a platform admin; others are kNotFound. Revoking twice is fine.
  Status Revoke(const Principal& caller, int64_t id);
  // The user's sessions that are neither revoked nor expired, newest first.
  Result<std::vector<SessionRecord>> List(int64_t user);

 private:
  store::Db& db_;
  Clock now_;
  Users& users_;
};

}  // namespace isb::identity
