// Session rows.
#include "identity/sessions.h"

#include "identity/rows.h"
#include "identity/tokens.h"

namespace isb::identity {
namespace {

constexpr size_t kMaxUserAgent = 256;
constexpr char kColumns[] = "id, user_id, created_at, expires_at, ip, user_agent, revoked_at, hash";

SessionRecord RecordOf(const store::Row& r) {
  return SessionRecord{store::AsInt(r[0]),  store::AsInt(r[1]),  store::AsInt(r[2]), store::AsInt(r[3]),
                       store::AsText(r[4]), store::AsText(r[5]), OptInt(r[6])};
}

}  // namespace

Result<NewSession> Sessions::Create(int64_t user, std::string_view ip, std::string_view user_agent,
                                    int64_t ttl_seconds) {
  if (ttl_seconds <= 0) return Error::Of(Code::kInvalidArgument, "session lifetime must be positive");
  ISB_TRY(users_.PrincipalOf(user, PrincipalKind::kSession, "user disabled"));
  ISB_ASSIGN_OR_RETURN(std::string secret, NewSecret(SecretKind::kSession));
  int64_t now = now_();
  SessionRecord rec{
      0, user, now, now + ttl_seconds, std::string(ip), std::string(user_agent.substr(0, kMaxUserAgent)), std::nullopt};
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("INSERT INTO sessions(hash, user_id, created_at, expires_at, ip, "
                                            "user_agent) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                                            {SecretHash(secret), user, now, rec.expires_at, rec.ip, rec.user_agent}));
  rec.id = store::AsInt(rows[0][0]);
  return NewSession{std::move(secret), std::move(rec)};
}

Result<Principal> Sessions::Resolve(std::string_view secret) {
  std::string hash = SecretHash(secret);
  ISB_ASSIGN_OR_RETURN(auto rows,
                       db_.Query(std::string("SELECT ") + kColumns + " FROM sessions WHERE hash = ?1", {hash}));
  if (rows.empty() || !HashesEqual(store::AsText(rows[0][7]), hash))
    return Error::Of(Code::kUnauthenticated, "unknown token");
  SessionRecord s = RecordOf(rows[0]);
  if (s.revoked_at) return Error::Of(Code::kUnauthenticated, "token revoked");
  if (s.expires_at <= now_()) return Error::Of(Code::kUnauthenticated, "token expired");
  ISB_ASSIGN_OR_RETURN(Principal p, users_.PrincipalOf(s.user_id, PrincipalKind::kSession, "user disabled"));
  p.credential_id = s.id;
  return p;
}

Status Sessions::Revoke(const Principal& caller, int64_t id) {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT user_id FROM sessions WHERE id = ?1", {id}));
  // Sessions reach every org: a token scoped to one may not end them.
  bool allowed =
      !rows.empty() && !caller.OrgScoped() && (caller.IsPlatformAdmin() || store::AsInt(rows[0][0]) == caller.user_id);
  if (!allowed) return Error::Of(Code::kNotFound, "session " + std::to_string(id) + " not found");
  return db_.Exec("UPDATE sessions SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL", {id, now_()});
}

Result<std::vector<SessionRecord>> Sessions::List(int64_t user) {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query(std::string("SELECT ") + kColumns +
                                                " FROM sessions WHERE user_id = ?1 "
                                                "AND revoked_at IS NULL AND expires_at > ?2 ORDER BY id DESC",
                                            {user, now_()}));
  std::vector<SessionRecord> out;
  for (const auto& r : rows) out.push_back(RecordOf(r));
  return out;
}

}  // namespace isb::identity
