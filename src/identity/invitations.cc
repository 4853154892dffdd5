// Invitation rows.
#include "identity/invitations.h"

#include "identity/rows.h"
#include "identity/tokens.h"

namespace isb::identity {

namespace {

// Owners alone invite owners (and revoke their invitations); admins the rest.
Role NeededFor(Role invited) { return invited == Role::kOwner ? Role::kOwner : Role::kAdmin; }

}  // namespace

Result<NewInvitation> Invitations::Create(const Principal& caller, std::string_view org, Role role,
                                          int64_t ttl_seconds) {
  if (ttl_seconds <= 0) return Error::Of(Code::kInvalidArgument, "invitation lifetime must be positive");
  ISB_TRY(RequireRole(caller, org, NeededFor(role),
                      "invite " + std::string(RoleName(role)) + "s to org " + std::string(org)));
  ISB_ASSIGN_OR_RETURN(Org o, orgs_.Get(org));
  ISB_ASSIGN_OR_RETURN(std::string secret, NewSecret(SecretKind::kInvitation));
  int64_t now = now_();
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("INSERT INTO invitations(hash, org_id, role, created_by, created_at, "
                                            "expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                                            {SecretHash(secret), o.id, std::string(RoleName(role)),
                                             NullIfZero(caller.user_id), now, now + ttl_seconds}));
  return NewInvitation{std::move(secret), store::AsInt(rows[0][0]), o.name, role, now + ttl_seconds};
}

Result<Accepted> Invitations::Accept(std::string_view secret, int64_t user) {
  auto kind = ParseSecret(secret);
  if (!kind.ok()) return kind.error();
  if (*kind != SecretKind::kInvitation) return Error::Of(Code::kUnauthenticated, "unknown token");
  std::string hash = SecretHash(secret);
  ISB_ASSIGN_OR_RETURN(auto rows,
                       db_.Query("SELECT i.id, i.hash, i.org_id, i.role, i.expires_at, i.used_at, o.name, i.revoked_at "
                                 "FROM invitations i JOIN orgs o ON o.id = i.org_id WHERE i.hash = ?1",
                                 {hash}));
  if (rows.empty() || !HashesEqual(store::AsText(rows[0][1]), hash))
    return Error::Of(Code::kUnauthenticated, "unknown token");
  const auto& r = rows[0];
  int64_t id = store::AsInt(r[0]), org_id = store::AsInt(r[2]);
  if (!std::holds_alternative<std::nullptr_t>(r[5])) return Error::Of(Code::kUnauthenticated, "token used");
  if (!std::holds_alternative<std::nullptr_t>(r[7])) return Error::Of(Code::kUnauthenticated, "token revoked");
  if (store::AsInt(r[4]) <= now_()) return Error::Of(Code::kUnauthenticated, "token expired");
  ISB_ASSIGN_OR_RETURN(Role role, ParseRole(store::AsText(r[3])));
  ISB_ASSIGN_OR_RETURN(auto member,
                       db_.Query("SELECT 1 FROM memberships WHERE org_id = ?1 AND user_id = ?2", {org_id, user}));
  if (!member.empty())
    return Error::Of(Code::kConflict,
                     "user " + std::to_string(user) + " is already a member of org " + store::AsText(r[6]));
  // Claimed by one statement, so two concurrent accepts cannot both succeed.
  ISB_ASSIGN_OR_RETURN(auto claimed, db_.Query("UPDATE invitations SET used_at = ?2 WHERE id = ?1 AND used_at IS NULL "
                                               "AND revoked_at IS NULL RETURNING id",
                                               {id, now_()}));
  if (claimed.empty()) return Error::Of(Code::kUnauthenticated, "token used");
  ISB_TRY(db_.Exec("INSERT INTO memberships(org_id, user_id, role) VALUES (?1, ?2, ?3)",
                   {org_id, user, std::string(RoleName(role))}));
  ISB_ASSIGN_OR_RETURN(auto name, db_.Query("SELECT name FROM users WHERE id = ?1", {user}));
  return Accepted{store::AsText(r[6]), Member{user, name.empty() ? "" : store::AsText(name[0][0]), role}};
}

Result<std::vector<InvitationRecord>> Invitations::List(const Principal& caller, std::string_view org) {
  ISB_TRY(RequireRole(caller, org, Role::kAdmin, "list the invitations of org " + std::string(org)));
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT i.id, i.role, coalesce(u.name, ''), i.created_at, i.expires_at, "
                                            "i.used_at, i.revoked_at FROM invitations i JOIN orgs o ON o.id = i.org_id "
                                            "LEFT JOIN users u ON u.id = i.created_by WHERE o.name = ?1 "
                                            "ORDER BY i.id DESC",
                                            {std::string(org)}));
  std::vector<InvitationRecord> out;
  int64_t now = now_();
  for (const auto& r : rows) {
    InvitationRecord rec{.id = store::AsInt(r[0]),
                         .created_by = store::AsText(r[2]),
                         .created_at = store::AsInt(r[3]),
                         .expires_at = store::AsInt(r[4]),
                         .state = ""};
    ISB_ASSIGN_OR_RETURN(rec.role, ParseRole(store::AsText(r[1])));
    rec.state = !std::holds_alternative<std::nullptr_t>(r[5])   ? "accepted"
                : !std::holds_alternative<std::nullptr_t>(r[6]) ? "revoked"
                : rec.expires_at <= now                         ? "expired"
                                                                : "pending";
    out.push_back(std::move(rec));
  }
  return out;
}

Status Invitations::Revoke(const Principal& caller, std::string_view org, int64_t id) {
  const Error not_found = Error::Of(Code::kNotFound, "invitation " + std::to_string(id) + " not found");
  if (!caller.RoleIn(org)) return not_found;
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT i.role, i.used_at FROM invitations i JOIN orgs o ON "
                                            "o.id = i.org_id WHERE i.id = ?1 AND o.name = ?2",
                                            {id, std::string(org)}));
  if (rows.empty()) return not_found;
  ISB_ASSIGN_OR_RETURN(Role role, ParseRole(store::AsText(rows[0][0])));
  ISB_TRY(RequireRole(caller, org, NeededFor(role),
                      "revoke " + std::string(RoleName(role)) + " invitations of org " + std::string(org)));
  // One statement decides against a concurrent accept: whichever sets its column first wins.
  ISB_ASSIGN_OR_RETURN(auto revoked, db_.Query("UPDATE invitations SET revoked_at = coalesce(revoked_at, ?2) "
                                               "WHERE id = ?1 AND used_at IS NULL RETURNING id",
                                               {id, now_()}));
  if (revoked.empty())
    return Error::Of(Code::kConflict,
                     "invitation " + std::to_string(id) + " was accepted; remove the member with member_remove");
  return {};
}

}  // namespace isb::identity
