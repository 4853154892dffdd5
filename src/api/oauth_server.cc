// The OAuth endpoints. A request that cannot be trusted to name its client and redirect URI gets an error page;
// once both are known good, refusals go back to the client on its redirect URI, as RFC 6749 §4.1.2.1 asks.
#include "api/oauth_server.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "api/json_util.h"
#include "api/listen_address.h"
#include "api/oauth_form.h"
#include "api/rest.h"
#include "identity/tokens.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
using identity::Role;

constexpr char kPrmPath[] = "/.well-known/oauth-protected-resource";
constexpr char kAsPath[] = "/.well-known/oauth-authorization-server";
constexpr size_t kMaxOAuthBody = 16 * 1024;
// The consent page is isb's own: no script, no style, no frames around it (a framed consent page is a clickjacking
// target), and it posts only to isb (the 302 after the post leaves, which form-action would stop in some browsers).
constexpr char kPageSecurityPolicy[] = "default-src 'none'; base-uri 'none'; frame-ancestors 'none'";

Response Json(int status, const json& body) {
  Response r = JsonResponse(status, body.dump());
  r.headers.Set("Cache-Control", "no-store");
  r.headers.Set("Access-Control-Allow-Origin", "*");  // no cookie is read here: browser-based clients may call
  return r;
}

// RFC 6749 §5.2.
Response OAuthError(int status, std::string_view error, std::string_view description) {
  return Json(status, {{"error", error}, {"error_description", description}});
}

Response Page(int status, std::string_view title, const std::string& body_html) {
  Response r;
  r.status = status;
  r.headers.Set("Content-Type", "text/html; charset=utf-8");
  r.headers.Set("Content-Security-Policy", kPageSecurityPolicy);
  r.headers.Set("X-Frame-Options", "DENY");
  r.headers.Set("Cache-Control", "no-store");
  r.headers.Set("Referrer-Policy", "no-referrer");
  r.body = "<!doctype html><html><head><meta charset=\"utf-8\"><title>" + HtmlEscape(title) +
           "</title></head><body><h1>" + HtmlEscape(title) + "</h1>" + body_html + "</body></html>";
  return r;
}

Response ErrorPage(int status, const std::string& message) {
  return Page(status, "isb: authorization refused", "<p>" + HtmlEscape(message) + "</p>");
}

std::string PercentEncode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// 302 to the client's redirect URI with `params` (and state, and iss per RFC 9207) in its query.
Response BackToClient(const std::string& redirect_uri, std::vector<std::pair<std::string, std::string>> params,
                      const std::string& state, const std::string& issuer) {
  if (!state.empty()) params.emplace_back("state", state);
  params.emplace_back("iss", issuer);
  std::string location = redirect_uri;
  char sep = location.find('?') == std::string::npos ? '?' : '&';
  for (const auto& [k, v] : params) {
    location += sep + k + "=" + PercentEncode(v);
    sep = '&';
  }
  Response r;
  r.status = 302;
  r.headers.Set("Location", location);
  r.headers.Set("Cache-Control", "no-store");
  return r;
}

bool IsChallenge(std::string_view c) {
  if (c.size() != 43) return false;
  for (char ch : c)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') return false;
  return true;
}

// The highest role named among the scope's space-separated words; member when none is.
Role AskedRole(std::string_view scope) {
  std::optional<Role> asked;
  while (!scope.empty()) {
    size_t sp = scope.find(' ');
    auto role = identity::ParseRole(scope.substr(0, sp));
    if (role.ok() && (!asked || *role > *asked)) asked = *role;
    scope = sp == std::string_view::npos ? std::string_view() : scope.substr(sp + 1);
  }
  return asked.value_or(Role::kMember);
}

std::string ClientLabel(const identity::OAuthClient& c) { return c.name + " (" + c.id + ")"; }

Result<Form> FormBody(const Request& req) {
  if (req.body.size() > kMaxOAuthBody)
    return Error::Of(Code::kTooLarge, "body: at most " + std::to_string(kMaxOAuthBody) + " bytes");
  if (!EqualsIgnoreCase(req.headers.Get("Content-Type").substr(0, 33), "application/x-www-form-urlencoded"))
    return Error::Of(Code::kInvalidArgument, "Content-Type: send application/x-www-form-urlencoded");
  return ParseForm(req.body);
}

}  // namespace

std::string McpResourceOf(const Request& req, std::string_view scheme) {
  std::string_view path = req.Path();
  const bool org_mcp = path.starts_with("/orgs/") && path.ends_with("/mcp") && path.size() > 10 &&
                       path.substr(6, path.size() - 10).find('/') == std::string_view::npos;
  if (path != "/mcp" && !org_mcp) return "";
  return std::string(scheme) + "://" + req.headers.Get("Host") + std::string(path);
}

OAuthServer::OAuthServer(identity::IdentityStore& store, WebAuth& web_auth, OAuthOptions options)
    : store_(store),
      web_auth_(web_auth),
      options_(std::move(options)),
      registrations_({options_.registrations_per_hour, 3600, 10000}),
      document_fetches_({options_.document_fetches_per_hour, 3600, 10000}),
      refusal_rows_({options_.refusal_rows_per_minute, 60, 10000}),
      all_refusal_rows_({options_.refusal_rows_per_minute * 10, 60, 1}) {}

std::string OAuthServer::Issuer(const Request& req) const { return options_.scheme + "://" + req.headers.Get("Host"); }

std::string OAuthServer::ResourceMetadataUrl(const Request& req) const {
  return Issuer(req) + kPrmPath + std::string(req.Path());
}

Status OAuthServer::Report(const Request& req, OAuthEvent event) {
  return options_.on_event ? options_.on_event(req, event) : Status{};
}

void OAuthServer::ReportRefusal(const Request& req, OAuthEvent event) {
  const std::string key = IsLoopbackHost(req.remote_address) ? std::string("loopback") : req.remote_address;
  {
    MutexLock lock(refusal_mu_);
    if (refusal_rows_.RetryAfter(key) != 0 || all_refusal_rows_.RetryAfter("all") != 0) return;
    refusal_rows_.RecordFailure(key);
    all_refusal_rows_.RecordFailure("all");
  }
  (void)Report(req, std::move(event));  // a refusal that cannot be recorded is still a refusal
}

void OAuthServer::SweepIfDue() {
  const int64_t now = identity::UnixNow();
  {
    MutexLock lock(mu_);
    if (now - last_sweep_ < 3600) return;
    last_sweep_ = now;
  }
  (void)store_.oauth().Sweep();  // what is not swept now is swept at the next
}

Response OAuthServer::Handle(const Request& req) {
  if (Status host = web_auth_.CheckHostOf(req); !host.ok()) return ErrorResponse(host.error());
  SweepIfDue();
  std::string_view path = req.Path();
  const bool post = req.method == "POST", get = req.method == "GET" || req.method == "HEAD";
  // A browser-based client's preflight, granted only for the endpoints that read no cookie: the consent endpoint
  // (/oauth/authorize) gets none, and its answers are checked by Origin and a single-use id instead.
  const bool cookie_free = path == kAsPath || path == kPrmPath || path.starts_with(std::string(kPrmPath) + "/") ||
                           path == "/oauth/register" || path == "/oauth/token" || path == "/oauth/revoke";
  if (req.method == "OPTIONS" && cookie_free) {
    Response r = Json(204, json::object());
    r.body.clear();
    r.headers.Set("Access-Control-Allow-Methods", "GET, POST");
    r.headers.Set("Access-Control-Allow-Headers", "Content-Type, MCP-Protocol-Version");
    return r;
  }
  if (get && (path == kPrmPath || path.starts_with(std::string(kPrmPath) + "/"))) return ProtectedResource(req);
  if (get && path == kAsPath) return AuthorizationServer(req);
  if (post && path == "/oauth/register") return Register(req);
  if (get && path == "/oauth/authorize") return Authorize(req);
  if (post && path == "/oauth/authorize") return Decide(req);
  if (post && path == "/oauth/token") return Token(req);
  if (post && path == "/oauth/revoke") return Revoke(req);
  return ErrorResponse(
      Error::Of(Code::kNotFound, "no route for " + req.method + " " + SanitizeUtf8(path.substr(0, 200))));
}

Response OAuthServer::ProtectedResource(const Request& req) {
  std::string_view rest = req.Path().substr(sizeof(kPrmPath) - 1);
  Request as_mcp = req;
  as_mcp.target = rest.empty() ? "/mcp" : std::string(rest);
  const std::string resource = ResourceOf(as_mcp);
  if (resource.empty())
    return ErrorResponse(Error::Of(Code::kNotFound, "no protected resource at " + SanitizeUtf8(rest.substr(0, 200))));
  return Json(200, {{"resource", resource},
                    {"authorization_servers", {Issuer(req)}},
                    {"bearer_methods_supported", {"header"}},
                    {"resource_name", "isb"}});
}

Response OAuthServer::AuthorizationServer(const Request& req) {
  const std::string issuer = Issuer(req);
  return Json(200, {{"issuer", issuer},
                    {"authorization_endpoint", issuer + "/oauth/authorize"},
                    {"token_endpoint", issuer + "/oauth/token"},
                    {"revocation_endpoint", issuer + "/oauth/revoke"},
                    {"revocation_endpoint_auth_methods_supported", {"none"}},
                    {"registration_endpoint", issuer + "/oauth/register"},
                    {"client_id_metadata_document_supported", static_cast<bool>(options_.fetch_client_document)},
                    {"response_types_supported", {"code"}},
                    {"grant_types_supported", {"authorization_code", "refresh_token"}},
                    {"code_challenge_methods_supported", {"S256"}},
                    {"token_endpoint_auth_methods_supported", {"none"}},
                    {"scopes_supported", {"viewer", "member", "admin", "owner"}},
                    {"authorization_response_iss_parameter_supported", true}});
}

Response OAuthServer::Register(const Request& req) {
  if (req.body.size() > kMaxOAuthBody)
    return OAuthError(413, "invalid_client_metadata", "body: at most " + std::to_string(kMaxOAuthBody) + " bytes");
  if (int64_t wait = registrations_.RetryAfter(req.remote_address); wait > 0) {
    ReportRefusal(req, {"oauth_register", "", "", "", Error::Of(Code::kTooManyRequests, "too many registrations")});
    Response r = OAuthError(429, "invalid_request",
                            "too many registrations from this address; try again in " + std::to_string(wait) + " s");
    r.headers.Set("Retry-After", std::to_string(wait));
    return r;
  }
  auto parsed = ParseClientRegistration(req.body);
  if (!parsed.ok()) {
    ReportRefusal(req, {"oauth_register", "", "", "", parsed.error()});
    const bool uri = parsed.error().message.starts_with("redirect_uris");
    return OAuthError(400, uri ? "invalid_redirect_uri" : "invalid_client_metadata", parsed.error().message);
  }
  registrations_.RecordFailure(req.remote_address);
  auto client = store_.oauth().Register(parsed->name, parsed->redirect_uris);
  Status recorded = Report(req, {"oauth_register", "", "", client.ok() ? ClientLabel(*client) : parsed->name,
                                 client.ok() ? Status{} : Status(client.error())});
  if (!client.ok()) return ErrorResponse(client.error());
  if (!recorded.ok()) {
    (void)store_.oauth().RemoveClient(client->id);
    return OAuthError(503, "temporarily_unavailable", recorded.error().message);
  }
  return Json(201, {{"client_id", client->id},
                    {"client_id_issued_at", client->created_at},
                    {"client_name", client->name},
                    {"redirect_uris", client->redirect_uris},
                    {"grant_types", {"authorization_code", "refresh_token"}},
                    {"response_types", {"code"}},
                    {"token_endpoint_auth_method", "none"}});
}

Result<identity::OAuthClient> OAuthServer::DocumentClient(const Request& req, const identity::Principal& who,
                                                          const std::string& url) {
  const int64_t now = identity::UnixNow();
  if (auto stored = store_.oauth().Client(url); stored.ok() && stored->document_expires_at > now) return stored;
  Status may;
  {
    MutexLock lock(fetch_mu_);
    const std::string key = std::to_string(who.user_id);
    if (int64_t wait = document_fetches_.RetryAfter(key); wait > 0)
      may = Error::Of(Code::kTooManyRequests, "client_id: " + std::to_string(options_.document_fetches_per_hour) +
                                                  " client metadata documents were fetched for you this hour; try "
                                                  "again in " +
                                                  std::to_string(wait) + " s");
    else if (fetching_for_.contains(who.user_id))
      may = Error::Of(Code::kTooManyRequests,
                      "client_id: a client metadata document is being fetched for you "
                      "already; try again when it is done");
    else if (fetching_for_.size() >= static_cast<size_t>(kMaxDocumentFetchesAtOnce))
      may = Error::Of(Code::kUnavailable,
                      "client_id: isb is reading other clients' metadata documents; try again "
                      "in a few seconds");
    if (may.ok()) {
      document_fetches_.RecordFailure(key);
      fetching_for_.insert(who.user_id);
    }
  }
  if (!may.ok()) {
    ReportRefusal(req, {"oauth_client_document", who.user_name, "", url, may});
    return may.error();
  }
  Result<FetchedDocument> fetched = Error::Of(Code::kInternal, "unset");
  try {
    fetched = options_.fetch_client_document(url);
  } catch (...) {
    fetched = Error::Of(Code::kInternal, "the fetch failed");
  }
  {
    MutexLock lock(fetch_mu_);
    fetching_for_.erase(who.user_id);
  }
  // Every failure is the document's (400): 503 is kept for isb's own state.
  const std::string at = "client_id: the metadata document at " + url;
  Result<ClientRegistration> reg = Error::Of(Code::kInternal, "unset");
  std::string content_type;
  if (fetched.ok()) {
    content_type = fetched->content_type.substr(0, fetched->content_type.find(';'));
    while (!content_type.empty() && content_type.back() == ' ') content_type.pop_back();
    for (char& c : content_type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  const bool json_type = content_type == "application/json" ||
                         (content_type.starts_with("application/") && content_type.ends_with("+json"));
  if (!fetched.ok() && fetched.error().code == Code::kForbidden) {
    // Which private range a name resolves to is the inside of someone's network: not told to the person.
    reg = Error::Of(Code::kInvalidArgument,
                    at + " could not be fetched: it is not on a public address (isb reads documents on loopback or "
                         "private addresses only from hosts allowed with isb serve --oauth-client-allow)");
  } else if (!fetched.ok()) {
    reg = Error::Of(Code::kInvalidArgument, at + " could not be fetched: " + fetched.error().message);
  } else if (fetched->status >= 300 && fetched->status < 400) {
    reg = Error::Of(Code::kInvalidArgument, at + " answered HTTP " + std::to_string(fetched->status) +
                                                " (a redirect): isb reads a client's metadata only at its own URL");
  } else if (fetched->status != 200) {
    reg = Error::Of(Code::kInvalidArgument, at + " answered HTTP " + std::to_string(fetched->status) + ", not 200");
  } else if (!json_type) {
    reg = Error::Of(Code::kInvalidArgument, at + " is served as '" +
                                                SanitizeUtf8(std::string_view(content_type).substr(0, 64)) +
                                                "', not as JSON (application/json)");
  } else {
    reg = ParseClientDocument(url, fetched->body);
    if (!reg.ok()) reg = Error::Of(Code::kInvalidArgument, at + ": " + reg.error().message);
  }
  // Each fetch is one row, read or refused (paced per person above, so not budgeted by address); a read's row holds
  // the redirect URIs the consent is then given on, a refusal's why (the dialer's own words included).
  if (!reg.ok()) {
    OAuthEvent refused{"oauth_client_document", who.user_name, "", url, reg.error()};
    refused.reason = fetched.ok() ? reg.error().message : at + ": " + fetched.error().message;
    (void)Report(req, std::move(refused));
    return reg.error();
  }
  OAuthEvent read{"oauth_client_document", who.user_name, "", reg->name + " (" + url + ")", Status{}};
  read.redirect_uris = reg->redirect_uris;
  // Recorded first: a copy the audit log does not hold is never stored, and the earlier copy stays as it was.
  if (Status recorded = Report(req, std::move(read)); !recorded.ok())
    return Error::Of(Code::kUnavailable, "client_id: " + recorded.error().message);
  return store_.oauth().PutDocumentClient(url, reg->name, reg->redirect_uris,
                                          now + ClientDocumentLifetime(fetched->cache_control));
}

Response OAuthServer::Authorize(const Request& req) {
  auto query = ParseForm(req.Query());
  if (!query.ok()) return ErrorPage(400, query.error().message);
  const std::string client_id = FormValue(*query, "client_id"), issuer = Issuer(req);
  const bool document = IsClientIdUrl(client_id);
  Result<identity::OAuthClient> client = Error::Of(Code::kInternal, "unset");
  if (document) {
    if (!options_.fetch_client_document)
      return ErrorPage(400,
                       "client_id: this isb does not read client metadata documents (isb serve "
                       "--no-oauth-client-documents); register the client at " +
                           issuer + "/oauth/register");
    if (Status url = CheckClientIdUrl(client_id); !url.ok()) return ErrorPage(400, url.error().message);
  }
  // Every error before the person answers is a page here, never a redirect: a redirect at once would let anyone
  // bounce a browser through isb to any registered URI without a session or a click. A registered client's redirect
  // URI is checked first; what can be checked without a document is checked before it is fetched.
  const std::string state = FormValue(*query, "state"), redirect_uri = FormValue(*query, "redirect_uri");
  auto listed = [&](const identity::OAuthClient& c) {
    return std::find(c.redirect_uris.begin(), c.redirect_uris.end(), redirect_uri) != c.redirect_uris.end();
  };
  if (!document) {
    client = store_.oauth().Client(client_id);
    if (!client.ok()) return ErrorPage(400, client.error().message);
    if (!listed(*client)) return ErrorPage(400, "redirect_uri: not one registered for client " + client->id);
  }
  if (FormValue(*query, "response_type") != "code") return ErrorPage(400, "response_type: only code");
  if (FormValue(*query, "code_challenge_method") != "S256") return ErrorPage(400, "code_challenge_method: only S256");
  const std::string challenge = FormValue(*query, "code_challenge");
  if (!IsChallenge(challenge)) return ErrorPage(400, "code_challenge: 43 base64url characters (S256)");
  std::string resource = FormValue(*query, "resource");
  if (resource.empty()) resource = issuer + "/mcp";
  std::string fixed_org;
  if (resource != issuer + "/mcp") {
    const std::string prefix = issuer + "/orgs/";
    std::string_view org = std::string_view(resource);
    const bool org_mcp = org.starts_with(prefix) && org.ends_with("/mcp") && org.size() > prefix.size() + 4;
    if (org_mcp) org = org.substr(prefix.size(), org.size() - prefix.size() - 4);
    if (!org_mcp || org.find('/') != std::string_view::npos)
      return ErrorPage(400, "resource: isb's MCP resources are " + issuer + "/mcp and " + issuer + "/orgs/ORG/mcp");
    fixed_org = std::string(org);
  }
  auto who = web_auth_.Session(req);
  if (document) {
    // Nothing is fetched for someone who is not signed in: the page asks them to sign in first.
    if (!who.ok()) {
      return Page(401, "isb: sign in first",
                  "<p>A client published at <strong>" + HtmlEscape(RedirectHost(client_id)) +
                      "</strong> asks to use isb in your name. Sign in to isb at <a href=\"/\">" + HtmlEscape(issuer) +
                      "</a> in this browser, then open this page again.</p>");
    }
    client = DocumentClient(req, *who, client_id);
    if (!client.ok()) {
      const Code code = client.error().code;
      return ErrorPage(code == Code::kTooManyRequests ? 429
                       : code == Code::kUnavailable   ? 503
                                                      : 400,
                       client.error().message);
    }
  }
  if (document && !listed(*client))
    return ErrorPage(400, "redirect_uri: not one of the redirect_uris in the metadata document at " + client_id);
  if (!who.ok()) {
    return Page(401, "isb: sign in first",
                "<p>" + HtmlEscape(client->name) + " asks to use isb in your name. Sign in to isb at <a href=\"/\">" +
                    HtmlEscape(issuer) + "</a> in this browser, then open this page again.</p>");
  }
  Pending pending{.client = *client,
                  .redirect_uri = redirect_uri,
                  .challenge = challenge,
                  .state = state,
                  .resource = resource,
                  .org = fixed_org};
  return Consent(*who, std::move(pending), AskedRole(FormValue(*query, "scope")));
}

Response OAuthServer::Consent(const identity::Principal& who, Pending pending, Role asked) {
  // What the user may grant: the orgs they are a member of, at their membership's role (an org-scoped token never
  // carries a platform admin's reach).
  std::map<std::string, Role, std::less<>> reach;
  for (const auto& [org, role] : who.roles)
    if (pending.org.empty() || org == pending.org) reach.emplace(org, role);
  if (reach.empty())
    return ErrorPage(403, pending.org.empty() ? "you are a member of no org: an org's admin adds you first"
                                              : "org " + pending.org + " not found");
  Role highest = Role::kViewer;
  for (const auto& [org, role] : reach) highest = std::max(highest, role);
  const Role preset = std::min(asked, highest);
  auto id = identity::NewSecret(identity::SecretKind::kAuthCode);
  if (!id.ok()) return ErrorResponse(id.error());
  const std::string request_id = identity::SecretHash(*id);
  const int64_t now = identity::UnixNow();
  pending.session_id = who.credential_id;
  pending.user_id = who.user_id;
  pending.user_name = who.user_name;
  pending.expires_at = now + kConsentTtl;
  const std::string client_name = pending.client.name, client_id = pending.client.id,
                    redirect_host = RedirectHost(pending.redirect_uri);
  // Who vouches for the name: nobody for a registered client; for a client known by its URL, the host that served
  // its document over verified TLS, but only for where that host sends the answer: a redirect to loopback reaches
  // whatever program listens there, and one to another host is that host's.
  std::string provenance;
  if (!IsClientIdUrl(client_id)) {
    provenance = "<p>The name is the client's own: isb has not verified it. Its client id is <code>" +
                 HtmlEscape(client_id) + "</code>; allow only a client you just started yourself.</p>";
  } else {
    const std::string publisher = RedirectHost(client_id);
    provenance = "<p>The name is what <strong>" + HtmlEscape(publisher) +
                 "</strong> publishes for this client at "
                 "<code>" +
                 HtmlEscape(client_id) + "</code>; ";
    if (IsLoopbackRedirect(pending.redirect_uri))
      provenance +=
          "the answer goes to a program on your computer, and any program there can use this name: allow "
          "it only if you just started this client yourself.</p>";
    else if (UriHostName(pending.redirect_uri) != UriHostName(client_id))
      provenance += "the answer goes to <strong>" + HtmlEscape(redirect_host) + "</strong>, not to " +
                    HtmlEscape(publisher) + ": allow it only if you just started this client yourself.</p>";
    else
      provenance += "allow it only if you trust that site and just started this client yourself.</p>";
  }
  {
    MutexLock lock(mu_);
    std::erase_if(pending_, [now](const auto& p) { return p.second.expires_at <= now; });
    if (pending_.size() >= kMaxPendingConsents)
      return ErrorPage(503, "too many authorizations are waiting for an answer; try again in a few minutes");
    // Counted by person, not session: signing in again and again does not make more room.
    const auto mine = std::count_if(pending_.begin(), pending_.end(),
                                    [&](const auto& p) { return p.second.user_id == pending.user_id; });
    if (static_cast<size_t>(mine) >= kMaxPendingConsentsPerUser)
      return ErrorPage(429, "you have " + std::to_string(kMaxPendingConsentsPerUser) +
                                " authorizations waiting for an answer: answer one, or wait 10 minutes");
    pending_.emplace(request_id, std::move(pending));
  }
  std::string orgs;
  for (const auto& [org, role] : reach)
    orgs += "<option value=\"" + HtmlEscape(org) + "\">" + HtmlEscape(org) + " (you are " +
            std::string(identity::RoleName(role)) + ")</option>";
  std::string roles;
  for (Role r : {Role::kViewer, Role::kMember, Role::kAdmin, Role::kOwner}) {
    if (r > highest) break;
    const std::string name(identity::RoleName(r));
    roles += "<option value=\"" + name + "\"" + (r == preset ? " selected" : "") + ">" + name + "</option>";
  }
  return Page(200, "isb: allow " + client_name + "?",
              "<p><strong>" + HtmlEscape(client_name) + "</strong> asks to use isb's MCP tools as <strong>" +
                  HtmlEscape(who.user_name) + "</strong>. After you answer, your browser goes to <strong>" +
                  HtmlEscape(redirect_host) + "</strong>.</p>" + provenance + "<p>It asks for the role <strong>" +
                  std::string(identity::RoleName(asked)) + "</strong>.</p>" +
                  "<form method=\"post\" action=\"/oauth/authorize\"><input type=\"hidden\" name=\"request\" "
                  "value=\"" +
                  request_id + "\"><p><label>Org <select name=\"org\">" + orgs +
                  "</select></label></p><p><label>Role <select name=\"role\">" + roles +
                  "</select></label></p><p><button type=\"submit\" name=\"decision\" value=\"approve\">Allow"
                  "</button> <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></p></form>");
}

Response OAuthServer::Decide(const Request& req) {
  auto who = web_auth_.Session(req);
  if (!who.ok()) {
    ReportRefusal(req, {"oauth_grant", "", "", "", who.error()});
    return ErrorPage(401, "sign in to isb first: " + who.error().message);
  }
  // The form's request id is its CSRF token; a browser's Origin, which it sends on every form post, must be isb's.
  const std::string host = req.headers.Get("Host"), origin = req.headers.Get("Origin");
  if (origin != options_.scheme + "://" + host) {
    const std::string message = "the answer must come from isb's own consent page (Origin '" +
                                SanitizeUtf8(std::string_view(origin).substr(0, 200)) + "' is not this daemon's)";
    ReportRefusal(req, {"oauth_grant", who->user_name, "", "", Error::Of(Code::kForbidden, message)});
    return ErrorPage(403, message);
  }
  auto form = FormBody(req);
  if (!form.ok()) return ErrorPage(400, form.error().message);
  Pending pending;
  {
    MutexLock lock(mu_);
    auto it = pending_.find(FormValue(*form, "request"));
    if (it == pending_.end() || it->second.session_id != who->credential_id ||
        it->second.expires_at <= identity::UnixNow()) {
      constexpr char kStale[] =
          "request: not a consent page shown to this session, or answered already, or older "
          "than 10 minutes; start again from the client";
      ReportRefusal(req, {"oauth_grant", who->user_name, "", "", Error::Of(Code::kForbidden, kStale)});
      return ErrorPage(403, kStale);
    }
    pending = std::move(it->second);
    pending_.erase(it);
  }
  const std::string issuer = Issuer(req), org = FormValue(*form, "org"), label = ClientLabel(pending.client);
  const std::string decision = FormValue(*form, "decision");
  if (decision != "approve") {
    (void)Report(
        req, {"oauth_deny", who->user_name, pending.org, label, Error::Of(Code::kForbidden, "the user denied access")});
    return BackToClient(pending.redirect_uri, {{"error", "access_denied"}, {"error_description", "the user said no"}},
                        pending.state, issuer);
  }
  auto role = identity::ParseRole(FormValue(*form, "role"));
  auto held = who->roles.find(org);
  Status allowed;
  if (!role.ok())
    allowed = Error::Of(Code::kInvalidArgument, "role: " + role.error().message);
  else if (held == who->roles.end() || (!pending.org.empty() && org != pending.org))
    allowed = Error::Of(Code::kNotFound, "org " + SanitizeUtf8(std::string_view(org).substr(0, 64)) + " not found");
  else if (*role > held->second)
    allowed = Error::Of(Code::kForbidden, "role " + std::string(identity::RoleName(*role)) + " is above yours (" +
                                              std::string(identity::RoleName(held->second)) + ") in org " + org);
  Result<std::string> code = allowed.ok() ? store_.oauth().IssueCode({.client_id = pending.client.id,
                                                                      .redirect_uri = pending.redirect_uri,
                                                                      .challenge = pending.challenge,
                                                                      .user_id = who->user_id,
                                                                      .org = org,
                                                                      .role = *role,
                                                                      .resource = pending.resource,
                                                                      .session_id = pending.session_id})
                                          : Result<std::string>(allowed.error());
  const std::string audited_org = held != who->roles.end() ? org : "";
  Status recorded =
      Report(req, {"oauth_grant", who->user_name, audited_org, label, code.ok() ? Status{} : Status(code.error())});
  if (!code.ok()) return ErrorPage(code.error().code == Code::kInternal ? 500 : 403, code.error().message);
  if (!recorded.ok()) {
    (void)store_.oauth().Withdraw(*code);
    return ErrorPage(503, "not granted: " + recorded.error().message);
  }
  return BackToClient(pending.redirect_uri, {{"code", *code}}, pending.state, issuer);
}

Response OAuthServer::Revoke(const Request& req) {
  auto form = FormBody(req);
  if (!form.ok()) return OAuthError(400, "invalid_request", form.error().message);
  const std::string client_id = FormValue(*form, "client_id");
  auto client = store_.oauth().Client(client_id);
  if (!client.ok()) {
    ReportRefusal(req,
                  {"oauth_revoke", "", "", SanitizeUtf8(std::string_view(client_id).substr(0, 64)), client.error()});
    return OAuthError(401, "invalid_client", client.error().message);
  }
  auto revoked = store_.oauth().RevokeToken(FormValue(*form, "token"), client_id);
  if (!revoked.ok()) {
    ReportRefusal(req, {"oauth_revoke", "", "", ClientLabel(*client), revoked.error()});
    if (revoked.error().code == Code::kForbidden)
      return OAuthError(400, "unauthorized_client", revoked.error().message);
    return OAuthError(500, "server_error", revoked.error().message);
  }
  // RFC 7009 §2.2: 200 whether or not there was such a token, so the answer tells a caller nothing.
  if (*revoked) (void)Report(req, {"oauth_revoke", "", "", ClientLabel(*client), Status{}});
  Response r = Json(200, json::object());
  r.body.clear();
  return r;
}

Response OAuthServer::Token(const Request& req) {
  auto form = FormBody(req);
  if (!form.ok()) return OAuthError(400, "invalid_request", form.error().message);
  const std::string grant = FormValue(*form, "grant_type"), client_id = FormValue(*form, "client_id");
  auto client = store_.oauth().Client(client_id);
  if (!client.ok()) {
    ReportRefusal(req, {grant == "refresh_token" ? "oauth_refresh" : "oauth_token", "", "",
                        SanitizeUtf8(std::string_view(client_id).substr(0, 64)), client.error()});
    return OAuthError(401, "invalid_client", client.error().message);
  }
  const std::string resource = FormValue(*form, "resource");
  Result<identity::GrantResult<identity::IssuedTokens>> out = Error::Of(Code::kInternal, "unset");
  if (grant == "authorization_code") {
    out = store_.oauth().Redeem(FormValue(*form, "code"), client_id, FormValue(*form, "redirect_uri"),
                                FormValue(*form, "code_verifier"), resource);
  } else if (grant == "refresh_token") {
    out = store_.oauth().Refresh(FormValue(*form, "refresh_token"), client_id, resource);
  } else {
    return OAuthError(400, "unsupported_grant_type", "grant_type: authorization_code or refresh_token");
  }
  const std::string action = grant == "refresh_token" ? "oauth_refresh" : "oauth_token";
  if (!out.ok()) {
    ReportRefusal(req, {action, "", "", ClientLabel(*client), Status(out.error())});
    return OAuthError(out.error().code == Code::kInternal ? 500 : 400,
                      out.error().code == Code::kInternal ? "server_error" : "invalid_grant", out.error().message);
  }
  if (auto* refused = std::get_if<identity::GrantRefusal>(&*out)) {
    ReportRefusal(req, {action, "", "", ClientLabel(*client), Error::Of(Code::kUnauthenticated, refused->description)});
    return OAuthError(400, refused->error, refused->description);
  }
  const auto& t = std::get<identity::IssuedTokens>(*out);
  if (Status recorded = Report(req, {action, "", t.org, ClientLabel(*client), Status{}}); !recorded.ok()) {
    (void)store_.oauth().RevokeGrantOf(t.access_token_id);
    return OAuthError(503, "temporarily_unavailable", "not issued: " + recorded.error().message);
  }
  return Json(200, {{"access_token", t.access_token},
                    {"token_type", "Bearer"},
                    {"expires_in", t.expires_in},
                    {"refresh_token", t.refresh_token},
                    {"scope", identity::RoleName(t.role)}});
}

}  // namespace isb::api
