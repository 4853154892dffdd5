// What the database file holds: hashes of secrets and passwords, never the secrets or passwords themselves.
#include <filesystem>

#include "base/file.h"
#include "identity/identity_fixture.h"

namespace isb::identity {
namespace {

using AtRestTest = IdentityTest;

// Every byte SQLite wrote for the database: the main file, its WAL and shared memory.
std::string RawBytes(const std::string& dir) {
  std::string all;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("isb.db", 0) != 0) continue;
    auto bytes = ReadFile(e.path().string());
    EXPECT_TRUE(bytes.ok()) << e.path();
    if (bytes.ok()) all += *bytes;
  }
  return all;
}

TEST_F(AtRestTest, OnlyHashesReachTheFile) {
  std::vector<std::string> secrets;
  auto setup = id_->setup().Prepare();
  ASSERT_TRUE(setup.ok()) << setup.error().message;
  secrets.push_back(ReadFile(*setup)->substr(0, 53));
  auto admin = id_->users().Create("alice", kPassword, true);
  ASSERT_TRUE(admin.ok()) << admin.error().message;
  ASSERT_TRUE(id_->orgs().AddMember(Principal::Host(), "default", *admin, Role::kOwner).ok());
  auto tok = id_->tokens().Create(As(*admin), {.name = "t", .org = "default"});
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  secrets.push_back(tok->secret);
  auto sa = id_->tokens().CreateSuperadmin(Principal::Host(), "sa", std::nullopt);
  ASSERT_TRUE(sa.ok());
  secrets.push_back(sa->secret);
  auto sess = id_->sessions().Create(*admin, "127.0.0.1", "ua");
  ASSERT_TRUE(sess.ok());
  secrets.push_back(sess->secret);
  auto inv = id_->invitations().Create(As(*admin), "default", Role::kViewer);
  ASSERT_TRUE(inv.ok());
  secrets.push_back(inv->secret);
  // Resolve the bearer ones, so last_used_at writes happen too.
  for (size_t i = 1; i < 4; ++i) ASSERT_TRUE(id_->Resolve(secrets[i]).ok());

  std::string raw = RawBytes(dir_);
  ASSERT_FALSE(raw.empty());
  for (const auto& s : secrets) {
    // After the prefix "isb_KIND_" (the body's own alphabet has '_' too, so not after the last one).
    size_t body_at = s.find('_', 4) + 1;
    ASSERT_GE(s.size() - body_at, 40u) << "a secret's body is 32 bytes, encoded";
    EXPECT_EQ(raw.find(s), std::string::npos) << "a secret of " << s.size() << " bytes is in the file";
    EXPECT_EQ(raw.find(s.substr(body_at)), std::string::npos) << "a secret's body is in the file";
    // The search would have found what is stored: the hash is there.
    EXPECT_NE(raw.find(SecretHash(s)), std::string::npos);
  }
  EXPECT_EQ(raw.find(kPassword), std::string::npos) << "the password is in the file";
  EXPECT_NE(raw.find("$argon2id$"), std::string::npos);
}

}  // namespace
}  // namespace isb::identity
