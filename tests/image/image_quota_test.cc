// ImageQuotaCheck: the room an org's disk quota leaves its images, and a recorded image that passes it undone.
#include "api/image_quota.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace isb::api {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1 << 20;

image::ImageRecord Image(const std::string& name, char layer, uint64_t unpacked) {
  image::ImageRecord r;
  r.org = "acme";
  r.name = name;
  r.manifest_digest = "sha256:" + std::string(64, layer);
  r.config_digest = "sha256:" + std::string(64, '0');
  r.layers.push_back(image::LayerRecord{"", "sha256:" + std::string(64, layer), "t", 0, unpacked});
  r.source = "pull";
  return r;
}

class ImageQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-image-quota-XXXXXX";
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

  // The record, its layer committed first (the store keeps records of stored layers only).
  image::ImageRecord Stored(const std::string& name, char layer, uint64_t unpacked) {
    image::ImageRecord r = Image(name, layer, unpacked);
    if (!store_->HasLayer(r.layers[0].diff_id)) {
      auto root = store_->BeginLayer();
      EXPECT_TRUE(root.ok());
      EXPECT_TRUE(store_->CommitLayer(*root, r.layers[0].diff_id).ok());
    }
    return r;
  }

  ImageDiskQuotaFn Quota(uint64_t limit, uint64_t sandboxes) {
    return [limit, sandboxes](const std::string& org) -> Result<std::optional<ImageDiskQuota>> {
      EXPECT_EQ(org, "acme");
      return std::optional<ImageDiskQuota>(ImageDiskQuota{limit, sandboxes});
    };
  }

  std::string dir_;
  std::unique_ptr<image::ImageStore> store_;
};

TEST_F(ImageQuotaTest, WithoutAQuotaTheRoomIsUnboundedAndNothingIsUndone) {
  auto check = ImageQuotaCheck::Begin(*store_, nullptr, "acme");
  ASSERT_TRUE(check.ok()) << check.error().message;
  EXPECT_FALSE(check->limited());
  EXPECT_EQ(check->room(), UINT64_MAX);
  const image::ImageRecord big = Stored("docker.io/library/big:1", 'a', uint64_t{1} << 40);
  ASSERT_TRUE(store_->Put(big).ok());
  EXPECT_TRUE(check->Finish(*store_, {big}).ok());
  EXPECT_EQ(store_->List("acme").size(), 1u);
}

TEST_F(ImageQuotaTest, TheRoomIsTheQuotaLessSandboxesAndImagesAndAFullOrgIsRefusedBeforeAnyFetch) {
  ASSERT_TRUE(store_->Put(Stored("docker.io/library/old:1", 'a', 30 * kMiB)).ok());
  auto check = ImageQuotaCheck::Begin(*store_, Quota(100 * kMiB, 64 * kMiB), "acme");
  ASSERT_TRUE(check.ok()) << check.error().message;
  EXPECT_EQ(check->room(), 6 * kMiB);

  auto full = ImageQuotaCheck::Begin(*store_, Quota(94 * kMiB, 64 * kMiB), "acme");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, Code::kForbidden);
  EXPECT_EQ(full.error().message,
            "quota: org 'acme' may be allocated 94 MiB of disk; its sandboxes take 64 MiB and its images 30 MiB: "
            "remove images or sandboxes first");
}

TEST_F(ImageQuotaTest, ANewImageOverTheQuotaIsRemovedAndAReplacedOneComesBack) {
  const image::ImageRecord old_tag = Stored("docker.io/library/app:1", 'a', 10 * kMiB);
  ASSERT_TRUE(store_->Put(old_tag).ok());
  auto check = ImageQuotaCheck::Begin(*store_, Quota(50 * kMiB, 20 * kMiB), "acme");
  ASSERT_TRUE(check.ok()) << check.error().message;

  // The tag now names a bigger image, and a second image came with the same call (an archive of two).
  const image::ImageRecord new_tag = Stored("docker.io/library/app:1", 'b', 25 * kMiB);
  const image::ImageRecord extra = Stored("docker.io/library/extra:1", 'c', 10 * kMiB);
  ASSERT_TRUE(store_->Put(new_tag).ok());
  ASSERT_TRUE(store_->Put(extra).ok());
  Status st = check->Finish(*store_, {new_tag, extra});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Code::kForbidden);
  EXPECT_EQ(st.error().message,
            "quota: org 'acme' may be allocated 50 MiB of disk; its sandboxes take 20 MiB and its images would take "
            "35 MiB with these images (it had 10 MiB): remove images or sandboxes first");
  const std::vector<image::ImageRecord> left = store_->List("acme");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], old_tag);
}

TEST_F(ImageQuotaTest, AnImageThatFitsStaysExactlyAtTheQuota) {
  auto check = ImageQuotaCheck::Begin(*store_, Quota(50 * kMiB, 20 * kMiB), "acme");
  ASSERT_TRUE(check.ok()) << check.error().message;
  const image::ImageRecord fits = Stored("docker.io/library/app:1", 'a', 30 * kMiB);
  ASSERT_TRUE(store_->Put(fits).ok());
  EXPECT_TRUE(check->Finish(*store_, {fits}).ok());
  const image::ImageRecord one_more = Stored("docker.io/library/app:2", 'b', 1);
  ASSERT_TRUE(store_->Put(one_more).ok());
  Status st = check->Finish(*store_, {one_more});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(store_->List("acme"), std::vector<image::ImageRecord>{fits});
}

TEST_F(ImageQuotaTest, APullStoppedAtTheRoomIsToldAsTheQuotaAndOtherErrorsPassAsTheyAre) {
  auto check = ImageQuotaCheck::Begin(*store_, Quota(100 * kMiB, 64 * kMiB), "acme");
  ASSERT_TRUE(check.ok()) << check.error().message;
  Error big = check->Explain("docker.io/library/big:1", Error::Of(Code::kTooLarge, "layer sha256:aa: too big"));
  EXPECT_EQ(big.code, Code::kForbidden);
  EXPECT_EQ(big.message,
            "quota: org 'acme' may be allocated 100 MiB of disk, which leaves 36 MiB for image "
            "'docker.io/library/big:1': layer sha256:aa: too big");
  Error other = check->Explain("docker.io/library/big:1", Error::Of(Code::kNotFound, "manifest unknown"));
  EXPECT_EQ(other.code, Code::kNotFound);
  EXPECT_EQ(other.message, "manifest unknown");
  auto free = ImageQuotaCheck::Begin(*store_, nullptr, "acme");
  ASSERT_TRUE(free.ok());
  EXPECT_EQ(free->Explain("x", Error::Of(Code::kTooLarge, "too big")).code, Code::kTooLarge);
}

}  // namespace
}  // namespace isb::api
