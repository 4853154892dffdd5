// Credentials over HTTP: bearer secrets, the browser session cookie with its CSRF rules, and the routes that hand
// out a session (sign-in, sign-out, the one-time setup of the first admin).
//
//   POST /api/v1/auth/signin   {"user", "password"}            -> 200 {"user"}, Set-Cookie isb_session
//   POST /api/v1/auth/signout  (with the cookie)               -> 200 {"signed_out": true}, the cookie cleared
//   POST /api/v1/auth/setup    {"setup_token", "user", "password"[, "token_name"]}
//                              -> 200 {"user", "platform_admin": true[, "token", "token_id"]}
// Setup is one call for any client: with "token_name" the answer carries the new admin's first API token (shown
// once). It needs no header beyond Content-Type; a browser's Origin, which it always sends, must be isb's own.
#pragma once

#include <chrono>
#include <functional>
#include <semaphore>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_message.h"
#include "api/registry.h"
#include "base/result.h"
#include "identity/rate_limit.h"
#include "identity/store.h"

namespace isb::api {

inline constexpr char kSessionCookie[] = "isb_session";

// At most this many password checks (argon2id, 64 MiB each) run at once; a sign-in past them waits its turn for
// at most kPasswordCheckWait, then gets 503. A burst of sign-ins cannot take the host's memory.
inline constexpr int kMaxPasswordChecks = 4;
inline constexpr std::chrono::seconds kPasswordCheckWait{10};
inline constexpr int kRefusalsPerMinute = 60;

struct WebAuthOptions {
  bool secure_cookie = false;  // beyond loopback or behind a proxy (--allow-host): the cookie goes over HTTPS only
  // The host names a browser may send as Host, with any port, compared without case (DNS rebinding defence);
  // empty: any. IPv6 literals without brackets.
  std::vector<std::string> allowed_hosts;
  // Told of every sign-in, sign-out and setup attempt ("sign_in", "sign_out", "setup"), and of every credential
  // Authenticate refuses ("authenticate": a bad token or session, or a session request that fails the browser
  // checks), with the account name given or known ("" when none) and the outcome; the daemon's audit log listens.
  // Never given a password or a secret. An error is an event it could not record: a sign-in whose success cannot be
  // recorded is refused (503), before its session exists.
  std::function<Status(std::string_view action, std::string_view account, const Request& req, const Status& outcome)>
      on_event;
  // Sign-in failures allowed within 15 minutes, per account and per client address, before 429 with Retry-After
  // (`isb serve --sign-in-account-limit`, `--sign-in-address-limit`).
  int sign_in_failures_per_account = 5;
  int sign_in_failures_per_address = 20;
  // The MCP resource a request is to, as an OAuth access token names it (RFC 8707; api/oauth_server.h), or "" for a
  // request to none: a token bound to a resource is good there only. Unset: such tokens are good nowhere.
  std::function<std::string(const Request& req)> resource_of;
  // How long a sign-in or setup waits for one of the kMaxPasswordChecks slots before its 503.
  std::chrono::milliseconds password_check_wait = kPasswordCheckWait;
};

// One of the kMaxPasswordChecks slots, held for its scope when held() (it waited at most `wait` for it).
class PasswordCheckSlot {
 public:
  PasswordCheckSlot(std::counting_semaphore<>& slots, std::chrono::milliseconds wait)
      : slots_(slots), held_(slots.try_acquire_for(wait)) {}
  PasswordCheckSlot(const PasswordCheckSlot&) = delete;
  PasswordCheckSlot& operator=(const PasswordCheckSlot&) = delete;
  ~PasswordCheckSlot() {
    if (held_) slots_.release();
  }
  bool held() const { return held_; }

 private:
  std::counting_semaphore<>& slots_;
  bool held_;
};

// Thread-safe. The store must outlive it.
class WebAuth {
 public:
  WebAuth(identity::IdentityStore& store, WebAuthOptions options);

  // Who a TCP request is. A bearer header wins: a bad one is 401 even when a good cookie comes along. A session
  // cookie on a state-changing request (anything but GET, HEAD, OPTIONS) must come with "X-Isb-Csrf: 1", a JSON
  // Content-Type, and an Origin, when sent, naming the Host it was sent to (kForbidden naming the rule otherwise);
  // a session cookie on a WebSocket upgrade must come with an Origin naming that Host. A refusal of a credential
  // presented is reported as "authenticate".
  Result<Identity> Authenticate(const Request& req);

  // The /api/v1/auth/ routes.
  Response Handle(const Request& req);

  // The signed-in browser session a request carries, for isb's own pages outside the API (the OAuth consent page):
  // the isb_session cookie resolved, and the Host one of allowed_hosts. The caller applies its own CSRF check.
  Result<Identity> Session(const Request& req);
  // kForbidden when the request's Host is not one of allowed_hosts (any when that is empty).
  Status CheckHostOf(const Request& req) const;

 private:
  // Authenticate without the report; *account: the session's user once it is known.
  Result<Identity> Identify(const Request& req, std::string* account);
  Response SignIn(const Request& req);
  Response SignOut(const Request& req);
  Response SetUp(const Request& req);
  std::string Cookie(const std::string& value, int64_t max_age) const;
  Status Report(std::string_view action, std::string_view account, const Request& req, const Status& outcome);
  void ReportLimited(std::string_view action, std::string_view account, const Request& req);

  identity::IdentityStore& store_;
  WebAuthOptions options_;
  identity::SignInLimiter limiter_;
  // Credentials refused per client address: each is an audit row, so past kRefusalsPerMinute in a minute an address
  // gets 429 for a refused credential, and no row (a good credential from it still works). Sign-ins and setups the
  // limiter turns away spend the same budget for their rows.
  identity::RateLimiter refusals_;
  std::counting_semaphore<> password_checks_{kMaxPasswordChecks};
};

// The value of cookie `name` in a Cookie header, or "".
std::string CookieValue(std::string_view header, std::string_view name);

}  // namespace isb::api
