// The role matrix: every tool the daemon registers, called by each role, platform admins, superadmins and scoped
// tokens, judged by Registry::Admit. The expected access of each tool is written out below from the security
// model (viewers read, members act in the org, admins manage members, invitations, tokens and the audit log, owners
// change the org, platform tools are for platform admins), not read from the tools, so a tool whose access changes
// fails here.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "api/all_tools.h"
#include "api/fake_sandboxes.h"
#include "api/principals.h"
#include "audit/audit_fixture.h"
#include "audit/history.h"
#include "e2e/all_tools.h"
#include "identity/store.h"
#include "image/image_service.h"
#include "image/image_store.h"
#include "secrets/age_identity.h"
#include "secrets/secret_store.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
using identity::Role;
using identity::ScopeKind;

// Who may call a tool: the least role in the call's org, the scope kind that covers it, whether it acts in the
// call's org (else it is about the caller itself), whether only platform admins may call it, and whether it acts
// beyond any one org (refused to a credential scoped to one).
struct Expected {
  Role least;
  ScopeKind kind;
  bool org_bound;
  bool platform;
  bool account_wide;
};

constexpr Expected kRead{Role::kViewer, ScopeKind::kRead, true, false, false};
constexpr Expected kAct{Role::kMember, ScopeKind::kDeploy, true, false, false};
constexpr Expected kManage{Role::kAdmin, ScopeKind::kAdmin, true, false, false};
constexpr Expected kOwn{Role::kOwner, ScopeKind::kAdmin, true, false, false};
constexpr Expected kSelfRead{Role::kViewer, ScopeKind::kRead, false, false, false};
// A change about the caller itself: any user may, but not a credential capped at viewer (viewers only read).
constexpr Expected kSelfAdmin{Role::kMember, ScopeKind::kAdmin, false, false, false};
// About the caller's account beyond any org: its browser sessions, joining another org.
constexpr Expected kAccountRead{Role::kViewer, ScopeKind::kRead, false, false, true};
constexpr Expected kAccountDeploy{Role::kMember, ScopeKind::kDeploy, false, false, true};
constexpr Expected kAccountAdmin{Role::kMember, ScopeKind::kAdmin, false, false, true};
// A secret's value: members, and of tokens only those with the admin scope (read and deploy tokens get no value).
constexpr Expected kReadValue{Role::kMember, ScopeKind::kAdmin, true, false, false};
constexpr Expected kPlatformOrg{Role::kOwner, ScopeKind::kAdmin, true, true, false};   // about the call's org
constexpr Expected kPlatformAll{Role::kOwner, ScopeKind::kAdmin, false, true, false};  // about the platform

const std::map<std::string, Expected>& Table() {
  static const std::map<std::string, Expected> table = {
      // Sandboxes: viewers look, members act.
      {"sandbox_list", kRead},
      {"sandbox_get", kRead},
      {"sandbox_logs", kRead},
      {"sandbox_usage", kRead},
      {"sandbox_file_read", kRead},
      {"sandbox_create", kAct},
      {"sandbox_exec", kAct},
      {"sandbox_exec_input", kAct},
      {"sandbox_exec_resize", kAct},
      {"sandbox_file_write", kAct},
      {"sandbox_stop", kAct},
      {"sandbox_start", kAct},
      {"sandbox_extend", kAct},
      {"sandbox_remove", kAct},
      {"sandbox_egress_set", kAct},
      {"sandbox_port_open", kAct},
      {"sandbox_port_close", kAct},
      {"history_query", kRead},
      // The org: viewers see it and its members; admins change its members and invitations and read the audit log.
      {"org_get", kRead},
      {"member_list", kRead},  // a read-only tool with no secret material
      {"member_add", kManage},
      {"member_update", kManage},
      {"member_remove", kManage},
      {"invitation_create", kManage},
      {"invitation_list", kManage},
      {"invitation_revoke", kManage},
      {"audit_list", kManage},
      // Owners change the org itself.
      {"org_update", kOwn},
      // About the caller itself, in no org.
      {"whoami", kSelfRead},
      {"org_list", kSelfRead},
      {"token_list", kSelfRead},
      {"session_list", kAccountRead},
      {"invitation_accept", kAccountDeploy},
      {"token_create", kSelfAdmin},
      {"token_revoke", kSelfAdmin},
      {"session_revoke", kAccountAdmin},
      // Platform admins only.
      {"org_quota_set", kPlatformOrg},
      {"org_create", kPlatformAll},
      {"org_delete", kPlatformAll},
      {"user_create", kPlatformAll},
      {"user_list", kPlatformAll},
      {"user_revoke", kPlatformAll},
      {"audit_verify", kPlatformAll},
      // Secrets: viewers see names and hosts, members read values, admins change them.
      {"secret_list", kRead},
      {"secret_inspect", kRead},
      {"secret_recipient", kRead},
      {"secret_get", kReadValue},
      {"secret_create", kManage},
      {"secret_set", kManage},
      {"secret_import", kManage},
      {"secret_delete", kManage},
      {"secret_reencrypt", kPlatformAll},
      // Images: viewers see them, members pull, remove and snapshot; import and export name host files.
      {"image_list", kRead},
      {"image_inspect", kRead},
      {"image_pull", kAct},
      {"image_remove", kAct},
      {"sandbox_snapshot", kAct},
      {"image_import", kPlatformOrg},
      {"image_export", kPlatformOrg},
  };
  return table;
}

// A valid input for each tool that needs one (what Admit's schema check asks for; the handler never runs).
json InputFor(const std::string& tool) {
  static const std::map<std::string, json> inputs = {
      {"sandbox_get", {{"sandbox", "sb-1"}}},
      {"sandbox_logs", {{"sandbox", "sb-1"}}},
      {"sandbox_usage", {{"sandbox", "sb-1"}}},
      {"sandbox_file_read", {{"sandbox", "sb-1"}, {"path", "/etc/hostname"}}},
      {"sandbox_exec", {{"sandbox", "sb-1"}, {"argv", {"true"}}}},
      {"sandbox_exec_input", {{"sandbox", "sb-1"}, {"session", "s1"}, {"data", "x"}}},
      {"sandbox_exec_resize", {{"sandbox", "sb-1"}, {"session", "s1"}, {"rows", 24}, {"cols", 80}}},
      {"sandbox_file_write", {{"sandbox", "sb-1"}, {"path", "/tmp/f"}, {"content", "eA=="}}},
      {"sandbox_stop", {{"sandbox", "sb-1"}}},
      {"sandbox_start", {{"sandbox", "sb-1"}}},
      {"sandbox_extend", {{"sandbox", "sb-1"}, {"by", 60}}},
      {"sandbox_remove", {{"sandbox", "sb-1"}}},
      {"sandbox_egress_set", {{"sandbox", "sb-1"}, {"egress", "none"}}},
      {"sandbox_port_open", {{"sandbox", "sb-1"}, {"port", 8080}}},
      {"sandbox_port_close", {{"sandbox", "sb-1"}, {"port", 8080}}},
      {"secret_get", {{"name", "K"}}},
      {"secret_inspect", {{"name", "K"}}},
      {"secret_create", {{"name", "K"}, {"value", "v"}}},
      {"secret_set", {{"name", "K"}, {"value", "v"}}},
      {"secret_import", {{"name", "K"}, {"age_file_base64", "eA=="}}},
      {"secret_delete", {{"name", "K"}}},
      {"image_pull", {{"ref", "busybox:1"}}},
      {"image_inspect", {{"image", "busybox:1"}}},
      {"image_remove", {{"image", "busybox:1"}}},
      {"image_import", {{"path", "/srv/a.tar"}}},
      {"image_export", {{"image", "busybox:1"}, {"path", "/srv/a.tar"}}},
      {"sandbox_snapshot", {{"sandbox", "sb-1"}, {"name", "snap:1"}}},
      {"member_add", {{"user", "u"}, {"role", "member"}}},
      {"member_update", {{"user", "u"}, {"role", "member"}}},
      {"member_remove", {{"user", "u"}}},
      {"invitation_create", {{"role", "member"}}},
      {"invitation_accept", {{"invitation", "isb_inv_x"}}},
      {"invitation_revoke", {{"id", 1}}},
      {"org_update", {{"display_name", "Acme"}}},
      {"user_revoke", {{"name", "u"}}},
      {"token_create", {{"name", "t"}}},
      {"token_revoke", {{"id", 1}}},
      {"session_revoke", {{"id", 1}}},
      {"org_quota_set", {{"instances", 1}}},
      {"org_create", {{"name", "neworg"}}},
      {"org_delete", {{"name", "neworg"}}},
      {"user_create", {{"name", "newuser"}}},
  };
  auto it = inputs.find(tool);
  return it == inputs.end() ? json::object() : it->second;
}

constexpr const char* kOrg = "acme";

// One column of the matrix: a caller and the role it holds in kOrg (nullopt: it does not reach kOrg).
struct Caller {
  std::string label;
  Identity who;
};

Identity Scoped(const std::string& scope) {
  Identity who = UserIn("scoped", kOrg, Role::kOwner, 20);
  auto s = identity::ParseScope(scope);
  EXPECT_TRUE(s.ok()) << scope;
  who.scopes = {*s};
  return who;
}

std::vector<Caller> Callers() {
  std::vector<Caller> out = {{"viewer", UserIn("vera", kOrg, Role::kViewer, 2)},
                             {"member", UserIn("mia", kOrg, Role::kMember, 3)},
                             {"admin", UserIn("ada", kOrg, Role::kAdmin, 4)},
                             {"owner", UserIn("otto", kOrg, Role::kOwner, 5)},
                             {"outsider", UserIn("eve", "other", Role::kOwner, 6)}};
  Identity platform = UserIn("pat", "other", Role::kViewer, 7);
  platform.platform_admin = true;
  out.push_back({"platform admin", platform});
  out.push_back({"superadmin (host)", Identity::Host()});
  Identity sa;
  sa.kind = identity::PrincipalKind::kToken;
  sa.credential_id = 8;
  sa.superadmin = true;
  out.push_back({"superadmin token", sa});
  for (const char* scope : {"read", "deploy", "admin", "tool:sandbox_*"})
    out.push_back({std::string("owner token ") + scope, Scoped(scope)});
  // A token scoped to the org: everything in it, nothing beyond it.
  Identity org_only = UserIn("scopedorg", kOrg, Role::kOwner, 23);
  org_only.org_scope = kOrg;
  out.push_back({"owner token for the org only", org_only});
  // Role caps: on every tool, about the org or the caller itself, and on a platform admin's platform powers.
  for (Role cap : {Role::kViewer, Role::kMember, Role::kAdmin}) {
    Identity owner = UserIn("capped", kOrg, Role::kOwner, 21);
    owner.role_cap = cap;
    out.push_back({"owner token capped " + std::string(identity::RoleName(cap)), owner});
    Identity admin = UserIn("pcapped", "other", Role::kViewer, 22);
    admin.platform_admin = true;
    admin.role_cap = cap;
    out.push_back({"platform admin token capped " + std::string(identity::RoleName(cap)), admin});
  }
  return out;
}

// "ok", or "CODE: message" as the oracle below predicts it from the table.
std::string Predict(const std::string& tool, const Expected& e, const Identity& who) {
  const bool reaches_all = who.superadmin || who.platform_admin;
  const bool platform_admin =
      who.superadmin || (who.platform_admin && (!who.role_cap || *who.role_cap == Role::kOwner));
  if (e.platform && !platform_admin) return "forbidden: " + tool + " needs a platform admin";
  if (e.account_wide && !who.org_scope.empty())
    return "forbidden: a token scoped to org '" + who.org_scope + "' may not call " + tool +
           ", which acts beyond that org";
  Role role = Role::kOwner;
  if (e.org_bound) {
    if (reaches_all) {
      role = Role::kOwner;
    } else if (auto it = who.roles.find(kOrg); it != who.roles.end()) {
      role = it->second;
    } else {
      return std::string("not_found: no org '") + kOrg + "'";
    }
  }
  if (who.role_cap) role = std::min(role, *who.role_cap);
  if (role < e.least)
    return "forbidden: role " + std::string(identity::RoleName(role)) + " may not call " + tool + ", which needs " +
           std::string(identity::RoleName(e.least));
  if (who.scopes.empty()) return "ok";
  const identity::Scope& s = who.scopes[0];
  bool covered = s.kind == ScopeKind::kTool ? identity::GlobMatch(s.glob, tool)
                                            : static_cast<int>(s.kind) >= static_cast<int>(e.kind);
  if (covered) return "ok";
  std::string needs = e.kind == ScopeKind::kRead     ? "read, deploy, admin, "
                      : e.kind == ScopeKind::kDeploy ? "deploy, admin, "
                                                     : "admin, ";
  return "forbidden: token scopes (" + identity::FormatScope(s) + ") do not cover " + tool + "; it needs scope " +
         needs + "or tool:" + tool;
}

class RoleMatrixTest : public audit::testing::AuditDbTest {
 protected:
  void SetUp() override {
    AuditDbTest::SetUp();
    auto history = audit::History::Open(*db_);
    ASSERT_TRUE(history.ok()) << history.error().message;
    history_ = std::move(*history);
    auto store = identity::IdentityStore::Open(*db_, {.state_dir = dir_});
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(*store);
    auto secrets = secrets::SecretStore::Open(
        {.dir = dir_ + "/secrets", .identity = secrets::AgeIdentity::Generate(), .extra_recipients = {}});
    ASSERT_TRUE(secrets.ok()) << secrets.error().message;
    secrets_ = std::move(*secrets);
    auto images = image::ImageStore::Open(dir_ + "/images");
    ASSERT_TRUE(images.ok()) << images.error().message;
    images_ = std::move(*images);
    auto service = image::ImageService::Create(*images_, {});
    ASSERT_TRUE(service.ok()) << service.error().message;
    image_service_ = std::move(*service);
    // The tools the daemon registers (daemon/serve.cc calls the same function), with fakes for the sandboxes.
    Status wired = RegisterAllTools(registry_, {.sandboxes = sandboxes_,
                                                .previews = previews_,
                                                .identity = *store_,
                                                .audit_log = *log_,
                                                .history = *history_,
                                                .secrets = *secrets_,
                                                .images = *image_service_,
                                                .sandbox_options = {.remote = &remote_}});
    ASSERT_TRUE(wired.ok()) << wired.error().message;
  }
  void TearDown() override {
    image_service_.reset();
    images_.reset();
    secrets_.reset();
    store_.reset();
    history_.reset();
    AuditDbTest::TearDown();
  }

  std::string Admit(const std::string& tool, const Identity& who) {
    CallContext ctx;
    ctx.surface = "rest";
    ctx.identity = who;
    ctx.org = kOrg;
    auto r = registry_.Admit(tool, InputFor(tool), ctx);
    if (r.ok()) return *r == registry_.Find(tool) ? "ok" : "a different tool";
    return std::string(CodeName(r.error().code)) + ": " + r.error().message;
  }

  RemoteSpecPolicy remote_;
  FakeSandboxes sandboxes_;
  PreviewAccess previews_{PreviewAccessOptions{}};
  std::unique_ptr<audit::History> history_;
  std::unique_ptr<identity::IdentityStore> store_;
  std::unique_ptr<secrets::SecretStore> secrets_;
  std::unique_ptr<image::ImageStore> images_;
  std::unique_ptr<image::ImageService> image_service_;
  Registry registry_;
};

TEST_F(RoleMatrixTest, TheTableNamesEveryToolTheDaemonServes) {
  std::set<std::string> registered, listed(e2e::kAllTools.begin(), e2e::kAllTools.end()), tabled;
  for (const Tool* t : registry_.List()) registered.insert(t->name);
  for (const auto& [name, _] : Table()) tabled.insert(name);
  EXPECT_EQ(registered, tabled);
  EXPECT_EQ(listed, tabled);
  EXPECT_EQ(tabled.size(), 59u);
}

// RegisterAllTools registers the same tools whatever its options: a snapshot left unset refuses instead.
TEST_F(RoleMatrixTest, AnUnsetSnapshotStillRegistersSandboxSnapshotWhichRefuses) {
  CallContext ctx;
  ctx.identity = Identity::Host();
  ctx.org = kOrg;
  auto r = registry_.Call("sandbox_snapshot", InputFor("sandbox_snapshot"), ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_EQ(r.error().message, "sandbox_snapshot: no snapshots here");
}

TEST_F(RoleMatrixTest, EachToolByEachRoleAndScope) {
  for (const auto& [tool, expected] : Table()) {
    for (const Caller& c : Callers()) {
      EXPECT_EQ(Admit(tool, c.who), Predict(tool, expected, c.who)) << tool << " by " << c.label;
    }
  }
}

// A few cells spelled out, so that the oracle itself is held to the rules.
TEST_F(RoleMatrixTest, SpotChecks) {
  EXPECT_EQ(Admit("sandbox_create", UserIn("vera", kOrg, Role::kViewer)),
            "forbidden: role viewer may not call sandbox_create, which needs member");
  EXPECT_EQ(Admit("sandbox_list", UserIn("vera", kOrg, Role::kViewer)), "ok");
  EXPECT_EQ(Admit("audit_list", UserIn("mia", kOrg, Role::kMember)),
            "forbidden: role member may not call audit_list, which needs admin");
  EXPECT_EQ(Admit("audit_list", UserIn("ada", kOrg, Role::kAdmin)), "ok");
  EXPECT_EQ(Admit("org_update", UserIn("ada", kOrg, Role::kAdmin)),
            "forbidden: role admin may not call org_update, which needs owner");
  EXPECT_EQ(Admit("user_revoke", UserIn("otto", kOrg, Role::kOwner)), "forbidden: user_revoke needs a platform admin");
  EXPECT_EQ(Admit("sandbox_list", UserIn("eve", "other", Role::kOwner)), "not_found: no org 'acme'");
  EXPECT_EQ(Admit("whoami", UserIn("eve", "other", Role::kOwner)), "ok");
  EXPECT_EQ(Admit("org_create", UserIn("otto", kOrg, Role::kOwner)), "forbidden: org_create needs a platform admin");
  EXPECT_EQ(Admit("org_create", Identity::Host()), "ok");
  EXPECT_EQ(Admit("sandbox_exec", Scoped("read")),
            "forbidden: token scopes (read) do not cover sandbox_exec; it needs scope deploy, admin, or "
            "tool:sandbox_exec");
  EXPECT_EQ(Admit("sandbox_exec", Scoped("tool:sandbox_*")), "ok");
  EXPECT_EQ(Admit("member_add", Scoped("deploy")),
            "forbidden: token scopes (deploy) do not cover member_add; it needs scope admin, or tool:member_add");
  EXPECT_EQ(Admit("whoami", Scoped("tool:sandbox_*")),
            "forbidden: token scopes (tool:sandbox_*) do not cover whoami; it needs scope read, deploy, admin, or "
            "tool:whoami");
  EXPECT_EQ(Admit("no_such_tool", Identity::Host()), "not_found: unknown tool 'no_such_tool'");
}

}  // namespace
}  // namespace isb::api
