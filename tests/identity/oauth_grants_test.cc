#include "identity/oauth_grants.h"

#include "identity/identity_fixture.h"
#include "identity/tokens.h"

namespace isb::identity {
namespace {

constexpr char kVerifier[] = "a-verifier-of-forty-three-characters-or-more-0123";
constexpr char kRedirect[] = "http://127.0.0.1:9/callback";
constexpr char kResource[] = "http://127.0.0.1:8092/mcp";

class OAuthGrantsTest : public IdentityTest {
 protected:
  void SetUp() override {
    IdentityTest::SetUp();
    NewOrg("acme");
    alice_ = NewUser("alice", "acme", Role::kAdmin);
    auto c = id_->oauth().Register("Claude", {kRedirect});
    ASSERT_TRUE(c.ok()) << c.error().message;
    client_ = *c;
  }
  std::string Code() {
    auto code = id_->oauth().IssueCode({.client_id = client_.id, .redirect_uri = kRedirect,
                                        .challenge = PkceS256(kVerifier), .user_id = alice_, .org = "acme",
                                        .role = Role::kMember, .resource = kResource});
    EXPECT_TRUE(code.ok()) << code.error().message;
    return code.ok() ? *code : "";
  }
  IssuedTokens Redeemed(const std::string& code) {
    auto r = id_->oauth().Redeem(code, client_.id, kRedirect, kVerifier, kResource);
    EXPECT_TRUE(r.ok() && std::holds_alternative<IssuedTokens>(*r));
    return r.ok() && std::holds_alternative<IssuedTokens>(*r) ? std::get<IssuedTokens>(*r) : IssuedTokens{};
  }
  GrantRefusal RefusalOf(const Result<GrantResult<IssuedTokens>>& r) {
    EXPECT_TRUE(r.ok() && std::holds_alternative<GrantRefusal>(*r));
    return r.ok() && std::holds_alternative<GrantRefusal>(*r) ? std::get<GrantRefusal>(*r) : GrantRefusal{};
  }
  int64_t alice_ = 0;
  OAuthClient client_;
};

TEST_F(OAuthGrantsTest, ACodeGivesAnAccessTokenBoundToTheOrgTheRoleAndTheResource) {
  EXPECT_TRUE(client_.id.starts_with("isb_client_"));
  IssuedTokens t = Redeemed(Code());
  EXPECT_TRUE(t.access_token.starts_with("isb_tok_"));
  EXPECT_TRUE(t.refresh_token.starts_with("isb_rt_"));
  EXPECT_EQ(t.expires_in, kOAuthAccessTtl);
  auto p = id_->Resolve(t.access_token);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->org_scope, "acme");
  EXPECT_EQ(p->RoleIn("acme"), Role::kMember);
  EXPECT_EQ(p->resource, kResource);
  EXPECT_EQ(p->credential_name, "oauth Claude");
  EXPECT_EQ(p->credential_id, t.access_token_id);
}

TEST_F(OAuthGrantsTest, AWrongVerifierIsRefusedAndSpendsTheCode) {
  std::string code = Code();
  GrantRefusal r = RefusalOf(id_->oauth().Redeem(code, client_.id, kRedirect, std::string(kVerifier) + "x", ""));
  EXPECT_EQ(r.error, "invalid_grant");
  EXPECT_EQ(r.description, "code_verifier: does not match the code_challenge (S256)");
  r = RefusalOf(id_->oauth().Redeem(code, client_.id, kRedirect, kVerifier, ""));
  EXPECT_EQ(r.description, "code: already used; the tokens it gave are revoked");
}

TEST_F(OAuthGrantsTest, AReplayedCodeIsRefusedAndRevokesTheTokensItGave) {
  std::string code = Code();
  IssuedTokens t = Redeemed(code);
  GrantRefusal r = RefusalOf(id_->oauth().Redeem(code, client_.id, kRedirect, kVerifier, ""));
  EXPECT_EQ(r.error, "invalid_grant");
  EXPECT_EQ(r.description, "code: already used; the tokens it gave are revoked");
  EXPECT_EQ(id_->Resolve(t.access_token).error().message, "token revoked");
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(t.refresh_token, client_.id, "")).description,
            "refresh_token: revoked; authorize again");
}

TEST_F(OAuthGrantsTest, ARedirectUriOtherThanTheRequestsIsRefused) {
  GrantRefusal r = RefusalOf(id_->oauth().Redeem(Code(), client_.id, "http://127.0.0.1:9/other", kVerifier, ""));
  EXPECT_EQ(r.error, "invalid_grant");
  EXPECT_EQ(r.description, "redirect_uri: not the one the authorization request sent");
}

TEST_F(OAuthGrantsTest, AnotherClientOrAnotherResourceIsRefused) {
  auto other = id_->oauth().Register("Other", {kRedirect});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(RefusalOf(id_->oauth().Redeem(Code(), other->id, kRedirect, kVerifier, "")).description,
            "code: issued to another client_id");
  GrantRefusal r = RefusalOf(id_->oauth().Redeem(Code(), client_.id, kRedirect, kVerifier, "https://x.test/mcp"));
  EXPECT_EQ(r.error, "invalid_target");
  EXPECT_EQ(r.description, std::string("resource: the code was approved for ") + kResource);
}

TEST_F(OAuthGrantsTest, ACodeExpiresAfterSixtySeconds) {
  std::string code = Code();
  now_ += kAuthCodeTtl;
  EXPECT_EQ(RefusalOf(id_->oauth().Redeem(code, client_.id, kRedirect, kVerifier, "")).description,
            "code: expired; authorize again");
}

TEST_F(OAuthGrantsTest, ARefreshTokenRotatesAndItsReuseRevokesTheFamily) {
  IssuedTokens first = Redeemed(Code());
  auto r = id_->oauth().Refresh(first.refresh_token, client_.id, kResource);
  ASSERT_TRUE(r.ok() && std::holds_alternative<IssuedTokens>(*r));
  IssuedTokens second = std::get<IssuedTokens>(*r);
  EXPECT_NE(second.refresh_token, first.refresh_token);
  ASSERT_TRUE(id_->Resolve(second.access_token).ok());
  GrantRefusal reused = RefusalOf(id_->oauth().Refresh(first.refresh_token, client_.id, ""));
  EXPECT_EQ(reused.error, "invalid_grant");
  EXPECT_EQ(reused.description, "refresh_token: already used; every token of this grant is revoked");
  EXPECT_EQ(id_->Resolve(first.access_token).error().message, "token revoked");
  EXPECT_EQ(id_->Resolve(second.access_token).error().message, "token revoked");
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(second.refresh_token, client_.id, "")).description,
            "refresh_token: revoked; authorize again");
}

TEST_F(OAuthGrantsTest, RevokingTheAccessTokenEndsTheGrant) {
  IssuedTokens t = Redeemed(Code());
  ASSERT_TRUE(id_->tokens().Revoke(As(alice_), t.access_token_id).ok());
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(t.refresh_token, client_.id, "")).description,
            "refresh_token: its access token was revoked, and with it the grant");
}

TEST_F(OAuthGrantsTest, AGrantAboveTheUsersRoleMintsNoToken) {
  auto code = id_->oauth().IssueCode({.client_id = client_.id, .redirect_uri = kRedirect,
                                      .challenge = PkceS256(kVerifier), .user_id = alice_, .org = "acme",
                                      .role = Role::kOwner, .resource = kResource});
  ASSERT_TRUE(code.ok());
  auto r = id_->oauth().Redeem(*code, client_.id, kRedirect, kVerifier, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "role_cap owner is above the role admin in org acme");
}

TEST_F(OAuthGrantsTest, TheTokenEndpointAloneBindsAResource) {
  auto t = id_->tokens().Create(As(alice_), {.name = "x", .resource = kResource});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "resource: only the OAuth token endpoint binds a token to a resource");
}

}  // namespace
}  // namespace isb::identity
