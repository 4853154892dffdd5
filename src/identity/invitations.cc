// Invitation rows.
#include "identity/invitations.h"

#include "identity/rows.h"
#include "identity/tokens.h"

namespace isb::identity {

Result<NewInvitation> Invitations::Create(const Principal& caller, std::string_view org, Role role,
                                          int64_t ttl_seconds) {
  if (ttl_seconds <= 0) return Error::Of(Code::kInvalidArgument, "invitation lifetime must be positive");
  auto reach = caller.RoleIn(org);
  if (!reach) return Error::Of(Code::kNotFound, "org " + std::string(org) + " not found");
  Role need = role == Role::kOwner ? Role::kOwner : Role::kAdmin;
  if (*reach < need)
    return Error::Of(Code::kForbidden, "role " + std::string(RoleName(*reach)) + " may not invite " +
                                           std::string(RoleName(role)) + "s to org " + std::string(org) +
                                           "; it needs " + std::string(RoleName(need)));
  ISB_ASSIGN_OR_RETURN(Org o, orgs_.Get(org));
  ISB_ASSIGN_OR_RETURN(std::string secret, NewSecret(SecretKind::kInvitation));
  int64_t now = now_();
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("INSERT INTO invitations(hash, org_id, role, created_by, created_at, "
                                            "expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                                            {SecretHash(secret), o.id, std::string(RoleName(role)), NullIfZero(caller.user_id), now,
                                             now + ttl_seconds}));
  return NewInvitation{std::move(secret), store::AsInt(rows[0][0]), o.name, role, now + ttl_seconds};
}

Result<Member> Invitations::Accept(std::string_view secret, int64_t user) {
  auto kind = ParseSecret(secret);
  if (!kind.ok()) return kind.error();
  if (*kind != SecretKind::kInvitation) return Error::Of(Code::kUnauthenticated, "unknown token");
  std::string hash = SecretHash(secret);
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT i.id, i.hash, i.org_id, i.role, i.expires_at, i.used_at, o.name "
                                            "FROM invitations i JOIN orgs o ON o.id = i.org_id WHERE i.hash = ?1",
                                            {hash}));
  if (rows.empty() || !HashesEqual(store::AsText(rows[0][1]), hash))
    return Error::Of(Code::kUnauthenticated, "unknown token");
  const auto& r = rows[0];
  int64_t id = store::AsInt(r[0]), org_id = store::AsInt(r[2]);
  if (!std::holds_alternative<std::nullptr_t>(r[5])) return Error::Of(Code::kUnauthenticated, "token used");
  if (store::AsInt(r[4]) <= now_()) return Error::Of(Code::kUnauthenticated, "token expired");
  ISB_ASSIGN_OR_RETURN(Role role, ParseRole(store::AsText(r[3])));
  ISB_ASSIGN_OR_RETURN(auto member, db_.Query("SELECT 1 FROM memberships WHERE org_id = ?1 AND user_id = ?2",
                                              {org_id, user}));
  if (!member.empty())
    return Error::Of(Code::kConflict, "user " + std::to_string(user) + " is already a member of org " +
                                          store::AsText(r[6]));
  // Claimed by one statement, so two concurrent accepts cannot both succeed.
  ISB_ASSIGN_OR_RETURN(auto claimed, db_.Query("UPDATE invitations SET used_at = ?2 WHERE id = ?1 AND used_at IS NULL "
                                               "RETURNING id", {id, now_()}));
  if (claimed.empty()) return Error::Of(Code::kUnauthenticated, "token used");
  ISB_TRY(db_.Exec("INSERT INTO memberships(org_id, user_id, role) VALUES (?1, ?2, ?3)",
                   {org_id, user, std::string(RoleName(role))}));
  ISB_ASSIGN_OR_RETURN(auto name, db_.Query("SELECT name FROM users WHERE id = ?1", {user}));
  return Member{user, name.empty() ? "" : store::AsText(name[0][0]), role};
}

}  // namespace isb::identity
