#include "image/blob_store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "base/file.h"
#include "image/registry_fixture.h"

namespace isb::image {
namespace {

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return {"<cannot open " + dir + ">"};
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

class BlobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<testing::TempDir> dir = testing::TempDir::Make("isb-blob-store-");
    ASSERT_TRUE(dir.ok()) << dir.error().message;
    dir_.emplace(std::move(*dir));
    Result<BlobStore> store = BlobStore::Open(dir_->path());
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_.emplace(std::move(*store));
  }
  void TearDown() override {
    std::string path = dir_->path();
    dir_.reset();
    EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " was left behind";
  }

  std::optional<testing::TempDir> dir_;
  std::optional<BlobStore> store_;
};

TEST_F(BlobStoreTest, APutBlobIsThereUnderItsDigestReadOnly) {
  Digest d = DigestOf("layer bytes");
  ASSERT_TRUE(store_->Put(d, "layer bytes").ok());
  EXPECT_TRUE(store_->Has(d));
  EXPECT_EQ(store_->Path(d), dir_->path() + "/blobs/sha256/" + d.hex);
  EXPECT_EQ(*ReadFile(store_->Path(d)), "layer bytes");
  struct stat st;
  ASSERT_EQ(stat(store_->Path(d).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
  Result<Fd> fd = store_->OpenBlob(d);
  ASSERT_TRUE(fd.ok());
  char buf[32];
  EXPECT_EQ(read(fd->get(), buf, sizeof buf), 11);
  EXPECT_TRUE(Names(store_->TempDir()).empty());
}

TEST_F(BlobStoreTest, RemoveDeletesAndAMissingBlobIsNotFound) {
  Digest d = DigestOf("x");
  ASSERT_TRUE(store_->Put(d, "x").ok());
  ASSERT_TRUE(store_->Remove(d).ok());
  EXPECT_FALSE(store_->Has(d));
  Status again = store_->Remove(d);
  EXPECT_EQ(again.error().code, Code::kNotFound);
  EXPECT_EQ(again.error().message, "blob store: no blob " + d.str());
  EXPECT_EQ(store_->OpenBlob(d).error().message, "blob store: no blob " + d.str());
}

TEST_F(BlobStoreTest, BytesWithAnotherDigestAreRefusedAndNothingIsLeft) {
  Digest d = DigestOf("the real layer");
  Status s = store_->Put(d, "a forged layer", "layer");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "layer " + d.Short() + "\u2026: digest mismatch (got " + DigestOf("a forged layer").str() + ")");
  EXPECT_FALSE(store_->Has(d));
  EXPECT_TRUE(Names(dir_->path() + "/blobs/sha256").empty());
  EXPECT_TRUE(Names(store_->TempDir()).empty());
}

TEST_F(BlobStoreTest, AWriterDroppedBeforeCommitLeavesNothing) {
  Digest d = DigestOf("abcdef");
  {
    Result<BlobWriter> w = store_->Begin(d, 6);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->Write("abc").ok());
    EXPECT_EQ(Names(store_->TempDir()).size(), 1u);
  }
  EXPECT_FALSE(store_->Has(d));
  EXPECT_TRUE(Names(store_->TempDir()).empty());
}

TEST_F(BlobStoreTest, AWriterRefusesMoreBytesThanDeclaredAtOnce) {
  Digest d = DigestOf("abc");
  Result<BlobWriter> w = store_->Begin(d, 3, "config");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->Write("abcd").error().message, "config " + d.Short() + "\u2026: more bytes than its declared size of 3");
  EXPECT_TRUE(Names(store_->TempDir()).empty());
  EXPECT_EQ(w->Commit().error().message, "blob store: commit after the blob was committed or discarded");
}

TEST_F(BlobStoreTest, ConcurrentWritersOfOneDigestAllSucceedWithOneWholeBlob) {
  std::string bytes(1 << 20, 'q');
  for (size_t i = 0; i < bytes.size(); i += 4096) bytes[i] = static_cast<char>(i / 4096);
  Digest d = DigestOf(bytes);
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Result<BlobWriter> w = store_->Begin(d, bytes.size());
      if (!w.ok()) return;
      for (size_t i = 0; i < bytes.size(); i += 65536)
        if (!w->Write(std::string_view(bytes).substr(i, 65536)).ok()) return;
      ok[t] = w->Commit().ok();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, std::vector<int>(8, 1));
  EXPECT_EQ(*ReadFile(store_->Path(d)), bytes);
  EXPECT_TRUE(Names(store_->TempDir()).empty());
}

TEST_F(BlobStoreTest, CleanTempRemovesWhatACrashedWriterLeft) {
  ASSERT_TRUE(WriteFile(store_->TempDir() + "/0123456789abcdef.Xy12Zq", "partial").ok());
  ASSERT_TRUE(store_->CleanTemp().ok());
  EXPECT_TRUE(Names(store_->TempDir()).empty());
}

TEST_F(BlobStoreTest, ADigestThatIsNotOneIsRefusedBeforeAnyPathIsMade) {
  Digest forged{"sha256", "../../etc/passwd"};
  EXPECT_EQ(store_->Begin(forged, 1).error().code, Code::kInvalidArgument);
  EXPECT_EQ(store_->OpenBlob(forged).error().code, Code::kInvalidArgument);
  EXPECT_EQ(store_->Remove(forged).error().code, Code::kInvalidArgument);
  EXPECT_FALSE(store_->Has(forged));
}

}  // namespace
}  // namespace isb::image
