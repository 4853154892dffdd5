// The OAuth endpoints in process: metadata, registration, the consent page and its answer, the token endpoint, and
// the access token's binding to the MCP resource as WebAuth checks it.
#include "api/oauth_server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/oauth_form.h"
#include "identity/identity_fixture.h"
#include "identity/tokens.h"

namespace isb::api {
namespace {

using json = nlohmann::json;

constexpr char kHost[] = "isb.test:8092";
constexpr char kIssuer[] = "http://isb.test:8092";
constexpr char kRedirect[] = "http://127.0.0.1:9/callback";
constexpr char kVerifier[] = "a-verifier-of-forty-three-characters-or-more-0123";

class OAuthServerTest : public identity::IdentityTest {
 protected:
  void SetUp() override {
    IdentityTest::SetUp();
    NewOrg("acme");
    alice_ = NewUser("alice", "acme", identity::Role::kMember);
    auto session = id_->sessions().Create(alice_, "127.0.0.1", "test");
    ASSERT_TRUE(session.ok());
    cookie_ = std::string(kSessionCookie) + "=" + session->secret;
    WebAuthOptions web;
    web.allowed_hosts = {"isb.test"};
    web.resource_of = [](const Request& req) { return McpResourceOf(req, "http"); };
    web_ = std::make_unique<WebAuth>(*id_, web);
    OAuthOptions options;
    options.on_event = Recorder();
    oauth_ = std::make_unique<OAuthServer>(*id_, *web_, options);
  }

  // Records each event as "action org outcome"; fails to record while audit_down_ is set, as a full disk would.
  std::function<Status(const Request&, const OAuthEvent&)> Recorder() {
    return [this](const Request&, const OAuthEvent& e) -> Status {
      if (audit_down_) return Error::Of(Code::kUnavailable, "the audit log could not record it (disk full)");
      events_.push_back(e.action + " " + e.org + " " +
                        std::string(e.outcome.ok() ? "ok" : CodeName(e.outcome.error().code)));
      return {};
    };
  }

  static Request Make(std::string method, std::string target, std::string body = "") {
    Request req;
    req.method = std::move(method);
    req.target = std::move(target);
    req.body = std::move(body);
    req.headers.Set("Host", kHost);
    req.remote_address = "192.0.2.1";
    if (req.method == "POST" && !req.target.starts_with("/oauth/register"))
      req.headers.Set("Content-Type", "application/x-www-form-urlencoded");
    return req;
  }

  std::string Register() {
    Response r =
        oauth_->Handle(Make("POST", "/oauth/register",
                            R"({"client_name":"Test <Client>","redirect_uris":[")" + std::string(kRedirect) + "\"]}"));
    EXPECT_EQ(r.status, 201) << r.body;
    return json::parse(r.body).value("client_id", "");
  }

  std::string AuthorizeTarget(const std::string& client, const std::string& extra = "") {
    return "/oauth/authorize?response_type=code&client_id=" + client +
           "&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback"
           "&code_challenge=" +
           identity::PkceS256(kVerifier) + "&code_challenge_method=S256&state=s1" + extra;
  }

  // The consent page's hidden request id.
  static std::string RequestId(const std::string& page) {
    const std::string marker = "name=\"request\" value=\"";
    size_t at = page.find(marker);
    if (at == std::string::npos) return "";
    at += marker.size();
    return page.substr(at, page.find('"', at) - at);
  }

  Response Answer(const std::string& request_id, const std::string& fields) {
    Request req = Make("POST", "/oauth/authorize", "request=" + request_id + "&" + fields);
    req.headers.Set("Cookie", cookie_);
    req.headers.Set("Origin", kIssuer);
    return oauth_->Handle(req);
  }

  // The consent page shown to alice for `client`, and its request id.
  std::string ShowConsent(const std::string& client, const std::string& extra = "") {
    Request req = Make("GET", AuthorizeTarget(client, extra));
    req.headers.Set("Cookie", cookie_);
    Response page = oauth_->Handle(req);
    EXPECT_EQ(page.status, 200) << page.body;
    return RequestId(page.body);
  }

  // The code in a 302's Location.
  static std::string CodeOf(const Response& r) {
    auto form = ParseForm(std::string_view(r.headers.Get("Location")).substr(std::string(kRedirect).size() + 1));
    return form.ok() ? FormValue(*form, "code") : "";
  }

  Response Exchange(const std::string& client, const std::string& code, const std::string& verifier) {
    return oauth_->Handle(
        Make("POST", "/oauth/token",
             "grant_type=authorization_code&client_id=" + client + "&code=" + code + "&code_verifier=" + verifier +
                 "&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&resource=http%3A%2F%2Fisb.test%3A8092%2Fmcp"));
  }

  Request Bearer(const std::string& target, const std::string& token) {
    Request req = Make("POST", target);
    req.headers.Set("Authorization", "Bearer " + token);
    return req;
  }

  int64_t alice_ = 0;
  std::string cookie_;
  std::unique_ptr<WebAuth> web_;
  std::unique_ptr<OAuthServer> oauth_;
  std::vector<std::string> events_;
  bool audit_down_ = false;
};

TEST_F(OAuthServerTest, TheMetadataNamesTheMcpResourceAndIsbAsItsAuthorizationServer) {
  Response prm = oauth_->Handle(Make("GET", "/.well-known/oauth-protected-resource/mcp"));
  ASSERT_EQ(prm.status, 200);
  EXPECT_EQ(json::parse(prm.body)["resource"], "http://isb.test:8092/mcp");
  EXPECT_EQ(json::parse(prm.body)["authorization_servers"], json::array({kIssuer}));
  Response org = oauth_->Handle(Make("GET", "/.well-known/oauth-protected-resource/orgs/acme/mcp"));
  EXPECT_EQ(json::parse(org.body)["resource"], "http://isb.test:8092/orgs/acme/mcp");
  EXPECT_EQ(oauth_->Handle(Make("GET", "/.well-known/oauth-protected-resource/api/v1")).status, 404);
  Response as = oauth_->Handle(Make("GET", "/.well-known/oauth-authorization-server"));
  json meta = json::parse(as.body);
  EXPECT_EQ(meta["issuer"], kIssuer);
  EXPECT_EQ(meta["token_endpoint"], "http://isb.test:8092/oauth/token");
  EXPECT_EQ(meta["code_challenge_methods_supported"], json::array({"S256"}));
  EXPECT_EQ(meta["token_endpoint_auth_methods_supported"], json::array({"none"}));
  Request req = Make("POST", "/mcp");
  EXPECT_EQ(oauth_->ResourceMetadataUrl(req), "http://isb.test:8092/.well-known/oauth-protected-resource/mcp");
}

TEST_F(OAuthServerTest, AnApprovedConsentGivesATokenGoodAtTheMcpResourceOnly) {
  const std::string client = Register();
  Request show = Make("GET", AuthorizeTarget(client));
  show.headers.Set("Cookie", cookie_);
  Response page = oauth_->Handle(show);
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.headers.Get("Content-Security-Policy"), "default-src 'none'; base-uri 'none'; frame-ancestors 'none'");
  EXPECT_NE(page.body.find("<strong>Test &lt;Client&gt;</strong> asks"), std::string::npos);
  EXPECT_NE(page.body.find("your browser goes to <strong>127.0.0.1:9</strong>"), std::string::npos);
  EXPECT_NE(page.body.find("<option value=\"acme\">acme (you are member)</option>"), std::string::npos);
  EXPECT_NE(page.body.find("asks for the role <strong>member</strong>"), std::string::npos);
  EXPECT_EQ(page.body.find("<option value=\"admin\""), std::string::npos);  // above alice's role

  Response back = Answer(RequestId(page.body), "org=acme&role=viewer&decision=approve");
  ASSERT_EQ(back.status, 302) << back.body;
  EXPECT_TRUE(back.headers.Get("Location").starts_with("http://127.0.0.1:9/callback?code=isb_code_"));
  EXPECT_TRUE(back.headers.Get("Location").ends_with("&state=s1&iss=http%3A%2F%2Fisb.test%3A8092"));

  Response tokens = Exchange(client, CodeOf(back), kVerifier);
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  json t = json::parse(tokens.body);
  EXPECT_EQ(t["token_type"], "Bearer");
  EXPECT_EQ(t["scope"], "viewer");
  EXPECT_EQ(tokens.headers.Get("Cache-Control"), "no-store");
  const std::string access = t["access_token"];

  auto at_mcp = web_->Authenticate(Bearer("/mcp", access));
  ASSERT_TRUE(at_mcp.ok()) << at_mcp.error().message;
  EXPECT_EQ(at_mcp->org_scope, "acme");
  EXPECT_EQ(at_mcp->RoleIn("acme"), identity::Role::kViewer);
  EXPECT_EQ(web_->Authenticate(Bearer("/orgs/acme/mcp", access)).error().message,
            "this OAuth token is for http://isb.test:8092/mcp, not http://isb.test:8092/orgs/acme/mcp");
  EXPECT_EQ(web_->Authenticate(Bearer("/api/v1/tools/sandbox_list", access)).error().message,
            "this OAuth token is for http://isb.test:8092/mcp, not this path");
  EXPECT_EQ(events_, (std::vector<std::string>{"oauth_register  ok", "oauth_grant acme ok", "oauth_token acme ok"}));
}

TEST_F(OAuthServerTest, TheConsentPageSaysTheNameIsUnverifiedAndShowsTheClientId) {
  const std::string client = Register();
  Request show = Make("GET", AuthorizeTarget(client));
  show.headers.Set("Cookie", cookie_);
  Response page = oauth_->Handle(show);
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("The name is the client's own: isb has not verified it. Its client id is <code>" + client +
                           "</code>; allow only a client you just started yourself."),
            std::string::npos)
      << page.body;
}

TEST_F(OAuthServerTest, APreflightIsGrantedOnlyWhereNoCookieIsRead) {
  for (const char* path : {"/oauth/token", "/oauth/register", "/oauth/revoke",
                           "/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/mcp"}) {
    Response r = oauth_->Handle(Make("OPTIONS", path));
    EXPECT_EQ(r.status, 204) << path;
    EXPECT_EQ(r.headers.Get("Access-Control-Allow-Origin"), "*") << path;
  }
  Response consent = oauth_->Handle(Make("OPTIONS", "/oauth/authorize"));
  EXPECT_EQ(consent.status, 404);
  EXPECT_FALSE(consent.headers.Has("Access-Control-Allow-Origin"));
  EXPECT_FALSE(consent.headers.Has("Access-Control-Allow-Methods"));
}

TEST_F(OAuthServerTest, AClientRevokesItsGrantAtTheRevocationEndpoint) {
  const std::string client = Register();
  Response back = Answer(ShowConsent(client), "org=acme&role=member&decision=approve");
  Response tokens = Exchange(client, CodeOf(back), kVerifier);
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  const json t = json::parse(tokens.body);
  Response revoked = oauth_->Handle(
      Make("POST", "/oauth/revoke", "client_id=" + client + "&token=" + t["refresh_token"].get<std::string>()));
  EXPECT_EQ(revoked.status, 200);
  EXPECT_EQ(revoked.body, "");
  EXPECT_EQ(events_.back(), "oauth_revoke  ok");
  EXPECT_EQ(web_->Authenticate(Bearer("/mcp", t["access_token"].get<std::string>())).error().message, "token revoked");
  // Again, or with a token that never was: the same 200, and nothing recorded as revoked.
  events_.clear();
  Response again = oauth_->Handle(
      Make("POST", "/oauth/revoke", "client_id=" + client + "&token=" + t["refresh_token"].get<std::string>()));
  EXPECT_EQ(again.status, 200);
  auto never = identity::NewSecret(identity::SecretKind::kRefresh);
  ASSERT_TRUE(never.ok());
  EXPECT_EQ(oauth_->Handle(Make("POST", "/oauth/revoke", "client_id=" + client + "&token=" + *never)).status, 200);
  EXPECT_EQ(oauth_->Handle(Make("POST", "/oauth/revoke", "client_id=" + client + "&token=isb_rt_nothing")).status, 200);
  EXPECT_TRUE(events_.empty());
  Response unknown = oauth_->Handle(Make("POST", "/oauth/revoke", "client_id=isb_client_x&token=isb_rt_nothing"));
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(json::parse(unknown.body)["error"], "invalid_client");
  EXPECT_EQ(
      json::parse(oauth_->Handle(Make("GET", "/.well-known/oauth-authorization-server")).body)["revocation_endpoint"],
      "http://isb.test:8092/oauth/revoke");
}

TEST_F(OAuthServerTest, OnePersonMayHaveEightConsentPagesWaitingOverAllTheirSessions) {
  const std::string client = Register();
  std::vector<std::string> ids;
  for (size_t i = 0; i < kMaxPendingConsentsPerUser; ++i) ids.push_back(ShowConsent(client));
  // Another session of the same person: no more room.
  auto again = id_->sessions().Create(alice_, "127.0.0.1", "test");
  ASSERT_TRUE(again.ok());
  Request ninth = Make("GET", AuthorizeTarget(client));
  ninth.headers.Set("Cookie", std::string(kSessionCookie) + "=" + again->secret);
  Response r = oauth_->Handle(ninth);
  EXPECT_EQ(r.status, 429);
  EXPECT_NE(r.body.find("you have 8 authorizations waiting for an answer: answer one, or wait 10 minutes"),
            std::string::npos)
      << r.body;
  // Answering one makes room for another.
  ASSERT_EQ(Answer(ids[0], "org=acme&role=member&decision=deny").status, 302);
  EXPECT_FALSE(ShowConsent(client).empty());
}

TEST_F(OAuthServerTest, NothingIsGivenThatTheAuditLogCouldNotRecord) {
  auto count = [&](const std::string& sql) { return store::AsInt((*db_->Query(sql))[0][0]); };
  // A registration not recorded is undone.
  audit_down_ = true;
  Response reg =
      oauth_->Handle(Make("POST", "/oauth/register", R"({"redirect_uris":["http://127.0.0.1:9/callback"]})"));
  EXPECT_EQ(reg.status, 503);
  EXPECT_EQ(json::parse(reg.body)["error_description"], "the audit log could not record it (disk full)");
  EXPECT_EQ(count("SELECT count(*) FROM oauth_clients"), 0);
  audit_down_ = false;
  const std::string client = Register();
  // A consent not recorded gives no code: a page, no redirect, and the code it would have been is spent.
  const std::string id = ShowConsent(client);
  audit_down_ = true;
  Response grant = Answer(id, "org=acme&role=member&decision=approve");
  EXPECT_EQ(grant.status, 503);
  EXPECT_FALSE(grant.headers.Has("Location"));
  EXPECT_NE(grant.body.find("not granted: the audit log could not record it (disk full)"), std::string::npos);
  EXPECT_EQ(count("SELECT count(*) FROM oauth_codes WHERE used_at IS NULL"), 0);
  // An exchange not recorded gives no token, and the grant is revoked.
  audit_down_ = false;
  Response back = Answer(ShowConsent(client), "org=acme&role=member&decision=approve");
  ASSERT_EQ(back.status, 302);
  audit_down_ = true;
  Response tokens = Exchange(client, CodeOf(back), kVerifier);
  EXPECT_EQ(tokens.status, 503);
  EXPECT_EQ(json::parse(tokens.body)["error"], "temporarily_unavailable");
  EXPECT_EQ(json::parse(tokens.body)["error_description"], "not issued: the audit log could not record it (disk full)");
  EXPECT_EQ(count("SELECT count(*) FROM tokens WHERE revoked_at IS NULL"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM oauth_refresh WHERE revoked_at IS NULL"), 0);
  // A refresh not recorded: no new tokens, and the grant is revoked.
  audit_down_ = false;
  back = Answer(ShowConsent(client), "org=acme&role=member&decision=approve");
  tokens = Exchange(client, CodeOf(back), kVerifier);
  ASSERT_EQ(tokens.status, 200);
  const std::string refresh = json::parse(tokens.body)["refresh_token"];
  audit_down_ = true;
  Response refreshed = oauth_->Handle(
      Make("POST", "/oauth/token", "grant_type=refresh_token&client_id=" + client + "&refresh_token=" + refresh));
  EXPECT_EQ(refreshed.status, 503);
  EXPECT_EQ(json::parse(refreshed.body)["error_description"],
            "not issued: the audit log could not record it (disk full)");
  EXPECT_EQ(count("SELECT count(*) FROM tokens WHERE revoked_at IS NULL"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM oauth_refresh WHERE revoked_at IS NULL"), 0);
}

TEST_F(OAuthServerTest, RefusedRegistrationsUnknownClientsAndForgedAnswersAreAudited) {
  Response bad = oauth_->Handle(Make("POST", "/oauth/register", R"({"redirect_uris":["http://evil.example/cb"]})"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(events_.back(), "oauth_register  invalid_argument");
  Response unknown =
      oauth_->Handle(Make("POST", "/oauth/token", "grant_type=authorization_code&client_id=isb_client_x"));
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(json::parse(unknown.body)["error"], "invalid_client");
  EXPECT_EQ(events_.back(), "oauth_token  not_found");
  const std::string client = Register();
  const std::string id = ShowConsent(client);
  Request forged = Make("POST", "/oauth/authorize", "request=" + id + "&org=acme&role=member&decision=approve");
  forged.headers.Set("Cookie", cookie_);
  forged.headers.Set("Origin", "https://evil.example");
  EXPECT_EQ(oauth_->Handle(forged).status, 403);
  EXPECT_EQ(events_.back(), "oauth_grant  forbidden");
  EXPECT_EQ(Answer("forged", "org=acme&role=member&decision=approve").status, 403);
  EXPECT_EQ(events_.back(), "oauth_grant  forbidden");
  events_.clear();
  Request anonymous = Make("POST", "/oauth/authorize", "request=" + id + "&org=acme&role=member&decision=approve");
  anonymous.headers.Set("Origin", kIssuer);
  EXPECT_EQ(oauth_->Handle(anonymous).status, 401);
  EXPECT_EQ(events_, (std::vector<std::string>{"oauth_grant  unauthenticated"}));
}

TEST_F(OAuthServerTest, ADeniedConsentGoesBackAsAccessDeniedAndIsAudited) {
  const std::string client = Register();
  Response back = Answer(ShowConsent(client), "org=acme&role=member&decision=deny");
  ASSERT_EQ(back.status, 302);
  EXPECT_EQ(back.headers.Get("Location"),
            "http://127.0.0.1:9/callback?error=access_denied&error_description=the%20user%20said%20no&state=s1&iss="
            "http%3A%2F%2Fisb.test%3A8092");
  EXPECT_EQ(events_.back(), "oauth_deny  forbidden");
}

TEST_F(OAuthServerTest, AConsentAnswerNeedsThisSessionsPageItsOriginAndARoleTheUserHas) {
  const std::string client = Register();
  const std::string id = ShowConsent(client);
  Request foreign = Make("POST", "/oauth/authorize", "request=" + id + "&org=acme&role=member&decision=approve");
  foreign.headers.Set("Cookie", cookie_);
  foreign.headers.Set("Origin", "https://evil.example");
  Response r = oauth_->Handle(foreign);
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("Origin &#39;https://evil.example&#39; is not this daemon&#39;s"), std::string::npos) << r.body;
  EXPECT_EQ(Answer("forged", "org=acme&role=member&decision=approve").status, 403);
  Response above = Answer(id, "org=acme&role=owner&decision=approve");
  EXPECT_EQ(above.status, 403);
  EXPECT_NE(above.body.find("role owner is above yours (member) in org acme"), std::string::npos) << above.body;
  EXPECT_EQ(events_.back(), "oauth_grant acme forbidden");
  // The page is answered once.
  EXPECT_EQ(Answer(id, "org=acme&role=member&decision=approve").status, 403);
}

TEST_F(OAuthServerTest, AnAuthorizationErrorBeforeConsentIsAPageNeverARedirect) {
  const std::string client = Register();
  const std::string good_challenge = identity::PkceS256(kVerifier);
  struct Case {
    std::string target, message;
  };
  const std::string base =
      "/oauth/authorize?client_id=" + client + "&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&state=s1";
  const std::vector<Case> cases = {
      {base + "&response_type=token&code_challenge_method=S256&code_challenge=" + good_challenge,
       "response_type: only code"},
      {base + "&response_type=code&code_challenge_method=plain&code_challenge=" + good_challenge,
       "code_challenge_method: only S256"},
      {base + "&response_type=code&code_challenge_method=S256&code_challenge=short",
       "code_challenge: 43 base64url characters (S256)"},
  };
  for (const Case& c : cases) {
    for (bool signed_in : {false, true}) {
      Request req = Make("GET", c.target);
      if (signed_in) req.headers.Set("Cookie", cookie_);
      Response r = oauth_->Handle(req);
      EXPECT_EQ(r.status, 400) << c.target;
      EXPECT_FALSE(r.headers.Has("Location")) << c.target;
      EXPECT_NE(r.body.find("<p>" + c.message + "</p>"), std::string::npos) << r.body;
    }
  }
}

TEST_F(OAuthServerTest, AnAuthorizationRequestIsCheckedBeforeAnythingIsShown) {
  const std::string client = Register();
  Response anonymous = oauth_->Handle(Make("GET", AuthorizeTarget(client)));
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_NE(anonymous.body.find("Sign in to isb at <a href=\"/\">http://isb.test:8092</a>"), std::string::npos);
  Request other = Make("GET", "/oauth/authorize?response_type=code&client_id=" + client +
                                  "&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fother&code_challenge=x");
  Response wrong_uri = oauth_->Handle(other);
  EXPECT_EQ(wrong_uri.status, 400);
  EXPECT_FALSE(wrong_uri.headers.Has("Location"));
  EXPECT_NE(wrong_uri.body.find("redirect_uri: not one registered for client " + client), std::string::npos);
  Response plain = oauth_->Handle(Make("GET", AuthorizeTarget(client) + "&code_challenge_method=plain"));
  EXPECT_EQ(plain.status, 400);  // code_challenge_method given twice
  Response target = oauth_->Handle(Make("GET", AuthorizeTarget(client, "&resource=https%3A%2F%2Fother.example%2Fmcp")));
  EXPECT_EQ(target.status, 400);
  EXPECT_FALSE(target.headers.Has("Location"));
  EXPECT_NE(target.body.find("resource: isb&#39;s MCP resources are http://isb.test:8092/mcp and "
                             "http://isb.test:8092/orgs/ORG/mcp"),
            std::string::npos)
      << target.body;
  Request rebound = Make("GET", AuthorizeTarget(client));
  rebound.headers.Set("Host", "rebound.example");
  EXPECT_EQ(oauth_->Handle(rebound).status, 403);
}

TEST_F(OAuthServerTest, TheTokenEndpointRefusesAWrongVerifierAReplayAndAnUnknownClientExactly) {
  const std::string client = Register();
  Response bad = Exchange(client, CodeOf(Answer(ShowConsent(client), "org=acme&role=member&decision=approve")),
                          std::string(kVerifier) + "x");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body),
            json({{"error", "invalid_grant"},
                  {"error_description", "code_verifier: does not match the code_challenge (S256)"}}));
  const std::string code = CodeOf(Answer(ShowConsent(client), "org=acme&role=member&decision=approve"));
  EXPECT_EQ(Exchange(client, code, kVerifier).status, 200);
  Response replay = Exchange(client, code, kVerifier);
  EXPECT_EQ(replay.status, 400);
  EXPECT_EQ(json::parse(replay.body)["error_description"], "code: already used; the tokens it gave are revoked");
  Response unknown = Exchange("isb_client_nobody", code, kVerifier);
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(json::parse(unknown.body)["error"], "invalid_client");
  // The replay's refusal, then the unknown client's.
  ASSERT_GE(events_.size(), 2u);
  EXPECT_EQ(events_[events_.size() - 2], "oauth_token  unauthenticated");
  EXPECT_EQ(events_.back(), "oauth_token  not_found");
}

TEST_F(OAuthServerTest, RefusedTokenRequestsAreAuditedOnlyWithinTheRefusalBudgetOfTheirAddress) {
  OAuthOptions options;
  options.refusal_rows_per_minute = 3;
  options.on_event = Recorder();
  oauth_ = std::make_unique<OAuthServer>(*id_, *web_, options);
  const std::string client = Register();
  events_.clear();
  auto bad_code = [&](const std::string& address) {
    Request req =
        Make("POST", "/oauth/token",
             "grant_type=authorization_code&client_id=" + client + "&code=isb_code_nothing&code_verifier=" + kVerifier +
                 "&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback");
    req.remote_address = address;
    return oauth_->Handle(req);
  };
  for (int i = 0; i < 10; ++i) EXPECT_EQ(bad_code("192.0.2.7").status, 400);
  EXPECT_EQ(events_.size(), 3u);
  // All of loopback is one address: any local user may send from all of 127.0.0.0/8.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(bad_code("127.0.0." + std::to_string(i + 1)).status, 400);
  EXPECT_EQ(events_.size(), 6u);
  // Ten addresses exhaust the budget of all of them (3 x 10 = 30 rows): more addresses write nothing.
  for (int a = 0; a < 40; ++a) bad_code("198.51.100." + std::to_string(a));
  EXPECT_EQ(events_.size(), 30u);
  EXPECT_EQ(events_.back(), "oauth_token  unauthenticated");
}

TEST_F(OAuthServerTest, ARegistrationWithAnUnsafeRedirectUriIsRefused) {
  Response r = oauth_->Handle(Make("POST", "/oauth/register", R"({"redirect_uris":["http://evil.example/cb"]})"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"], "invalid_redirect_uri");
}

// Clients known by the URL of their metadata document, with the fetch replaced by documents the test serves.
class OAuthDocumentTest : public OAuthServerTest {
 protected:
  static constexpr char kUrl[] = "https://app.example.com/oauth/client.json";

  void SetUp() override {
    OAuthServerTest::SetUp();
    Rebuild(30);
  }

  void Rebuild(int fetches_per_hour) {
    OAuthOptions options;
    options.on_event = Recorder();
    options.document_fetches_per_hour = fetches_per_hour;
    options.fetch_client_document = [this](const std::string& url) -> Result<FetchedDocument> {
      fetched_.push_back(url);
      if (during_fetch_) during_fetch_(url);
      auto it = documents_.find(url);
      if (it == documents_.end()) return Error::Of(Code::kUnavailable, "host app.example.com:443: connection refused");
      return it->second;
    };
    oauth_ = std::make_unique<OAuthServer>(*id_, *web_, options);
  }

  static FetchedDocument Document(const std::string& url, const std::string& extra = "") {
    return {200, "application/json; charset=utf-8", "max-age=600",
            R"({"client_id":")" + url + R"(","client_name":"Doc <App>","redirect_uris":[")" + kRedirect + "\"]" +
                extra + "}"};
  }

  static std::string Encoded(const std::string& url) {
    std::string out;
    for (char c : url) out += c == ':' ? "%3A" : c == '/' ? "%2F" : std::string(1, c);
    return out;
  }

  Response Show(const std::string& url, bool signed_in = true, const std::string& redirect = "") {
    std::string target = AuthorizeTarget(Encoded(url));
    if (!redirect.empty()) target.replace(target.find("http%3A%2F%2F127.0.0.1%3A9%2Fcallback"), 37, Encoded(redirect));
    Request req = Make("GET", target);
    if (signed_in) req.headers.Set("Cookie", cookie_);
    return oauth_->Handle(req);
  }
  Response ShowAs(const std::string& url, const std::string& cookie) {
    Request req = Make("GET", AuthorizeTarget(Encoded(url)));
    req.headers.Set("Cookie", cookie);
    return oauth_->Handle(req);
  }

  // The text of an error page's paragraph, its entities read back.
  static std::string PageText(const std::string& body) {
    size_t at = body.find("<p>"), end = body.find("</p>");
    if (at == std::string::npos || end == std::string::npos) return body;
    std::string text = body.substr(at + 3, end - at - 3), out;
    for (size_t k = 0; k < text.size(); ++k) {
      if (text.compare(k, 5, "&#39;") == 0) {
        out += '\'';
        k += 4;
      } else if (text.compare(k, 6, "&quot;") == 0) {
        out += '"';
        k += 5;
      } else if (text.compare(k, 4, "&lt;") == 0) {
        out += '<';
        k += 3;
      } else if (text.compare(k, 4, "&gt;") == 0) {
        out += '>';
        k += 3;
      } else if (text.compare(k, 5, "&amp;") == 0) {
        out += '&';
        k += 4;
      } else
        out += text[k];
    }
    return out;
  }

  std::map<std::string, FetchedDocument> documents_;
  std::vector<std::string> fetched_;
  std::function<void(const std::string& url)> during_fetch_;
};

TEST_F(OAuthDocumentTest, TheMetadataOffersDocumentsOnlyWhenTheDaemonReadsThem) {
  Response as = oauth_->Handle(Make("GET", "/.well-known/oauth-authorization-server"));
  EXPECT_EQ(json::parse(as.body)["client_id_metadata_document_supported"], true);
  OAuthServer plain(*id_, *web_, OAuthOptions{});
  EXPECT_EQ(json::parse(plain.Handle(Make("GET", "/.well-known/oauth-authorization-server"))
                            .body)["client_id_metadata_document_supported"],
            false);
  Request req = Make("GET", AuthorizeTarget(Encoded(kUrl)));
  req.headers.Set("Cookie", cookie_);
  Response page = plain.Handle(req);
  EXPECT_EQ(page.status, 400);
  EXPECT_EQ(PageText(page.body),
            "client_id: this isb does not read client metadata documents (isb serve "
            "--no-oauth-client-documents); register the client at http://isb.test:8092/oauth/register");
}

TEST_F(OAuthDocumentTest, ADocumentsClientIsReadOnceGrantedAndExchangesItsCode) {
  documents_[kUrl] = Document(kUrl);
  Response anonymous = Show(kUrl, false);
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_NE(anonymous.body.find("A client published at <strong>app.example.com</strong> asks"), std::string::npos);
  EXPECT_TRUE(fetched_.empty());  // nothing is fetched for someone not signed in

  Response page = Show(kUrl);
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.body.find("<strong>Doc &lt;App&gt;</strong> asks"), std::string::npos);
  EXPECT_NE(page.body.find("<p>The name is what <strong>app.example.com</strong> publishes for this client at <code>"
                           "https://app.example.com/oauth/client.json</code>; the answer goes to a program on your "
                           "computer, and any program there can use this name: allow it only if you just started "
                           "this client yourself.</p>"),
            std::string::npos)
      << page.body;
  Response back = Answer(RequestId(page.body), "org=acme&role=member&decision=approve");
  ASSERT_EQ(back.status, 302) << back.body;
  Response tokens = Exchange(Encoded(kUrl), CodeOf(back), kVerifier);
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  EXPECT_EQ(json::parse(tokens.body)["scope"], "member");

  // Fresh for max-age=600: the second consent page reads the stored copy.
  EXPECT_EQ(Show(kUrl).status, 200);
  EXPECT_EQ(fetched_, std::vector<std::string>{kUrl});
  // Stale: fetched again, and what it says now is what counts.
  ASSERT_TRUE(db_->Exec("UPDATE oauth_clients SET document_expires_at = 1").ok());
  documents_[kUrl] = Document(kUrl);
  documents_[kUrl].body = R"({"client_id":")" + std::string(kUrl) +
                          R"(","client_name":"Doc","redirect_uris":["https://app.example.com/cb"]})";
  Response moved = Show(kUrl);
  EXPECT_EQ(moved.status, 400);
  EXPECT_EQ(PageText(moved.body),
            "redirect_uri: not one of the redirect_uris in the metadata document at " + std::string(kUrl));
  EXPECT_EQ(fetched_.size(), 2u);
  EXPECT_EQ(events_, (std::vector<std::string>{"oauth_client_document  ok", "oauth_grant acme ok",
                                               "oauth_token acme ok", "oauth_client_document  ok"}));
}

TEST_F(OAuthDocumentTest, EachBadDocumentIsRefusedWithWhatWasWrongAndAudited) {
  const std::string at = "client_id: the metadata document at ";
  auto refused = [&](const std::string& path, FetchedDocument doc) {
    const std::string url = "https://app.example.com/" + path;
    if (doc.status != 0) documents_[url] = std::move(doc);
    Response page = Show(url);
    EXPECT_EQ(page.status, 400) << path;
    return PageText(page.body);
  };
  FetchedDocument other = Document("https://app.example.com/other.json");
  EXPECT_EQ(refused("a.json", other), at + "https://app.example.com/a.json: client_id: the document names another "
                                           "client_id, not its own URL");
  EXPECT_EQ(refused("b.json", {302, "text/html", "", ""}),
            at + "https://app.example.com/b.json answered HTTP 302 (a redirect): isb reads a client's metadata only "
                 "at its own URL");
  EXPECT_EQ(refused("c.json", {404, "application/json", "", "{}"}),
            at + "https://app.example.com/c.json answered HTTP 404, not 200");
  FetchedDocument html = Document("https://app.example.com/d.json");
  html.content_type = "text/html";
  EXPECT_EQ(refused("d.json", html), at + "https://app.example.com/d.json is served as 'text/html', not as JSON "
                                          "(application/json)");
  EXPECT_EQ(refused("e.json", Document("https://app.example.com/e.json", R"(,"client_secret":"s")")),
            at + "https://app.example.com/e.json: client_secret: a metadata document's client is public and has no "
                 "secret");
  EXPECT_EQ(refused("f.json", {}), at + "https://app.example.com/f.json could not be fetched: host "
                                        "app.example.com:443: connection refused");
  FetchedDocument typed = Document("https://app.example.com/g.json");
  typed.content_type = "application/oauth-client+json";
  documents_["https://app.example.com/g.json"] = typed;
  EXPECT_EQ(Show("https://app.example.com/g.json").status, 200);
  // A URL that is not one is refused before anything is fetched.
  EXPECT_EQ(refused("", {}), "client_id: the URL needs a path naming the document (https://HOST/PATH)");
  EXPECT_EQ(fetched_.size(), 7u);
  EXPECT_EQ(events_, (std::vector<std::string>{
                         "oauth_client_document  invalid_argument", "oauth_client_document  invalid_argument",
                         "oauth_client_document  invalid_argument", "oauth_client_document  invalid_argument",
                         "oauth_client_document  invalid_argument", "oauth_client_document  invalid_argument",
                         "oauth_client_document  ok"}));
  // A refused document leaves no client behind to exchange codes for.
  EXPECT_EQ(id_->oauth().Client("https://app.example.com/a.json").error().code, Code::kNotFound);
}

TEST_F(OAuthDocumentTest, FetchesArePacedPerPersonAndAnUnrecordedFetchIsNotUsed) {
  Rebuild(2);
  for (const char* path : {"a.json", "b.json", "c.json"})
    documents_[std::string("https://app.example.com/") + path] =
        Document(std::string("https://app.example.com/") + path);
  EXPECT_EQ(Show("https://app.example.com/a.json").status, 200);
  audit_down_ = true;
  Response unrecorded = Show("https://app.example.com/b.json");
  EXPECT_EQ(unrecorded.status, 503);
  EXPECT_EQ(PageText(unrecorded.body), "client_id: the audit log could not record it (disk full)");
  audit_down_ = false;
  Response paced = Show("https://app.example.com/c.json");
  EXPECT_EQ(paced.status, 429);
  EXPECT_TRUE(PageText(paced.body)
                  .starts_with("client_id: 2 client metadata documents were fetched for you this hour; try again in "))
      << paced.body;
  // The copy read while the audit log was down is stale at once: it is fetched again (and paced).
  EXPECT_EQ(Show("https://app.example.com/b.json").status, 429);
  EXPECT_EQ(fetched_.size(), 2u);
}

TEST_F(OAuthDocumentTest, TheConsentPageSaysWhereTheAnswerGoesWhenThePublisherCannotVouchForIt) {
  const std::string same = "https://app.example.com/cb", other = "https://elsewhere.example/cb";
  documents_[kUrl] = Document(kUrl);
  documents_[kUrl].body = R"({"client_id":")" + std::string(kUrl) + R"(","client_name":"Doc","redirect_uris":[")" +
                          same + R"(",")" + other + "\"]}";
  Response own = Show(kUrl, true, same);
  ASSERT_EQ(own.status, 200) << own.body;
  EXPECT_NE(own.body.find("publishes for this client at <code>https://app.example.com/oauth/client.json</code>; allow "
                          "it only if you trust that site and just started this client yourself.</p>"),
            std::string::npos)
      << own.body;
  Response elsewhere = Show(kUrl, true, other);
  ASSERT_EQ(elsewhere.status, 200) << elsewhere.body;
  EXPECT_NE(elsewhere.body.find("publishes for this client at <code>https://app.example.com/oauth/client.json</code>; "
                                "the answer goes to <strong>elsewhere.example</strong>, not to app.example.com: allow "
                                "it only if you just started this client yourself.</p>"),
            std::string::npos)
      << elsewhere.body;
}

TEST_F(OAuthDocumentTest, OneFetchAPersonAtATimeAndFourInAll) {
  std::vector<std::string> cookies = {cookie_};
  for (const char* name : {"bob", "carol", "dave", "erin"}) {
    const int64_t user = NewUser(name, "acme", identity::Role::kMember);
    auto session = id_->sessions().Create(user, "127.0.0.1", "test");
    ASSERT_TRUE(session.ok());
    cookies.push_back(std::string(kSessionCookie) + "=" + session->secret);
  }
  auto url = [](size_t i) { return "https://app.example.com/c" + std::to_string(i) + ".json"; };
  for (size_t i = 0; i < 5; ++i) documents_[url(i)] = Document(url(i));
  std::vector<std::pair<int, std::string>> refused;
  // Each fetch, while it runs, has the next person open a consent page: the fourth finds every slot taken.
  during_fetch_ = [&](const std::string&) {
    const size_t running = fetched_.size();
    if (running == 1) {
      Response again = ShowAs(url(1), cookies[0]);
      refused.emplace_back(again.status, PageText(again.body));
    }
    Response next = ShowAs(url(running), cookies[running]);
    if (running == 4)
      refused.emplace_back(next.status, PageText(next.body));
    else
      EXPECT_EQ(next.status, 200) << next.body;
  };
  EXPECT_EQ(ShowAs(url(0), cookies[0]).status, 200);
  EXPECT_EQ(fetched_.size(), 4u);
  EXPECT_EQ(refused, (std::vector<std::pair<int, std::string>>{
                         {429,
                          "client_id: a client metadata document is being fetched for you already; try again "
                          "when it is done"},
                         {503,
                          "client_id: isb is reading other clients' metadata documents; try again in a few "
                          "seconds"}}));
  // Once they are done, each slot is free again.
  during_fetch_ = nullptr;
  EXPECT_EQ(ShowAs(url(4), cookies[4]).status, 200);
  EXPECT_EQ(fetched_.size(), 5u);
}

}  // namespace
}  // namespace isb::api
