#include "identity/users.h"

#include "identity/identity_fixture.h"

namespace isb::identity {
namespace {

using UsersTest = IdentityTest;

TEST_F(UsersTest, CreateGetFindList) {
  auto id = id_->users().Create("alice", "", false);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto u = id_->users().Get(*id);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->name, "alice");
  EXPECT_FALSE(u->platform_admin);
  EXPECT_FALSE(u->disabled);
  EXPECT_FALSE(u->has_password);
  EXPECT_EQ(u->created_at, now_);
  EXPECT_EQ(id_->users().Find("alice")->id, *id);
  NewUser("bob");
  auto all = id_->users().List();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].name, "bob");
}

TEST_F(UsersTest, ErrorsAreExact) {
  NewUser("alice");
  EXPECT_ERROR(id_->users().Create("alice", ""), Code::kConflict, "user alice already exists");
  EXPECT_ERROR(id_->users().Create("Alice", ""), Code::kInvalidArgument,
               "user name: 1 to 64 characters of a-z, 0-9 and '._@-', starting with a letter or digit");
  EXPECT_ERROR(id_->users().Create("", ""), Code::kInvalidArgument,
               "user name: 1 to 64 characters of a-z, 0-9 and '._@-', starting with a letter or digit");
  EXPECT_ERROR(id_->users().Create("-x", ""), Code::kInvalidArgument,
               "user name: 1 to 64 characters of a-z, 0-9 and '._@-', starting with a letter or digit");
  EXPECT_ERROR(id_->users().Create("carol", "short"), Code::kInvalidArgument,
               "password: at least 12 characters are needed");
  EXPECT_ERROR(id_->users().Get(99), Code::kNotFound, "user 99 not found");
  EXPECT_ERROR(id_->users().Find("zed"), Code::kNotFound, "user zed not found");
  EXPECT_ERROR(id_->users().SetDisabled(99, true), Code::kNotFound, "user 99 not found");
  EXPECT_ERROR(id_->users().SetPlatformAdmin(99, true), Code::kNotFound, "user 99 not found");
  EXPECT_ERROR(id_->users().SetPassword(99, kPassword), Code::kNotFound, "user 99 not found");
}

TEST_F(UsersTest, SignInSucceedsOnlyWithTheRightPasswordOfAnEnabledUser) {
  auto id = id_->users().Create("alice", kPassword);
  ASSERT_TRUE(id.ok()) << id.error().message;
  NewUser("nopass");
  auto p = id_->users().SignIn("alice", kPassword);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->kind, PrincipalKind::kUser);
  EXPECT_EQ(p->user_id, *id);
  EXPECT_EQ(p->user_name, "alice");
  EXPECT_EQ(p->Subject(), "user:alice");
  // Every failure says the same.
  EXPECT_ERROR(id_->users().SignIn("alice", kOtherPassword), Code::kUnauthenticated, "invalid credentials");
  EXPECT_ERROR(id_->users().SignIn("nobody", kPassword), Code::kUnauthenticated, "invalid credentials");
  EXPECT_ERROR(id_->users().SignIn("nopass", ""), Code::kUnauthenticated, "invalid credentials");
  EXPECT_ERROR(id_->users().SignIn("alice", ""), Code::kUnauthenticated, "invalid credentials");
  ASSERT_TRUE(id_->users().SetDisabled(*id, true).ok());
  EXPECT_ERROR(id_->users().SignIn("alice", kPassword), Code::kUnauthenticated, "invalid credentials");
  ASSERT_TRUE(id_->users().SetDisabled(*id, false).ok());
  EXPECT_TRUE(id_->users().SignIn("alice", kPassword).ok());
}

TEST_F(UsersTest, SetPasswordReplacesTheOldOneAndEndsSessions) {
  auto id = id_->users().Create("alice", kPassword);
  ASSERT_TRUE(id.ok());
  auto s = id_->sessions().Create(*id, "127.0.0.1", "test");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(id_->users().SetPassword(*id, kOtherPassword).ok());
  EXPECT_ERROR(id_->users().SignIn("alice", kPassword), Code::kUnauthenticated, "invalid credentials");
  EXPECT_TRUE(id_->users().SignIn("alice", kOtherPassword).ok());
  EXPECT_ERROR(id_->Resolve(s->secret), Code::kUnauthenticated, "token revoked");
  EXPECT_ERROR(id_->users().SetPassword(*id, "tiny"), Code::kInvalidArgument,
               "password: at least 12 characters are needed");
}

// A revoked account cannot sign in, and its sessions and tokens are revoked, so enabling it again revives none of
// them; the last platform admin stays.
TEST_F(UsersTest, RevokeEndsTheAccountAndEveryCredentialOfIt) {
  auto alice = id_->users().Create("alice", kPassword, true);
  ASSERT_TRUE(alice.ok()) << alice.error().message;
  int64_t bob = NewUser("bob", "default", Role::kOwner);
  auto session = id_->sessions().Create(bob, "127.0.0.1", "test");
  TokenSpec spec;
  spec.name = "ci";
  spec.org = "default";
  auto token = id_->tokens().Create(As(bob), spec);
  ASSERT_TRUE(session.ok() && token.ok());
  ASSERT_TRUE(id_->Resolve(token->secret).ok());

  ASSERT_TRUE(id_->users().Revoke(bob).ok());
  EXPECT_TRUE(id_->users().Get(bob)->disabled);
  EXPECT_ERROR(id_->Resolve(token->secret), Code::kUnauthenticated, "token revoked");
  EXPECT_ERROR(id_->Resolve(session->secret), Code::kUnauthenticated, "token revoked");
  EXPECT_TRUE(id_->users().Revoke(bob).ok());  // again: still revoked
  ASSERT_TRUE(id_->users().SetDisabled(bob, false).ok());
  EXPECT_ERROR(id_->Resolve(token->secret), Code::kUnauthenticated, "token revoked");
  EXPECT_ERROR(id_->Resolve(session->secret), Code::kUnauthenticated, "token revoked");
  auto members = id_->orgs().Members("default");
  ASSERT_TRUE(members.ok());
  ASSERT_EQ(members->size(), 1u);  // the membership stays, for the record
  EXPECT_EQ((*members)[0].user_name, "bob");

  EXPECT_ERROR(id_->users().Revoke(*alice), Code::kConflict,
               "user alice is the last platform admin; make another one first");
  EXPECT_TRUE(id_->users().SignIn("alice", kPassword).ok());
  ASSERT_TRUE(id_->users().SetPlatformAdmin(bob, true).ok());
  EXPECT_TRUE(id_->users().Revoke(*alice).ok());
  EXPECT_ERROR(id_->users().SignIn("alice", kPassword), Code::kUnauthenticated, "invalid credentials");
  EXPECT_ERROR(id_->users().Revoke(bob), Code::kConflict,
               "user bob is the last platform admin; make another one first");
  EXPECT_ERROR(id_->users().Revoke(99), Code::kNotFound, "user 99 not found");
}

TEST_F(UsersTest, PrincipalCarriesMembershipsAndPlatformAdmin) {
  NewOrg("acme");
  int64_t alice = NewUser("alice", "acme", Role::kAdmin);
  Principal p = As(alice);
  EXPECT_EQ(p.RoleIn("acme"), Role::kAdmin);
  EXPECT_EQ(p.RoleIn("default"), std::nullopt);
  EXPECT_FALSE(p.IsPlatformAdmin());
  ASSERT_TRUE(id_->users().SetPlatformAdmin(alice, true).ok());
  p = As(alice);
  EXPECT_EQ(p.RoleIn("default"), Role::kOwner);
  EXPECT_TRUE(p.IsPlatformAdmin());
  EXPECT_TRUE(*id_->users().AnyPlatformAdmin());
  ASSERT_TRUE(id_->users().SetDisabled(alice, true).ok());
  EXPECT_FALSE(*id_->users().AnyPlatformAdmin());
  EXPECT_ERROR(id_->users().PrincipalOf(alice, PrincipalKind::kToken, "user disabled"), Code::kUnauthenticated,
               "user disabled");
}

}  // namespace
}  // namespace isb::identity
