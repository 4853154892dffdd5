// WebAuth: the bearer and cookie checks every TCP request passes, and sign-in, which rate limits before it looks at
// a password and says the same for every kind of failure.
#include "api/web_auth.h"

#include <algorithm>
#include <optional>

#include "api/json_util.h"
#include "api/rest.h"
#include "api/router.h"
#include "egress/host_port.h"
#include "identity/tokens.h"

namespace isb::api {
namespace {

using json = nlohmann::json;

bool StartsWithIgnoreCaseAscii(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

// 429 with Retry-After: `what` failed too often; the next try may come in `wait` seconds.
Response TooMany(std::string_view what, int64_t wait) {
  Response r = ErrorResponse(Error::Of(
      Code::kTooManyRequests, "too many " + std::string(what) + "; try again in " + std::to_string(wait) + " s"));
  r.headers.Set("Retry-After", std::to_string(wait));
  return r;
}

bool ChangesState(const Request& req) { return req.method != "GET" && req.method != "HEAD" && req.method != "OPTIONS"; }

Error Forbidden(std::string message) { return Error::Of(Code::kForbidden, std::move(message)); }

Status CheckHost(const std::string& host, const WebAuthOptions& options) {
  if (options.allowed_hosts.empty()) return {};
  const std::optional<egress::HostPort> named = egress::SplitHostPort(host);  // without port and brackets
  bool allowed = false;
  for (const std::string& a : options.allowed_hosts) allowed = allowed || (named && EqualsIgnoreCase(a, named->host));
  if (allowed) return {};
  return Forbidden("Host '" + SanitizeUtf8(std::string_view(host).substr(0, 200)) +
                   "' is not this daemon's (a name a tunnel or proxy gives it is allowed with isb serve --allow-host)");
}

// A browser sends no custom header on a WebSocket and any page may open one to any host, with the cookies of that
// host: the Origin it always sends must be isb's own.
Status CheckWebSocketRequest(const Request& req, const WebAuthOptions& options) {
  std::string host = req.headers.Get("Host");
  ISB_TRY(CheckHost(host, options));
  std::string origin = req.headers.Get("Origin");
  if (origin != "http://" + host && origin != "https://" + host) {
    return Forbidden("a session WebSocket must come from isb's own page: Origin '" +
                     SanitizeUtf8(std::string_view(origin).substr(0, 200)) + "' is not this daemon's");
  }
  return {};
}

// An Origin, when sent, must name the Host the request was sent to.
Status CheckSentOrigin(const Request& req, const std::string& host) {
  if (!req.headers.Has("Origin")) return {};
  std::string origin = req.headers.Get("Origin");
  if (origin != "http://" + host && origin != "https://" + host) {
    return Forbidden("Origin '" + SanitizeUtf8(std::string_view(origin).substr(0, 200)) + "' is not this daemon's");
  }
  return {};
}

// The browser rules for a cookie-authenticated request that changes something (and for sign-in itself).
Status CheckBrowserRequest(const Request& req, const WebAuthOptions& options) {
  std::string host = req.headers.Get("Host");
  ISB_TRY(CheckHost(host, options));
  if (req.headers.Get("X-Isb-Csrf") != "1")
    return Forbidden("a session request that changes something needs X-Isb-Csrf: 1");
  if (!StartsWithIgnoreCaseAscii(req.headers.Get("Content-Type"), "application/json")) {
    return Forbidden("a session request that changes something needs Content-Type: application/json");
  }
  return CheckSentOrigin(req, host);
}

// A browser's request (it sends Origin on every POST, and Sec-Fetch-* where it can) is held to the browser rules, as
// sign-in is: a page elsewhere must not make the first admin, with a setup token it learned, in its own name. A client
// that is not a browser sends none of these and needs no other header; the setup token is its credential.
Status CheckSetUpRequest(const Request& req, const WebAuthOptions& options) {
  if (!req.headers.Has("Origin") && !req.headers.Has("Sec-Fetch-Site") && !req.headers.Has("Sec-Fetch-Mode")) return {};
  const std::string host = req.headers.Get("Host");
  ISB_TRY(CheckHost(host, options));
  ISB_TRY(CheckSentOrigin(req, host));  // a page elsewhere is told so first
  return CheckBrowserRequest(req, options);
}

Response Fail(const Error& error) { return ErrorResponse(error); }

// Sign-in and setup bodies are a name and a password or two: anything larger is refused before it is parsed, as
// these routes answer callers that have shown no credential yet.
constexpr size_t kMaxAuthBody = 16 * 1024;

Result<json> Body(const Request& req) {
  if (req.body.size() > kMaxAuthBody)
    return Error::Of(Code::kTooLarge, "body: at most " + std::to_string(kMaxAuthBody) + " bytes");
  ISB_ASSIGN_OR_RETURN(json body, ParseJson(req.body));
  if (!body.is_object()) return Error::Of(Code::kInvalidArgument, "body: expected a JSON object");
  return body;
}

Result<std::string> Field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return Error::Of(Code::kInvalidArgument, std::string(name) + ": expected a non-empty string");
  }
  if (it->get_ref<const std::string&>().size() > 1024) {
    return Error::Of(Code::kInvalidArgument, std::string(name) + ": longer than 1024 bytes");
  }
  return it->get<std::string>();
}

}  // namespace

std::string CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    size_t end = header.find(';');
    std::string_view pair = header.substr(0, end);
    header = end == std::string_view::npos ? std::string_view() : header.substr(end + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return std::string(pair.substr(eq + 1));
  }
  return "";
}

WebAuth::WebAuth(identity::IdentityStore& store, WebAuthOptions options)
    : store_(store),
      options_(std::move(options)),
      limiter_(identity::UnixNow, {options_.sign_in_failures_per_account, 900, 10000},
               {options_.sign_in_failures_per_address, 900, 10000}),
      refusals_({kRefusalsPerMinute, 60, 10000}) {}

Result<Identity> WebAuth::Authenticate(const Request& req) {
  std::string account;
  Result<Identity> who = Identify(req, &account);
  bool presented = req.headers.Has("Authorization") || !CookieValue(req.headers.Get("Cookie"), kSessionCookie).empty();
  if (who.ok() || !presented) return who;
  if (int64_t wait = refusals_.RetryAfter(req.remote_address); wait > 0) {
    return Error::Of(Code::kTooManyRequests,
                     "too many refused credentials from this address; try again in " + std::to_string(wait) + " s");
  }
  refusals_.RecordFailure(req.remote_address);
  (void)Report("authenticate", account, req, Status(who.error()));
  return who;
}

Result<Identity> WebAuth::Identify(const Request& req, std::string* account) {
  std::string header = req.headers.Get("Authorization");
  if (!header.empty()) {
    if (!StartsWithIgnoreCaseAscii(header, "Bearer ")) {
      return Error::Of(Code::kUnauthenticated, "unsupported Authorization scheme; send \"Bearer <token>\"");
    }
    std::string_view secret = std::string_view(header).substr(7);
    auto kind = identity::ParseSecret(secret);
    if (kind.ok() && *kind == identity::SecretKind::kSession) {
      return Error::Of(Code::kUnauthenticated, "a session is sent as the isb_session cookie, not as a bearer token");
    }
    ISB_ASSIGN_OR_RETURN(Identity who, store_.Resolve(secret));
    if (!who.resource.empty()) {
      const std::string here = options_.resource_of ? options_.resource_of(req) : "";
      if (here != who.resource) {
        return Error::Of(Code::kUnauthenticated, "this OAuth token is for " + who.resource + ", not " +
                                                     (here.empty() ? "this path" : SanitizeUtf8(here.substr(0, 300))));
      }
    }
    return who;
  }
  std::string session = CookieValue(req.headers.Get("Cookie"), kSessionCookie);
  if (session.empty()) {
    return Error::Of(Code::kUnauthenticated, "missing bearer token: send \"Authorization: Bearer <token>\"");
  }
  auto kind = identity::ParseSecret(session);
  if (!kind.ok() || *kind != identity::SecretKind::kSession)
    return Error::Of(Code::kUnauthenticated, "malformed token");
  ISB_ASSIGN_OR_RETURN(Identity who, store_.Resolve(session));
  *account = who.user_name;
  if (AsksForWebSocket(req.headers))
    ISB_TRY(CheckWebSocketRequest(req, options_));
  else if (ChangesState(req))
    ISB_TRY(CheckBrowserRequest(req, options_));
  return who;
}

Result<Identity> WebAuth::Session(const Request& req) {
  ISB_TRY(CheckHostOf(req));
  std::string session = CookieValue(req.headers.Get("Cookie"), kSessionCookie);
  if (session.empty()) return Error::Of(Code::kUnauthenticated, "not signed in");
  auto kind = identity::ParseSecret(session);
  if (!kind.ok() || *kind != identity::SecretKind::kSession)
    return Error::Of(Code::kUnauthenticated, "malformed token");
  return store_.Resolve(session);
}

Status WebAuth::CheckHostOf(const Request& req) const { return CheckHost(req.headers.Get("Host"), options_); }

Response WebAuth::Handle(const Request& req) {
  std::string_view path = req.Path();
  if (req.method != "POST") {
    Response r = Fail(Error::Of(Code::kInvalidArgument, "use POST"));
    r.status = 405;
    r.headers.Set("Allow", "POST");
    return r;
  }
  if (path == "/api/v1/auth/signin") return SignIn(req);
  if (path == "/api/v1/auth/signout") return SignOut(req);
  if (path == "/api/v1/auth/setup") return SetUp(req);
  return Fail(Error::Of(Code::kNotFound, "no route for " + SanitizeUtf8(path.substr(0, 200))));
}

Status WebAuth::Report(std::string_view action, std::string_view account, const Request& req, const Status& outcome) {
  return options_.on_event ? options_.on_event(action, account, req, outcome) : Status{};
}

// A sign-in or setup turned away by the limiter costs no password check, so nothing else bounds how fast an address
// sends them: each is a row only within the budget of refusals that addresses share with refused credentials.
void WebAuth::ReportLimited(std::string_view action, std::string_view account, const Request& req) {
  if (refusals_.RetryAfter(req.remote_address) > 0) return;
  refusals_.RecordFailure(req.remote_address);
  (void)Report(action, account, req, Error::Of(Code::kTooManyRequests, "rate limited"));
}

std::string WebAuth::Cookie(const std::string& value, int64_t max_age) const {
  std::string c = std::string(kSessionCookie) + "=" + value +
                  "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" + std::to_string(max_age);
  if (options_.secure_cookie) c += "; Secure";
  return c;
}

Response WebAuth::SignIn(const Request& req) {
  if (Status st = CheckBrowserRequest(req, options_); !st.ok()) return Fail(st.error());
  auto body = Body(req);
  if (!body.ok()) return Fail(body.error());
  auto user = Field(*body, "user");
  auto password = Field(*body, "password");
  if (!user.ok()) return Fail(user.error());
  if (!password.ok()) return Fail(password.error());
  // Counted as a failure before the password is checked: concurrent tries share the limit instead of each passing
  // it before any is counted.
  if (int64_t wait = limiter_.Begin(*user, req.remote_address); wait > 0) {
    ReportLimited("sign_in", *user, req);
    return TooMany("failed sign-ins", wait);
  }
  Result<identity::Principal> who = Error::Of(Code::kUnavailable, "sign-in is busy; try again");
  {
    PasswordCheckSlot slot(password_checks_, options_.password_check_wait);
    if (slot.held()) who = store_.users().SignIn(*user, *password);
  }
  Status recorded = Report("sign_in", *user, req, who.ok() ? Status() : Status(who.error()));
  if (!who.ok()) return Fail(who.error());
  if (!recorded.ok()) return Fail(Error::Of(Code::kUnavailable, "sign-in refused: " + recorded.error().message));
  limiter_.Succeeded(*user, req.remote_address);
  auto session = store_.sessions().Create(who->user_id, req.remote_address, req.headers.Get("User-Agent"));
  if (!session.ok()) return Fail(session.error());
  Response r = JsonResponse(200, Dump({{"user", who->user_name}, {"expires_at", session->record.expires_at}}));
  r.headers.Set("Set-Cookie", Cookie(session->secret, identity::kSessionTtl));
  r.headers.Set("Cache-Control", "no-store");
  return r;
}

Response WebAuth::SignOut(const Request& req) {
  auto who = Authenticate(req);
  if (!who.ok()) return Fail(who.error());
  if (who->kind != identity::PrincipalKind::kSession) {
    return Fail(Error::Of(Code::kInvalidArgument, "sign-out ends a browser session; revoke a token with token_revoke"));
  }
  Status revoked = store_.sessions().Revoke(*who, who->credential_id);
  (void)Report("sign_out", who->user_name, req, revoked);
  if (!revoked.ok()) return Fail(revoked.error());
  Response r = JsonResponse(200, R"({"signed_out":true})");
  r.headers.Set("Set-Cookie", Cookie("", 0));
  return r;
}

Response WebAuth::SetUp(const Request& req) {
  if (Status st = CheckSetUpRequest(req, options_); !st.ok()) return Fail(st.error());
  auto body = Body(req);
  if (!body.ok()) return Fail(body.error());
  auto token = Field(*body, "setup_token");
  auto user = Field(*body, "user");
  auto password = Field(*body, "password");
  for (auto* f : {&token, &user, &password}) {
    if (!f->ok()) return Fail(f->error());
  }
  std::optional<std::string> token_name;
  if (body->contains("token_name")) {
    auto named = Field(*body, "token_name");
    if (!named.ok()) return Fail(named.error());
    token_name = *named;
  }
  if (int64_t wait = limiter_.Begin("setup", req.remote_address); wait > 0) {
    ReportLimited("setup", *user, req);
    return TooMany("failed attempts", wait);
  }
  Result<int64_t> id = Error::Of(Code::kUnavailable, "sign-in is busy; try again");
  {
    PasswordCheckSlot slot(password_checks_, options_.password_check_wait);
    if (slot.held()) id = store_.setup().CreateFirstAdmin(*token, *user, *password);
  }
  (void)Report("setup", *user, req, id.ok() ? Status() : Status(id.error()));
  if (!id.ok()) return Fail(id.error());
  limiter_.Succeeded("setup", req.remote_address);
  json answer = {{"user", *user}, {"platform_admin", true}};
  if (token_name) {
    // The admin exists whatever happens here: a token that cannot be minted is said, and made later by signing in.
    auto minted = store_.tokens().Create(identity::Principal::Host(), {.name = *token_name, .user_id = *id});
    if (!minted.ok()) {
      answer["token_error"] = "the admin was made but no token: " + minted.error().message +
                              "; sign in and create one (isb token create, or the web UI)";
    } else {
      answer["token"] = minted->secret;
      answer["token_id"] = minted->record.id;
    }
  }
  Response r = JsonResponse(200, Dump(answer));
  r.headers.Set("Cache-Control", "no-store");
  return r;
}

}  // namespace isb::api
