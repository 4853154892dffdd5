// `make install DESTDIR=...`: isb, the systemd unit and its flags file where the unit names them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The value of every `KEY=` line of a unit, joined by '\n'.
std::string UnitValues(const std::string& unit, const std::string& key) {
  std::istringstream in(unit);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.starts_with(key + "=")) out += (out.empty() ? "" : "\n") + line.substr(key.size() + 1);
  }
  return out;
}

class InstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-install-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dest_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dest_); }

  // make install with `vars`; its exit status.
  int MakeInstall(const std::string& vars) {
    std::string cmd = "make -s -C '" ISB_SOURCE_DIR "' install BUILD='" ISB_BUILD_DIR "' DESTDIR='" + dest_.string() +
                      "' " + vars + " >'" + (dest_ / "make.log").string() + "' 2>&1";
    int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string Log() { return Slurp(dest_ / "make.log"); }

  fs::path dest_;
};

TEST_F(InstallTest, LaysOutIsbTheUnitAndItsFlagsWhereTheUnitNamesThem) {
  ASSERT_EQ(MakeInstall(""), 0) << Log();
  const fs::path bin = dest_ / "usr/local/bin/isb";
  EXPECT_EQ(Slurp(bin), Slurp(ISB_BUILD_DIR "/isb")) << "the built isb, byte for byte";
  struct stat st {};
  ASSERT_EQ(::stat(bin.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  const std::string unit = Slurp(dest_ / "etc/systemd/system/isb.service");
  EXPECT_EQ(UnitValues(unit, "ExecStart"), "/usr/local/bin/isb serve $ISB_SERVE_ARGS");
  EXPECT_EQ(UnitValues(unit, "EnvironmentFile"), "-/etc/default/isb");
  EXPECT_EQ(Slurp(dest_ / "etc/default/isb"), Slurp(ISB_SOURCE_DIR "/contrib/isb.defaults"));
  EXPECT_NE(
      Slurp(dest_ / "etc/default/isb").find("\nISB_SERVE_ARGS=\"--state-dir /var/lib/isb --listen 127.0.0.1:8092\"\n"),
      std::string::npos);
  // Readable by root alone, and it holds no secrets key: the comment says where that key goes instead.
  ASSERT_EQ(::stat((dest_ / "etc/default/isb").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(Slurp(dest_ / "etc/default/isb").find("\nISB_AGE_KEY="), std::string::npos);
  // Where the commented LoadCredentialEncrypted= line keeps the secrets key: there, private.
  ASSERT_EQ(::stat((dest_ / "etc/isb").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_NE(unit.find("\n#LoadCredentialEncrypted=isb-secrets-key:/etc/isb/secrets-key.cred\n"), std::string::npos);
}

TEST_F(InstallTest, APrefixMovesIsbAndTheUnitFollowsAndAFlagsFileThereIsKept) {
  fs::create_directories(dest_ / "etc/default");
  std::ofstream(dest_ / "etc/default/isb") << "ISB_SERVE_ARGS=\"--listen 100.64.0.1:8092\"\n";
  ASSERT_EQ(MakeInstall("PREFIX=/usr"), 0) << Log();
  EXPECT_TRUE(fs::exists(dest_ / "usr/bin/isb"));
  EXPECT_FALSE(fs::exists(dest_ / "usr/local"));
  const std::string unit = Slurp(dest_ / "etc/systemd/system/isb.service");
  EXPECT_EQ(UnitValues(unit, "ExecStart"), "/usr/bin/isb serve $ISB_SERVE_ARGS");
  EXPECT_EQ(Slurp(dest_ / "etc/default/isb"), "ISB_SERVE_ARGS=\"--listen 100.64.0.1:8092\"\n")
      << "an admin's flags stay";
}

TEST_F(InstallTest, WithoutABuiltIsbItSaysToBuildFirst) {
  std::string cmd = "make -s -C '" ISB_SOURCE_DIR "' install BUILD='" + (dest_ / "nobuild").string() + "' DESTDIR='" +
                    dest_.string() + "' >'" + (dest_ / "make.log").string() + "' 2>&1";
  int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(Log().find("make install: no " + (dest_ / "nobuild").string() + "/isb; run make build first\n"),
            std::string::npos)
      << Log();
  EXPECT_FALSE(fs::exists(dest_ / "usr"));
}

}  // namespace
