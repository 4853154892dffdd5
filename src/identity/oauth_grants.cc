// OAuth grants: codes and refresh tokens are spent by one conditional UPDATE, so two presentations racing each
// other cannot both succeed.
#include "identity/oauth_grants.h"

#include <algorithm>
#include <cctype>

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

bool IsPkceVerifier(std::string_view verifier) {
  if (verifier.size() < 43 || verifier.size() > 128) return false;
  for (char c : verifier)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_' && c != '~') return false;
  return true;
}

Result<OAuthClient> OAuthGrants::Register(std::string_view name, const std::vector<std::string>& redirect_uris) {
  ISB_ASSIGN_OR_RETURN(std::string random, NewSecret(SecretKind::kToken));
  OAuthClient c{"isb_client_" + random.substr(SecretPrefix(SecretKind::kToken).size(), 22), std::string(name),
                redirect_uris, now_()};
  ISB_TRY(db_.Exec("INSERT INTO oauth_clients(id, name, redirect_uris, created_at) VALUES (?1, ?2, ?3, ?4)",
                   {c.id, c.name, JoinLines(c.redirect_uris), c.created_at}));
  return c;
}

Result<OAuthClient> OAuthGrants::Client(std::string_view id) {
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("SELECT id, name, redirect_uris, created_at, "
                                            "coalesce(document_expires_at, 0) FROM oauth_clients WHERE id = ?1",
                                            {std::string(id)}));
  if (rows.empty())
    return Error::Of(Code::kNotFound, "client_id: no client is registered as '" + std::string(id.substr(0, 64)) +
                                          "'; register it at the registration endpoint first");
  return OAuthClient{store::AsText(rows[0][0]), store::AsText(rows[0][1]), SplitLines(store::AsText(rows[0][2])),
                     store::AsInt(rows[0][3]), store::AsInt(rows[0][4])};
}

Result<OAuthClient> OAuthGrants::PutDocumentClient(std::string_view id, std::string_view name,
                                                   const std::vector<std::string>& redirect_uris, int64_t expires_at) {
  ISB_TRY(
      db_.Exec("INSERT INTO oauth_clients(id, name, redirect_uris, created_at, document_expires_at) "
               "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(id) DO UPDATE SET name = excluded.name, "
               "redirect_uris = excluded.redirect_uris, document_expires_at = excluded.document_expires_at, "
               "created_at = excluded.created_at",
               {std::string(id), std::string(name), JoinLines(redirect_uris), now_(), expires_at}));
  return Client(id);
}

Result<std::string> OAuthGrants::IssueCode(const CodeGrant& grant) {
  ISB_ASSIGN_OR_RETURN(std::string code, NewSecret(SecretKind::kAuthCode));
  const int64_t now = now_();
  Status done = db_.Immediate([&]() -> Status {
    if (grant.session_id != 0) {
      ISB_ASSIGN_OR_RETURN(auto live, db_.Query("SELECT 1 FROM sessions s JOIN users u ON u.id = s.user_id WHERE "
                                                "s.id = ?1 AND s.user_id = ?2 AND s.revoked_at IS NULL AND "
                                                "s.expires_at > ?3 AND u.disabled = 0",
                                                {grant.session_id, grant.user_id, now}));
      if (live.empty()) return Error::Of(Code::kUnauthenticated, "session: ended; sign in to isb again");
    }
    ISB_ASSIGN_OR_RETURN(auto org, db_.Query("SELECT id FROM orgs WHERE name = ?1", {grant.org}));
    if (org.empty()) return Error::Of(Code::kNotFound, "org " + grant.org + " not found");
    ISB_TRY(
        db_.Exec("INSERT INTO oauth_codes(hash, client_id, redirect_uri, challenge, user_id, org_id, role, "
                 "resource, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                 {SecretHash(code), grant.client_id, grant.redirect_uri, grant.challenge, grant.user_id, org[0][0],
                  std::string(RoleName(grant.role)), grant.resource, now, now + kAuthCodeTtl}));
    return db_.Exec("UPDATE oauth_clients SET last_used_at = ?2 WHERE id = ?1", {grant.client_id, now});
  });
  if (!done.ok()) return done.error();
  return code;
}

Status OAuthGrants::Withdraw(std::string_view code) {
  const int64_t now = now_();
  ISB_ASSIGN_OR_RETURN(auto rows, db_.Query("UPDATE oauth_codes SET used_at = coalesce(used_at, ?2) WHERE hash = ?1 "
                                            "RETURNING id",
                                            {SecretHash(code), now}));
  if (rows.empty()) return {};
  ISB_TRY(RevokeFamily(store::AsInt(rows[0][0])));
  return {};
}

Status OAuthGrants::RevokeGrantOf(int64_t access_token_id) {
  ISB_ASSIGN_OR_RETURN(auto rows,
                       db_.Query("SELECT family FROM oauth_refresh WHERE access_token_id = ?1", {access_token_id}));
  if (rows.empty()) return {};
  ISB_TRY(RevokeFamily(store::AsInt(rows[0][0])));
  return {};
}

Result<bool> OAuthGrants::RevokeToken(std::string_view token, std::string_view client_id) {
  auto kind = ParseSecret(token);
  if (!kind.ok()) return false;
  const std::string hash = SecretHash(token);
  std::vector<store::Row> rows;
  if (*kind == SecretKind::kRefresh) {
    ISB_ASSIGN_OR_RETURN(rows, db_.Query("SELECT r.family, c.client_id FROM oauth_refresh r JOIN oauth_codes c ON "
                                         "c.id = r.family WHERE r.hash = ?1",
                                         {hash}));
  } else if (*kind == SecretKind::kToken) {
    // Only an access token an OAuth grant gave is an OAuth client's to revoke; any other token is unknown here.
    ISB_ASSIGN_OR_RETURN(rows, db_.Query("SELECT r.family, c.client_id FROM tokens t JOIN oauth_refresh r ON "
                                         "r.access_token_id = t.id JOIN oauth_codes c ON c.id = r.family WHERE "
                                         "t.hash = ?1 LIMIT 1",
                                         {hash}));
  }
  if (rows.empty()) return false;
  if (store::AsText(rows[0][1]) != client_id) return Error::Of(Code::kForbidden, "token: issued to another client_id");
  // True only when this revoked something: a grant revoked already is not a live grant's token any more.
  ISB_ASSIGN_OR_RETURN(size_t revoked, RevokeFamily(store::AsInt(rows[0][0])));
  return revoked > 0;
}

Status OAuthGrants::RemoveClient(std::string_view id) {
  return db_.Exec("DELETE FROM oauth_clients WHERE id = ?1", {std::string(id)});
}

Result<int64_t> OAuthGrants::Sweep() {
  const int64_t now = now_();
  int64_t removed = 0;
  Status done = db_.Immediate([&]() -> Status {
    // Refresh tokens past their expiry, or rotated a day ago (a rotated one presented later is then unknown rather
    // than a replay), once their access token has expired too.
    ISB_ASSIGN_OR_RETURN(auto refresh,
                         db_.Query("DELETE FROM oauth_refresh WHERE (expires_at <= ?1 OR used_at <= ?2) AND NOT EXISTS "
                                   "(SELECT 1 FROM tokens t WHERE t.id = oauth_refresh.access_token_id AND "
                                   "t.revoked_at IS NULL AND t.expires_at > ?1) RETURNING id",
                                   {now, now - kRotatedRefreshKept}));
    // The expired access tokens of grants that no refresh token refers to any more (only OAuth binds a resource).
    ISB_ASSIGN_OR_RETURN(auto tokens,
                         db_.Query("DELETE FROM tokens WHERE resource IS NOT NULL AND expires_at <= ?1 AND "
                                   "id NOT IN (SELECT access_token_id FROM oauth_refresh) RETURNING id",
                                   {now}));
    // Codes past their minute that no live refresh token hangs off: never exchanged, or their grant over.
    ISB_ASSIGN_OR_RETURN(auto codes,
                         db_.Query("DELETE FROM oauth_codes WHERE expires_at <= ?1 AND NOT EXISTS (SELECT 1 "
                                   "FROM oauth_refresh r WHERE r.family = oauth_codes.id) RETURNING id",
                                   {now}));
    // Clients registered and never given a code within a day, or given none for as long as a grant lives.
    ISB_ASSIGN_OR_RETURN(
        auto clients, db_.Query("DELETE FROM oauth_clients WHERE NOT EXISTS (SELECT 1 FROM oauth_codes c WHERE "
                                "c.client_id = oauth_clients.id) AND ((last_used_at IS NULL AND created_at <= ?1) OR "
                                "last_used_at <= ?2) RETURNING id",
                                {now - kUnusedClientTtl, now - kOAuthGrantTtl}));
    removed = static_cast<int64_t>(refresh.size() + tokens.size() + codes.size() + clients.size());
    return {};
  });
  if (!done.ok()) return done.error();
  return removed;
}

Result<size_t> OAuthGrants::RevokeFamily(int64_t family) {
  const int64_t now = now_();
  ISB_ASSIGN_OR_RETURN(auto tokens, db_.Query("UPDATE tokens SET revoked_at = ?2 WHERE revoked_at IS NULL AND id IN "
                                              "(SELECT access_token_id FROM oauth_refresh WHERE family = ?1) "
                                              "RETURNING id",
                                              {family, now}));
  ISB_ASSIGN_OR_RETURN(auto refresh, db_.Query("UPDATE oauth_refresh SET revoked_at = ?2 WHERE family = ?1 AND "
                                               "revoked_at IS NULL RETURNING id",
                                               {family, now}));
  return tokens.size() + refresh.size();
}

Result<IssuedTokens> OAuthGrants::Issue(int64_t family, const OAuthClient& client, int64_t user, const std::string& org,
                                        Role role, const std::string& resource, int64_t grant_ends) {
  const int64_t now = now_();
  // Neither token outlives the grant.
  const int64_t access_expires_at = std::min(now + kOAuthAccessTtl, grant_ends);
  const int64_t refresh_expires_at = std::min(now + kOAuthRefreshTtl, grant_ends);
  ISB_ASSIGN_OR_RETURN(NewToken access, tokens_.CreateGranted({.name = TokenNameFor(client),
                                                               .org = org,
                                                               .role_cap = role,
                                                               .expires_at = access_expires_at,
                                                               .user_id = user,
                                                               .resource = resource}));
  ISB_ASSIGN_OR_RETURN(std::string refresh, NewSecret(SecretKind::kRefresh));
  ISB_TRY(
      db_.Exec("INSERT INTO oauth_refresh(hash, family, access_token_id, created_at, expires_at) "
               "VALUES (?1, ?2, ?3, ?4, ?5)",
               {SecretHash(refresh), family, access.record.id, now, refresh_expires_at}));
  return IssuedTokens{
      std::move(access.secret), access.record.id, std::move(refresh), access_expires_at - now, org, role};
}

Result<GrantResult<IssuedTokens>> OAuthGrants::Redeem(std::string_view code, std::string_view client_id,
                                                      std::string_view redirect_uri, std::string_view verifier,
                                                      std::string_view resource) {
  auto kind = ParseSecret(code);
  if (!kind.ok() || *kind != SecretKind::kAuthCode) return Refused("invalid_grant", "code: not an authorization code");
  const std::string hash = SecretHash(code);
  const int64_t now = now_();
  // The code is spent and its tokens issued in one write transaction: a replay can come only after the tokens exist,
  // so its revocation reaches them. A failure to issue rolls everything back, and the code is then spent alone.
  Result<GrantResult<IssuedTokens>> out = Refused("invalid_grant", "code: unknown authorization code");
  Status done = db_.Immediate([&]() -> Status {
    ISB_ASSIGN_OR_RETURN(auto spent,
                         db_.Query("UPDATE oauth_codes SET used_at = ?2 WHERE hash = ?1 AND used_at IS NULL RETURNING "
                                   "id, client_id, redirect_uri, challenge, user_id, "
                                   "(SELECT name FROM orgs WHERE orgs.id = org_id), role, resource, expires_at",
                                   {hash, now}));
    if (spent.empty()) {
      ISB_ASSIGN_OR_RETURN(auto used, db_.Query("SELECT id FROM oauth_codes WHERE hash = ?1", {hash}));
      if (used.empty()) return {};
      ISB_TRY(RevokeFamily(store::AsInt(used[0][0])));
      out = Refused("invalid_grant", "code: already used; the tokens it gave are revoked");
      return {};
    }
    const store::Row& r = spent[0];
    const int64_t family = store::AsInt(r[0]);
    const std::string approved = store::AsText(r[7]);
    if (store::AsInt(r[8]) <= now) {
      out = Refused("invalid_grant", "code: expired; authorize again");
    } else if (store::AsText(r[1]) != client_id) {
      out = Refused("invalid_grant", "code: issued to another client_id");
    } else if (store::AsText(r[2]) != redirect_uri) {
      out = Refused("invalid_grant", "redirect_uri: not the one the authorization request sent");
    } else if (!IsPkceVerifier(verifier) || !HashesEqual(PkceS256(verifier), store::AsText(r[3]))) {
      out = Refused("invalid_grant", "code_verifier: does not match the code_challenge (S256)");
    } else if (!resource.empty() && resource != approved) {
      out = Refused("invalid_target", "resource: the code was approved for " + approved);
    } else {
      ISB_ASSIGN_OR_RETURN(OAuthClient client, Client(client_id));
      ISB_ASSIGN_OR_RETURN(Role role, ParseRole(store::AsText(r[6])));
      ISB_ASSIGN_OR_RETURN(IssuedTokens issued, Issue(family, client, store::AsInt(r[4]), store::AsText(r[5]), role,
                                                      approved, now + kOAuthGrantTtl));
      out = GrantResult<IssuedTokens>(std::move(issued));
    }
    return {};
  });
  if (!done.ok()) {
    if (Status spent = db_.Exec("UPDATE oauth_codes SET used_at = ?2 WHERE hash = ?1 AND used_at IS NULL", {hash, now});
        !spent.ok())
      return spent.error();
    return done.error();
  }
  return out;
}

Result<GrantResult<IssuedTokens>> OAuthGrants::Refresh(std::string_view refresh_token, std::string_view client_id,
                                                       std::string_view resource) {
  auto kind = ParseSecret(refresh_token);
  if (!kind.ok() || *kind != SecretKind::kRefresh)
    return Refused("invalid_grant", "refresh_token: not a refresh token");
  const std::string hash = SecretHash(refresh_token);
  const int64_t now = now_();
  // The grant: who approved what, when, and whether any access token it gave was revoked (by its user, an admin,
  // a password change or a replay): one revoked ends the grant.
  constexpr char kGrantOf[] =
      "SELECT c.client_id, c.user_id, (SELECT name FROM orgs WHERE orgs.id = c.org_id), c.role, c.resource, "
      "EXISTS (SELECT 1 FROM oauth_refresh r JOIN tokens t ON t.id = r.access_token_id WHERE r.family = c.id AND "
      "t.revoked_at IS NOT NULL), c.created_at FROM oauth_codes c WHERE c.id = ?1";
  Result<GrantResult<IssuedTokens>> out = Refused("invalid_grant", "refresh_token: unknown refresh token");
  Status done = db_.Immediate([&]() -> Status {
    // A grant refreshed in a loop would grow the database and the audit log without bound: at most
    // kMaxRefreshesPerHour, after which the token stays good for later.
    // (A token that cannot be spent goes on below, where a replay of it ends the grant.)
    ISB_ASSIGN_OR_RETURN(auto recent, db_.Query("SELECT count(*) FROM oauth_refresh WHERE created_at > ?2 AND family = "
                                                "(SELECT family FROM oauth_refresh WHERE hash = ?1 AND used_at IS NULL "
                                                "AND revoked_at IS NULL AND expires_at > ?3)",
                                                {hash, now - 3600, now}));
    if (store::AsInt(recent[0][0]) > kMaxRefreshesPerHour) {
      out =
          Refused("invalid_request", "refresh_token: this grant was refreshed " + std::to_string(kMaxRefreshesPerHour) +
                                         " times in the last hour; refresh "
                                         "again when the access token you have expires");
      return {};
    }
    ISB_ASSIGN_OR_RETURN(auto spent, db_.Query("UPDATE oauth_refresh SET used_at = ?2 WHERE hash = ?1 AND used_at IS "
                                               "NULL AND revoked_at IS NULL AND expires_at > ?2 RETURNING family, "
                                               "access_token_id",
                                               {hash, now}));
    if (spent.empty()) {
      ISB_ASSIGN_OR_RETURN(auto row,
                           db_.Query("SELECT family, used_at, revoked_at FROM oauth_refresh WHERE hash = ?1", {hash}));
      if (row.empty()) return {};
      if (OptInt(row[0][2])) {
        out = Refused("invalid_grant", "refresh_token: revoked; authorize again");
      } else if (!OptInt(row[0][1])) {
        out = Refused("invalid_grant", "refresh_token: expired; authorize again");
      } else {
        // A rotated token presented again: whoever holds the family's tokens now may not be the client.
        ISB_TRY(RevokeFamily(store::AsInt(row[0][0])));
        out = Refused("invalid_grant", "refresh_token: already used; every token of this grant is revoked");
      }
      return {};
    }
    const int64_t family = store::AsInt(spent[0][0]), previous = store::AsInt(spent[0][1]);
    ISB_ASSIGN_OR_RETURN(auto grant, db_.Query(kGrantOf, {family}));
    if (grant.empty()) {
      out = Refused("invalid_grant", "refresh_token: its grant is gone");
      return {};
    }
    const store::Row& g = grant[0];
    const std::string approved = store::AsText(g[4]);
    const int64_t ends = store::AsInt(g[6]) + kOAuthGrantTtl;
    if (store::AsText(g[0]) != client_id) {
      ISB_TRY(RevokeFamily(family));
      out = Refused("invalid_grant", "refresh_token: issued to another client_id; the grant is revoked");
    } else if (store::AsInt(g[5]) != 0) {
      ISB_TRY(RevokeFamily(family));
      out = Refused("invalid_grant", "refresh_token: an access token of this grant was revoked, and with it the grant");
    } else if (ends <= now) {
      ISB_TRY(RevokeFamily(family));
      out = Refused("invalid_grant", "refresh_token: the grant is older than " +
                                         std::to_string(kOAuthGrantTtl / 86400) + " days; authorize again");
    } else if (!resource.empty() && resource != approved) {
      out = Refused("invalid_target", "resource: the grant was approved for " + approved);
    } else {
      // One access token of a grant is good at a time: the one this refresh replaces ends now.
      ISB_TRY(
          db_.Exec("UPDATE tokens SET expires_at = ?2 WHERE id = ?1 AND revoked_at IS NULL AND "
                   "(expires_at IS NULL OR expires_at > ?2)",
                   {previous, now}));
      ISB_ASSIGN_OR_RETURN(OAuthClient client, Client(client_id));
      // The new token keeps the name the grant's tokens have had: a client's metadata document changed since the
      // consent cannot rename what the person approved (in `isb token ls`).
      ISB_ASSIGN_OR_RETURN(auto named, db_.Query("SELECT name FROM tokens WHERE id = ?1", {previous}));
      if (!named.empty() && store::AsText(named[0][0]).starts_with("oauth "))
        client.name = store::AsText(named[0][0]).substr(6);
      ISB_ASSIGN_OR_RETURN(Role role, ParseRole(store::AsText(g[3])));
      Result<IssuedTokens> issued =
          Issue(family, client, store::AsInt(g[1]), store::AsText(g[2]), role, approved, ends);
      if (issued.ok()) {
        out = GrantResult<IssuedTokens>(std::move(*issued));
      } else if (const Code code = issued.error().code;
                 code == Code::kForbidden || code == Code::kNotFound || code == Code::kUnauthenticated) {
        // The person no longer holds what they approved (removed from the org, a lower role, a disabled account):
        // the grant ends, rather than coming back if that changes again.
        ISB_TRY(RevokeFamily(family));
        out = Refused("invalid_grant", "refresh_token: " + issued.error().message + "; the grant is revoked");
      } else {
        return issued.error();
      }
    }
    return {};
  });
  if (!done.ok()) return done.error();
  return out;
}

}  // namespace isb::identity
