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
    auto code = id_->oauth().IssueCode({.client_id = client_.id,
                                        .redirect_uri = kRedirect,
                                        .challenge = PkceS256(kVerifier),
                                        .user_id = alice_,
                                        .org = "acme",
                                        .role = Role::kMember,
                                        .resource = kResource});
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

TEST_F(OAuthGrantsTest, AMetadataDocumentsClientIsKeptUpdatedInPlaceAndARefreshKeepsTheApprovedName) {
  const std::string url = "https://app.example/oauth/client.json";
  auto doc = id_->oauth().PutDocumentClient(url, "Doc App", {kRedirect}, 1000);
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(doc->document_expires_at, 1000);
  client_ = *doc;
  IssuedTokens first = Redeemed(Code());
  EXPECT_EQ(id_->Resolve(first.access_token)->credential_name, "oauth Doc App");
  // The document changes its name: the row is updated, its grant stays, and a refresh keeps the approved name.
  auto changed = id_->oauth().PutDocumentClient(url, "Harmless Tool", {kRedirect}, 2000);
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(id_->oauth().Client(url)->name, "Harmless Tool");
  EXPECT_EQ(id_->oauth().Client(url)->document_expires_at, 2000);
  auto r = id_->oauth().Refresh(first.refresh_token, url, "");
  ASSERT_TRUE(r.ok() && std::holds_alternative<IssuedTokens>(*r));
  EXPECT_EQ(id_->Resolve(std::get<IssuedTokens>(*r).access_token)->credential_name, "oauth Doc App");
}

TEST_F(OAuthGrantsTest, RevokingTheAccessTokenEndsTheGrant) {
  IssuedTokens t = Redeemed(Code());
  ASSERT_TRUE(id_->tokens().Revoke(As(alice_), t.access_token_id).ok());
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(t.refresh_token, client_.id, "")).description,
            "refresh_token: an access token of this grant was revoked, and with it the grant");
}

TEST_F(OAuthGrantsTest, ARefreshEndsTheAccessTokenItReplacesAndRevokingAnOlderOneEndsTheGrant) {
  IssuedTokens first = Redeemed(Code());
  auto r = id_->oauth().Refresh(first.refresh_token, client_.id, "");
  ASSERT_TRUE(r.ok() && std::holds_alternative<IssuedTokens>(*r));
  IssuedTokens second = std::get<IssuedTokens>(*r);
  EXPECT_EQ(id_->Resolve(first.access_token).error().message, "token expired");
  ASSERT_TRUE(id_->Resolve(second.access_token).ok());
  // The person revokes the older token (the one they saw in the list; token_revoke ends its grant too): the newer
  // token stops at once, before any refresh.
  ASSERT_TRUE(id_->tokens().Revoke(As(alice_), first.access_token_id).ok());
  ASSERT_TRUE(id_->oauth().RevokeGrantOf(first.access_token_id).ok());
  EXPECT_EQ(id_->Resolve(second.access_token).error().message, "token revoked");
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(second.refresh_token, client_.id, "")).description,
            "refresh_token: revoked; authorize again");
  // Revoked by itself alone (as an older isb did), the next refresh still ends the grant.
  IssuedTokens other = Redeemed(Code());
  ASSERT_TRUE(id_->tokens().Revoke(As(alice_), other.access_token_id).ok());
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(other.refresh_token, client_.id, "")).description,
            "refresh_token: an access token of this grant was revoked, and with it the grant");
}

TEST_F(OAuthGrantsTest, AGrantEndsNinetyDaysAfterTheConsentHoweverOftenItIsRefreshed) {
  const int64_t start = now_;
  IssuedTokens t = Redeemed(Code());
  for (int64_t day : {29, 58, 87}) {
    now_ = start + day * 86400;
    auto r = id_->oauth().Refresh(t.refresh_token, client_.id, "");
    ASSERT_TRUE(r.ok() && std::holds_alternative<IssuedTokens>(*r)) << day;
    t = std::get<IssuedTokens>(*r);
  }
  now_ = start + kOAuthGrantTtl - 1;  // the last refresh token was cut to the grant's end
  auto last = id_->oauth().Refresh(t.refresh_token, client_.id, "");
  ASSERT_TRUE(last.ok() && std::holds_alternative<IssuedTokens>(*last));
  // So is the last access token: it lives one second, not an hour.
  const IssuedTokens& final_tokens = std::get<IssuedTokens>(*last);
  EXPECT_EQ(final_tokens.expires_in, 1);
  ASSERT_TRUE(id_->Resolve(final_tokens.access_token).ok());
  now_ = start + kOAuthGrantTtl;
  EXPECT_EQ(id_->Resolve(final_tokens.access_token).error().message, "token expired");
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(final_tokens.refresh_token, client_.id, "")).description,
            "refresh_token: expired; authorize again");
}

TEST_F(OAuthGrantsTest, AVerifierOutsideTheUnreservedCharactersIsRefusedEvenIfItHashesToTheChallenge) {
  const std::string verifier = "a verifier with spaces and plus+signs, of 43 or more characters";
  auto code = id_->oauth().IssueCode({.client_id = client_.id,
                                      .redirect_uri = kRedirect,
                                      .challenge = PkceS256(verifier),
                                      .user_id = alice_,
                                      .org = "acme",
                                      .role = Role::kMember,
                                      .resource = kResource});
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(RefusalOf(id_->oauth().Redeem(*code, client_.id, kRedirect, verifier, "")).description,
            "code_verifier: does not match the code_challenge (S256)");
  EXPECT_TRUE(IsPkceVerifier(kVerifier));
  EXPECT_TRUE(IsPkceVerifier(std::string(128, '~')));
  EXPECT_FALSE(IsPkceVerifier(std::string(129, 'a')));
  EXPECT_FALSE(IsPkceVerifier(std::string(42, 'a')));
}

TEST_F(OAuthGrantsTest, AChangedPasswordEndsEveryGrantAndCodeOfTheUser) {
  IssuedTokens t = Redeemed(Code());
  const std::string pending = Code();
  ASSERT_TRUE(id_->users().SetPassword(alice_, kPassword).ok());
  EXPECT_EQ(id_->Resolve(t.access_token).error().message, "token revoked");
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(t.refresh_token, client_.id, "")).description,
            "refresh_token: revoked; authorize again");
  EXPECT_EQ(RefusalOf(id_->oauth().Redeem(pending, client_.id, kRedirect, kVerifier, "")).description,
            "code: already used; the tokens it gave are revoked");
  // Another user's grant is untouched.
  const int64_t bob = NewUser("bob", "acme", Role::kMember);
  auto code = id_->oauth().IssueCode({.client_id = client_.id,
                                      .redirect_uri = kRedirect,
                                      .challenge = PkceS256(kVerifier),
                                      .user_id = bob,
                                      .org = "acme",
                                      .role = Role::kMember,
                                      .resource = kResource});
  ASSERT_TRUE(code.ok());
  IssuedTokens bobs = Redeemed(*code);
  ASSERT_TRUE(id_->users().SetPassword(alice_, kOtherPassword).ok());
  EXPECT_TRUE(id_->Resolve(bobs.access_token).ok());
}

TEST_F(OAuthGrantsTest, ACodeSpentOnAFailedIssueStaysSpentAndLeavesNoToken) {
  auto code = id_->oauth().IssueCode({.client_id = client_.id,
                                      .redirect_uri = kRedirect,
                                      .challenge = PkceS256(kVerifier),
                                      .user_id = alice_,
                                      .org = "acme",
                                      .role = Role::kOwner,
                                      .resource = kResource});
  ASSERT_TRUE(code.ok());
  ASSERT_FALSE(id_->oauth().Redeem(*code, client_.id, kRedirect, kVerifier, "").ok());
  EXPECT_EQ(RefusalOf(id_->oauth().Redeem(*code, client_.id, kRedirect, kVerifier, "")).description,
            "code: already used; the tokens it gave are revoked");
  auto tokens = db_->Query("SELECT count(*) FROM tokens");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(store::AsInt((*tokens)[0][0]), 0);
}

TEST_F(OAuthGrantsTest, AClientRevokesItsGrantWithEitherTokenAndNoOtherToken) {
  IssuedTokens by_refresh = Redeemed(Code());
  auto r = id_->oauth().RevokeToken(by_refresh.refresh_token, client_.id);
  ASSERT_TRUE(r.ok() && *r);
  EXPECT_EQ(id_->Resolve(by_refresh.access_token).error().message, "token revoked");
  IssuedTokens by_access = Redeemed(Code());
  auto other = id_->oauth().Register("Other", {kRedirect});
  ASSERT_TRUE(other.ok());
  EXPECT_ERROR(id_->oauth().RevokeToken(by_access.access_token, other->id), Code::kForbidden,
               "token: issued to another client_id");
  ASSERT_TRUE(id_->Resolve(by_access.access_token).ok());
  r = id_->oauth().RevokeToken(by_access.access_token, client_.id);
  ASSERT_TRUE(r.ok() && *r);
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(by_access.refresh_token, client_.id, "")).description,
            "refresh_token: revoked; authorize again");
  // An API token alice made herself is no OAuth client's to revoke: unknown here, and untouched.
  auto own = id_->tokens().Create(As(alice_), {.name = "ci", .org = "acme"});
  ASSERT_TRUE(own.ok()) << own.error().message;
  r = id_->oauth().RevokeToken(own->secret, client_.id);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_TRUE(id_->Resolve(own->secret).ok());
  r = id_->oauth().RevokeToken("not a token", client_.id);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  // A grant's token presented again once the grant is over: nothing more to revoke.
  r = id_->oauth().RevokeToken(by_refresh.refresh_token, client_.id);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
}

TEST_F(OAuthGrantsTest, AGrantIsRefreshedAtMostSixtyTimesAnHourAndTheRefusedTokenStaysGood) {
  IssuedTokens t = Redeemed(Code());
  for (int i = 0; i < kMaxRefreshesPerHour; ++i) {
    auto r = id_->oauth().Refresh(t.refresh_token, client_.id, "");
    ASSERT_TRUE(r.ok() && std::holds_alternative<IssuedTokens>(*r)) << i;
    t = std::get<IssuedTokens>(*r);
  }
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(t.refresh_token, client_.id, "")).description,
            "refresh_token: this grant was refreshed 60 times in the last hour; refresh again when the access token "
            "you have expires");
  ASSERT_TRUE(id_->Resolve(t.access_token).ok());
  now_ += 3600;
  auto later = id_->oauth().Refresh(t.refresh_token, client_.id, "");
  EXPECT_TRUE(later.ok() && std::holds_alternative<IssuedTokens>(*later));
}

TEST_F(OAuthGrantsTest, AGrantWhosePersonLeftTheOrgEndsAtItsNextRefreshAndDoesNotComeBack) {
  IssuedTokens t = Redeemed(Code());
  ASSERT_TRUE(id_->orgs().RemoveMember(Principal::Host(), "acme", alice_).ok());
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(t.refresh_token, client_.id, "")).description,
            "refresh_token: org acme not found; the grant is revoked");
  ASSERT_TRUE(id_->orgs().AddMember(Principal::Host(), "acme", alice_, Role::kAdmin).ok());
  EXPECT_EQ(RefusalOf(id_->oauth().Refresh(t.refresh_token, client_.id, "")).description,
            "refresh_token: revoked; authorize again");
}

TEST_F(OAuthGrantsTest, ACodeIsIssuedOnlyWhileTheSessionItWasApprovedInIsLive) {
  auto session = id_->sessions().Create(alice_, "127.0.0.1", "test");
  ASSERT_TRUE(session.ok());
  CodeGrant grant{.client_id = client_.id,
                  .redirect_uri = kRedirect,
                  .challenge = PkceS256(kVerifier),
                  .user_id = alice_,
                  .org = "acme",
                  .role = Role::kMember,
                  .resource = kResource,
                  .session_id = session->record.id};
  ASSERT_TRUE(id_->oauth().IssueCode(grant).ok());
  ASSERT_TRUE(id_->users().SetPassword(alice_, kPassword).ok());  // ends the session
  EXPECT_ERROR(id_->oauth().IssueCode(grant), Code::kUnauthenticated, "session: ended; sign in to isb again");
  auto codes = db_->Query("SELECT count(*) FROM oauth_codes WHERE used_at IS NULL");
  ASSERT_TRUE(codes.ok());
  EXPECT_EQ(store::AsInt((*codes)[0][0]), 0);
}

TEST_F(OAuthGrantsTest, TheSweepRemovesWhatCanNeverBeUsedAgainAndKeepsLiveGrants) {
  auto unused = id_->oauth().Register("never used", {kRedirect});
  ASSERT_TRUE(unused.ok());
  IssuedTokens live = Redeemed(Code());
  (void)Code();  // never exchanged
  auto swept = id_->oauth().Sweep();
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 0);  // nothing has expired yet
  now_ += kUnusedClientTtl;
  swept = id_->oauth().Sweep();
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 2);  // the unexchanged code, the client never used
  EXPECT_EQ(id_->oauth().Client(unused->id).error().code, Code::kNotFound);
  ASSERT_TRUE(id_->oauth().Client(client_.id).ok());
  auto r = id_->oauth().Refresh(live.refresh_token, client_.id, "");
  ASSERT_TRUE(r.ok() && std::holds_alternative<IssuedTokens>(*r));
  // The grant's refresh tokens expire unused: they, their code and then (a grant's life later) the client go.
  now_ += kOAuthRefreshTtl;
  swept = id_->oauth().Sweep();
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 5);  // two refresh tokens (one rotated, one expired), their access tokens and their code
  ASSERT_TRUE(id_->oauth().Client(client_.id).ok());
  now_ += kOAuthGrantTtl;
  swept = id_->oauth().Sweep();
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 1);
  EXPECT_EQ(id_->oauth().Client(client_.id).error().code, Code::kNotFound);
}

TEST_F(OAuthGrantsTest, AGrantAboveTheUsersRoleMintsNoToken) {
  auto code = id_->oauth().IssueCode({.client_id = client_.id,
                                      .redirect_uri = kRedirect,
                                      .challenge = PkceS256(kVerifier),
                                      .user_id = alice_,
                                      .org = "acme",
                                      .role = Role::kOwner,
                                      .resource = kResource});
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
