// The sandbox's trust bundle: the image's system bundle read inside the image only, then the sandbox's CA.
#include "daemon/trust_bundle.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "base/file.h"
#include "base/random.h"

namespace isb::daemon {
namespace {

namespace fs = std::filesystem;

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\nSANDBOX CA\n-----END CERTIFICATE-----\n";

class TrustBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("isb-trust-" + *RandomHex(6));
    image_ = base_ / "image";
    fs::create_directories(image_ / "etc/ssl/certs");
    fs::create_directories(image_ / "etc/pki/tls/certs");
  }
  void TearDown() override { fs::remove_all(base_); }
  void Put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
  fs::path base_, image_;
};

TEST_F(TrustBundleTest, TheImagesBundleComesFirstThenTheSandboxCa) {
  Put(image_ / "etc/pki/tls/certs/ca-bundle.crt", "FEDORA ROOTS");  // no final newline: one is added
  Put(image_ / "etc/ssl/cert.pem", "ALPINE ROOTS\n");
  Result<std::string> b = TrustBundle(image_.string(), kCa);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(*b, std::string("FEDORA ROOTS\n") + kCa) << "the first of the usual places that holds a file";
}

TEST_F(TrustBundleTest, WithoutASystemBundleTheCaAlone) {
  Result<std::string> b = TrustBundle(image_.string(), kCa);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(*b, kCa);
  EXPECT_EQ(TrustBundle((base_ / "missing").string(), kCa).ok(), false);
}

// Symlinks resolve inside the image (an absolute one, or one climbing with ..), never to the host's files; what is
// not a regular file of at most 8 MiB is passed over, a FIFO without blocking.
TEST_F(TrustBundleTest, NothingOutsideTheImageAndNothingButSmallRegularFilesIsRead) {
  Put(base_ / "host-secret", "HOST SECRET\n");
  fs::create_symlink(base_ / "host-secret", image_ / "etc/ssl/certs/ca-certificates.crt");
  fs::create_symlink("../../../../host-secret", image_ / "etc/pki/tls/certs/ca-bundle.crt");
  ASSERT_EQ(::mkfifo((image_ / "etc/ssl/cert.pem").c_str(), 0644), 0);
  {
    std::ofstream big(image_ / "etc/ssl/ca-bundle.pem", std::ios::binary);
    big << std::string(kMaxSystemBundle + 1, 'x');
  }
  Result<std::string> b = TrustBundle(image_.string(), kCa);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(*b, kCa);
  // The same file inside the image is read: the absolute link resolves against the image's root.
  fs::create_directories(image_ / base_.relative_path());
  Put(image_ / base_.relative_path() / "host-secret", "IMAGE ROOTS\n");
  b = TrustBundle(image_.string(), kCa);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(*b, std::string("IMAGE ROOTS\n") + kCa);
}

TEST_F(TrustBundleTest, TheHostRootGivesTheHostsBundle) {
  Result<std::string> host = ReadFile("/etc/ssl/certs/ca-certificates.crt");
  ASSERT_TRUE(host.ok()) << "the test needs the host's CA bundle (ca-certificates)";
  Result<std::string> b = TrustBundle("/", kCa);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(*b, *host + (host->ends_with("\n") ? "" : "\n") + kCa);
}

}  // namespace
}  // namespace isb::daemon
