#include "identity/orgs.h"

#include "identity/identity_fixture.h"

namespace isb::identity {
namespace {

using OrgsTest = IdentityTest;

TEST_F(OrgsTest, DefaultExistsAndIsUndeletable) {
  auto orgs = id_->orgs().List();
  ASSERT_TRUE(orgs.ok());
  ASSERT_EQ(orgs->size(), 1u);
  EXPECT_EQ((*orgs)[0].name, "default");
  EXPECT_ERROR(id_->orgs().Delete(Principal::Host(), "default"), Code::kForbidden, "org default cannot be deleted");
  // The database refuses it too, whatever code asks.
  auto raw = db_->Exec("DELETE FROM orgs WHERE name = 'default'");
  ASSERT_FALSE(raw.ok());
  EXPECT_EQ(raw.error().message, "sql: org default cannot be deleted");
  auto rename = db_->Exec("UPDATE orgs SET name = 'other' WHERE name = 'default'");
  ASSERT_FALSE(rename.ok());
  EXPECT_EQ(rename.error().message, "sql: org default cannot be renamed");
  EXPECT_TRUE(id_->orgs().Get("default").ok());
}

TEST_F(OrgsTest, OnlyPlatformAdminsCreateAndDelete) {
  int64_t alice = NewUser("alice", "default", Role::kOwner);
  EXPECT_ERROR(id_->orgs().Create(As(alice), "acme"), Code::kForbidden, "only platform admins create orgs");
  NewOrg("acme");
  EXPECT_ERROR(id_->orgs().Create(Principal::Host(), "acme"), Code::kConflict, "org acme already exists");
  EXPECT_ERROR(id_->orgs().Create(Principal::Host(), "Acme"), Code::kInvalidArgument,
               "org name: 1 to 63 characters of a-z, 0-9 and '-', starting with a letter or digit");
  EXPECT_ERROR(id_->orgs().Delete(As(alice), "acme"), Code::kForbidden, "only platform admins delete orgs");
  ASSERT_TRUE(id_->users().SetPlatformAdmin(alice, true).ok());
  EXPECT_TRUE(id_->orgs().Delete(As(alice), "acme").ok());
  EXPECT_ERROR(id_->orgs().Delete(As(alice), "acme"), Code::kNotFound, "org acme not found");
  EXPECT_ERROR(id_->orgs().Get("acme"), Code::kNotFound, "org acme not found");
}

TEST_F(OrgsTest, DeletingAnOrgRemovesItsMembershipsAndTokens) {
  NewOrg("acme");
  int64_t alice = NewUser("alice", "acme", Role::kOwner);
  TokenSpec spec;
  spec.name = "ci";
  spec.org = "acme";
  auto tok = id_->tokens().Create(As(alice), spec);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  ASSERT_TRUE(id_->orgs().Delete(Principal::Host(), "acme").ok());
  EXPECT_TRUE(As(alice).roles.empty());
  EXPECT_ERROR(id_->Resolve(tok->secret), Code::kUnauthenticated, "unknown token");
}

// An org's sandboxes, audit records and history name it by name, and an org reads its rows by name: an org with
// sandboxes is not deleted, and the name of one deleted stays taken while rows name it, so a new org of that name
// never reads or acts on what the old one had.
TEST_F(OrgsTest, AnOrgsNameIsNeverHandedOnWithItsRows) {
  NewOrg("acme");
  ASSERT_TRUE(db_->Exec("INSERT INTO sandboxes(id, name, spec, state, created_at, expires_at, last_active_at, org) "
                        "VALUES ('sb-1', '', '{}', 'stopped', 0, 0, 0, 'acme')")
                  .ok());
  EXPECT_ERROR(id_->orgs().Delete(Principal::Host(), "acme"), Code::kConflict,
               "org acme still has sandboxes: remove them first");
  EXPECT_TRUE(id_->orgs().Get("acme").ok());
  ASSERT_TRUE(db_->Exec("DELETE FROM sandboxes WHERE id = 'sb-1'").ok());
  EXPECT_ERROR(id_->orgs().Delete(Principal::Host(), "nosuch"), Code::kNotFound, "org nosuch not found");
  ASSERT_TRUE(id_->orgs().Delete(Principal::Host(), "acme").ok());
  // No row names it: the name is free again.
  EXPECT_TRUE(id_->orgs().Create(Principal::Host(), "acme").ok());
  ASSERT_TRUE(id_->orgs().Delete(Principal::Host(), "acme").ok());
  // Rows name it (here its history): taken.
  // (The first row of the chain: id 1 after the anchor, whose hash is all zeros.)
  const std::string zeros(64, '0');
  ASSERT_TRUE(db_->Exec("INSERT INTO sandbox_history(id, time, org, sandbox, event, actor, actor_kind, reason, "
                        "request_id, prev_hash, hash) VALUES (1, 0, 'acme', 'sb-1', 'created', 'a', 'user', '', '', '" +
                        zeros + "', '" + zeros + "')")
                  .ok());
  EXPECT_ERROR(id_->orgs().Create(Principal::Host(), "acme"), Code::kConflict,
               "org acme existed before, and its audit records and history keep the name: choose another");
  // A live org that rows name is still simply taken.
  NewOrg("beta");
  ASSERT_TRUE(db_->Exec("INSERT INTO sandbox_history(id, time, org, sandbox, event, actor, actor_kind, reason, "
                        "request_id, prev_hash, hash) VALUES (2, 0, 'beta', 'sb-2', 'created', 'a', 'user', '', '', '" +
                        zeros + "', '" + std::string(64, '1') + "')")
                  .ok());
  EXPECT_ERROR(id_->orgs().Create(Principal::Host(), "beta"), Code::kConflict, "org beta already exists");
  EXPECT_ERROR(id_->orgs().Get("acme"), Code::kNotFound, "org acme not found");
}

// Every field of a quota is kept (disk since migration 6), an absent one is no limit, and a set replaces it whole.
TEST_F(OrgsTest, QuotasKeepEveryFieldAndReplaceWhole) {
  NewOrg("acme");
  Quota q{.cpus = 4, .memory = int64_t{8} << 30, .instances = 3, .disk = int64_t{20} << 30};
  ASSERT_TRUE(id_->orgs().SetQuota(Principal::Host(), "acme", q).ok());
  auto got = id_->orgs().GetQuota("acme");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->cpus, 4.0);
  EXPECT_EQ(got->memory, int64_t{8} << 30);
  EXPECT_EQ(got->instances, 3);
  EXPECT_EQ(got->disk, int64_t{20} << 30);
  ASSERT_TRUE(id_->orgs().SetQuota(Principal::Host(), "acme", Quota{.disk = int64_t{1} << 30}).ok());
  got = id_->orgs().GetQuota("acme");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->cpus.has_value());
  EXPECT_FALSE(got->instances.has_value());
  EXPECT_EQ(got->disk, int64_t{1} << 30);
  auto zero = db_->Exec("UPDATE org_quotas SET disk = 0");
  EXPECT_FALSE(zero.ok());
}

// Owners change their org's display name and description; the name stays; others are refused or not found.
TEST_F(OrgsTest, OwnersUpdateTheDisplayNameAndDescription) {
  NewOrg("acme");
  int64_t owner = NewUser("owner", "acme", Role::kOwner);
  int64_t admin = NewUser("admin", "acme", Role::kAdmin);
  int64_t outsider = NewUser("outsider", "default", Role::kOwner);
  EXPECT_ERROR(id_->orgs().Update(As(admin), "acme", {.display_name = "Acme"}), Code::kForbidden,
               "role admin may not change org acme; it needs owner");
  EXPECT_ERROR(id_->orgs().Update(As(outsider), "acme", {.display_name = "Acme"}), Code::kNotFound,
               "org acme not found");
  EXPECT_ERROR(id_->orgs().Update(As(owner), "acme", {.description = "one\ntwo"}), Code::kInvalidArgument,
               "description: control characters are not allowed");
  EXPECT_ERROR(id_->orgs().Update(As(owner), "acme", {.display_name = "\x1b[31mred"}), Code::kInvalidArgument,
               "display_name: control characters are not allowed");
  auto got = id_->orgs().Update(As(owner), "acme", {.display_name = "Acme Café", .description = "builds"});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->name, "acme");
  EXPECT_EQ(got->display_name, "Acme Café");
  EXPECT_EQ(got->description, "builds");
  got = id_->orgs().Update(As(owner), "acme", {.description = ""});  // an absent field stays
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->display_name, "Acme Café");
  EXPECT_EQ(got->description, "");
  EXPECT_EQ(id_->orgs().Get("acme")->display_name, "Acme Café");
  EXPECT_TRUE(id_->orgs().Update(Principal::Host(), "default", {.display_name = "Default"}).ok());
  EXPECT_EQ(id_->orgs().Get("default")->display_name, "Default");
}

TEST_F(OrgsTest, ListForShowsOnlyReachableOrgs) {
  NewOrg("acme");
  NewOrg("beta");
  int64_t alice = NewUser("alice", "acme");
  auto mine = id_->orgs().ListFor(As(alice));
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ((*mine)[0].name, "acme");
  EXPECT_EQ(id_->orgs().ListFor(Principal::Host())->size(), 3u);
}

TEST_F(OrgsTest, AdminsManageMembersOwnersManageOwners) {
  NewOrg("acme");
  int64_t owner = NewUser("owner", "acme", Role::kOwner);
  int64_t admin = NewUser("admin", "acme", Role::kAdmin);
  int64_t member = NewUser("member", "acme", Role::kMember);
  int64_t newbie = NewUser("newbie");
  auto& orgs = id_->orgs();
  EXPECT_ERROR(orgs.AddMember(As(member), "acme", newbie, Role::kViewer), Code::kForbidden,
               "role member may not manage members of org acme; it needs admin");
  EXPECT_ERROR(orgs.AddMember(As(admin), "acme", newbie, Role::kOwner), Code::kForbidden,
               "role admin may not make, unmake or remove owners of org acme; it needs owner");
  ASSERT_TRUE(orgs.AddMember(As(admin), "acme", newbie, Role::kViewer).ok());
  EXPECT_ERROR(orgs.AddMember(As(admin), "acme", newbie, Role::kViewer), Code::kConflict,
               "user " + std::to_string(newbie) + " is already a member of org acme; change its role instead");
  ASSERT_TRUE(orgs.ChangeRole(As(admin), "acme", newbie, Role::kMember).ok());
  EXPECT_EQ(As(newbie).RoleIn("acme"), Role::kMember);
  EXPECT_ERROR(orgs.ChangeRole(As(admin), "acme", newbie, Role::kOwner), Code::kForbidden,
               "role admin may not make, unmake or remove owners of org acme; it needs owner");
  EXPECT_ERROR(orgs.RemoveMember(As(admin), "acme", owner), Code::kForbidden,
               "role admin may not make, unmake or remove owners of org acme; it needs owner");
  ASSERT_TRUE(orgs.RemoveMember(As(admin), "acme", newbie).ok());
  EXPECT_ERROR(orgs.RemoveMember(As(admin), "acme", newbie), Code::kNotFound,
               "user " + std::to_string(newbie) + " is not a member of org acme");
  EXPECT_ERROR(orgs.AddMember(As(admin), "acme", 999, Role::kViewer), Code::kNotFound, "user 999 not found");
  auto members = orgs.Members("acme");
  ASSERT_TRUE(members.ok());
  ASSERT_EQ(members->size(), 3u);
  EXPECT_EQ((*members)[0].user_name, "admin");
  EXPECT_EQ((*members)[0].role, Role::kAdmin);
}

TEST_F(OrgsTest, AnotherOrgIsNotFoundNotForbidden) {
  NewOrg("acme");
  NewOrg("beta");
  int64_t a = NewUser("a", "acme", Role::kOwner);
  int64_t b = NewUser("b", "beta", Role::kOwner);
  EXPECT_ERROR(id_->orgs().AddMember(As(a), "beta", a, Role::kOwner), Code::kNotFound, "org beta not found");
  EXPECT_ERROR(id_->orgs().RemoveMember(As(a), "beta", b), Code::kNotFound, "org beta not found");
  EXPECT_ERROR(id_->orgs().ChangeRole(As(a), "nosuch", b, Role::kViewer), Code::kNotFound, "org nosuch not found");
}

TEST_F(OrgsTest, TheLastOwnerStays) {
  NewOrg("acme");
  int64_t first = NewUser("first", "acme", Role::kOwner);
  int64_t second = NewUser("second", "acme", Role::kMember);
  const std::string last = "user " + std::to_string(first) +
                           " is the last owner of org acme; make another member "
                           "owner first";
  auto& orgs = id_->orgs();
  EXPECT_ERROR(orgs.RemoveMember(As(first), "acme", first), Code::kConflict, last);
  EXPECT_ERROR(orgs.ChangeRole(As(first), "acme", first, Role::kAdmin), Code::kConflict, last);
  EXPECT_ERROR(orgs.RemoveMember(Principal::Host(), "acme", first), Code::kConflict, last);
  EXPECT_TRUE(orgs.ChangeRole(As(first), "acme", first, Role::kOwner).ok());  // owner to owner is no demotion
  ASSERT_TRUE(orgs.ChangeRole(As(first), "acme", second, Role::kOwner).ok());
  ASSERT_TRUE(orgs.ChangeRole(As(first), "acme", first, Role::kAdmin).ok());
  EXPECT_ERROR(orgs.RemoveMember(As(second), "acme", second), Code::kConflict,
               "user " + std::to_string(second) + " is the last owner of org acme; make another member owner first");
  ASSERT_TRUE(orgs.RemoveMember(As(second), "acme", first).ok());
}

}  // namespace
}  // namespace isb::identity
