// OAuth 2.1 for MCP clients, as the MCP authorization spec describes: isb is the protected resource and its own
// authorization server. Public clients only, authorization code with PKCE S256, dynamic registration.
//
//   GET  /.well-known/oauth-protected-resource[/mcp|/orgs/O/mcp]  RFC 9728 metadata of the MCP resource
//   GET  /.well-known/oauth-authorization-server                  RFC 8414 metadata
//   POST /oauth/register   RFC 7591 JSON                           -> 201 {client_id, ...}
//   GET  /oauth/authorize  ?response_type=code&client_id&redirect_uri&code_challenge&code_challenge_method=S256
//                          [&state][&scope][&resource]             -> the consent page (a signed-in session)
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
#include <string>
#include <string_view>

#include "api/http_message.h"
#include "api/web_auth.h"
#include "base/mutex.h"
#include "identity/rate_limit.h"
#include "identity/store.h"

namespace isb::api {

// An OAuth event for the audit log: "oauth_register", "oauth_grant" (approved on the consent page), "oauth_deny"
// (refused there), "oauth_token" (a code exchanged), "oauth_refresh", "oauth_revoke" (RFC 7009).
struct OAuthEvent {
  std::string action;
  std::string account;  // the user, when known
  std::string org;
  std::string client;  // "NAME (client_id)"
  Status outcome;
};

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
  Mutex refusal_mu_;
  identity::RateLimiter refusal_rows_ ISB_GUARDED_BY(refusal_mu_);
  identity::RateLimiter all_refusal_rows_ ISB_GUARDED_BY(refusal_mu_);
  Mutex mu_;
  std::map<std::string, Pending, std::less<>> pending_ ISB_GUARDED_BY(mu_);
  int64_t last_sweep_ ISB_GUARDED_BY(mu_) = 0;
};

}  // namespace isb::api
