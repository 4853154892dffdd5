// Who may do what, end to end: a real daemon, its real tokens, curl over TCP, and the CLI on the socket.
// Cross-org isolation on the REST and MCP surfaces, tokens (forged, revoked, only hashes at rest), session cookies
// with their CSRF rules, the remote-spec policy and the tool policy.
#include <filesystem>
#include <regex>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

class IdentityTest : public E2eTest {
 protected:
  // A user of its own, `role` in `org` (created on the socket), and an unscoped token of theirs.
  std::string UserToken(const std::string& user, const std::string& org, const std::string& role) {
    MustTool("user_create", {{"name", user}});
    HttpResponse add = Tool("member_add", {{"user", user}, {"role", role}}, {"X-Isb-Org: " + org});
    EXPECT_EQ(add.status, 200) << add.Describe();
    json minted = MustTool("token_create", {{"name", user}, {"user", user}});
    return minted.is_object() ? minted.value("token", "") : "";
  }
  // POST a tool over TCP as `token` in `org`; the status and the error code (or "ok").
  std::pair<int, std::string> As(const std::string& token, const std::string& org, const std::string& tool,
                                 const json& input = json::object()) {
    CurlResult r = CurlTcp("POST", "/api/v1/tools/" + tool, input.dump(),
                           {"Content-Type: application/json", "X-Isb-Org: " + org}, token);
    return {r.http.status,
            r.http.status == 200 ? "ok" : r.http.j.value("error", "?") + ": " + r.http.j.value("message", "")};
  }
};

// The org a call names is the caller's to choose (a header). A call about the caller itself (a token of its own) in
// an org it is not in, and a refusal for such an org, are filed in no org: the admins of that org never read them,
// and no one writes into another org's log. Platform admins read them among the rows of no org.
TEST_F(IdentityTest, ARowIsFiledOnlyInAnOrgTheCallerIsIn) {
  SkipAuditCheck();  // the rows are checked here, by org
  MustTool("org_create", {{"name", "acme"}});
  std::string eve = UserToken("eve", "acme", "owner");
  std::string bob = UserToken("bob", "default", "admin");
  ASSERT_FALSE(eve.empty());
  ASSERT_FALSE(bob.empty());
  // Two more tokens of eve's, minted on the socket, each revoked by eve: one naming default, one naming acme.
  auto mint = [&](const std::string& name) {
    json minted = MustTool("token_create", {{"name", name}, {"user", "eve"}});
    return minted.is_object() ? minted["record"].value("id", int64_t{0}) : int64_t{0};
  };
  const int64_t in_default = mint("eve-2"), in_acme = mint("eve-3");
  ASSERT_GT(in_default, 0);
  ASSERT_GT(in_acme, 0);
  EXPECT_EQ(As(eve, "default", "token_revoke", {{"id", in_default}}).first, 200);
  EXPECT_EQ(As(eve, "default", "sandbox_list"), std::make_pair(404, std::string("not_found: no org 'default'")));
  EXPECT_EQ(As(eve, "acme", "token_revoke", {{"id", in_acme}}).first, 200);
  auto rows = [&](const std::string& token, const json& input) {
    CurlResult r = CurlTcp(
        "POST", "/api/v1/tools/audit_list", input.dump(),
        {"Content-Type: application/json", "X-Isb-Org: " + std::string(token == bob ? "default" : "acme")}, token);
    EXPECT_EQ(r.http.status, 200) << r.Describe();
    std::vector<std::string> out;
    for (const json& rec : r.http.j["result"]["records"])
      if (rec.value("actor_kind", "") == "token")
        out.push_back(rec.value("action", "") + " " + rec.value("target", ""));
    return out;
  };
  // The only calls made with tokens here are eve's (bob's audit_list, a read that succeeds, is not recorded).
  // default's admin: nothing eve did.
  EXPECT_EQ(rows(bob, json::object()), std::vector<std::string>{});
  // acme's owner: what eve did in acme (its start and its outcome).
  EXPECT_EQ(rows(eve, json::object()), std::vector<std::string>(2, "token_revoke " + std::to_string(in_acme)));
  // The host (a superadmin): the rest, among the rows of no org.
  HttpResponse platform = Tool("audit_list", {{"platform", true}});
  ASSERT_EQ(platform.status, 200) << platform.Describe();
  std::vector<std::string> none;
  for (const json& rec : platform.j["result"]["records"])
    if (rec.value("actor_kind", "") == "token")
      none.push_back(rec.value("action", "") + " " + rec.value("outcome", ""));
  EXPECT_EQ(none, (std::vector<std::string>{"token_revoke started", "token_revoke ok", "sandbox_list not_found"}));
}

TEST_F(IdentityTest, AMemberOfOneOrgNeitherSeesNorTouchesAnother) {
  MustTool("org_create", {{"name", "acme"}});
  std::string alice = UserToken("alice", "default", "owner");
  std::string eve = UserToken("eve", "acme", "owner");
  ASSERT_FALSE(alice.empty());
  ASSERT_FALSE(eve.empty());

  CurlResult made = CurlTcp("POST", "/api/v1/tools/sandbox_create", R"({"name":"alices"})",
                            {"Content-Type: application/json"}, alice);
  ASSERT_EQ(made.http.status, 200) << made.Describe();
  std::string id = made.http.j["result"]["id"];
  Track(id);
  // The creator, by surface and credential: alice's token is the second minted (the suite's own is the first).
  EXPECT_EQ(made.http.j["result"]["spec"]["labels"]["isb.owner"], "rest:token:2");

  // Eve, owner of acme: alice's sandbox does not exist for her, by id or by name, on every sandbox tool.
  for (const std::string& ref : {id, std::string("alices")}) {
    for (const std::string tool : {"sandbox_get", "sandbox_exec", "sandbox_stop", "sandbox_remove", "sandbox_file_read",
                                   "sandbox_extend", "sandbox_egress_set"}) {
      json in = {{"sandbox", ref}, {"argv", {"id"}}, {"path", "/etc/hostname"}, {"by", 60}, {"egress", "none"}};
      if (tool != "sandbox_exec") in.erase("argv");
      if (tool != "sandbox_file_read") in.erase("path");
      if (tool != "sandbox_extend") in.erase("by");
      if (tool != "sandbox_egress_set") in.erase("egress");
      EXPECT_EQ(As(eve, "acme", tool, in), std::make_pair(404, "not_found: no sandbox '" + ref + "'")) << tool;
    }
  }
  CurlResult listed = CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}", {"X-Isb-Org: acme"}, eve);
  EXPECT_EQ(listed.http.j["result"]["sandboxes"], json::array()) << listed.Describe();
  // Nor can she act in alice's org, or see its members: the org is not there for her.
  EXPECT_EQ(As(eve, "default", "sandbox_list"), std::make_pair(404, std::string("not_found: no org 'default'")));
  EXPECT_EQ(As(eve, "default", "member_list"), std::make_pair(404, std::string("not_found: no org 'default'")));
  // MCP at the other org's endpoint answers as for an org that does not exist.
  CurlResult mcp =
      CurlTcp("POST", "/orgs/default/mcp",
              R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})",
              {"Content-Type: application/json", "Accept: application/json, text/event-stream"}, eve);
  EXPECT_EQ(mcp.http.status, 404) << mcp.Describe();
  ExpectAudit("MCP at another org's endpoint", {ByToken("mcp", "mcp", "not_found")});
  // Alice's sandbox is untouched; she sees it, eve's org is not hers either.
  EXPECT_EQ(As(alice, "default", "sandbox_get", {{"sandbox", id}}).first, 200);
  EXPECT_EQ(As(alice, "acme", "sandbox_list"), std::make_pair(404, std::string("not_found: no org 'acme'")));
  MustTool("sandbox_remove", {{"sandbox", id}});
}

TEST_F(IdentityTest, RolesAndScopesOverRest) {
  std::string viewer = UserToken("vic", "default", "viewer");
  EXPECT_EQ(As(viewer, "default", "sandbox_list").first, 200);
  EXPECT_EQ(As(viewer, "default", "sandbox_create"),
            std::make_pair(403, std::string("forbidden: role viewer may not call sandbox_create, which needs member")));
  EXPECT_EQ(As(viewer, "default", "member_add", {{"user", "vic"}, {"role", "owner"}}),
            std::make_pair(403, std::string("forbidden: role viewer may not call member_add, which needs admin")));
  EXPECT_EQ(As(viewer, "default", "org_create", {{"name", "x"}}),
            std::make_pair(403, std::string("forbidden: org_create needs a platform admin")));
  // A token can never mint a token, whatever its role.
  EXPECT_EQ(As(token(), "default", "token_create", {{"name", "child"}}),
            std::make_pair(403, std::string("forbidden: a token cannot create a token; sign in, or use the unix socket "
                                            "on the host")));
  // A read-scoped token of an owner reads, and nothing else.
  json scoped = MustTool("token_create", {{"name", "ro"}, {"user", "e2e"}, {"scopes", "read"}});
  std::string ro = scoped.value("token", "");
  EXPECT_EQ(As(ro, "default", "sandbox_list").first, 200);
  EXPECT_EQ(As(ro, "default", "sandbox_create").first, 403);
}

// An org's people over REST: owners change the org, admins list and revoke invitations (a revoked one cannot be
// accepted, and no listing shows a secret), platform admins revoke users, whose tokens stop at once; `isb user
// revoke`, `isb org` and `isb invitation` do the same on the host.
TEST_F(IdentityTest, OrgsInvitationsAndUsersAreChangedAndRevoked) {
  MustTool("org_create", {{"name", "acme"}});
  std::string otto = UserToken("otto", "acme", "owner");
  std::string ada = UserToken("ada", "acme", "admin");
  std::string newbie = UserToken("newbie", "default", "viewer");

  EXPECT_EQ(As(ada, "acme", "org_update", {{"display_name", "Acme"}}),
            std::make_pair(403, std::string("forbidden: role admin may not call org_update, which needs owner")));
  CurlResult updated =
      CurlTcp("POST", "/api/v1/tools/org_update", R"({"display_name":"Acme Inc.","description":"builds"})",
              {"Content-Type: application/json", "X-Isb-Org: acme"}, otto);
  ASSERT_EQ(updated.http.status, 200) << updated.Describe();
  EXPECT_EQ(updated.http.j["result"]["name"], "acme");
  EXPECT_EQ(updated.http.j["result"]["display_name"], "Acme Inc.");
  EXPECT_EQ(updated.http.j["result"]["description"], "builds");
  EXPECT_EQ(As(otto, "acme", "org_update", {{"description", "a\nb"}}),
            std::make_pair(400, std::string("invalid_argument: description: control characters are not allowed")));

  CurlResult invited = CurlTcp("POST", "/api/v1/tools/invitation_create", R"({"role":"member"})",
                               {"Content-Type: application/json", "X-Isb-Org: acme"}, ada);
  ASSERT_EQ(invited.http.status, 200) << invited.Describe();
  std::string secret = invited.http.j["result"]["invitation"];
  int64_t inv_id = invited.http.j["result"]["id"];
  EXPECT_EQ(As(ada, "default", "invitation_list"), std::make_pair(404, std::string("not_found: no org 'default'")));
  CurlResult listed = CurlTcp("POST", "/api/v1/tools/invitation_list", "{}", {"X-Isb-Org: acme"}, ada);
  ASSERT_EQ(listed.http.status, 200) << listed.Describe();
  ASSERT_EQ(listed.http.j["result"]["invitations"].size(), 1u) << listed.Describe();
  EXPECT_EQ(listed.http.j["result"]["invitations"][0]["id"], inv_id);
  EXPECT_EQ(listed.http.j["result"]["invitations"][0]["state"], "pending");
  EXPECT_EQ(listed.http.j["result"]["invitations"][0]["created_by"], "ada");
  EXPECT_EQ(listed.http.body.find(secret.substr(8)), std::string::npos) << "a listing shows the invitation's secret";
  EXPECT_EQ(As(otto, "default", "invitation_revoke", {{"id", inv_id}}),
            std::make_pair(404, std::string("not_found: no org 'default'")));
  EXPECT_EQ(As(ada, "acme", "invitation_revoke", {{"id", inv_id}}).first, 200);
  EXPECT_EQ(As(newbie, "default", "invitation_accept", {{"invitation", secret}}),
            std::make_pair(403, std::string("forbidden: invitation: token revoked")));
  listed = CurlTcp("POST", "/api/v1/tools/invitation_list", "{}", {"X-Isb-Org: acme"}, otto);
  EXPECT_EQ(listed.http.j["result"]["invitations"][0]["state"], "revoked") << listed.Describe();
  // A live one joins newbie to acme, whatever org the call named, and acme's admins see that row in acme's log.
  invited = CurlTcp("POST", "/api/v1/tools/invitation_create", R"({"role":"viewer"})",
                    {"Content-Type: application/json", "X-Isb-Org: acme"}, ada);
  ASSERT_EQ(invited.http.status, 200) << invited.Describe();
  CurlResult joined = CurlTcp("POST", "/api/v1/tools/invitation_accept",
                              json{{"invitation", invited.http.j["result"]["invitation"]}}.dump(),
                              {"Content-Type: application/json"}, newbie);
  ASSERT_EQ(joined.http.status, 200) << joined.Describe();
  EXPECT_EQ(joined.http.j["result"], json({{"org", "acme"}, {"user", "newbie"}, {"role", "viewer"}}));
  CurlResult acme_rows = CurlTcp("POST", "/api/v1/tools/audit_list", R"({"action":"invitation_accept"})",
                                 {"Content-Type: application/json", "X-Isb-Org: acme"}, ada);
  ASSERT_EQ(acme_rows.http.status, 200) << acme_rows.Describe();
  ASSERT_EQ(acme_rows.http.j["result"]["records"].size(), 1u) << acme_rows.Describe();
  EXPECT_EQ(acme_rows.http.j["result"]["records"][0]["outcome"], "ok");

  EXPECT_EQ(As(otto, "acme", "user_revoke", {{"name", "ada"}}),
            std::make_pair(403, std::string("forbidden: user_revoke needs a platform admin")));
  EXPECT_EQ(As(ada, "acme", "whoami").first, 200);
  MustTool("user_revoke", {{"name", "ada"}});
  CurlResult gone = CurlTcp("POST", "/api/v1/tools/whoami", "{}", {"X-Isb-Org: acme"}, ada);
  EXPECT_EQ(gone.http.status, 401) << gone.Describe();
  EXPECT_EQ(gone.http.j["message"], "token revoked") << gone.Describe();

  // The same through the CLI on the socket, in acme (--org).
  auto in_acme = [](ExpectedRow row) {
    row.org = "acme";
    return row;
  };
  ProcResult updated_cli = Isb({"org", "update", "--org", "acme", "--description", ""});
  EXPECT_EQ(updated_cli.exit_status, 0) << updated_cli.Describe();
  EXPECT_EQ(updated_cli.out, "acme: Acme Inc.\n");
  ExpectAudit("isb org update", {in_acme(Unix("org_update"))});
  ProcResult orgs = Isb({"org", "ls"});
  EXPECT_TRUE(std::regex_search(orgs.out, std::regex(R"((^|\n)acme +Acme Inc\.\n)"))) << orgs.Describe();
  ProcResult minted = Isb({"invitation", "create", "--org", "acme", "viewer"});
  EXPECT_EQ(minted.exit_status, 0) << minted.Describe();
  EXPECT_TRUE(std::regex_match(minted.out, std::regex("isb_inv_[A-Za-z0-9_-]{43}\n"))) << "not an invitation";
  ExpectAudit("isb invitation create", {in_acme(Unix("invitation_create"))});
  // --org before the command counts as much as after it.
  ProcResult invitations = Isb({"--org", "acme", "invitation", "ls"});
  EXPECT_EQ(invitations.exit_status, 0) << invitations.Describe();
  std::smatch pending;
  ASSERT_TRUE(std::regex_search(invitations.out, pending, std::regex(R"(\n(\d+) +viewer +pending\n)")))
      << invitations.out;
  EXPECT_NE(invitations.out.find(" member   ada                      revoked\n"), std::string::npos) << invitations.out;
  ProcResult revoked_cli = Isb({"--org", "acme", "invitation", "revoke", pending[1].str()});
  EXPECT_EQ(revoked_cli.exit_status, 0) << revoked_cli.Describe();
  EXPECT_EQ(revoked_cli.out, "revoked " + pending[1].str() + "\n");
  ProcResult again = Isb({"invitation", "revoke", "--org", "acme", std::to_string(inv_id + 100)});
  EXPECT_EQ(again.exit_status, 1) << again.Describe();
  EXPECT_EQ(again.err, "isb: invitation " + std::to_string(inv_id + 100) + " not found\n");
  ExpectAudit("isb invitation revoke",
              {in_acme(Unix("invitation_revoke")), in_acme(Unix("invitation_revoke", "not_found"))});

  ProcResult revoked = Isb({"user", "revoke", "otto"});
  ExpectAudit("isb user revoke otto", {Unix("user_revoke")});
  EXPECT_EQ(revoked.exit_status, 0) << revoked.err;
  EXPECT_EQ(revoked.out, "revoked otto\n");
  ProcResult users = Isb({"user", "ls"});
  EXPECT_EQ(users.exit_status, 0) << users.err;
  EXPECT_TRUE(std::regex_search(users.out, std::regex(R"((^|\n)\d+ +otto +revoked\n)"))) << users.out;
  EXPECT_TRUE(std::regex_search(users.out, std::regex(R"((^|\n)\d+ +newbie +active\n)"))) << users.out;
  EXPECT_EQ(As(otto, "acme", "whoami").first, 401);
  ProcResult missing = Isb({"user", "revoke", "nobody"});
  EXPECT_EQ(missing.exit_status, 1) << missing.err;
  EXPECT_EQ(missing.err, "isb: user nobody not found\n");
  ExpectAudit("isb user revoke nobody", {Unix("user_revoke", "not_found")});
}

TEST_F(IdentityTest, TokensForgedRevokedAndOnlyHashedAtRest) {
  // A well-formed token nobody minted, and a malformed one: 401 with the reason.
  std::string forged = "isb_tok_" + std::string(43, 'A');
  CurlResult f = CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}", {}, forged);
  EXPECT_EQ(f.http.status, 401) << f.Describe();
  EXPECT_EQ(f.http.j["message"], "unknown token") << f.Describe();
  CurlResult m = CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}", {}, "isb_tok_short");
  EXPECT_EQ(m.http.j["message"], "malformed token") << m.Describe();

  json minted = MustTool("token_create", {{"name", "temp"}, {"user", "e2e"}});
  std::string temp = minted.value("token", "");
  int64_t temp_id = minted["record"]["id"];
  EXPECT_EQ(As(temp, "default", "whoami").first, 200);
  MustTool("token_revoke", {{"id", temp_id}});
  CurlResult revoked = CurlTcp("POST", "/api/v1/tools/whoami", "{}", {}, temp);
  EXPECT_EQ(revoked.http.status, 401) << revoked.Describe();
  EXPECT_EQ(revoked.http.j["message"], "token revoked") << revoked.Describe();

  // The database keeps each token's SHA-256 only: neither token nor its body is in any state file.
  ASSERT_EQ(StopDaemon(), 0);
  std::string files;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir())) {
    if (entry.is_regular_file()) files += ReadFileOrEmpty(entry.path());
  }
  for (const std::string& secret : {token(), temp}) {
    EXPECT_EQ(files.find(secret), std::string::npos) << "a token is in the state dir";
    EXPECT_EQ(files.find(secret.substr(8)), std::string::npos) << "a token's body is in the state dir";
  }
}

TEST_F(IdentityTest, SessionCookiesNeedTheCsrfHeaderAndABadBearerIsNeverRescued) {
  MustTool("user_create", {{"name", "sam"}, {"password", "correct horse battery"}});
  MustTool("member_add", {{"user", "sam"}, {"role", "member"}});
  CurlResult bad = CurlTcp("POST", "/api/v1/auth/signin", R"({"user":"sam","password":"wrong password!!"})",
                           {"Content-Type: application/json", "X-Isb-Csrf: 1"}, "");
  EXPECT_EQ(bad.http.status, 401) << bad.Describe();
  EXPECT_EQ(bad.http.j["message"], "invalid credentials") << bad.Describe();
  CurlResult in = CurlTcp("POST", "/api/v1/auth/signin", R"({"user":"sam","password":"correct horse battery"})",
                          {"Content-Type: application/json", "X-Isb-Csrf: 1"}, "");
  ASSERT_EQ(in.http.status, 200) << in.Describe();
  std::smatch cookie;
  std::string raw = in.proc.out;
  ASSERT_TRUE(std::regex_search(raw, cookie,
                                std::regex("isb_session=(isb_sess_[A-Za-z0-9_-]+); Path=/; HttpOnly; "
                                           "SameSite=Strict")))
      << RedactSecrets(raw);
  std::string c = "Cookie: isb_session=" + cookie[1].str();
  // Reading needs only the cookie; changing something needs the CSRF header and JSON.
  EXPECT_EQ(
      CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}", {c, "Content-Type: application/json"}, "").http.j["message"],
      "a session request that changes something needs X-Isb-Csrf: 1");
  EXPECT_EQ(CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}", {c, "X-Isb-Csrf: 1", "Content-Type: text/plain"}, "")
                .http.j["message"],
            "a session request that changes something needs Content-Type: application/json");
  EXPECT_EQ(CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}",
                    {c, "X-Isb-Csrf: 1", "Content-Type: application/json", "Origin: http://evil.example"}, "")
                .http.j["message"],
            "Origin 'http://evil.example' is not this daemon's");
  // A page on another name that resolves to this host (DNS rebinding) sends that name as Host, and its Origin to
  // match: refused, for a session request and for signing in.
  const std::string rebound =
      "Host 'evil.example:8092' is not this daemon's (a name a tunnel or proxy gives it is "
      "allowed with isb serve --allow-host)";
  EXPECT_EQ(CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}",
                    {c, "X-Isb-Csrf: 1", "Content-Type: application/json", "Host: evil.example:8092",
                     "Origin: http://evil.example:8092"},
                    "")
                .http.j["message"],
            rebound);
  EXPECT_EQ(CurlTcp("POST", "/api/v1/auth/signin", R"({"user":"sam","password":"correct horse battery"})",
                    {"Content-Type: application/json", "X-Isb-Csrf: 1", "Host: evil.example:8092"}, "")
                .http.j["message"],
            rebound);
  // The names it listens by pass, in any case and with any port, an IPv6 literal in brackets too.
  for (const char* name : {"Host: LocalHost:1", "Host: [::1]:8092"}) {
    EXPECT_EQ(
        CurlTcp("POST", "/api/v1/tools/whoami", "{}", {c, "X-Isb-Csrf: 1", "Content-Type: application/json", name}, "")
            .http.status,
        200)
        << name;
  }
  CurlResult ok =
      CurlTcp("POST", "/api/v1/tools/whoami", "{}", {c, "X-Isb-Csrf: 1", "Content-Type: application/json"}, "");
  EXPECT_EQ(ok.http.status, 200) << ok.Describe();
  EXPECT_EQ(ok.http.j["result"]["subject"], "session:sam") << ok.Describe();
  // A bad bearer token is 401 even with a good cookie beside it.
  CurlResult both = CurlTcp("POST", "/api/v1/tools/whoami", "{}",
                            {c, "X-Isb-Csrf: 1", "Content-Type: application/json"}, "isb_tok_" + std::string(43, 'B'));
  EXPECT_EQ(both.http.status, 401) << both.Describe();
}

TEST_F(IdentityTest, RemoteSpecAndToolPolicies) {
  ASSERT_EQ(StopDaemon(), 0);
  std::string root = temp_dir() + "/images";
  std::filesystem::create_directories(root + "/ok/etc");
  std::filesystem::create_symlink("/etc", root + "/escape");
  // Another org's own root: not this caller's (the default org's).
  const std::string others = temp_dir() + "/others";
  std::filesystem::create_directories(others);
  StartDaemon({"--bind-root", root, "--bind-root", "other=" + others, "--deny-tools", "sandbox_egress_set,org_*"});
  EXPECT_EQ(As(token(), "default", "sandbox_create", {{"image", others}}),
            std::make_pair(403, "forbidden: image '" + others + "' is outside every --bind-root"));
  // A remote caller's image must lie under a --bind-root, symlinks followed; the host's is not held to it.
  EXPECT_EQ(As(token(), "default", "sandbox_create", {{"image", "/etc"}}),
            std::make_pair(403, std::string("forbidden: image '/etc' is outside every --bind-root")));
  EXPECT_EQ(
      As(token(), "default", "sandbox_create", {{"image", root + "/escape"}}),
      std::make_pair(403, "forbidden: image '" + root + "/escape' resolves to '/etc', outside every --bind-root"));
  // So must each mount's source; one under the root is bound where asked, writable when asked.
  auto mount = [](const std::string& source) { return json{{"mounts", {{{"source", source}, {"target", "/mnt/x"}}}}}; };
  EXPECT_EQ(As(token(), "default", "sandbox_create", mount("/etc")),
            std::make_pair(403, std::string("forbidden: mounts[0].source '/etc' is outside every --bind-root")));
  EXPECT_EQ(As(token(), "default", "sandbox_create", mount(root + "/escape/")),
            std::make_pair(403, "forbidden: mounts[0].source '" + root +
                                    "/escape/' resolves to '/etc', outside "
                                    "every --bind-root"));
  std::filesystem::permissions(root + "/ok", std::filesystem::perms::all);
  json rw = mount(root + "/ok");
  rw["mounts"][0]["read_only"] = false;
  CurlResult bound =
      CurlTcp("POST", "/api/v1/tools/sandbox_create", rw.dump(), {"Content-Type: application/json"}, token());
  ASSERT_EQ(bound.http.status, 200) << bound.Describe();
  Track(bound.http.j["result"]["id"]);
  json wrote = MustTool("sandbox_exec", {{"sandbox", bound.http.j["result"]["id"]},
                                         {"argv", {"sh", "-c", "ls /mnt/x && echo hi > /mnt/x/from-sandbox"}}});
  EXPECT_EQ(wrote["exit_code"], 0) << wrote.dump();
  EXPECT_EQ(wrote["stdout"], "etc\n") << wrote.dump();
  EXPECT_TRUE(std::filesystem::exists(root + "/ok/from-sandbox"));
  // A port published on anything but loopback needs --publish-address.
  EXPECT_EQ(As(token(), "default", "sandbox_create",
               {{"ports", {{{"sandbox_port", 80}, {"host_port", 28080}, {"host_address", "0.0.0.0"}}}}}),
            std::make_pair(403, std::string("forbidden: ports[0]: publishing on 0.0.0.0 needs --publish-address "
                                            "0.0.0.0")));
  EXPECT_EQ(As(token(), "default", "sandbox_create", {{"labels", {{"isb.org", "acme"}}}}),
            std::make_pair(403, std::string("forbidden: label 'isb.org': labels starting with isb. are reserved")));
  // A denied tool is absent from the list and refused as unknown; the host still has it.
  CurlResult tools = CurlTcp("GET", "/api/v1/tools", "", {}, token());
  for (const json& t : tools.http.j["tools"]) {
    EXPECT_NE(t["name"], "sandbox_egress_set");
    EXPECT_FALSE(t["name"].get<std::string>().starts_with("org_")) << t["name"];
  }
  EXPECT_EQ(As(token(), "default", "org_list"), std::make_pair(404, std::string("not_found: unknown tool 'org_list'")));
  EXPECT_EQ(Tool("org_list", json::object()).status, 200);
  // So is a superadmin token's over HTTP: it has no remote-spec policy, but sees only the tools the listener offers.
  ProcResult minted = Isb({"token", "create", "--superadmin", "sa"});
  ASSERT_EQ(minted.exit_status, 0) << minted.Describe();
  const std::string sa = minted.out.substr(0, minted.out.find('\n'));
  ASSERT_TRUE(sa.starts_with("isb_sa_")) << minted.Describe();
  ExpectAudit("isb token create --superadmin", {Unix("token_create")});
  EXPECT_EQ(As(sa, "default", "org_list"), std::make_pair(404, std::string("not_found: unknown tool 'org_list'")));
  tools = CurlTcp("GET", "/api/v1/tools", "", {}, sa);
  ASSERT_EQ(tools.http.status, 200) << tools.Describe();
  for (const json& t : tools.http.j["tools"]) EXPECT_NE(t["name"], "sandbox_egress_set");
}

TEST_F(IdentityTest, AnOrgsQuotaRefusesCreatesBeyondIt) {
  json set = MustTool("org_quota_set", {{"instances", 1}, {"cpus", 4}});
  EXPECT_EQ(set["quota"],
            json({{"cpus", 4.0}, {"memory", nullptr}, {"instances", 1}, {"disk", nullptr}, {"pids", nullptr}}))
      << set.dump();
  // Only a platform admin sets quotas; the org's owner cannot raise its own.
  EXPECT_EQ(As(token(), "default", "org_quota_set", {{"instances", 100}}),
            std::make_pair(403, std::string("forbidden: org_quota_set needs a platform admin")));
  CurlResult first = CurlTcp("POST", "/api/v1/tools/sandbox_create", R"({"cpus":1})", {});
  ASSERT_EQ(first.http.status, 200) << first.Describe();
  Track(first.http.j["result"]["id"]);
  EXPECT_EQ(As(token(), "default", "sandbox_create", {{"cpus", 1}}),
            std::make_pair(403, std::string("forbidden: quota: org 'default' may have 1 sandboxes and has 1")));
  EXPECT_EQ(MustTool("org_get", json::object())["quota"]["instances"], 1);
  // Processes: the sum of the org's sandboxes' pids limits (the first has the default 64).
  MustTool("org_quota_set", {{"pids", 100}});
  EXPECT_EQ(As(token(), "default", "sandbox_create", {{"pids", 65536}}),
            std::make_pair(403, std::string("forbidden: quota: org 'default' may be allocated 100 pids; it has 64 and "
                                            "this sandbox asks for 65536")));
}

// Names are unique per org: acme may call a sandbox what default calls one, and each org's calls by that name reach
// its own, on every tool. The spec's ${NAME}s come from the vars sent, never from the daemon's environment.
TEST_F(IdentityTest, EachOrgHasItsOwnNamesAndSpecsTakeOnlyTheirVars) {
  MustTool("org_create", {{"name", "acme"}});
  const std::map<std::string, std::string> tokens = {{"default", UserToken("alice", "default", "member")},
                                                     {"acme", UserToken("eve", "acme", "member")}};
  EXPECT_EQ(As(tokens.at("default"), "default", "sandbox_create", {{"environment", {{"H", "${HOME}"}}}}),
            std::make_pair(400, std::string("invalid_argument: environment.H: ${HOME} is not among the vars sent")));
  std::map<std::string, std::string> ids;
  for (const auto& [org, token] : tokens) {
    CurlResult made = CurlTcp(
        "POST", "/api/v1/tools/sandbox_create",
        json({{"name", "box"}, {"environment", {{"ORG", "${O}"}, {"COST", "$$5"}}}, {"vars", {{"O", org}}}}).dump(),
        {"Content-Type: application/json", "X-Isb-Org: " + org}, token);
    ASSERT_EQ(made.http.status, 200) << made.Describe();
    ids[org] = made.http.j["result"]["id"];
    Track(ids[org]);
  }
  ASSERT_NE(ids["default"], ids["acme"]);
  for (const auto& [org, token] : tokens) {
    EXPECT_EQ(As(token, org, "sandbox_create", {{"name", "box"}}),
              std::make_pair(409, std::string("conflict: name: 'box' is in use")));
    auto call = [&, &org = org, &token = token](const std::string& tool, json in) {
      in["sandbox"] = "box";
      CurlResult r = CurlTcp("POST", "/api/v1/tools/" + tool, in.dump(),
                             {"Content-Type: application/json", "X-Isb-Org: " + org}, token);
      EXPECT_EQ(r.http.status, 200) << tool << " in " << org << ": " << r.Describe();
      return r.http.j["result"];
    };
    EXPECT_EQ(call("sandbox_get", json::object())["id"], ids[org]);
    EXPECT_EQ(call("sandbox_exec", {{"argv", {"sh", "-c", "echo $ORG $COST"}}})["stdout"], org + " $5\n");
    call("sandbox_file_write", {{"path", "/root/who"}, {"content", org}});
    EXPECT_EQ(call("sandbox_file_read", {{"path", "/root/who"}, {"encoding", "utf-8"}})["content"], org);
    EXPECT_EQ(call("sandbox_stop", json::object())["id"], ids[org]);
    EXPECT_EQ(call("sandbox_start", json::object())["id"], ids[org]);
    EXPECT_EQ(call("sandbox_extend", {{"by", 60}})["id"], ids[org]);
    EXPECT_EQ(As(token, org, "sandbox_egress_set", {{"sandbox", "box"}, {"egress", "none"}}).first, 400);
  }
  // Removing default's "box" by name leaves acme's.
  EXPECT_EQ(As(tokens.at("default"), "default", "sandbox_remove", {{"sandbox", "box"}}).first, 200);
  EXPECT_EQ(As(tokens.at("default"), "default", "sandbox_get", {{"sandbox", "box"}}),
            std::make_pair(404, std::string("not_found: no sandbox 'box'")));
  EXPECT_EQ(As(tokens.at("acme"), "acme", "sandbox_get", {{"sandbox", "box"}}).first, 200);
  EXPECT_EQ(As(tokens.at("acme"), "acme", "sandbox_remove", {{"sandbox", "box"}}).first, 200);
}

// Behind a proxy that gives isb a name of its own (--allow-host), the session cookie is Secure: a browser sends it over
// HTTPS only, so not to a plain-HTTP port a sandbox publishes on the address that name leads to.
TEST_F(IdentityTest, BehindAProxyTheSessionCookieIsSecure) {
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon({"--allow-host", "isb.example.test"});
  MustTool("user_create", {{"name", "sam"}, {"password", "correct horse battery"}});
  CurlResult in = CurlTcp("POST", "/api/v1/auth/signin", R"({"user":"sam","password":"correct horse battery"})",
                          {"Content-Type: application/json", "X-Isb-Csrf: 1", "Host: isb.example.test"}, "");
  ASSERT_EQ(in.http.status, 200) << in.Describe();
  EXPECT_TRUE(std::regex_search(in.proc.out, std::regex("isb_session=isb_sess_[A-Za-z0-9_-]+; Path=/; HttpOnly; "
                                                        "SameSite=Strict; Max-Age=[0-9]+; Secure\r?\n")))
      << RedactSecrets(in.proc.out);
}

// Sign-in is limited per account and per client address (5 and 20 failures by default; 2 and 4 here, through the
// serve flags, to keep the test short), each answered 429 with a Retry-After of whole seconds; during a lockout even
// the right password is refused.
TEST_F(IdentityTest, SignInIsRateLimitedPerAccountAndPerAddress) {
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon({"--sign-in-account-limit", "2", "--sign-in-address-limit", "4"});
  MustTool("user_create", {{"name", "sam"}, {"password", "correct horse battery"}});
  MustTool("user_create", {{"name", "kim"}, {"password", "another good phrase"}});
  auto sign_in = [&](const std::string& user, const std::string& password) {
    HttpResponse r =
        Http(tcp_endpoint(), "POST", "/api/v1/auth/signin", json({{"user", user}, {"password", password}}).dump(),
             {"Content-Type: application/json", "X-Isb-Csrf: 1"});
    // Each attempt is an audit row, the refused ones too.
    ExpectedRow row = ByToken("rest", "sign_in", r.status == 200 ? "ok" : r.j.value("error", "?"));
    row.actor_kind = "user";
    ExpectAudit("sign-in as " + user, {row});
    return r;
  };
  auto expect_limited = [](const HttpResponse& r, const std::string& what) {
    EXPECT_EQ(r.status, 429) << what << ": " << r.Describe();
    EXPECT_EQ(r.j.value("error", ""), "rate_limited") << r.Describe();
    const std::string wait = r.Header("retry-after");
    ASSERT_TRUE(!wait.empty() && wait.find_first_not_of("0123456789") == std::string::npos) << r.Describe();
    EXPECT_GE(std::stoll(wait), 1) << r.Describe();
    EXPECT_LE(std::stoll(wait), 900) << r.Describe();
    EXPECT_EQ(r.j.value("message", ""), "too many failed sign-ins; try again in " + wait + " s") << r.Describe();
  };
  for (int i = 0; i < 2; ++i) EXPECT_EQ(sign_in("sam", "wrong password " + std::to_string(i)).status, 401) << i;
  expect_limited(sign_in("sam", "wrong password 2"), "sam's 3rd try");
  expect_limited(sign_in("sam", "correct horse battery"), "sam's right password during the lockout");
  // Another account from the same address is still let in: the failures so far are sam's, not yet the address's.
  EXPECT_EQ(sign_in("kim", "another good phrase").status, 200);
  // 4 failures from one address, over accounts that exist or not, lock the address for every account.
  for (int i = 0; i < 2; ++i) EXPECT_EQ(sign_in("nobody" + std::to_string(i), "whatever it is").status, 401) << i;
  expect_limited(sign_in("kim", "another good phrase"), "kim's right password from a locked address");
  expect_limited(sign_in("someone-new", "x"), "a new account from a locked address");
}

}  // namespace
}  // namespace isb::e2e
