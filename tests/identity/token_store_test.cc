#include "identity/token_store.h"

#include "identity/identity_fixture.h"

namespace isb::identity {
namespace {

class TokenStoreTest : public IdentityTest {
 protected:
  void SetUp() override {
    IdentityTest::SetUp();
    NewOrg("acme");
    NewOrg("beta");
    alice_ = NewUser("alice", "acme", Role::kAdmin);
    ASSERT_TRUE(id_->orgs().AddMember(Principal::Host(), "beta", alice_, Role::kViewer).ok());
  }
  NewToken Mint(TokenSpec spec) {
    auto t = id_->tokens().Create(As(alice_), spec);
    EXPECT_TRUE(t.ok()) << t.error().message;
    return t.ok() ? *t : NewToken{};
  }
  int64_t alice_ = 0;
};

TEST_F(TokenStoreTest, PlatformWideTokenResolvesToTheUsersRoles) {
  NewToken t = Mint({.name = "laptop"});
  EXPECT_TRUE(t.secret.starts_with("isb_tok_"));
  EXPECT_EQ(t.record.name, "laptop");
  EXPECT_EQ(t.record.user_id, alice_);
  EXPECT_EQ(t.record.created_at, now_);
  auto p = id_->Resolve(t.secret);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->kind, PrincipalKind::kToken);
  EXPECT_EQ(p->user_id, alice_);
  EXPECT_EQ(p->credential_id, t.record.id);
  EXPECT_EQ(p->credential_name, "laptop");
  EXPECT_EQ(p->Subject(), "token:" + std::to_string(t.record.id));
  EXPECT_EQ(p->RoleIn("acme"), Role::kAdmin);
  EXPECT_EQ(p->RoleIn("beta"), Role::kViewer);
  EXPECT_EQ(p->RoleIn("default"), std::nullopt);
  EXPECT_TRUE(p->scopes.empty());
}

TEST_F(TokenStoreTest, OrgScopeRoleCapAndScopesNarrow) {
  NewToken t = Mint({.name = "ci",
                     .org = "acme",
                     .role_cap = Role::kMember,
                     .scopes = {{ScopeKind::kDeploy, ""}, {ScopeKind::kTool, "sandbox_*"}}});
  auto p = id_->Resolve(t.secret);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->org_scope, "acme");
  EXPECT_EQ(p->RoleIn("acme"), Role::kMember);
  EXPECT_EQ(p->RoleIn("beta"), std::nullopt);
  EXPECT_EQ(FormatScopes(p->scopes), "deploy,tool:sandbox_*");
  auto listed = id_->tokens().List(As(alice_));
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].org, "acme");
  EXPECT_EQ((*listed)[0].role_cap, Role::kMember);
  EXPECT_EQ(FormatScopes((*listed)[0].scopes), "deploy,tool:sandbox_*");
  EXPECT_EQ((*listed)[0].last_used_at, now_);  // the Resolve above
}

TEST_F(TokenStoreTest, AnOrgScopedTokenOfAPlatformAdminIsNoPlatformAdmin) {
  ASSERT_TRUE(id_->users().SetPlatformAdmin(alice_, true).ok());
  auto wide = id_->Resolve(Mint({.name = "wide"}).secret);
  ASSERT_TRUE(wide.ok());
  EXPECT_TRUE(wide->IsPlatformAdmin());
  auto scoped = id_->Resolve(Mint({.name = "scoped", .org = "beta"}).secret);
  ASSERT_TRUE(scoped.ok());
  EXPECT_FALSE(scoped->IsPlatformAdmin());
  EXPECT_EQ(scoped->RoleIn("beta"), Role::kViewer);
  // Nor does a platform admin's token reach, by org scope, an org the admin is no member of.
  EXPECT_ERROR(id_->tokens().Create(As(alice_), {.name = "x", .org = "default"}), Code::kNotFound,
               "org default not found");
}

TEST_F(TokenStoreTest, OnlyAPlatformAdminsPlatformWideTokenCarriesTheMetricsScope) {
  const std::vector<Scope> metrics = {{ScopeKind::kMetrics, ""}};
  EXPECT_ERROR(id_->tokens().Create(As(alice_), {.name = "scrape", .scopes = metrics}), Code::kForbidden,
               "scope metrics: only a platform admin's platform-wide token may carry it");
  ASSERT_TRUE(id_->users().SetPlatformAdmin(alice_, true).ok());
  EXPECT_ERROR(id_->tokens().Create(As(alice_), {.name = "scrape", .org = "acme", .scopes = metrics}), Code::kForbidden,
               "scope metrics: only a platform admin's platform-wide token may carry it");
  auto p = id_->Resolve(Mint({.name = "scrape", .scopes = metrics}).secret);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(FormatScopes(p->scopes), "metrics");
  // It covers no tool, not even a read.
  EXPECT_ERROR(May(Role::kOwner, p->scopes, Role::kViewer, ScopeKind::kRead, "sandbox_list"), Code::kForbidden,
               "token scopes (metrics) do not cover sandbox_list; it needs scope read, deploy, admin, or "
               "tool:sandbox_list");
}

TEST_F(TokenStoreTest, CreateRefusalsAreExact) {
  auto& tokens = id_->tokens();
  EXPECT_ERROR(tokens.Create(As(alice_), {.name = ""}), Code::kInvalidArgument,
               "token name: 1 to 64 printable ASCII characters");
  EXPECT_ERROR(tokens.Create(As(alice_), {.name = "x\n"}), Code::kInvalidArgument,
               "token name: 1 to 64 printable ASCII characters");
  EXPECT_ERROR(tokens.Create(As(alice_), {.name = "x", .org = "default"}), Code::kNotFound, "org default not found");
  EXPECT_ERROR(tokens.Create(As(alice_), {.name = "x", .org = "nosuch"}), Code::kNotFound, "org nosuch not found");
  EXPECT_ERROR(tokens.Create(As(alice_), {.name = "x", .org = "beta", .role_cap = Role::kMember}), Code::kForbidden,
               "role_cap member is above the role viewer in org beta");
  EXPECT_ERROR(tokens.Create(As(alice_), {.name = "x", .expires_at = now_}), Code::kInvalidArgument,
               "expires_at: " + std::to_string(now_) + " is not in the future");
  int64_t bob = NewUser("bob");
  EXPECT_ERROR(tokens.Create(As(alice_), {.name = "x", .user_id = bob}), Code::kForbidden,
               "only the host creates tokens for another user");
  EXPECT_ERROR(tokens.Create(Principal::Host(), {.name = "x"}), Code::kInvalidArgument,
               "user_id: the host names the user a token is for");
  auto for_bob = tokens.Create(Principal::Host(), {.name = "x", .user_id = bob});
  ASSERT_TRUE(for_bob.ok()) << for_bob.error().message;
  EXPECT_EQ(for_bob->record.user_id, bob);
}

TEST_F(TokenStoreTest, ATokenCannotMintAToken) {
  auto as_token = id_->Resolve(Mint({.name = "wide"}).secret);
  ASSERT_TRUE(as_token.ok());
  EXPECT_ERROR(id_->tokens().Create(*as_token, {.name = "child"}), Code::kForbidden,
               "a token cannot create a token; sign in, or use the unix socket on the host");
  auto sa = id_->tokens().CreateSuperadmin(Principal::Host(), "ops", std::nullopt);
  ASSERT_TRUE(sa.ok());
  auto as_sa = id_->Resolve(sa->secret);
  ASSERT_TRUE(as_sa.ok());
  EXPECT_ERROR(id_->tokens().Create(*as_sa, {.name = "child", .user_id = alice_}), Code::kForbidden,
               "a token cannot create a token; sign in, or use the unix socket on the host");
  EXPECT_ERROR(id_->tokens().CreateSuperadmin(*as_sa, "child", std::nullopt), Code::kForbidden,
               "superadmin tokens are minted only on the host (isb token create --superadmin)");
  EXPECT_ERROR(id_->tokens().CreateSuperadmin(As(alice_), "x", std::nullopt), Code::kForbidden,
               "superadmin tokens are minted only on the host (isb token create --superadmin)");
  // A session (signed in) may.
  auto session = id_->sessions().Create(alice_, "127.0.0.1", "ua");
  ASSERT_TRUE(session.ok());
  auto as_session = id_->Resolve(session->secret);
  ASSERT_TRUE(as_session.ok());
  EXPECT_TRUE(id_->tokens().Create(*as_session, {.name = "from-browser"}).ok());
}

TEST_F(TokenStoreTest, SuperadminTokenIsOwnerEverywhere) {
  auto sa = id_->tokens().CreateSuperadmin(Principal::Host(), "ops", std::nullopt);
  ASSERT_TRUE(sa.ok()) << sa.error().message;
  EXPECT_TRUE(sa->secret.starts_with("isb_sa_"));
  auto p = id_->Resolve(sa->secret);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->kind, PrincipalKind::kToken);
  EXPECT_TRUE(p->superadmin);
  EXPECT_EQ(p->user_id, 0);
  EXPECT_EQ(p->RoleIn("beta"), Role::kOwner);
  EXPECT_EQ(p->Subject(), "superadmin-token:" + std::to_string(sa->record.id));
}

TEST_F(TokenStoreTest, ExpiryRevocationAndForgery) {
  NewToken t = Mint({.name = "short", .expires_at = now_ + 60});
  EXPECT_TRUE(id_->Resolve(t.secret).ok());
  now_ += 59;
  EXPECT_TRUE(id_->Resolve(t.secret).ok());
  now_ += 1;
  EXPECT_ERROR(id_->Resolve(t.secret), Code::kUnauthenticated, "token expired");

  NewToken r = Mint({.name = "revoked"});
  ASSERT_TRUE(id_->tokens().Revoke(As(alice_), r.record.id).ok());
  EXPECT_ERROR(id_->Resolve(r.secret), Code::kUnauthenticated, "token revoked");
  EXPECT_TRUE(id_->tokens().Revoke(As(alice_), r.record.id).ok());  // twice is fine

  // Forged: a valid prefix and shape, never minted. And a real secret under another prefix.
  auto forged = NewSecret(SecretKind::kToken);
  ASSERT_TRUE(forged.ok());
  EXPECT_ERROR(id_->Resolve(*forged), Code::kUnauthenticated, "unknown token");
  NewToken real = Mint({.name = "real"});
  std::string body = real.secret.substr(std::string("isb_tok_").size());
  EXPECT_ERROR(id_->Resolve("isb_sa_" + body), Code::kUnauthenticated, "unknown token");
  EXPECT_ERROR(id_->Resolve("isb_sess_" + body), Code::kUnauthenticated, "unknown token");
  EXPECT_ERROR(id_->Resolve("isb_inv_" + body), Code::kUnauthenticated, "unknown token");
  EXPECT_ERROR(id_->Resolve(real.secret.substr(1)), Code::kUnauthenticated, "malformed token");
  EXPECT_ERROR(id_->Resolve(real.secret + "x"), Code::kUnauthenticated, "malformed token");
  EXPECT_ERROR(id_->Resolve(""), Code::kUnauthenticated, "malformed token");
  EXPECT_TRUE(id_->Resolve(real.secret).ok());
}

TEST_F(TokenStoreTest, ADisabledUsersTokensStopResolving) {
  NewToken t = Mint({.name = "t"});
  ASSERT_TRUE(id_->users().SetDisabled(alice_, true).ok());
  EXPECT_ERROR(id_->Resolve(t.secret), Code::kUnauthenticated, "user disabled");
}

TEST_F(TokenStoreTest, WhoMayRevoke) {
  NewToken t = Mint({.name = "acme-ci", .org = "acme"});
  int64_t bob = NewUser("bob", "acme", Role::kMember);
  int64_t carol = NewUser("carol", "acme", Role::kAdmin);
  const std::string missing = "token " + std::to_string(t.record.id) + " not found";
  EXPECT_ERROR(id_->tokens().Revoke(As(bob), t.record.id), Code::kNotFound, missing);
  EXPECT_ERROR(id_->tokens().Revoke(As(bob), 999), Code::kNotFound, "token 999 not found");
  EXPECT_TRUE(id_->tokens().Revoke(As(carol), t.record.id).ok());  // an admin of the token's org
  auto sa = id_->tokens().CreateSuperadmin(Principal::Host(), "ops", std::nullopt);
  ASSERT_TRUE(sa.ok());
  ASSERT_TRUE(id_->users().SetPlatformAdmin(carol, true).ok());
  EXPECT_ERROR(id_->tokens().Revoke(As(carol), sa->record.id), Code::kNotFound,
               "token " + std::to_string(sa->record.id) + " not found");
  EXPECT_TRUE(id_->tokens().Revoke(Principal::Host(), sa->record.id).ok());
  EXPECT_ERROR(id_->Resolve(sa->secret), Code::kUnauthenticated, "token revoked");
}

TEST_F(TokenStoreTest, AnOrgScopedTokenSeesAndRevokesOnlyItsOrgsTokens) {
  NewToken wide = Mint({.name = "wide"});
  NewToken beta = Mint({.name = "beta-ci", .org = "beta"});
  NewToken acme = Mint({.name = "acme-ci", .org = "acme"});
  NewToken acme2 = Mint({.name = "acme-deploy", .org = "acme"});
  auto scoped = id_->Resolve(acme.secret);
  ASSERT_TRUE(scoped.ok());
  auto listed = id_->tokens().List(*scoped);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].name, "acme-deploy");
  EXPECT_EQ((*listed)[1].name, "acme-ci");
  // The user's token for every org, and its token for another org, are out of reach, as if they did not exist.
  EXPECT_ERROR(id_->tokens().Revoke(*scoped, wide.record.id), Code::kNotFound,
               "token " + std::to_string(wide.record.id) + " not found");
  EXPECT_ERROR(id_->tokens().Revoke(*scoped, beta.record.id), Code::kNotFound,
               "token " + std::to_string(beta.record.id) + " not found");
  EXPECT_TRUE(id_->Resolve(wide.secret).ok());
  EXPECT_TRUE(id_->Resolve(beta.secret).ok());
  EXPECT_TRUE(id_->tokens().Revoke(*scoped, acme2.record.id).ok());
  EXPECT_ERROR(id_->Resolve(acme2.secret), Code::kUnauthenticated, "token revoked");
}

TEST_F(TokenStoreTest, APlatformAdminsTokenCappedBelowOwnerHasNoPlatformPowers) {
  ASSERT_TRUE(id_->users().SetPlatformAdmin(alice_, true).ok());
  int64_t bob = NewUser("bob", "acme", Role::kMember);
  auto bobs = id_->tokens().Create(As(bob), {.name = "bobs"});
  ASSERT_TRUE(bobs.ok());
  auto viewer = id_->Resolve(Mint({.name = "viewer", .role_cap = Role::kViewer}).secret);
  ASSERT_TRUE(viewer.ok());
  EXPECT_FALSE(viewer->IsPlatformAdmin());
  EXPECT_EQ(viewer->RoleIn("default"), Role::kViewer);  // still reaches every org, at its cap
  EXPECT_ERROR(id_->tokens().Revoke(*viewer, bobs->record.id), Code::kNotFound,
               "token " + std::to_string(bobs->record.id) + " not found");
  auto owner = id_->Resolve(Mint({.name = "owner", .role_cap = Role::kOwner}).secret);
  ASSERT_TRUE(owner.ok());
  EXPECT_TRUE(owner->IsPlatformAdmin());
  EXPECT_TRUE(id_->tokens().Revoke(*owner, bobs->record.id).ok());
}

TEST_F(TokenStoreTest, ListsAreScoped) {
  Mint({.name = "one", .org = "acme"});
  Mint({.name = "two"});
  int64_t bob = NewUser("bob", "acme", Role::kMember);
  EXPECT_EQ(id_->tokens().List(As(bob))->size(), 0u);
  EXPECT_EQ(id_->tokens().List(As(alice_))->size(), 2u);
  EXPECT_EQ((*id_->tokens().List(As(alice_)))[0].name, "two");  // newest first
  auto org = id_->tokens().ListOrg(As(alice_), "acme");
  ASSERT_TRUE(org.ok());
  ASSERT_EQ(org->size(), 1u);
  EXPECT_EQ((*org)[0].name, "one");
  EXPECT_ERROR(id_->tokens().ListOrg(As(bob), "acme"), Code::kForbidden,
               "role member may not list the tokens of org acme; it needs admin");
  EXPECT_ERROR(id_->tokens().ListOrg(As(bob), "beta"), Code::kNotFound, "org beta not found");
}

}  // namespace
}  // namespace isb::identity
