// ImageStore: an org's records by name, digest and id, never another org's; layers committed once; what nothing
// names collected; an image deeper than a sandbox stacks stacked with its lowest layers flattened once.
#include "image/image_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

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
  EXPECT_EQ(other.error().message,
            "image 'docker.io/library/busybox:1' not found in org 'beta': pull or import it "
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

TEST(ChainIdTest, IsOciChainIdOfTheFirstLayersAndFlatteningStartsPastWhatASandboxStacks) {
  const std::vector<LayerRecord> layers = {LayerRecord{"", Sha('a'), "", 0, 0}, LayerRecord{"", Sha('b'), "", 0, 0}};
  EXPECT_EQ(ChainId(layers, 1), Sha('a'));
  // printf 'sha256:aaa... sha256:bbb...' | sha256sum
  EXPECT_EQ(ChainId(layers, 2), "sha256:ccd722928bd92476ba1745586fed6e45a102504185ad88cd89e01ff116fd146c");
  EXPECT_EQ(FlattenedCount(1), 0u);
  EXPECT_EQ(FlattenedCount(128), 0u);
  EXPECT_EQ(FlattenedCount(129), 2u);
  EXPECT_EQ(FlattenedCount(130), 3u);
  EXPECT_EQ(FlattenedCount(256), 129u);
}

// Deep images: layer i holds "l<i>" and "f" (its diff_id), so the flattened layer shows which layers it took.
class DeepImageTest : public ImageStoreTest {
 protected:
  static std::string IdOf(int i, char tag) {
    char hex[65];
    std::snprintf(hex, sizeof hex, "%c%063x", tag, i);
    return std::string("sha256:") + hex;
  }
  // A record of `count` layers: the lowest `shared` of them the same in every record, the others `tag`'s own.
  ImageRecord Deep(const std::string& org, const std::string& name, int count, int shared, char tag) {
    ImageRecord r;
    r.org = org;
    r.name = name;
    r.manifest_digest = IdOf(count, tag == 'a' ? 'e' : 'f');
    r.config_digest = Sha('0');
    for (int i = 0; i < count; ++i) {
      const std::string id = IdOf(i, i < shared ? 'a' : tag);
      if (!store_->HasLayer(id)) {
        auto root = store_->BeginLayer();
        EXPECT_TRUE(root.ok());
        std::ofstream(*root / ("l" + std::to_string(i))) << i;
        std::ofstream(*root / "f") << id;
        EXPECT_TRUE(store_->CommitLayer(*root, id).ok());
      }
      r.layers.push_back(LayerRecord{IdOf(i, 'c'), id, "t", 1, 100});
    }
    return r;
  }
  static std::vector<std::string> Names(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
};

TEST_F(DeepImageTest, ItsLowestLayersAreStackedFlattenedIntoOneMadeOnceSharedAndCollectedWithTheLastImage) {
  const ImageRecord acme = Deep("acme", "deep", 130, 3, 'a');
  ASSERT_TRUE(store_->Put(acme).ok());
  auto roots = store_->StackedLayerRoots(acme);
  ASSERT_TRUE(roots.ok()) << roots.error().message;
  ASSERT_EQ(roots->size(), kMaxStackedLayers);
  const std::string chain = ChainId(acme.layers, 3);
  EXPECT_EQ((*roots)[0], store_->LayerRoot(chain).string());
  EXPECT_EQ((*roots)[1], store_->LayerRoot(acme.layers[3].diff_id).string());
  EXPECT_EQ((*roots)[127], store_->LayerRoot(acme.layers[129].diff_id).string());
  EXPECT_EQ(Names((*roots)[0]), (std::vector<std::string>{"f", "l0", "l1", "l2"}));
  EXPECT_EQ(Read((*roots)[0] + "/f"), acme.layers[2].diff_id);
  EXPECT_TRUE(fs::is_empty(dir_ + "/images/layers/tmp"));
  struct stat made {};
  ASSERT_EQ(::stat((*roots)[0].c_str(), &made), 0);

  // Made once: asked again, and for another org's image over the same three lowest layers, the same directory.
  const ImageRecord beta = Deep("beta", "other", 130, 3, 'b');
  ASSERT_TRUE(store_->Put(beta).ok());
  for (const ImageRecord& r : {acme, beta}) {
    auto again = store_->StackedLayerRoots(r);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ((*again)[0], (*roots)[0]);
    struct stat st {};
    ASSERT_EQ(::stat((*again)[0].c_str(), &st), 0);
    EXPECT_EQ(st.st_ino, made.st_ino);
  }
  EXPECT_EQ((*store_->StackedLayerRoots(beta))[127], store_->LayerRoot(beta.layers[129].diff_id).string());

  // Kept while an image needs it, or a sandbox stacks it; collected with the last image over it.
  ASSERT_TRUE(store_->Remove("acme", "deep").ok());
  auto g = store_->CollectGarbage();
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->layers, 127);  // acme's own layers 3..129
  EXPECT_TRUE(store_->HasLayer(chain));
  ASSERT_TRUE(store_->Remove("beta", "other").ok());
  g = store_->CollectGarbage({chain});
  EXPECT_EQ(g->layers, 130);  // beta's 127 and the three shared
  EXPECT_TRUE(store_->HasLayer(chain));
  g = store_->CollectGarbage();
  EXPECT_EQ(g->layers, 1);
  EXPECT_FALSE(store_->HasLayer(chain));
  EXPECT_TRUE(fs::is_empty(dir_ + "/images/layers/sha256"));
}

TEST_F(DeepImageTest, SandboxesMadeAtOnceFromOneDeepImageRaceHarmlesslyAndOneFlattenedLayerStays) {
  const ImageRecord r = Deep("acme", "deep", 200, 0, 'a');
  ASSERT_TRUE(store_->Put(r).ok());
  std::vector<Result<std::vector<std::string>>> got(4, Error::Msg("not run"));
  std::vector<std::thread> threads;
  // Flattens run one at a time: the calls that wait find the layer made, and only the first is asked about it.
  std::atomic<int> asked = 0;
  const FlattenGate gate = [&](const FlattenRequest&) {
    ++asked;
    return Status();
  };
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = store_->StackedLayerRoots(r, gate); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(asked.load(), 1);
  const std::string flat = store_->LayerRoot(ChainId(r.layers, 73)).string();
  for (const auto& roots : got) {
    ASSERT_TRUE(roots.ok()) << roots.error().message;
    EXPECT_EQ(roots->size(), kMaxStackedLayers);
    EXPECT_EQ(roots->front(), flat);
  }
  std::vector<std::string> expected = {"f"};
  for (int i = 0; i < 73; ++i) expected.push_back("l" + std::to_string(i));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(Names(flat), expected);
  EXPECT_EQ(Read(flat + "/f"), r.layers[72].diff_id);
  EXPECT_EQ(Names(dir_ + "/images/layers/sha256").size(), 201u);
  EXPECT_TRUE(fs::is_empty(dir_ + "/images/layers/tmp"));
}

TEST_F(DeepImageTest, AnImageThatFitsIsStackedAsItIs) {
  const ImageRecord r = Deep("acme", "fits", 128, 0, 'a');
  ASSERT_TRUE(store_->Put(r).ok());
  auto roots = store_->StackedLayerRoots(r);
  ASSERT_TRUE(roots.ok()) << roots.error().message;
  ASSERT_EQ(roots->size(), 128u);
  for (size_t i = 0; i < 128; ++i) EXPECT_EQ((*roots)[i], store_->LayerRoot(r.layers[i].diff_id).string());
  EXPECT_EQ(Names(dir_ + "/images/layers/sha256").size(), 128u);
}

TEST_F(DeepImageTest, AFlattenThatFailsLeavesNothingAndALowerLayerGoneIsNamed) {
  const ImageRecord r = Deep("acme", "deep", 129, 0, 'a');
  ASSERT_TRUE(store_->Put(r).ok());
  const std::string pipe = store_->LayerRoot(r.layers[0].diff_id).string() + "/pipe";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  auto roots = store_->StackedLayerRoots(r);
  ASSERT_FALSE(roots.ok());
  EXPECT_EQ(roots.error().code, Code::kInvalidArgument);
  EXPECT_EQ(roots.error().message,
            "image 'deep': flattening its lowest 2 layers into one: flatten: layer 1 of 2, "
            "entry \"pipe\": a device, fifo or socket, which no stored layer holds");
  EXPECT_FALSE(store_->HasLayer(ChainId(r.layers, 2)));
  EXPECT_TRUE(fs::is_empty(dir_ + "/images/layers/tmp"));

  ASSERT_EQ(::unlink(pipe.c_str()), 0);
  fs::remove_all(store_->LayerRoot(r.layers[1].diff_id).parent_path());
  roots = store_->StackedLayerRoots(r);
  ASSERT_FALSE(roots.ok());
  EXPECT_EQ(roots.error().code, Code::kConflict);
  EXPECT_EQ(roots.error().message,
            "image 'deep': layer " + r.layers[1].diff_id + " is gone from the image store: pull it again");
  EXPECT_TRUE(fs::is_empty(dir_ + "/images/layers/tmp"));
}

// A rename into place that fails otherwise than to a flattened layer made meanwhile leaves nothing in layers/tmp.
TEST_F(DeepImageTest, AFlattenThatCannotBeRenamedIntoPlaceIsDiscarded) {
  const ImageRecord r = Deep("acme", "deep", 129, 0, 'a');
  ASSERT_TRUE(store_->Put(r).ok());
  const std::string chain = ChainId(r.layers, 2);
  std::ofstream(store_->LayerRoot(chain).parent_path()) << "not a directory";
  auto roots = store_->StackedLayerRoots(r);
  ASSERT_FALSE(roots.ok());
  EXPECT_EQ(roots.error().code, Code::kInternal);
  EXPECT_EQ(roots.error().message, "image store: move layer " + chain + " into place: Not a directory");
  EXPECT_TRUE(fs::is_empty(dir_ + "/images/layers/tmp"));
  fs::remove(store_->LayerRoot(chain).parent_path());
}

// The bound of a flatten is what its layers hold on disk, not what their records say: a layer recorded with
// unpacked_bytes 0 (an org's re-pull of a layer it held once recorded it so) does not stop a legitimate flatten.
TEST_F(DeepImageTest, AFlattenIsBoundedByWhatItsLayersHoldNotByTheirRecords) {
  ImageRecord r = Deep("acme", "deep", 129, 0, 'a');
  r.layers[0].unpacked_bytes = r.layers[1].unpacked_bytes = 0;
  ASSERT_TRUE(store_->Put(r).ok());
  std::vector<FlattenRequest> asked;
  auto roots = store_->StackedLayerRoots(r, [&](const FlattenRequest& req) {
    asked.push_back(req);
    return Status();
  });
  ASSERT_TRUE(roots.ok()) << roots.error().message;
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].image, "deep");
  EXPECT_EQ(asked[0].layers, 129u);
  EXPECT_EQ(asked[0].count, 2u);
  EXPECT_EQ(asked[0].max_bytes, 2u * (1 + 71));  // each layer's "l<i>" and "f"
  EXPECT_EQ(Read(store_->LayerRoot(ChainId(r.layers, 2)).parent_path().string() + "/bytes"), "144");
}

// The caller is asked before a flatten is made, with its bound; its refusal is the answer and nothing is made. A
// layer stored already is used without asking.
TEST_F(DeepImageTest, AFlattenIsAskedForFirstAndARefusalMakesNothing) {
  const ImageRecord r = Deep("acme", "deep", 130, 3, 'a');
  ASSERT_TRUE(store_->Put(r).ok());
  const std::string chain = ChainId(r.layers, 3);
  std::vector<FlattenRequest> asked;
  auto roots = store_->StackedLayerRoots(r, [&](const FlattenRequest& req) -> Status {
    asked.push_back(req);
    return Error::Of(Code::kForbidden, "no room");
  });
  ASSERT_FALSE(roots.ok());
  EXPECT_EQ(roots.error().code, Code::kForbidden);
  EXPECT_EQ(roots.error().message, "no room");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].layers, 130u);
  EXPECT_EQ(asked[0].count, 3u);
  EXPECT_EQ(asked[0].max_bytes, 216u);
  EXPECT_FALSE(store_->HasLayer(chain));
  EXPECT_TRUE(fs::is_empty(dir_ + "/images/layers/tmp"));

  ASSERT_TRUE(store_->StackedLayerRoots(r, [](const FlattenRequest&) { return Status(); }).ok());
  EXPECT_TRUE(store_->HasLayer(chain));
  roots = store_->StackedLayerRoots(r, [](const FlattenRequest&) -> Status { return Error::Msg("asked"); });
  ASSERT_TRUE(roots.ok()) << roots.error().message;
  EXPECT_EQ(roots->front(), store_->LayerRoot(chain).string());
}

// A flattened layer takes disk like a layer: each org whose images need it is charged once what its flatten wrote
// (its bytes file), or its layers' unpacked bytes for one made without that file; one not made yet takes nothing.
TEST_F(DeepImageTest, AFlattenedLayerIsChargedOnceToEachOrgWhoseImagesNeedIt) {
  const ImageRecord acme = Deep("acme", "deep", 130, 3, 'a');
  ASSERT_TRUE(store_->Put(acme).ok());
  constexpr uint64_t kImage = 130 * 100 + 130 * 1;  // unpacked bytes and blobs of 130 layers
  EXPECT_EQ(store_->OrgBytes("acme"), kImage);
  ASSERT_TRUE(store_->StackedLayerRoots(acme).ok());
  const std::string chain_dir = store_->LayerRoot(ChainId(acme.layers, 3)).parent_path().string();
  EXPECT_EQ(Read(chain_dir + "/bytes"), "216");  // "l0" "l1" "l2" of 1 byte, "f" of 71 three times
  EXPECT_EQ(store_->OrgBytes("acme"), kImage + 216);
  // A second image of acme over the same lowest layers: its own 127 layers (blobs shared), the flattened one once.
  ASSERT_TRUE(store_->Put(Deep("acme", "deep2", 130, 3, 'b')).ok());
  EXPECT_EQ(store_->OrgBytes("acme"), kImage + 127 * 100 + 216);
  // Another org needing it is charged too; one needing a flattened layer not made is not.
  ASSERT_TRUE(store_->Put(Deep("beta", "other", 130, 3, 'b')).ok());
  EXPECT_EQ(store_->OrgBytes("beta"), kImage + 216);
  ASSERT_TRUE(store_->Put(Deep("gamma", "g", 129, 0, 'd')).ok());
  EXPECT_EQ(store_->OrgBytes("gamma"), 129u * 100 + 129 * 1);
  // A flattened layer without its bytes file: its three layers' unpacked bytes.
  fs::remove(chain_dir + "/bytes");
  EXPECT_EQ(store_->OrgBytes("beta"), kImage + 300);
}

// The org's record of a layer it holds: the one with the most unpacked bytes, which a pull that reuses the layer
// copies; nothing for a layer only another org holds.
TEST_F(ImageStoreTest, HeldLayerIsTheOrgsRecordOfTheLayerWithItsUnpackedBytes) {
  ImageRecord one = Record("acme", "docker.io/library/a:1", 'e', {'a', 'b'});
  ImageRecord two = Record("acme", "docker.io/library/a:2", 'f', {'a'});
  one.layers[0].unpacked_bytes = 0;
  two.layers[0].unpacked_bytes = 4096;
  for (char l : {'a', 'b'}) Layer(Sha(l));
  for (const ImageRecord& r : {one, two}) ASSERT_TRUE(store_->Put(r).ok());
  std::optional<LayerRecord> held = store_->HeldLayer("acme", Sha('a'));
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(*held, two.layers[0]);
  EXPECT_EQ(store_->HeldLayer("acme", Sha('b')), one.layers[1]);
  EXPECT_EQ(store_->HeldLayer("globex", Sha('a')), std::nullopt);
  EXPECT_EQ(store_->HeldLayer("acme", Sha('c')), std::nullopt);
}

}  // namespace
}  // namespace isb::image
