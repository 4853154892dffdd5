// The daemon's identity: its sources in order, the generated key file, the chmod refusal, the recipients file.
#include "secrets/daemon_identity.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "secrets/age_tool.h"

namespace isb::secrets {
namespace {

using testing::AgeKeygen;
using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

class DaemonIdentityTest : public ::testing::Test {
 protected:
  // A key file written 0600, as an operator would.
  std::filesystem::path KeyFile(const std::string& name, const AgeIdentity& key) {
    auto path = dir_ / name;
    WriteAll(path, "# a comment\n" + std::string(key.Encode().view()) + "\n");
    ::chmod(path.c_str(), 0600);
    return path;
  }

  TempDir dir_;
  AgeIdentity env_ = AgeIdentity::Generate(), file_ = AgeIdentity::Generate(), credential_ = AgeIdentity::Generate();
};

TEST_F(DaemonIdentityTest, SourcesWinInOrderEnvThenKeyFileThenCredentialThenGenerated) {
  std::filesystem::create_directories(dir_ / "creds");
  KeyFile("creds/isb-secrets-key", credential_);
  IdentitySources sources{std::string(env_.Encode().view()), KeyFile("key.txt", file_), dir_ / "creds",
                          dir_ / "state" / "secrets" / "identity"};
  EXPECT_EQ(LoadDaemonIdentity(sources)->Recipient(), env_.Recipient());
  sources.env_key.clear();
  EXPECT_EQ(LoadDaemonIdentity(sources)->Recipient(), file_.Recipient());
  sources.key_file.clear();
  EXPECT_EQ(LoadDaemonIdentity(sources)->Recipient(), credential_.Recipient());
  // No key is generated while another source is given.
  EXPECT_FALSE(std::filesystem::exists(sources.generated));
  std::filesystem::remove(dir_ / "creds" / "isb-secrets-key");  // a credentials dir without ours: not a source
  auto generated = LoadDaemonIdentity(sources);
  ASSERT_TRUE(generated.ok()) << generated.error().message;
  EXPECT_TRUE(std::filesystem::exists(sources.generated));
  // The key file is the only entry: its temp file was renamed, not left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_ / "state" / "secrets"),
                          std::filesystem::directory_iterator()),
            1);
}

TEST_F(DaemonIdentityTest, TheGeneratedKeyIs0600ReadBackOnTheNextStartAndReadableByTheRealAge) {
  const auto path = dir_ / "state" / "secrets" / "identity";
  IdentitySources sources{"", "", "", path};
  auto first = LoadDaemonIdentity(sources);
  ASSERT_TRUE(first.ok()) << first.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  auto second = LoadDaemonIdentity(sources);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->Recipient(), first->Recipient());
  ProgramExit pub = testing::RunTool({"age-keygen", "-y", path.string()}, 4096);
  ASSERT_TRUE(pub.ok()) << pub.stderr_text;
  EXPECT_EQ(pub.stdout_text, first->Recipient());
  EXPECT_NE(ReadAll(path).find("# public key: " + first->Recipient() + "\n"), std::string::npos);
}

TEST_F(DaemonIdentityTest, AKeyFileReadableByGroupOrOthersIsRefusedWithChmod600) {
  auto path = KeyFile("key.txt", file_);
  for (mode_t mode : {0640, 0604, 0644}) {
    ::chmod(path.c_str(), mode);
    auto loaded = LoadDaemonIdentity({"", path, "", ""});
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().code, Code::kForbidden);
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    EXPECT_EQ(loaded.error().message, "--secrets-key " + path.string() + ": readable by group or others (mode " +
                                          octal + "); chmod 600 " + path.string());
  }
  ::chmod(path.c_str(), 0400);
  EXPECT_TRUE(LoadDaemonIdentity({"", path, "", ""}).ok());
  const auto generated = dir_ / "identity";
  ASSERT_TRUE(LoadDaemonIdentity({"", "", "", generated}).ok());
  ::chmod(generated.c_str(), 0660);
  EXPECT_EQ(LoadDaemonIdentity({"", "", "", generated}).error().message,
            "secrets key " + generated.string() + ": readable by group or others (mode 0660); chmod 600 " +
                generated.string());
}

TEST_F(DaemonIdentityTest, BadKeysAreRefusedNamingTheSourceAndNeverTheKey) {
  auto env = LoadDaemonIdentity({"AGE-SECRET-KEY-1NOTAKEY", "", "", ""});
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.error().message,
            "ISB_AGE_KEY: identity: not a valid age secret key (bech32: a character outside the bech32 alphabet)");
  auto path = dir_ / "key.txt";
  WriteAll(path, "# nothing here\n");
  ::chmod(path.c_str(), 0600);
  EXPECT_EQ(LoadDaemonIdentity({"", path, "", ""}).error().message,
            "--secrets-key " + path.string() + ": identity: no AGE-SECRET-KEY-1... line found");
  auto missing = LoadDaemonIdentity({"", dir_ / "absent", "", ""});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "--secrets-key " + (dir_ / "absent").string() + ": No such file or directory");
  EXPECT_EQ(LoadDaemonIdentity({}).error().message,
            "secrets key: none given; set ISB_AGE_KEY, --secrets-key FILE or a systemd credential");
}

TEST_F(DaemonIdentityTest, AnAgeKeygenFileIsAKeyFile) {
  auto keygen = AgeKeygen(dir_, "keygen.txt");
  auto loaded = LoadDaemonIdentity({"", keygen.file, "", ""});
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->Recipient(), keygen.recipient);
}

TEST(RecipientsFileTest, ReadsOneKeyALineAndNamesABadLineByNumber) {
  TempDir dir;
  AgeIdentity a = AgeIdentity::Generate(), b = AgeIdentity::Generate();
  WriteAll(dir / "r.txt", "# break-glass\n\n" + a.Recipient() + "\n  " + b.Recipient() + " \r\n# end\n");
  auto read = ReadRecipientsFile(dir / "r.txt");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(*read, (std::vector<std::string>{a.Recipient(), b.Recipient()}));
  WriteAll(dir / "bad.txt", a.Recipient() + "\n# ok\nage1nope\n");
  EXPECT_EQ(ReadRecipientsFile(dir / "bad.txt").error().message,
            (dir / "bad.txt").string() +
                " line 3: recipient 'age1nope': not an age recipient (bech32: too short for its checksum)");
  WriteAll(dir / "secret.txt", std::string(a.Encode().view()) + "\n");
  EXPECT_EQ(ReadRecipientsFile(dir / "secret.txt").error().message,
            (dir / "secret.txt").string() +
                " line 1: recipient: this is an identity (a private key); give its public key (age-keygen -y)");
  EXPECT_EQ(ReadRecipientsFile(dir / "absent").error().message,
            "recipients file: open " + (dir / "absent").string() + ": No such file or directory");
}

}  // namespace
}  // namespace isb::secrets
