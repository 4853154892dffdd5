// Invitations into an org (isb_inv_): a secret that, once, makes a user a member with a given role.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "identity/clock.h"
#include "identity/orgs.h"
#include "identity/principal.h"
#include "store/db.h"

namespace isb::identity {

inline constexpr int64_t kInvitationTtl = 7 * 24 * 3600;

struct NewInvitation {
  std::string secret;  // shown once, to be handed to the invitee
  int64_t id = 0;
  std::string org;
  Role role = Role::kViewer;
  int64_t expires_at = 0;
};

// Thread-safe.
class Invitations {
 public:
  Invitations(store::Db& db, Clock now, Orgs& orgs) : db_(db), now_(std::move(now)), orgs_(orgs) {}

  // Admins of `org` invite; only owners invite owners (the same rules as Orgs::AddMember).
  Result<NewInvitation> Create(const Principal& caller, std::string_view org, Role role,
                               int64_t ttl_seconds = kInvitationTtl);
  // Makes `user` a member of the invitation's org with its role, once. kUnauthenticated "malformed token",
  // "unknown token", "token expired" or "token used"; an existing member is kConflict (the invitation stays unused).
  Result<Member> Accept(std::string_view secret, int64_t user);

 private:
  store::Db& db_;
  Clock now_;
  Orgs& orgs_;
};

}  // namespace isb::identity
