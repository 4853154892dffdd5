// Fuzzes what any TCP client hands WebAuth before it is anyone: the Authorization and Cookie headers, the browser
// headers a session request is judged by, and the JSON bodies of sign-in and setup.
// Input: eight lines (method, target, Authorization, Cookie, Host, Origin, Content-Type, X-Isb-Csrf; a line "-"
// leaves that header out), then the body.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/web_auth.h"
#include "identity/store.h"
#include "store/db.h"
#include "store/migrations.h"

using namespace isb;

namespace {

// An empty identity store: no user, token or session exists, so nothing may authenticate or sign in.
api::WebAuth& Auth() {
  static std::unique_ptr<store::Db> db = [] {
    auto opened = store::Db::Open(":memory:", store::Migrations());
    if (!opened.ok()) abort();
    return std::move(*opened);
  }();
  static std::unique_ptr<identity::IdentityStore> ids = [] {
    auto opened = identity::IdentityStore::Open(*db);
    if (!opened.ok()) abort();
    return std::move(*opened);
  }();
  static api::WebAuth auth(*ids, [] {
    api::WebAuthOptions options;
    options.allowed_hosts = {"isb.test"};
    return options;
  }());
  return auth;
}

std::string_view NextLine(std::string_view& in) {
  size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  return line;
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  api::Request req;
  req.method = std::string(NextLine(in));
  req.target = std::string(NextLine(in));
  req.remote_address = "192.0.2.7";
  for (const char* name : {"Authorization", "Cookie", "Host", "Origin", "Content-Type", "X-Isb-Csrf"}) {
    std::string_view value = NextLine(in);
    if (value != "-") req.headers.Add(name, std::string(value));
  }
  req.body = std::string(in);

  // A cookie's value is a piece of the header it came from.
  const std::string cookie = req.headers.Get("Cookie");
  const std::string session = api::CookieValue(cookie, api::kSessionCookie);
  if (!session.empty() && !Contains(cookie, session)) abort();

  // Nobody exists, so nobody authenticates; no refusal echoes the secret presented.
  auto who = Auth().Authenticate(req);
  if (who.ok()) abort();
  const std::string authorization = req.headers.Get("Authorization");
  std::string_view bearer;
  if (authorization.size() > 7 && api::EqualsIgnoreCase(std::string_view(authorization).substr(0, 7), "Bearer ")) {
    bearer = std::string_view(authorization).substr(7);
  }
  // (An address past its refusals gets a fixed sentence built of nothing sent, which a "secret" may be a piece of.)
  for (std::string_view secret : {bearer, std::string_view(session)}) {
    if (secret.size() >= 8 && who.error().code != Code::kTooManyRequests && Contains(who.error().message, secret))
      abort();
  }

  // Sign-in and setup never succeed here, never fail inside (a 503 is the password checks' wait running out, which
  // a slow instrumented build may see), and never echo a password sent.
  api::Response r = Auth().Handle(req);
  if (r.status == 200 || (r.status >= 500 && r.status != 503)) abort();
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  std::string elsewhere = req.target;
  for (const char* name : {"Authorization", "Cookie", "Host", "Origin", "Content-Type", "X-Isb-Csrf"})
    elsewhere += "\n" + req.headers.Get(name);
  if (body.is_object()) {
    for (const char* field : {"password", "setup_token"}) {
      auto it = body.find(field);
      // (A refusal names the path or the Host asked for: a secret the client put there too may appear in it. And a
      // short "secret" may be a piece of a fixed sentence, "changes somethin": only one holding '~', which no
      // message of isb's has, is looked for.)
      if (it != body.end() && it->is_string() && it->get_ref<const std::string&>().size() >= 8 &&
          Contains(it->get_ref<const std::string&>(), "~") && Contains(r.body, it->get_ref<const std::string&>()) &&
          !Contains(elsewhere, it->get_ref<const std::string&>()))
        abort();
    }
  }
  return 0;
}
