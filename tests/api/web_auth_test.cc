// The sign-in route's bound on password checks: at most kMaxPasswordChecks argon2id checks (64 MiB each) run at
// once; a sign-in past them waits for a slot, and gets 503 when none frees up in time.
#include "api/web_auth.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <map>
#include <thread>
#include <vector>

#include "base/file.h"
#include "identity/identity_fixture.h"

namespace isb::api {
namespace {

class WebAuthTest : public identity::IdentityTest {
 protected:
  // `n` sign-ins of alice at once; the status of each.
  std::vector<int> SignInAtOnce(WebAuth& auth, int n) {
    Request req;
    req.method = "POST";
    req.target = "/api/v1/auth/signin";
    req.headers.Set("Host", "localhost:8092");
    req.headers.Set("X-Isb-Csrf", "1");
    req.headers.Set("Content-Type", "application/json");
    req.body = std::string(R"({"user":"alice","password":")") + identity::kPassword + "\"}";
    req.remote_address = "127.0.0.1";
    std::vector<int> statuses(static_cast<size_t>(n));
    std::barrier start(n);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        Response r = auth.Handle(req);
        statuses[static_cast<size_t>(i)] = r.status;
        if (r.status == 503) {
          EXPECT_NE(r.body.find("sign-in is busy; try again"), std::string::npos) << r.body;
        }
      });
    }
    for (auto& t : threads) t.join();
    return statuses;
  }

  // A browser's POST of `body` to the auth route `path`.
  static Request AuthPost(const std::string& path, std::string body) {
    Request req;
    req.method = "POST";
    req.target = path;
    req.headers.Set("Host", "localhost");
    req.headers.Set("X-Isb-Csrf", "1");
    req.headers.Set("Content-Type", "application/json");
    req.body = std::move(body);
    return req;
  }

  WebAuthOptions Options(std::chrono::milliseconds wait) {
    WebAuthOptions o;
    o.sign_in_failures_per_account = 1000;  // the limiter is not what this is about
    o.sign_in_failures_per_address = 1000;
    o.password_check_wait = wait;
    return o;
  }
};

TEST_F(WebAuthTest, SignInsPastTheConcurrentPasswordChecksWaitThenGet503) {
  ASSERT_TRUE(id_->users().Create("alice", identity::kPassword).ok());
  constexpr int kAtOnce = 3 * kMaxPasswordChecks;
  {
    // Not waiting: every sign-in that finds the slots taken is refused at once. One that arrives after a check
    // has ended may still get a slot, so the refused are counted, not fixed.
    WebAuth auth(*id_, Options(std::chrono::milliseconds(0)));
    std::vector<int> statuses = SignInAtOnce(auth, kAtOnce);
    int ok = 0, busy = 0;
    for (int s : statuses) {
      if (s == 200) ++ok;
      if (s == 503) ++busy;
    }
    EXPECT_GE(ok, 1);
    EXPECT_GE(busy, 1) << "no sign-in was refused: nothing bounds the password checks";
    EXPECT_EQ(ok + busy, kAtOnce);
  }
  {
    // Waiting (the daemon waits 10 s): each takes its turn, and all are signed in.
    WebAuth auth(*id_, Options(kPasswordCheckWait));
    std::vector<int> statuses = SignInAtOnce(auth, kAtOnce);
    EXPECT_EQ(statuses, std::vector<int>(kAtOnce, 200));
  }
}

// A sign-in the audit log cannot record is refused before a session exists: 503 with the reason, no cookie.
TEST_F(WebAuthTest, ASignInTheAuditLogCannotRecordStartsNoSession) {
  auto alice = id_->users().Create("alice", identity::kPassword);
  ASSERT_TRUE(alice.ok()) << alice.error().message;
  WebAuthOptions o = Options(kPasswordCheckWait);
  std::vector<std::string> told;
  o.on_event = [&](std::string_view action, std::string_view account, const Request&, const Status& outcome) -> Status {
    told.push_back(std::string(action) + " " + std::string(account) + " " + (outcome.ok() ? "ok" : "failed"));
    return Error::Of(Code::kUnavailable, "the audit log could not record it (database or disk is full)");
  };
  WebAuth auth(*id_, o);
  Response r = auth.Handle(
      AuthPost("/api/v1/auth/signin", std::string(R"({"user":"alice","password":")") + identity::kPassword + "\"}"));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.body, R"j({"error":"unavailable","message":"sign-in refused: the audit log could not record it )j"
                    R"j((database or disk is full)"})j");
  EXPECT_EQ(r.headers.Get("Set-Cookie"), "");
  EXPECT_EQ(told, std::vector<std::string>{"sign_in alice ok"});
  auto sessions = id_->sessions().List(*alice);
  ASSERT_TRUE(sessions.ok()) << sessions.error().message;
  EXPECT_TRUE(sessions->empty());
}

// Sign-in and setup answer callers with no credential yet: a body larger than a name and a password is refused
// before it is parsed.
TEST_F(WebAuthTest, AnOversizedSignInOrSetupBodyIsRefusedUnparsed) {
  WebAuth auth(*id_, Options(kPasswordCheckWait));
  for (const char* path : {"/api/v1/auth/signin", "/api/v1/auth/setup"}) {
    Request req = AuthPost(path, "[" + std::string(1 << 20, '[') + "]");
    for (size_t i = 0; i < 200000; ++i) req.body += "[],";
    Response r = auth.Handle(req);
    EXPECT_EQ(r.status, 413) << path << " " << r.body;
    EXPECT_NE(r.body.find("body: at most 16384 bytes"), std::string::npos) << r.body;
  }
}

// Every refused credential is an audit row: past kRefusalsPerMinute from one address in a minute, a refused one
// gets 429 and no row, while a good credential from the same address, and refusals from another, go on as before.
TEST_F(WebAuthTest, RefusedCredentialsFromOneAddressAreAuditedUpToALimit) {
  int64_t alice = NewUser("alice", "default");
  auto token = id_->tokens().Create(As(alice), {.name = "ci"});
  ASSERT_TRUE(token.ok()) << token.error().message;
  int events = 0;
  WebAuthOptions o = Options(kPasswordCheckWait);
  o.on_event = [&](std::string_view action, std::string_view, const Request&, const Status& outcome) -> Status {
    EXPECT_EQ(action, "authenticate");
    EXPECT_FALSE(outcome.ok());
    ++events;
    return {};
  };
  WebAuth auth(*id_, o);
  auto call = [&](const std::string& bearer, const std::string& address) {
    Request req;
    req.method = "POST";
    req.target = "/api/v1/tools/whoami";
    req.headers.Set("Authorization", "Bearer " + bearer);
    req.remote_address = address;
    return auth.Authenticate(req);
  };
  const std::string bad = "isb_tok_" + std::string(43, 'A');
  for (int i = 0; i < kRefusalsPerMinute; ++i) {
    auto r = call(bad, "192.0.2.7");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Code::kUnauthenticated);
  }
  EXPECT_EQ(events, kRefusalsPerMinute);
  auto limited = call(bad, "192.0.2.7");
  ASSERT_FALSE(limited.ok());
  EXPECT_EQ(limited.error().code, Code::kTooManyRequests);
  EXPECT_EQ(limited.error().message.find("too many refused credentials from this address; try again in "), 0u)
      << limited.error().message;
  EXPECT_EQ(events, kRefusalsPerMinute) << "a refusal past the limit was audited";
  EXPECT_TRUE(call(token->secret, "192.0.2.7").ok());
  EXPECT_EQ(call(bad, "192.0.2.8").error().code, Code::kUnauthenticated);
  EXPECT_EQ(events, kRefusalsPerMinute + 1);
}

// A sign-in or setup the limiter turns away is a row too, within the same budget as refused credentials: sent as
// fast as an address can, they cannot flood the log (each costs no password check, so nothing else slows them).
TEST_F(WebAuthTest, SignInsAndSetupsTurnedAwayAreAuditedUpToALimit) {
  std::map<std::string, int> rows;  // "action outcome" -> count
  WebAuthOptions o = Options(kPasswordCheckWait);
  o.sign_in_failures_per_address = 20;
  o.on_event = [&](std::string_view action, std::string_view, const Request&, const Status& outcome) -> Status {
    ++rows[std::string(action) + " " + (outcome.ok() ? "ok" : std::string(CodeName(outcome.error().code)))];
    return {};
  };
  WebAuth auth(*id_, o);
  auto post = [&](const char* path, const std::string& body) {
    Request req = AuthPost(path, body);
    req.remote_address = "192.0.2.9";
    return auth.Handle(req).status;
  };
  int limited = 0;
  for (int i = 0; i < 300; ++i) {
    limited += post("/api/v1/auth/signin", R"({"user":"mallory","password":"wrong"})") == 429;
    limited +=
        post("/api/v1/auth/setup", R"({"setup_token":"isb_setup_x","user":"m","password":"wrong-password"})") == 429;
  }
  EXPECT_GE(limited, 550);
  int limited_rows = 0, all = 0;
  for (const auto& [key, n] : rows) {
    all += n;
    if (key.ends_with(" " + std::string(CodeName(Code::kTooManyRequests)))) limited_rows += n;
  }
  EXPECT_EQ(limited_rows, kRefusalsPerMinute) << testing::PrintToString(rows);
  EXPECT_LE(all, kRefusalsPerMinute + 2 * 20) << testing::PrintToString(rows);
}

}  // namespace
}  // namespace isb::api

namespace isb::api {
namespace {

// A page on any site may open a WebSocket to isb with isb's cookies and no custom header: a session's upgrade must
// carry isb's own Origin (a bearer token, which no page holds by accident, needs none).
TEST_F(WebAuthTest, ASessionWebSocketUpgradeNeedsIsbsOwnOriginAndHost) {
  int64_t alice = NewUser("alice", "default");
  auto session = id_->sessions().Create(alice, "127.0.0.1", "test");
  ASSERT_TRUE(session.ok()) << session.error().message;
  auto token = id_->tokens().Create(As(alice), {.name = "ci"});
  ASSERT_TRUE(token.ok()) << token.error().message;
  WebAuthOptions o = Options(kPasswordCheckWait);
  o.allowed_hosts = {"localhost"};
  WebAuth auth(*id_, o);
  auto upgrade = [&](const std::string& host, const std::string& origin, bool cookie = true) {
    Request req;
    req.method = "GET";
    req.target = "/api/v1/sandboxes/sb-1/terminal";
    req.headers.Set("Host", host);
    req.headers.Set("Upgrade", "websocket");
    req.headers.Set("Connection", "Upgrade");
    if (!origin.empty()) req.headers.Set("Origin", origin);
    if (cookie)
      req.headers.Set("Cookie", std::string(kSessionCookie) + "=" + session->secret);
    else
      req.headers.Set("Authorization", "Bearer " + token->secret);
    req.remote_address = "127.0.0.1";
    return auth.Authenticate(req);
  };
  EXPECT_TRUE(upgrade("localhost:8092", "http://localhost:8092").ok());
  EXPECT_TRUE(upgrade("localhost:8092", "https://localhost:8092").ok());
  for (const auto& [origin, message] : std::vector<std::pair<std::string, std::string>>{
           {"http://evil.example",
            "a session WebSocket must come from isb's own page: Origin 'http://evil.example' "
            "is not this daemon's"},
           {"http://localhost:8093",
            "a session WebSocket must come from isb's own page: Origin "
            "'http://localhost:8093' is not this daemon's"},
           {"", "a session WebSocket must come from isb's own page: Origin '' is not this daemon's"}}) {
    Result<Identity> refused = upgrade("localhost:8092", origin);
    ASSERT_FALSE(refused.ok()) << origin;
    EXPECT_EQ(refused.error().code, Code::kForbidden);
    EXPECT_EQ(refused.error().message, message);
  }
  Result<Identity> rebound = upgrade("evil.example:8092", "http://evil.example:8092");
  ASSERT_FALSE(rebound.ok());
  EXPECT_EQ(rebound.error().message,
            "Host 'evil.example:8092' is not this daemon's (a name a tunnel or proxy gives it "
            "is allowed with isb serve --allow-host)");
  EXPECT_TRUE(upgrade("localhost:8092", "", /*cookie=*/false).ok());
}

// Setup is held to the browser rules of sign-in: a page elsewhere (a cross-site form, a fetch without the CSRF
// header) cannot make the first admin with a setup token it learned; the token stays good for the real page.
TEST_F(WebAuthTest, SetupRefusesARequestThatFailsTheBrowserRules) {
  auto path = id_->setup().Prepare();
  ASSERT_TRUE(path.ok()) << path.error().message;
  auto text = ReadFile(*path);
  ASSERT_TRUE(text.ok());
  const std::string secret = text->substr(0, text->size() - 1);
  const std::string body =
      R"({"setup_token":")" + secret + R"(","user":"root","password":")" + identity::kPassword + "\"}";
  WebAuth auth(*id_, Options(kPasswordCheckWait));

  // A browser's request (it sends Origin, or Sec-Fetch-*) is held to the browser rules.
  Request no_csrf = AuthPost("/api/v1/auth/setup", body);
  no_csrf.headers.Set("Origin", "http://localhost");
  no_csrf.headers.Set("X-Isb-Csrf", "");
  Response r = auth.Handle(no_csrf);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body,
            R"({"error":"forbidden","message":"a session request that changes something needs X-Isb-Csrf: 1"})");

  Request form = AuthPost("/api/v1/auth/setup", body);
  form.headers.Set("Sec-Fetch-Site", "cross-site");
  form.headers.Set("Content-Type", "text/plain");
  r = auth.Handle(form);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, R"({"error":"forbidden","message":"a session request that changes something needs )"
                    R"(Content-Type: application/json"})");

  Request foreign = AuthPost("/api/v1/auth/setup", body);
  foreign.headers.Set("Origin", "http://evil.example");
  r = auth.Handle(foreign);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, R"({"error":"forbidden","message":"Origin 'http://evil.example' is not this daemon's"})");

  r = auth.Handle(AuthPost("/api/v1/auth/setup", body));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"({"platform_admin":true,"user":"root"})");
}

}  // namespace
}  // namespace isb::api
