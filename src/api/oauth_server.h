// OAuth 2.1 for MCP clients, as the MCP authorization spec describes: isb is the protected resource and its own
// authorization server. Public clients only, authorization code with PKCE S256, clients known by the URL of their
// metadata document (Client ID Metadata Documents) or registered dynamically (RFC 7591).
//
//   GET  /.well-known/oauth-protected-resource[/mcp|/orgs/O/mcp]  RFC 9728 metadata of the MCP resource
//   GET  /.well-known/oauth-authorization-server                  RFC 8414 metadata
//   POST /oauth/register   RFC 7591 JSON                           -> 201 {client_id, ...}
//   GET  /oauth/authorize  ?response_type=code&client_id&redirect_uri&code_challenge&code_challenge_method=S256
//                          [&state][&scope][&resource]             -> the consent page (a signed-in session)
//                          a client_id that is an https URL is fetched (for a signed-in person only) and read as
//                          the client's metadata; the copy is kept as long as its Cache-Control says, within bounds
//   POST /oauth/authorize  form {request, org, role, decision}     -> 302 to redirect_uri with code or error
//   POST /oauth/token      form grant_type=authorization_code|refresh_token -> 200 {access_token, refresh_token, ...}
//   POST /oauth/revoke     form token, client_id (RFC 7009)      -> 200; a grant's token ends the grant
//
// The resource is the MCP URL itself (scheme://Host/mcp, or /orgs/O/mcp), the issuer scheme://Host. Access tokens
// are API tokens (isb_tok_) scoped to the org and capped at the role approved, bound to the resource: listed and
// revoked with the user's other tokens. A scope of a role name ("viewer", "member", "admin", "owner") asks for
// that role; the user may approve a lower one.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "api/http_message.h"
#include "api/web_auth.h"
#include "base/mutex.h"
#include "identity/rate_limit.h"
#include "identity/store.h"

namespace isb::api {

// An OAuth event for the audit log: "oauth_register", "oauth_client_document" (a client's metadata document fetched
// and read, or refused), "oauth_grant" (approved on the consent page), "oauth_deny" (refused there), "oauth_token"
// (a code exchanged), "oauth_refresh", "oauth_revoke" (RFC 7009).
struct OAuthEvent {
  std::string action;
  std::string account;  // the user, when known
  std::string org;
  std::string client;  // "NAME (client_id)"
  Status outcome;
  // oauth_client_document: the redirect URIs the document lists, or why it was refused.
  std::vector<std::string> redirect_uris{};
  std::string reason{};
};

// A client's metadata document as its URL answered: the status, the headers isb reads, and the body (at most
// kMaxClientDocumentBytes: a longer one is the fetch's error).
struct FetchedDocument {
  int status = 0;
  std::string content_type{};
  std::string cache_control{};
  std::string body{};
};
// GETs a client_id URL (one that passed CheckClientIdUrl) without following redirects. Errors say why in words a
// person can act on, never quoting the body.
using DocumentFetch = std::function<Result<FetchedDocument>(const std::string& url)>;

// Documents fetched at once, over all requests (and one at a time a person): a fetch holds a request's thread for
// up to its timeout.
inline constexpr int kMaxDocumentFetchesAtOnce = 4;

struct OAuthOptions {
  std::string scheme = "http";  // of the issuer and resource URLs: "https" behind a TLS proxy
  // Records an event; a failure to record a registration, a grant or an exchange undoes it and refuses (503), so
  // nothing is handed out that the audit log does not hold.
  std::function<Status(const Request& req, const OAuthEvent& event)> on_event;
  // Registrations one client address may make an hour: each is a row kept for good.
  int registrations_per_hour = 20;
  // Refused token requests audited a minute per client address (all of loopback is one), and ten times that in all,
  // as HttpServer's refusals: an anonymous flood of bad codes cannot grow the audit log without bound.
  int refusal_rows_per_minute = 60;
  // Reads client metadata documents (src/daemon/client_documents.h: the daemon's SSRF-safe dialer, TLS verified).
  // Unset: a client_id URL is refused, and the metadata does not offer them.
  DocumentFetch fetch_client_document{};
  // Documents one signed-in person may have fetched an hour (a copy still fresh is not fetched again).
  int document_fetches_per_hour = 30;
};

inline constexpr size_t kMaxPendingConsents = 1024;
// Consent pages one person may have waiting, over all their sessions: one member cannot fill the others' room.
inline constexpr size_t kMaxPendingConsentsPerUser = 8;
inline constexpr int64_t kConsentTtl = 600;

// The MCP resource a request is to: scheme://Host and its path when that is /mcp or /orgs/O/mcp, else "".
std::string McpResourceOf(const Request& req, std::string_view scheme);

// Thread-safe. The store and web_auth must outlive it.
class OAuthServer {
 public:
  OAuthServer(identity::IdentityStore& store, WebAuth& web_auth, OAuthOptions options);

  // The routes above.
  Response Handle(const Request& req);
  std::string ResourceOf(const Request& req) const { return McpResourceOf(req, options_.scheme); }
  // Where a 401 from the MCP resource `req` was sent to points the client (WWW-Authenticate resource_metadata).
  std::string ResourceMetadataUrl(const Request& req) const;

 private:
  // A consent page shown, awaiting its answer. Its id is the form's CSRF token: only the page shown to this
  // session has it, and it is good once.
  struct Pending {
    int64_t session_id = 0;
    int64_t user_id = 0;
    std::string user_name{};
    identity::OAuthClient client{};
    std::string redirect_uri{}, challenge{}, state{}, resource{};
    std::string org{};  // fixed by the resource (/orgs/O/mcp); "": the user picks
    int64_t expires_at = 0;
  };
  Response Consent(const identity::Principal& who, Pending pending, identity::Role asked);
  std::string Issuer(const Request& req) const;
  Response ProtectedResource(const Request& req);
  Response AuthorizationServer(const Request& req);
  Response Register(const Request& req);
  Response Authorize(const Request& req);
  // The client a metadata document URL names: the stored copy while fresh, else fetched, read and stored (and
  // audited) for `who`. Errors name the URL and say what was wrong.
  Result<identity::OAuthClient> DocumentClient(const Request& req, const identity::Principal& who,
                                               const std::string& url);
  Response Decide(const Request& req);
  Response Token(const Request& req);
  Response Revoke(const Request& req);
  Status Report(const Request& req, OAuthEvent event);
  // Reports a refused request within the refusal budget of its address and of all addresses.
  void ReportRefusal(const Request& req, OAuthEvent event);
  // Sweeps expired rows (OAuthGrants::Sweep) at most once an hour, on the request that finds it due.
  void SweepIfDue();

  identity::IdentityStore& store_;
  WebAuth& web_auth_;
  OAuthOptions options_;
  identity::RateLimiter registrations_;
  Mutex fetch_mu_;
  identity::RateLimiter document_fetches_ ISB_GUARDED_BY(fetch_mu_);
  std::set<int64_t> fetching_for_ ISB_GUARDED_BY(fetch_mu_);  // the people a document is being fetched for
  Mutex refusal_mu_;
  identity::RateLimiter refusal_rows_ ISB_GUARDED_BY(refusal_mu_);
  identity::RateLimiter all_refusal_rows_ ISB_GUARDED_BY(refusal_mu_);
  Mutex mu_;
  std::map<std::string, Pending, std::less<>> pending_ ISB_GUARDED_BY(mu_);
  int64_t last_sweep_ ISB_GUARDED_BY(mu_) = 0;
};

}  // namespace isb::api
