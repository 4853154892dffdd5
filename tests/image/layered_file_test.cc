// ReadLayeredFile: a file of an image as the overlay shows it — the top-most layer's, hidden by whiteouts and opaque
// directories above it, links followed through the stack.
#include "image/layered_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "must_work.h"

namespace isb::image {
namespace {

namespace fs = std::filesystem;

class LayeredFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-layered-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A new layer root on top of the stack.
  fs::path Layer() {
    fs::path root = fs::path(dir_) / std::to_string(layers_.size());
    fs::create_directories(root);
    layers_.push_back(root.string());
    return root;
  }
  static void Write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  std::optional<std::string> Read(const std::string& path, size_t max = 1 << 20) {
    return ReadLayeredFile(layers_, path, max);
  }

  std::string dir_;
  std::vector<std::string> layers_;
};

TEST_F(LayeredFileTest, TheTopMostLayerWithTheFileWinsAndLayersWithoutItAreSeenThrough) {
  Write(Layer() / "etc/passwd", "base\n");
  Write(Layer() / "etc/passwd", "middle\n");
  Write(Layer() / "etc/hostname", "top\n");
  EXPECT_EQ(Read("etc/passwd"), "middle\n");
  EXPECT_EQ(Read("etc/hostname"), "top\n");
  EXPECT_EQ(Read("etc/group"), std::nullopt);
}

TEST_F(LayeredFileTest, AnOpaqueDirectoryAboveHidesTheFileBelowButNotItsOwn) {
  Write(Layer() / "etc/passwd", "base\n");
  fs::path top = Layer();
  Write(top / "etc/group", "staff:x:50:\n");
  ASSERT_EQ(::setxattr((top / "etc").c_str(), "user.overlay.opaque", "y", 1, 0), 0);
  EXPECT_EQ(Read("etc/passwd"), std::nullopt);
  EXPECT_EQ(Read("etc/group"), "staff:x:50:\n");
}

TEST_F(LayeredFileTest, AFileWhereADirectoryWouldBeHidesWhatIsBelow) {
  Write(Layer() / "etc/ssl/certs/ca-certificates.crt", "bundle\n");
  Write(Layer() / "etc/ssl", "not a directory\n");
  EXPECT_EQ(Read("etc/ssl/certs/ca-certificates.crt"), std::nullopt);
}

TEST_F(LayeredFileTest, AWhiteoutOfTheFileOrOfADirectoryOnItsWayHidesIt) {
  ISB_REQUIRE_ROOT();  // whiteouts are character devices 0/0
  Write(Layer() / "etc/passwd", "base\n");
  Write(layers_[0] + "/etc/ssl/cert.pem", "bundle\n");
  fs::path top = Layer();
  fs::create_directories(top / "etc");
  ASSERT_EQ(::mknod((top / "etc/passwd").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
  ASSERT_EQ(::mknod((top / "etc/ssl").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
  EXPECT_EQ(Read("etc/passwd"), std::nullopt);
  EXPECT_EQ(Read("etc/ssl/cert.pem"), std::nullopt);
}

TEST_F(LayeredFileTest, ALinkIsFollowedThroughTheStackAndNeverAboveTheImagesRoot) {
  Write(Layer() / "etc/ssl/certs/ca-certificates.crt", "bundle\n");
  Write(layers_[0] + "/secret", "outside\n");
  fs::path top = Layer();
  fs::create_directories(top / "etc/ssl");
  fs::create_symlink("certs/ca-certificates.crt", top / "etc/ssl/cert.pem");  // relative, to a lower layer
  fs::create_symlink("/etc/ssl/cert.pem", top / "etc/ssl/abs.pem");           // absolute, to a link
  fs::create_symlink("../../../../../../secret", top / "etc/ssl/up.pem");     // ".." stops at the root
  fs::create_symlink("loop.pem", top / "etc/ssl/loop.pem");
  EXPECT_EQ(Read("etc/ssl/cert.pem"), "bundle\n");
  EXPECT_EQ(Read("etc/ssl/abs.pem"), "bundle\n");
  EXPECT_EQ(Read("etc/ssl/up.pem"), "outside\n");  // the image's own /secret, not the host's
  EXPECT_EQ(Read("etc/ssl/loop.pem"), std::nullopt);
}

TEST_F(LayeredFileTest, ADirectoryAFifoOrAFileOverTheLimitIsNone) {
  fs::path root = Layer();
  Write(root / "etc/big", std::string(100, 'x'));
  fs::create_directories(root / "etc/dir");
  ASSERT_EQ(::mkfifo((root / "etc/fifo").c_str(), 0600), 0);
  EXPECT_EQ(Read("etc/big", 99), std::nullopt);
  EXPECT_EQ(Read("etc/big", 100), std::string(100, 'x'));
  EXPECT_EQ(Read("etc/dir"), std::nullopt);
  EXPECT_EQ(Read("etc/fifo"), std::nullopt);
}

}  // namespace
}  // namespace isb::image
