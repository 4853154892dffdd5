// Invitations and the one-time setup token.
#include <sys/stat.h>

#include <thread>
#include <vector>

#include "base/file.h"
#include "identity/identity_fixture.h"

namespace isb::identity {
namespace {

using OnboardingTest = IdentityTest;

TEST_F(OnboardingTest, SetupTokenFileIs0600AndCreatesTheFirstAdminOnce) {
  auto path = id_->setup().Prepare();
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(*path, dir_ + "/setup-token");
  struct stat st {};
  ASSERT_EQ(::stat(path->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto text = ReadFile(*path);
  ASSERT_TRUE(text.ok());
  ASSERT_FALSE(text->empty());
  std::string secret = text->substr(0, text->size() - 1);
  EXPECT_TRUE(secret.starts_with("isb_setup_"));
  // Not a bearer credential.
  EXPECT_ERROR(id_->Resolve(secret), Code::kUnauthenticated, "unknown token");

  auto forged = NewSecret(SecretKind::kSetup);
  ASSERT_TRUE(forged.ok());
  EXPECT_ERROR(id_->setup().CreateFirstAdmin(*forged, "root", kPassword), Code::kUnauthenticated, "unknown token");
  EXPECT_ERROR(id_->setup().CreateFirstAdmin("isb_setup_x", "root", kPassword), Code::kUnauthenticated,
               "malformed token");
  // Refusals that leave the token usable.
  EXPECT_ERROR(id_->setup().CreateFirstAdmin(secret, "root", "short"), Code::kInvalidArgument,
               "password: at least 12 characters are needed");
  NewUser("taken");
  EXPECT_ERROR(id_->setup().CreateFirstAdmin(secret, "taken", kPassword), Code::kConflict, "user taken already exists");

  auto admin = id_->setup().CreateFirstAdmin(secret, "root", kPassword);
  ASSERT_TRUE(admin.ok()) << admin.error().message;
  Principal p = As(*admin);
  EXPECT_TRUE(p.platform_admin);
  EXPECT_EQ(p.roles.at("default"), Role::kOwner);
  EXPECT_NE(::access(path->c_str(), F_OK), 0);  // the file is gone
  EXPECT_ERROR(id_->setup().CreateFirstAdmin(secret, "root2", kPassword), Code::kUnauthenticated, "token used");
  // Once an admin exists, start-up mints none.
  auto again = id_->setup().Prepare();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, "");
  EXPECT_NE(::access(path->c_str(), F_OK), 0);
}

// The setup token of a running daemon.
std::string PreparedSecret(IdentityStore& id) {
  auto path = id.setup().Prepare();
  if (!path.ok() || path->empty()) return "";
  auto text = ReadFile(*path);
  return text.ok() && !text->empty() ? text->substr(0, text->size() - 1) : "";
}

TEST_F(OnboardingTest, TheHostsSetupUsesTheTokenUpSoDisablingEveryAdminDoesNotReviveIt) {
  const std::string secret = PreparedSecret(*id_);
  ASSERT_FALSE(secret.empty());
  auto admin = id_->setup().CreateFirstAdminAsHost("root", "");
  ASSERT_TRUE(admin.ok()) << admin.error().message;
  EXPECT_TRUE(As(*admin).platform_admin);
  EXPECT_NE(::access(id_->setup().path().c_str(), F_OK), 0) << "the file is gone";
  ASSERT_TRUE(id_->users().SetDisabled(*admin, true).ok());
  EXPECT_ERROR(id_->setup().CreateFirstAdmin(secret, "late", kPassword), Code::kUnauthenticated, "token used");
}

TEST_F(OnboardingTest, AnAdminMadeAnotherWayUsesTheTokenUpToo) {
  const std::string secret = PreparedSecret(*id_);
  ASSERT_FALSE(secret.empty());
  auto admin = id_->setup().CreatePlatformAdmin("ops", "");
  ASSERT_TRUE(admin.ok());
  EXPECT_NE(::access(id_->setup().path().c_str(), F_OK), 0);
  ASSERT_TRUE(id_->users().SetDisabled(*admin, true).ok());
  EXPECT_ERROR(id_->setup().CreateFirstAdmin(secret, "late", kPassword), Code::kUnauthenticated, "token used");
}

TEST_F(OnboardingTest, AStartWithAnAdminUsesUpAnOldTokenLeftUnused) {
  const std::string secret = PreparedSecret(*id_);
  ASSERT_FALSE(secret.empty());
  // An admin made by a way that did not use the token up (an older isb), then the daemon starts again.
  auto admin = id_->users().Create("ops", "", true);
  ASSERT_TRUE(admin.ok());
  auto path = id_->setup().Prepare();
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(*path, "");
  ASSERT_TRUE(id_->users().SetDisabled(*admin, true).ok());
  EXPECT_ERROR(id_->setup().CreateFirstAdmin(secret, "late", kPassword), Code::kUnauthenticated, "token used");
}

TEST_F(OnboardingTest, OfConcurrentSetupsByEitherPathOneMakesAnAdmin) {
  const std::string secret = PreparedSecret(*id_);
  ASSERT_FALSE(secret.empty());
  constexpr int kEach = 4;
  std::vector<Result<int64_t>> results(2 * kEach, Error::Msg("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 2 * kEach; ++i) {
    threads.emplace_back([&, i] {
      const std::string name = "admin" + std::to_string(i);
      results[i] = i % 2 == 0 ? id_->setup().CreateFirstAdminAsHost(name, "")
                              : id_->setup().CreateFirstAdmin(secret, name, kPassword);
    });
  }
  for (auto& t : threads) t.join();
  int made = 0;
  for (const auto& r : results) {
    if (r.ok()) {
      ++made;
      continue;
    }
    EXPECT_TRUE(r.error().message == "first_admin: a platform admin exists already" ||
                r.error().message == "a platform admin exists already; ask one for an account" ||
                r.error().message == "token used")
        << r.error().message;
  }
  EXPECT_EQ(made, 1);
  auto users = id_->users().List();
  ASSERT_TRUE(users.ok());
  int admins = 0;
  for (const auto& u : *users) admins += u.platform_admin ? 1 : 0;
  EXPECT_EQ(admins, 1);
}

TEST_F(OnboardingTest, EachStartWithoutAnAdminReplacesTheSetupToken) {
  auto first = id_->setup().Prepare();
  ASSERT_TRUE(first.ok());
  std::string old_secret = ReadFile(*first)->substr(0, 53);
  ASSERT_TRUE(::chmod(first->c_str(), 0644) == 0);
  auto second = id_->setup().Prepare();
  ASSERT_TRUE(second.ok());
  struct stat st {};
  ASSERT_EQ(::stat(second->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_ERROR(id_->setup().CreateFirstAdmin(old_secret, "root", kPassword), Code::kUnauthenticated, "unknown token");
  // An admin made on the host also ends the setup token.
  ASSERT_TRUE(id_->users().Create("hostadmin", "", true).ok());
  std::string new_secret = ReadFile(*second)->substr(0, 53);
  EXPECT_ERROR(id_->setup().CreateFirstAdmin(new_secret, "root", kPassword), Code::kConflict,
               "a platform admin exists already; ask one for an account");
}

TEST_F(OnboardingTest, InvitationMakesAMemberOnce) {
  NewOrg("acme");
  int64_t admin = NewUser("admin", "acme", Role::kAdmin);
  int64_t member = NewUser("member", "acme", Role::kMember);
  int64_t newbie = NewUser("newbie");
  int64_t other = NewUser("other");
  EXPECT_ERROR(id_->invitations().Create(As(member), "acme", Role::kViewer), Code::kForbidden,
               "role member may not invite viewers to org acme; it needs admin");
  EXPECT_ERROR(id_->invitations().Create(As(admin), "acme", Role::kOwner), Code::kForbidden,
               "role admin may not invite owners to org acme; it needs owner");
  EXPECT_ERROR(id_->invitations().Create(As(admin), "beta", Role::kViewer), Code::kNotFound, "org beta not found");
  auto inv = id_->invitations().Create(As(admin), "acme", Role::kMember, 600);
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_TRUE(inv->secret.starts_with("isb_inv_"));
  EXPECT_EQ(inv->expires_at, now_ + 600);
  EXPECT_ERROR(id_->Resolve(inv->secret), Code::kUnauthenticated, "unknown token");
  EXPECT_ERROR(id_->invitations().Accept(inv->secret, member), Code::kConflict,
               "user " + std::to_string(member) + " is already a member of org acme");
  auto joined = id_->invitations().Accept(inv->secret, newbie);
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  EXPECT_EQ(joined->org, "acme");
  EXPECT_EQ(joined->member.user_name, "newbie");
  EXPECT_EQ(joined->member.role, Role::kMember);
  EXPECT_EQ(As(newbie).RoleIn("acme"), Role::kMember);
  EXPECT_ERROR(id_->invitations().Accept(inv->secret, other), Code::kUnauthenticated, "token used");

  auto late = id_->invitations().Create(As(admin), "acme", Role::kViewer, 600);
  ASSERT_TRUE(late.ok());
  now_ += 600;
  EXPECT_ERROR(id_->invitations().Accept(late->secret, other), Code::kUnauthenticated, "token expired");
  auto forged = NewSecret(SecretKind::kInvitation);
  EXPECT_ERROR(id_->invitations().Accept(*forged, other), Code::kUnauthenticated, "unknown token");
  EXPECT_ERROR(id_->invitations().Accept("isb_inv_", other), Code::kUnauthenticated, "malformed token");
  EXPECT_ERROR(id_->invitations().Accept(NewSecret(SecretKind::kToken).value(), other), Code::kUnauthenticated,
               "unknown token");
}

// Admins list their org's invitations (never a secret) and revoke pending ones; owners alone touch an owner's; an
// accepted one stays accepted; another org's is not found.
TEST_F(OnboardingTest, InvitationsAreListedAndRevoked) {
  NewOrg("acme");
  NewOrg("beta");
  int64_t owner = NewUser("owner", "acme", Role::kOwner);
  int64_t admin = NewUser("admin", "acme", Role::kAdmin);
  int64_t member = NewUser("member", "acme", Role::kMember);
  int64_t outsider = NewUser("outsider", "beta", Role::kOwner);
  int64_t newbie = NewUser("newbie");
  auto viewer_inv = id_->invitations().Create(As(admin), "acme", Role::kViewer, 600);
  auto owner_inv = id_->invitations().Create(As(owner), "acme", Role::kOwner, 600);
  auto used_inv = id_->invitations().Create(As(admin), "acme", Role::kMember, 600);
  ASSERT_TRUE(viewer_inv.ok() && owner_inv.ok() && used_inv.ok());
  ASSERT_TRUE(id_->invitations().Accept(used_inv->secret, newbie).ok());
  now_ += 10;

  EXPECT_ERROR(id_->invitations().List(As(member), "acme"), Code::kForbidden,
               "role member may not list the invitations of org acme; it needs admin");
  EXPECT_ERROR(id_->invitations().List(As(outsider), "acme"), Code::kNotFound, "org acme not found");
  auto list = id_->invitations().List(As(admin), "acme");
  ASSERT_TRUE(list.ok()) << list.error().message;
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].id, used_inv->id);
  EXPECT_EQ((*list)[0].state, "accepted");
  EXPECT_EQ((*list)[1].id, owner_inv->id);
  EXPECT_EQ((*list)[1].role, Role::kOwner);
  EXPECT_EQ((*list)[1].created_by, "owner");
  EXPECT_EQ((*list)[1].state, "pending");
  EXPECT_EQ((*list)[2].created_by, "admin");
  EXPECT_EQ((*list)[2].expires_at, now_ - 10 + 600);

  const std::string viewer_id = std::to_string(viewer_inv->id);
  EXPECT_ERROR(id_->invitations().Revoke(As(member), "acme", viewer_inv->id), Code::kForbidden,
               "role member may not revoke viewer invitations of org acme; it needs admin");
  EXPECT_ERROR(id_->invitations().Revoke(As(admin), "acme", owner_inv->id), Code::kForbidden,
               "role admin may not revoke owner invitations of org acme; it needs owner");
  EXPECT_ERROR(id_->invitations().Revoke(As(outsider), "beta", viewer_inv->id), Code::kNotFound,
               "invitation " + viewer_id + " not found");
  EXPECT_ERROR(id_->invitations().Revoke(As(outsider), "acme", viewer_inv->id), Code::kNotFound,
               "invitation " + viewer_id + " not found");
  EXPECT_ERROR(id_->invitations().Revoke(As(admin), "acme", 999), Code::kNotFound, "invitation 999 not found");
  EXPECT_ERROR(id_->invitations().Revoke(As(admin), "acme", used_inv->id), Code::kConflict,
               "invitation " + std::to_string(used_inv->id) + " was accepted; remove the member with member_remove");
  EXPECT_TRUE(id_->invitations().Revoke(As(admin), "acme", viewer_inv->id).ok());
  EXPECT_TRUE(id_->invitations().Revoke(As(admin), "acme", viewer_inv->id).ok());  // again: still revoked
  EXPECT_TRUE(id_->invitations().Revoke(As(owner), "acme", owner_inv->id).ok());

  int64_t later = NewUser("later");
  EXPECT_ERROR(id_->invitations().Accept(viewer_inv->secret, later), Code::kUnauthenticated, "token revoked");
  EXPECT_ERROR(id_->invitations().Accept(owner_inv->secret, later), Code::kUnauthenticated, "token revoked");
  EXPECT_FALSE(As(later).RoleIn("acme").has_value());
  EXPECT_EQ(As(newbie).RoleIn("acme"), Role::kMember);  // the accepted one is untouched
  list = id_->invitations().List(As(owner), "acme");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ((*list)[1].state, "revoked");
  EXPECT_EQ((*list)[2].state, "revoked");

  auto expiring = id_->invitations().Create(As(admin), "acme", Role::kViewer, 5);
  ASSERT_TRUE(expiring.ok());
  now_ += 5;
  list = id_->invitations().List(As(admin), "acme");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ((*list)[0].state, "expired");
}

}  // namespace
}  // namespace isb::identity
