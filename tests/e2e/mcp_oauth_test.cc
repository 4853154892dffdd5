// OAuth for MCP clients end to end: the official TypeScript SDK's OAuth client flow against isb's own
// authorization server, the consent approved by a signed-in session, and the refusals a client may meet.
#include <filesystem>
#include <regex>

#include "e2e/audit_ledger.h"
#include "e2e/daemon_fixture.h"
#include "e2e/mcp_sdk.h"
#include "e2e/origin_fixture.h"

namespace isb::e2e {
namespace {

// The origin (origin_fixture.h) is the server of a client's metadata document, when a test has one.
class McpOAuthTest : public OriginTest {
 protected:
  // olive, a member of default, signed in: her session cookie ("isb_session=...").
  std::string SignedInMember() {
    MustTool("user_create", {{"name", "olive"}, {"password", "correct horse battery"}});
    MustTool("member_add", {{"user", "olive"}, {"role", "member"}});
    CurlResult in = CurlTcp("POST", "/api/v1/auth/signin", R"({"user":"olive","password":"correct horse battery"})",
                            {"Content-Type: application/json", "X-Isb-Csrf: 1"}, "");
    EXPECT_EQ(in.http.status, 200) << in.Describe();
    std::smatch cookie;
    const std::string raw = in.proc.out;
    EXPECT_TRUE(std::regex_search(raw, cookie, std::regex("isb_session=(isb_sess_[A-Za-z0-9_-]+)")))
        << RedactSecrets(raw);
    return cookie.empty() ? "" : "isb_session=" + cookie[1].str();
  }
};

TEST_F(McpOAuthTest, TheSdksOAuthFlowConnectsAndEachRefusalIsExact) {
  std::string why = EnsureSdk();
  ASSERT_TRUE(why.empty()) << why;
  // The OAuth routes write rows of their own (registration, consent, tokens), checked below.
  SkipAuditCheck();
  const std::string cookie = SignedInMember();
  ASSERT_FALSE(cookie.empty());

  ProcResult node = RunProcess({"node", NodeDir() + "/mcp_oauth_client.mjs", base_url(), cookie}, "", 90s);
  json obs = json::parse(node.out, nullptr, false);
  ASSERT_TRUE(obs.is_object()) << RedactSecrets(node.Describe());
  ASSERT_EQ(obs["ok"], true) << "after steps " << obs["steps"].dump() << ": " << obs.value("error", "");
  EXPECT_GT(obs["toolCount"].get<int>(), 5);
  EXPECT_EQ(obs["consentPage"], json({{"status", 200},
                                      {"csp", "default-src 'none'; base-uri 'none'; frame-ancestors 'none'"},
                                      {"namesClient", true},
                                      {"namesRedirectHost", true},
                                      {"namesOrg", true}}));
  EXPECT_EQ(obs["callback"], json({{"hasCode", true}, {"state", nullptr}, {"iss", base_url()}}));
  EXPECT_EQ(obs["wrongVerifier"],
            json({{"status", 400},
                  {"body",
                   {{"error", "invalid_grant"},
                    {"error_description", "code_verifier: does not match the code_challenge (S256)"}}}}));
  EXPECT_EQ(obs["otherRedirect"],
            json({{"status", 400},
                  {"body",
                   {{"error", "invalid_grant"},
                    {"error_description", "redirect_uri: not the one the authorization request sent"}}}}));
  EXPECT_EQ(obs["unregisteredRedirect"], json({{"status", 400}, {"location", nullptr}, {"says", true}}));
  EXPECT_EQ(obs["otherResource"]["atMcp"]["status"], 401);
  EXPECT_EQ(obs["otherResource"]["atMcp"]["wwwAuthenticate"],
            "Bearer realm=\"isb\", resource_metadata=\"" + base_url() + "/.well-known/oauth-protected-resource/mcp\"");
  EXPECT_EQ(json::parse(obs["otherResource"]["atMcp"]["body"].get<std::string>(), nullptr, false)["message"],
            "this OAuth token is for " + base_url() + "/orgs/default/mcp, not " + base_url() + "/mcp");
  EXPECT_EQ(obs["otherResource"]["atItsOwn"], 200);
  EXPECT_EQ(obs["refreshed"]["status"], 200);
  EXPECT_EQ(obs["refreshed"]["body"]["scope"], "member");
  EXPECT_EQ(obs["reusedRefresh"],
            json({{"status", 400},
                  {"body",
                   {{"error", "invalid_grant"},
                    {"error_description", "refresh_token: already used; every token of this grant is revoked"}}}}));
  EXPECT_EQ(obs["afterReuse"], 401);
  EXPECT_EQ(obs["replayed"], json({{"status", 400},
                                   {"body",
                                    {{"error", "invalid_grant"},
                                     {"error_description", "code: already used; the tokens it gave are revoked"}}}}));
  EXPECT_EQ(obs["afterReplay"], 401);

  // Every consent answered is a row: the SDK's and four by hand, all granted.
  std::string error;
  std::vector<AuditRow> rows = ReadAuditRows(state_dir() + "/isb.db", &error);
  ASSERT_TRUE(error.empty()) << error;
  int grants = 0, registrations = 0;
  for (const AuditRow& r : rows) {
    if (r.action == "oauth_grant" && r.outcome == "ok" && r.org == "default" && r.actor_kind == "user") ++grants;
    if (r.action == "oauth_register" && r.outcome == "ok") ++registrations;
  }
  EXPECT_EQ(grants, 5);
  EXPECT_EQ(registrations, 1);
}

TEST_F(McpOAuthTest, TheSdkConnectsAsAClientKnownByItsMetadataDocument) {
  std::string why = EnsureSdk();
  ASSERT_TRUE(why.empty()) << why;
  SkipAuditCheck();
  // The document is served over https on localhost, which a daemon reads only when allowed, with its certificate
  // trusted through --oauth-client-ca.
  PrepareOrigin();
  MakeCertificate("localhost");
  const std::string port = std::to_string(port_);
  // Reading none and saying how to read them is refused before anything starts.
  ProcResult both = RunProcess({ISB_BINARY, "serve", "--state-dir", origin_dir_ + "/unused",
                                "--no-oauth-client-documents", "--oauth-client-allow", "localhost:" + port});
  EXPECT_EQ(both.exit_status, 2) << both.Describe();
  EXPECT_EQ(both.err,
            "isb serve: --oauth-client-allow and --oauth-client-ca say how client metadata documents are "
            "read; --no-oauth-client-documents reads none: drop one or the other\n");
  EXPECT_FALSE(std::filesystem::exists(origin_dir_ + "/unused"));
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon({"--oauth-client-allow", "localhost:" + port, "--oauth-client-ca", origin_dir_ + "/cert.pem"});
  const std::string cookie = SignedInMember();
  ASSERT_FALSE(cookie.empty());

  ProcResult node = RunProcess(
      {"node", NodeDir() + "/mcp_oauth_client.mjs", base_url(), cookie, "document", port, origin_dir_}, "", 90s);
  json obs = json::parse(node.out, nullptr, false);
  ASSERT_TRUE(obs.is_object()) << RedactSecrets(node.Describe());
  ASSERT_EQ(obs["ok"], true) << "after steps " << obs["steps"].dump() << ": " << obs.value("error", "");
  const std::string url = "https://localhost:" + port + "/client.json";
  EXPECT_EQ(obs["clientIdSent"], url);
  EXPECT_EQ(obs["consentPage"], json({{"status", 200}, {"namesClient", true}, {"namesPublisher", true}}));
  EXPECT_GT(obs["toolCount"].get<int>(), 5);
  EXPECT_EQ(obs["refreshed"], 200);
  const std::string at = "client_id: the metadata document at https://";
  EXPECT_EQ(obs["wrongId"], json({{"status", 400},
                                  {"says", at + "localhost:" + port +
                                               "/wrong-id.json: client_id: the document names "
                                               "another client_id, not its own URL"}}));
  EXPECT_EQ(obs["moved"], json({{"status", 400},
                                {"says", at + "localhost:" + port +
                                             "/moved.json answered HTTP 302 (a redirect): isb "
                                             "reads a client's metadata only at its own URL"}}));
  EXPECT_EQ(obs["notAllowed"],
            json({{"status", 400},
                  {"says", at + "127.0.0.1:" + port +
                               "/client.json could not be fetched: it is not on a public "
                               "address (isb reads documents on loopback or private addresses only from hosts allowed "
                               "with isb serve --oauth-client-allow)"}}));
  // Read once for two consent pages (its max-age), each refused document once; the address refused was never asked.
  EXPECT_EQ(obs["asked"], json({{"/client.json", 1}, {"/wrong-id.json", 1}, {"/moved.json", 1}}));

  std::string error;
  std::vector<AuditRow> rows = ReadAuditRows(state_dir() + "/isb.db", &error);
  ASSERT_TRUE(error.empty()) << error;
  int read = 0, refused = 0, registrations = 0, grants = 0;
  for (const AuditRow& r : rows) {
    if (r.action == "oauth_client_document") ++(r.outcome == "ok" ? read : refused);
    if (r.action == "oauth_register") ++registrations;
    if (r.action == "oauth_grant" && r.outcome == "ok" && r.org == "default") ++grants;
  }
  EXPECT_EQ(read, 1);
  EXPECT_EQ(refused, 3);
  EXPECT_EQ(registrations, 0);
  EXPECT_EQ(grants, 1);
}

}  // namespace
}  // namespace isb::e2e
