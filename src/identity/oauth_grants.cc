// OAuth grants: codes and refresh tokens are spent by one conditional UPDATE, so two presentations racing each
// other cannot both succeed.
#include "identity/oauth_grants.h"

#include "identity/rows.h"
#include "identity/tokens.h"

namespace isb::identity {
namespace {

GrantResult<IssuedTokens> Refused(std::string error, std::string description) {
  return GrantRefusal{std::move(error), std::move(description)};
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    out.emplace_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return out;
}

// The access token's name in `isb token ls`: "oauth " and the client's name in printable ASCII, at most 64.
std::string TokenNameFor(const OAuthClient& client) {
  std::string name = "oauth ";
  for (char c : client.name)
    if (c >= 0x20 && c < 0x7f && name.size() < 64) name.push_back(c);
  return name;
}

}  // namespace

Result<OAuthClient> OAuthGrants::Register(std::string_view name, const std::vector<std::string>& redirect_uris) {
  ISB_ASSIGN_OR_RETURN(std::string random, NewSecret(SecretKind::kToken));
  OAuthClient c{"isb_client_" + random.substr(SecretPrefix(SecretKind::kToken).size(), 22), std::string(name),
                redirect_uris, now_()};
  ISB_TRY(db_.Exec("INSERT INTO oauth_clients(id, name, redirect_uris, created_at) VALUES (?1, ?2, ?3, ?4)",
                   {c.id, c.name, JoinLines(c.redirect_uris), c.created_at}));
  return c;
}

Result<OAuthClient> OAuthGrants::Client(std::string_view id) {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT id, name, redirect_uris, created_at FROM oauth_clients "
                                            "WHERE id = ?1", {std::string(id)}));
  if (rows.empty())
    return Error::Of(Code::kNotFound, "client_id: no client is registered as '" + std::string(id.substr(0, 64)) +
                                          "'; register it at the registration endpoint first");
  return OAuthClient{store::AsText(rows[0][0]), store::AsText(rows[0][1]), SplitLines(store::AsText(rows[0][2])),
                     store::AsInt(rows[0][3])};
}

Result<std::string> OAuthGrants::IssueCode(const CodeGrant& grant) {
  ISB_ASSIGN_OR_RETURN(std::string code, NewSecret(SecretKind::kAuthCode));
  ISB_ASSIGN_OR_RETURN(auto org, db_.Query("SELECT id FROM orgs WHERE name = ?1", {grant.org}));
  if (org.empty()) return Error::Of(Code::kNotFound, "org " + grant.org + " not found");
  const int64_t now = now_();
  ISB_TRY(db_.Exec("INSERT INTO oauth_codes(hash, client_id, redirect_uri, challenge, user_id, org_id, role, resource, "
                   "created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                   {SecretHash(code), grant.client_id, grant.redirect_uri, grant.challenge, grant.user_id, org[0][0],
                    std::string(RoleName(grant.role)), grant.resource, now, now + kAuthCodeTtl}));
  return code;
}

Status OAuthGrants::RevokeFamily(int64_t family) {
  const int64_t now = now_();
  ISB_TRY(db_.Exec("UPDATE tokens SET revoked_at = ?2 WHERE revoked_at IS NULL AND id IN "
                   "(SELECT access_token_id FROM oauth_refresh WHERE family = ?1)", {family, now}));
  return db_.Exec("UPDATE oauth_refresh SET revoked_at = ?2 WHERE family = ?1 AND revoked_at IS NULL", {family, now});
}

Result<IssuedTokens> OAuthGrants::Issue(int64_t family, const OAuthClient& client, int64_t user,
                                        const std::string& org, Role role, const std::string& resource) {
  const int64_t now = now_();
  ISB_ASSIGN_OR_RETURN(NewToken access, tokens_.CreateGranted({.name = TokenNameFor(client), .org = org,
                                                               .role_cap = role, .expires_at = now + kOAuthAccessTtl,
                                                               .user_id = user, .resource = resource}));
  ISB_ASSIGN_OR_RETURN(std::string refresh, NewSecret(SecretKind::kRefresh));
  ISB_TRY(db_.Exec("INSERT INTO oauth_refresh(hash, family, access_token_id, created_at, expires_at) "
                   "VALUES (?1, ?2, ?3, ?4, ?5)",
                   {SecretHash(refresh), family, access.record.id, now, now + kOAuthRefreshTtl}));
  return IssuedTokens{std::move(access.secret), access.record.id, std::move(refresh), kOAuthAccessTtl, org, role};
}

Result<GrantResult<IssuedTokens>> OAuthGrants::Redeem(std::string_view code, std::string_view client_id,
                                                      std::string_view redirect_uri, std::string_view verifier,
                                                      std::string_view resource) {
  auto kind = ParseSecret(code);
  if (!kind.ok() || *kind != SecretKind::kAuthCode) return Refused("invalid_grant", "code: not an authorization code");
  const std::string hash = SecretHash(code);
  const int64_t now = now_();
  ISB_ASSIGN_OR_RETURN(auto spent,
                       db_.Query("UPDATE oauth_codes SET used_at = ?2 WHERE hash = ?1 AND used_at IS NULL RETURNING "
                                 "id, client_id, redirect_uri, challenge, user_id, "
                                 "(SELECT name FROM orgs WHERE orgs.id = org_id), role, resource, expires_at",
                                 {hash, now}));
  if (spent.empty()) {
    ISB_ASSIGN_OR_RETURN(auto used, db_.Query("SELECT id FROM oauth_codes WHERE hash = ?1", {hash}));
    if (used.empty()) return Refused("invalid_grant", "code: unknown authorization code");
    ISB_TRY(RevokeFamily(store::AsInt(used[0][0])));
    return Refused("invalid_grant", "code: already used; the tokens it gave are revoked");
  }
  const store::Row& r = spent[0];
  const int64_t family = store::AsInt(r[0]);
  if (store::AsInt(r[8]) <= now) return Refused("invalid_grant", "code: expired; authorize again");
  if (store::AsText(r[1]) != client_id) return Refused("invalid_grant", "code: issued to another client_id");
  if (store::AsText(r[2]) != redirect_uri)
    return Refused("invalid_grant", "redirect_uri: not the one the authorization request sent");
  if (verifier.size() < 43 || verifier.size() > 128 || !HashesEqual(PkceS256(verifier), store::AsText(r[3])))
    return Refused("invalid_grant", "code_verifier: does not match the code_challenge (S256)");
  const std::string approved = store::AsText(r[7]);
  if (!resource.empty() && resource != approved)
    return Refused("invalid_target", "resource: the code was approved for " + approved);
  ISB_ASSIGN_OR_RETURN(OAuthClient client, Client(client_id));
  ISB_ASSIGN_OR_RETURN(Role role, ParseRole(store::AsText(r[6])));
  ISB_ASSIGN_OR_RETURN(IssuedTokens issued,
                       Issue(family, client, store::AsInt(r[4]), store::AsText(r[5]), role, approved));
  return GrantResult<IssuedTokens>(std::move(issued));
}

Result<GrantResult<IssuedTokens>> OAuthGrants::Refresh(std::string_view refresh_token, std::string_view client_id,
                                                       std::string_view resource) {
  auto kind = ParseSecret(refresh_token);
  if (!kind.ok() || *kind != SecretKind::kRefresh)
    return Refused("invalid_grant", "refresh_token: not a refresh token");
  const std::string hash = SecretHash(refresh_token);
  const int64_t now = now_();
  constexpr char kGrantOf[] =
      "SELECT c.client_id, c.user_id, (SELECT name FROM orgs WHERE orgs.id = c.org_id), c.role, c.resource, "
      "(SELECT revoked_at FROM tokens WHERE tokens.id = ?2) FROM oauth_codes c WHERE c.id = ?1";
  ISB_ASSIGN_OR_RETURN(auto spent, db_.Query("UPDATE oauth_refresh SET used_at = ?2 WHERE hash = ?1 AND used_at IS "
                                             "NULL AND revoked_at IS NULL AND expires_at > ?2 RETURNING family, "
                                             "access_token_id",
                                             {hash, now}));
  if (spent.empty()) {
    ISB_ASSIGN_OR_RETURN(auto row, db_.Query("SELECT family, used_at, revoked_at FROM oauth_refresh WHERE hash = ?1",
                                             {hash}));
    if (row.empty()) return Refused("invalid_grant", "refresh_token: unknown refresh token");
    if (OptInt(row[0][2])) return Refused("invalid_grant", "refresh_token: revoked; authorize again");
    if (!OptInt(row[0][1])) return Refused("invalid_grant", "refresh_token: expired; authorize again");
    // A rotated token presented again: whoever holds the family's tokens now may not be the client.
    ISB_TRY(RevokeFamily(store::AsInt(row[0][0])));
    return Refused("invalid_grant", "refresh_token: already used; every token of this grant is revoked");
  }
  const int64_t family = store::AsInt(spent[0][0]);
  ISB_ASSIGN_OR_RETURN(auto grant, db_.Query(kGrantOf, {family, spent[0][1]}));
  if (grant.empty()) return Refused("invalid_grant", "refresh_token: its grant is gone");
  const store::Row& g = grant[0];
  if (store::AsText(g[0]) != client_id) {
    ISB_TRY(RevokeFamily(family));
    return Refused("invalid_grant", "refresh_token: issued to another client_id; the grant is revoked");
  }
  if (OptInt(g[5])) {
    ISB_TRY(RevokeFamily(family));
    return Refused("invalid_grant", "refresh_token: its access token was revoked, and with it the grant");
  }
  const std::string approved = store::AsText(g[4]);
  if (!resource.empty() && resource != approved)
    return Refused("invalid_target", "resource: the grant was approved for " + approved);
  ISB_ASSIGN_OR_RETURN(OAuthClient client, Client(client_id));
  ISB_ASSIGN_OR_RETURN(Role role, ParseRole(store::AsText(g[3])));
  ISB_ASSIGN_OR_RETURN(IssuedTokens issued, Issue(family, client, store::AsInt(g[1]), store::AsText(g[2]), role,
                                                  approved));
  return GrantResult<IssuedTokens>(std::move(issued));
}

}  // namespace isb::identity
