// OAuth 2.1 grants for MCP clients: registered clients, single-use authorization codes bound to a PKCE challenge,
// and refresh tokens rotated on use, whose access tokens are ordinary org-scoped API tokens bound to one resource.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "identity/clock.h"
#include "identity/roles.h"
#include "identity/token_store.h"
#include "store/db.h"

namespace isb::identity {

inline constexpr int64_t kAuthCodeTtl = 60;
inline constexpr int64_t kOAuthAccessTtl = 3600;
inline constexpr int64_t kOAuthRefreshTtl = 30 * 24 * 3600;
// However often it is refreshed, a grant ends this long after the person approved it.
inline constexpr int64_t kOAuthGrantTtl = 90 * 24 * 3600;

// At most this many refreshes of one grant an hour.
inline constexpr int64_t kMaxRefreshesPerHour = 60;
// A rotated refresh token is kept this long to tell a replay of it (which ends the grant).
inline constexpr int64_t kRotatedRefreshKept = 24 * 3600;
// A client registered and never given a code is forgotten after this long.
inline constexpr int64_t kUnusedClientTtl = 24 * 3600;

// RFC 7636 §4.1: 43 to 128 of [A-Za-z0-9-._~].
bool IsPkceVerifier(std::string_view verifier);

struct OAuthClient {
  // "isb_client_" and 16 random base64url characters (registered); not a secret (public clients). Or the https URL
  // of the client's metadata document (a Client ID Metadata Document).
  std::string id;
  std::string name;
  std::vector<std::string> redirect_uris;  // compared byte for byte with what an authorization request sends
  int64_t created_at = 0;
  // A metadata document's client: when the copy read from its URL is to be fetched again. 0: a registered client.
  int64_t document_expires_at = 0;
};

// What the user approved on the consent page, to be handed to the client as a code.
struct CodeGrant {
  std::string client_id;
  std::string redirect_uri;
  std::string challenge;  // PKCE S256
  int64_t user_id = 0;
  std::string org;
  Role role = Role::kViewer;
  std::string resource;  // the MCP URL the tokens are for
  // The browser session the person approved in: the code is issued only while it is live and its user enabled
  // (checked in the transaction that issues it, so a password change cannot fall between). 0: not checked.
  int64_t session_id = 0;
};

struct IssuedTokens {
  std::string access_token;  // isb_tok_
  int64_t access_token_id = 0;
  std::string refresh_token;  // isb_rt_
  int64_t expires_in = kOAuthAccessTtl;
  std::string org;
  Role role = Role::kViewer;
};

// Why a code or refresh token was refused, as RFC 6749 §5.2 names it ("invalid_grant", "invalid_target",
// "invalid_request"), and a sentence saying what was wrong.
struct GrantRefusal {
  std::string error;
  std::string description;
};
template <class T>
using GrantResult = std::variant<T, GrantRefusal>;

// Thread-safe.
class OAuthGrants {
 public:
  OAuthGrants(store::Db& db, Clock now, Tokens& tokens) : db_(db), now_(std::move(now)), tokens_(tokens) {}

  // REQUIRES: the name and URIs were checked (api/oauth_form.h).
  Result<OAuthClient> Register(std::string_view name, const std::vector<std::string>& redirect_uris);
  // kNotFound "client_id: no client is registered as ..." when there is none.
  Result<OAuthClient> Client(std::string_view id);
  // A metadata document's client as last fetched from its URL (`id`), kept until `expires_at`: made, or its name and
  // redirect URIs replaced (its codes and grants stay). REQUIRES: the document was checked (api/oauth_form.h).
  Result<OAuthClient> PutDocumentClient(std::string_view id, std::string_view name,
                                        const std::vector<std::string>& redirect_uris, int64_t expires_at);
  // A fresh code (isb_code_), good once within kAuthCodeTtl seconds.
  Result<std::string> IssueCode(const CodeGrant& grant);

  // The code exchanged for tokens: it must be unused, unexpired, issued to `client_id` for exactly `redirect_uri`,
  // and `verifier` must hash to its challenge; `resource`, when not empty, must be the one approved. The code is
  // spent by the first attempt, good or not; a second presentation also revokes what the first one got.
  Result<GrantResult<IssuedTokens>> Redeem(std::string_view code, std::string_view client_id,
                                           std::string_view redirect_uri, std::string_view verifier,
                                           std::string_view resource);
  // A refresh token exchanged for a new access token and a new refresh token; the access token it replaces expires.
  // A refresh token presented again after its use, or one of a grant any of whose access tokens was revoked, revokes
  // its whole family; so does one past kOAuthGrantTtl since the consent.
  Result<GrantResult<IssuedTokens>> Refresh(std::string_view refresh_token, std::string_view client_id,
                                            std::string_view resource);

  // RFC 7009: a refresh token or an access token of a grant, presented by the client it was issued to, ends the
  // whole grant. False (and nothing done) for a token that is not a live grant's; kForbidden "token: issued to
  // another client_id" for another client's.
  Result<bool> RevokeToken(std::string_view token, std::string_view client_id);

  // Undo what a grant gave when it could not be recorded: `Withdraw` spends a code and revokes the tokens it gave,
  // `RevokeGrantOf` the grant an access token came from, `RemoveClient` a registration.
  Status Withdraw(std::string_view code);
  Status RevokeGrantOf(int64_t access_token_id);
  Status RemoveClient(std::string_view id);

  // Deletes what can never be used again: refresh tokens expired (or rotated kRotatedRefreshKept ago) whose access
  // token has expired, expired access tokens no refresh token refers to, codes past their minute with no refresh
  // token on them, clients unused for kUnusedClientTtl (never given a code) or kOAuthGrantTtl. Returns the rows
  // removed.
  Result<int64_t> Sweep();

 private:
  // Neither token lives past `grant_ends`.
  Result<IssuedTokens> Issue(int64_t family, const OAuthClient& client, int64_t user, const std::string& org, Role role,
                             const std::string& resource, int64_t grant_ends);
  // How many tokens and refresh rows it revoked (0: the grant had ended already).
  Result<size_t> RevokeFamily(int64_t family);

  store::Db& db_;
  Clock now_;
  Tokens& tokens_;
};

}  // namespace isb::identity
