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

// An invitation as its org's admins see it: never its secret.
struct InvitationRecord {
  int64_t id = 0;
  Role role = Role::kViewer;
  std::string created_by;  // the inviting user's name; "" when the host made it or the user is gone
  int64_t created_at = 0;
  int64_t expires_at = 0;
  std::string state;  // "pending", "accepted", "revoked" or "expired"
};

// An accepted invitation: the org joined and the new member.
struct Accepted {
  std::string org;
  Member member;
};

// Thread-safe.
class Invitations {
 public:
  Invitations(store::Db& db, Clock now, Orgs& orgs) : db_(db), now_(std::move(now)), orgs_(orgs) {}

  // Admins of `org` invite; only owners invite owners (the same rules as Orgs::AddMember).
  Result<NewInvitation> Create(const Principal& caller, std::string_view org, Role role,
                               int64_t ttl_seconds = kInvitationTtl);
  // Makes `user` a member of the invitation's org with its role, once. kUnauthenticated "malformed token",
  // "unknown token", "token expired", "token used" or "token revoked"; an existing member is kConflict (the invitation
  // stays unused).
  Result<Accepted> Accept(std::string_view secret, int64_t user);

  // The org's invitations, newest first (admins of `org`). An org the caller does not reach is kNotFound.
  Result<std::vector<InvitationRecord>> List(const Principal& caller, std::string_view org);
  // Revokes a pending invitation of `org`, so it can no longer be accepted: admins of `org`, owners for an
  // invitation to owner (the rules of Create). Another org's invitation is kNotFound, as a missing one; an accepted
  // one is kConflict (the member stays: member_remove). Revoking a revoked or expired invitation succeeds.
  Status Revoke(const Principal& caller, std::string_view org, int64_t id);

 private:
  store::Db& db_;
  Clock now_;
  Orgs& orgs_;
};

}  // namespace isb::identity
