// ImageStore: an org's records by name, digest and id, never another org's; layers committed once; what nothing
// names collected.
#include "image/image_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace isb::image {
namespace {

namespace fs = std::filesystem;

std::string Sha(char c) { return "sha256:" + std::string(64, c); }

class ImageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-image-store-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto s = ImageStore::Open(dir_ + "/images");
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A layer committed with one file in it.
  void Layer(const std::string& diff_id) {
    auto root = store_->BeginLayer();
    ASSERT_TRUE(root.ok()) << root.error().message;
    std::ofstream(*root / "f") << diff_id;
    ASSERT_TRUE(store_->CommitLayer(*root, diff_id).ok());
  }

  ImageRecord Record(const std::string& org, const std::string& name, char manifest, std::vector<char> layers) {
    ImageRecord r;
    r.org = org;
    r.name = name;
    r.manifest_digest = Sha(manifest);
    r.config_digest = Sha('0');
    // Blob digests of digits, apart from the letters of diff_ids and manifests.
    for (char l : layers) r.layers.push_back(LayerRecord{Sha(static_cast<char>(l - 'a' + '1')), Sha(l), "t", 1, 1});
    r.source = "pull";
    return r;
  }

  std::string dir_;
  std::unique_ptr<ImageStore> store_;
};

TEST_F(ImageStoreTest, AnImageIsFoundByNameDigestAndIdInItsOrgOnly) {
  Layer(Sha('a'));
  const ImageRecord r = Record("acme", "docker.io/library/busybox:1", 'e', {'a'});
  ASSERT_TRUE(store_->Put(r).ok());
  for (const std::string& ref : {r.name, r.manifest_digest, std::string(12, 'e'), std::string(40, 'e')}) {
    auto got = store_->Get("acme", ref);
    ASSERT_TRUE(got.ok()) << ref << ": " << got.error().message;
    EXPECT_EQ(*got, r);
  }
  auto other = store_->Get("beta", r.name);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, Code::kNotFound);
  EXPECT_EQ(other.error().message, "image 'docker.io/library/busybox:1' not found in org 'beta': pull or import it "
                                   "first (isb image pull)");
  EXPECT_TRUE(store_->List("beta").empty());
  EXPECT_EQ(store_->List("acme").size(), 1u);
  auto too_short = store_->Get("acme", std::string(11, 'e'));
  EXPECT_EQ(too_short.error().code, Code::kNotFound);
}

TEST_F(ImageStoreTest, AnIdPrefixOfTwoImagesIsRefusedAsAmbiguous) {
  Layer(Sha('a'));
  ImageRecord one = Record("acme", "one", 'e', {'a'}), two = Record("acme", "two", 'e', {'a'});
  two.manifest_digest = "sha256:" + std::string(12, 'e') + std::string(52, 'f');
  ASSERT_TRUE(store_->Put(one).ok());
  ASSERT_TRUE(store_->Put(two).ok());
  auto got = store_->Get("acme", std::string(12, 'e'));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().message, "image id 'eeeeeeeeeeee' names more than one image: give more digits");
}

TEST_F(ImageStoreTest, ARecordNamingALayerNotStoredIsRefused) {
  auto put = store_->Put(Record("acme", "x", 'e', {'a'}));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().message, "image 'x': layer " + Sha('a') + " is not stored");
}

TEST_F(ImageStoreTest, ALayerCommittedTwiceKeepsTheFirstAndLeavesNoTempDir) {
  Layer(Sha('a'));
  auto again = store_->BeginLayer();
  ASSERT_TRUE(again.ok());
  std::ofstream(*again / "other") << "x";
  ASSERT_TRUE(store_->CommitLayer(*again, Sha('a')).ok());
  EXPECT_TRUE(fs::exists(store_->LayerRoot(Sha('a')) / "f"));
  EXPECT_FALSE(fs::exists(store_->LayerRoot(Sha('a')) / "other"));
  EXPECT_TRUE(fs::is_empty(dir_ + "/images/layers/tmp"));
  auto bad = store_->CommitLayer(store_->LayerRoot(Sha('a')), "sha256:../../x");
  EXPECT_EQ(bad.error().message, "layer diff_id 'sha256:../../x' is not a sha256 digest");
}

TEST_F(ImageStoreTest, GarbageIsWhatNoRecordOfAnyOrgNames) {
  for (char l : {'a', 'b', 'd'}) Layer(Sha(l));
  ASSERT_TRUE(store_->Put(Record("acme", "one", 'e', {'a', 'b'})).ok());
  ASSERT_TRUE(store_->Put(Record("beta", "two", 'f', {'a'})).ok());
  fs::create_directories(dir_ + "/images/blobs/sha256");
  for (const std::string& blob : {std::string(64, '1'), std::string(64, '9')})  // layer a's blob, and an orphan
    std::ofstream(dir_ + "/images/blobs/sha256/" + blob) << "x";
  auto g = store_->CollectGarbage();
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->layers, 1);  // d
  EXPECT_EQ(g->blobs, 1);   // 999...
  EXPECT_TRUE(store_->HasLayer(Sha('a')));
  EXPECT_FALSE(store_->HasLayer(Sha('d')));
  ASSERT_TRUE(store_->Remove("acme", "one").ok());
  g = store_->CollectGarbage();
  EXPECT_EQ(g->layers, 1);  // b: a is still beta's
  EXPECT_TRUE(store_->HasLayer(Sha('a')));
  EXPECT_EQ(store_->Remove("acme", "one").error().code, Code::kNotFound);
}

TEST_F(ImageStoreTest, OpenClearsWhatACrashLeftHalfUnpacked) {
  auto half = store_->BeginLayer();
  ASSERT_TRUE(half.ok());
  std::ofstream(*half / "partial") << "x";
  store_.reset();
  auto s = ImageStore::Open(dir_ + "/images");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(fs::is_empty(dir_ + "/images/layers/tmp"));
}

TEST_F(ImageStoreTest, AnOrgIsChargedEachLayerAndBlobItsImagesShareOnceAndNotForAnotherOrgs) {
  ImageRecord one = Record("acme", "docker.io/library/a:1", 'e', {'a', 'b'});
  one.layers[0].size = 100;
  one.layers[0].unpacked_bytes = 1000;
  one.layers[1].size = 20;
  one.layers[1].unpacked_bytes = 300;
  ImageRecord two = Record("acme", "docker.io/library/b:1", 'f', {'a'});
  two.layers[0] = one.layers[0];  // the same layer under a second image
  ImageRecord snapshot = Record("acme", "docker.io/library/snap:1", 'c', {'d'});
  snapshot.layers[0].digest = "";  // a snapshot's layer has no blob until exported
  snapshot.layers[0].size = 0;
  snapshot.layers[0].unpacked_bytes = 7;
  ImageRecord other = Record("globex", "docker.io/library/a:1", 'e', {'a', 'b'});
  other.layers = one.layers;
  for (char l : {'a', 'b', 'd'}) Layer(Sha(l));
  for (const ImageRecord& r : {one, two, snapshot, other}) ASSERT_TRUE(store_->Put(r).ok());

  EXPECT_EQ(store_->OrgBytes("acme"), 1000u + 100u + 300u + 20u + 7u);
  EXPECT_EQ(store_->OrgBytes("globex"), 1420u);
  EXPECT_EQ(store_->OrgBytes("initech"), 0u);
}

}  // namespace
}  // namespace isb::image
