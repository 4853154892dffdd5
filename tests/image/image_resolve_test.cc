// ResolveImage: an image's user looked up in its files as the sandbox's overlay shows them, an opaque directory in a
// higher layer hiding what the layers under it hold.
#include <gtest/gtest.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "api/image_tools.h"

namespace isb::api {
namespace {

namespace fs = std::filesystem;

class ImageResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-image-resolve-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto s = image::ImageStore::Open(dir_ + "/images");
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A layer whose /etc holds `files` (name, text), its /etc marked opaque if asked.
  std::string Layer(char id, std::vector<std::pair<std::string, std::string>> files, bool opaque_etc) {
    const std::string diff_id = "sha256:" + std::string(64, id);
    auto root = store_->BeginLayer();
    EXPECT_TRUE(root.ok());
    fs::create_directories(*root / "etc");
    for (const auto& [name, text] : files) std::ofstream(*root / "etc" / name) << text;
    if (opaque_etc) {
      EXPECT_EQ(::setxattr((*root / "etc").c_str(), "user.overlay.opaque", "y", 1, 0), 0);
    }
    EXPECT_TRUE(store_->CommitLayer(*root, diff_id).ok());
    return diff_id;
  }

  Result<ResolvedImage> Resolve(const std::vector<std::string>& diff_ids, const std::string& user) {
    image::ImageRecord r;
    r.org = "acme";
    r.name = "docker.io/library/app:1";
    r.manifest_digest = "sha256:" + std::string(64, 'e');
    r.config_digest = "sha256:" + std::string(64, '0');
    for (const std::string& d : diff_ids) r.layers.push_back(image::LayerRecord{"", d, "t", 0, 0});
    r.config.user = user;
    r.source = "pull";
    EXPECT_TRUE(store_->Put(r).ok());
    return ResolveImage(*store_, "acme", r.name);
  }

  std::string dir_;
  std::unique_ptr<image::ImageStore> store_;
};

constexpr const char* kPasswd = "root:x:0:0::/root:/bin/sh\nalice:x:1000:1001::/home/alice:/bin/sh\n";

TEST_F(ImageResolveTest, AUserNamedInALowerLayersPasswdResolvesThroughAnOrdinaryDirectoryAbove) {
  const std::string base = Layer('a', {{"passwd", kPasswd}}, false);
  const std::string top = Layer('b', {{"hostname", "app\n"}}, false);
  Result<ResolvedImage> r = Resolve({base, top}, "alice");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->user, "1000:1001");
}

TEST_F(ImageResolveTest, AnOpaqueEtcAboveHidesTheLowerPasswdAsTheOverlayDoes) {
  const std::string base = Layer('a', {{"passwd", kPasswd}}, false);
  const std::string top = Layer('b', {{"group", "staff:x:50:\n"}}, true);
  Result<ResolvedImage> r = Resolve({base, top}, "alice");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message, "image user 'alice': no such user in the image's /etc/passwd; give user as UID[:GID]");
  // The group file of the opaque layer itself is still read.
  Result<ResolvedImage> by_group = Resolve({base, top}, "7:staff");
  ASSERT_TRUE(by_group.ok()) << by_group.error().message;
  EXPECT_EQ(by_group->user, "7:50");
}

}  // namespace
}  // namespace isb::api
