#include "identity/sessions.h"

#include "identity/identity_fixture.h"

namespace isb::identity {
namespace {

using SessionsTest = IdentityTest;

TEST_F(SessionsTest, CreateResolveListRevoke) {
  int64_t alice = NewUser("alice", "default", Role::kMember);
  auto s = id_->sessions().Create(alice, "192.0.2.7", std::string(300, 'u'), 3600);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->secret.starts_with("isb_sess_"));
  EXPECT_EQ(s->record.expires_at, now_ + 3600);
  EXPECT_EQ(s->record.user_agent.size(), 256u);
  auto p = id_->Resolve(s->secret);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->kind, PrincipalKind::kSession);
  EXPECT_EQ(p->user_id, alice);
  EXPECT_EQ(p->credential_id, s->record.id);
  EXPECT_EQ(p->RoleIn("default"), Role::kMember);
  EXPECT_EQ(p->Subject(), "session:alice");

  auto list = id_->sessions().List(alice);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].ip, "192.0.2.7");

  int64_t bob = NewUser("bob");
  EXPECT_ERROR(id_->sessions().Revoke(As(bob), s->record.id), Code::kNotFound,
               "session " + std::to_string(s->record.id) + " not found");
  ASSERT_TRUE(id_->sessions().Revoke(*p, s->record.id).ok());
  EXPECT_ERROR(id_->Resolve(s->secret), Code::kUnauthenticated, "token revoked");
  EXPECT_TRUE(id_->sessions().List(alice)->empty());
}

TEST_F(SessionsTest, AnOrgScopedTokenCannotEndTheUsersSessions) {
  int64_t alice = NewUser("alice", "default", Role::kAdmin);
  auto s = id_->sessions().Create(alice, "", "");
  ASSERT_TRUE(s.ok());
  auto t = id_->tokens().Create(As(alice), {.name = "ci", .org = "default"});
  ASSERT_TRUE(t.ok());
  auto scoped = id_->Resolve(t->secret);
  ASSERT_TRUE(scoped.ok());
  EXPECT_ERROR(id_->sessions().Revoke(*scoped, s->record.id), Code::kNotFound,
               "session " + std::to_string(s->record.id) + " not found");
  EXPECT_TRUE(id_->Resolve(s->secret).ok());
}

TEST_F(SessionsTest, ExpiresAtItsTime) {
  int64_t alice = NewUser("alice");
  auto s = id_->sessions().Create(alice, "", "");
  ASSERT_TRUE(s.ok());
  now_ += kSessionTtl - 1;
  EXPECT_TRUE(id_->Resolve(s->secret).ok());
  now_ += 1;
  EXPECT_ERROR(id_->Resolve(s->secret), Code::kUnauthenticated, "token expired");
  EXPECT_TRUE(id_->sessions().List(alice)->empty());
}

TEST_F(SessionsTest, RefusedForDisabledOrMissingUsersAndForgedSecrets) {
  int64_t alice = NewUser("alice");
  auto s = id_->sessions().Create(alice, "", "");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(id_->users().SetDisabled(alice, true).ok());
  EXPECT_ERROR(id_->Resolve(s->secret), Code::kUnauthenticated, "user disabled");
  EXPECT_ERROR(id_->sessions().Create(alice, "", ""), Code::kUnauthenticated, "user disabled");
  EXPECT_ERROR(id_->sessions().Create(999, "", ""), Code::kUnauthenticated, "user disabled");
  EXPECT_ERROR(id_->sessions().Create(alice, "", "", 0), Code::kInvalidArgument, "session lifetime must be positive");
  auto forged = NewSecret(SecretKind::kSession);
  ASSERT_TRUE(forged.ok());
  EXPECT_ERROR(id_->Resolve(*forged), Code::kUnauthenticated, "unknown token");
}

}  // namespace
}  // namespace isb::identity
