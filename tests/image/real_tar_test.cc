// Archives made by the real tools: GNU tar in its gnu and pax formats (long names, hardlinks, symlinks, xattrs,
// owners, set-id), compressed by gzip(1) and zstd(1), unpacked to the same tree as their source.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/file.h"
#include "image/decompress.h"
#include "image/layer_fixture.h"

namespace isb::image::testing {
namespace {

using Lines = std::vector<std::string>;

class RealTarTest : public LayerTest {
 protected:
  void SetUp() override {
    LayerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(std::system("command -v tar gzip zstd >/dev/null"), 0) << "tar, gzip and zstd are needed";
    src_ = base_ + "/src";
    const std::string long_dir = src_ + "/" + std::string(90, 'd') + "/" + std::string(80, 'e');
    std::filesystem::create_directories(long_dir);
    std::filesystem::create_directories(src_ + "/ro");
    Write(long_dir + "/long-named-file", "deep");
    Write(src_ + "/ro/file", "read only");
    Write(src_ + "/owned", "by 1000");
    Write(src_ + "/su", "setuid");
    Write(src_ + "/noted", "with xattr");
    ASSERT_EQ(::chown((src_ + "/owned").c_str(), 1000, 1001), 0);
    ASSERT_EQ(::chmod((src_ + "/su").c_str(), 04755), 0);
    ASSERT_EQ(::chmod((src_ + "/ro").c_str(), 0555), 0);
    ASSERT_EQ(::setxattr((src_ + "/noted").c_str(), "user.note", "hi", 2, 0), 0);
    std::filesystem::create_symlink("ro/file", src_ + "/link");
    std::filesystem::create_hard_link(src_ + "/owned", src_ + "/owned.hard");
    ASSERT_EQ(::chmod(src_.c_str(), 0755), 0);
  }

  void Write(const std::string& path, const std::string& data) {
    ASSERT_TRUE(WriteFile(path, data, 0644).ok()) << path;
    ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  }

  // `command` run in base_, which must make `archive`; then that archive unpacked into a fresh directory.
  Result<UnpackReport> MakeAndUnpack(const std::string& command, const std::string& archive, Compression expect) {
    EXPECT_EQ(std::system(("cd " + base_ + " && " + command).c_str()), 0) << command;
    Fd fd(::open((base_ + "/" + archive).c_str(), O_RDONLY | O_CLOEXEC));
    EXPECT_TRUE(fd.valid()) << archive;
    uint8_t magic[4] = {};
    EXPECT_EQ(::pread(fd.get(), magic, sizeof magic, 0), 4);
    EXPECT_EQ(SniffCompression(magic), expect);
    FdSource file(fd.get());
    std::unique_ptr<ByteSource> plain = Decompressing(file, SniffCompression(magic), 1 << 30);
    TarReader reader(*plain);
    return UnpackLayer(reader, dir(), {1 << 30, 10000});
  }

  // The source's tree as the unpacked one must look: the same, its set-id bit gone.
  Lines Expected() {
    Lines want = Tree(src_);
    for (std::string& line : want) {
      if (line.starts_with("su ")) line = "su f0755 0:0 =setuid";
    }
    return want;
  }

  void ExpectSameTree(const Result<UnpackReport>& r) {
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(Tree(dir()), Expected());
    EXPECT_EQ(r->setid_stripped, 1u);
    EXPECT_EQ(r->hardlinks, 1u);
    EXPECT_EQ(r->symlinks, 1u);
    struct stat a, b;
    ASSERT_EQ(::stat((dir() + "/owned").c_str(), &a), 0);
    ASSERT_EQ(::stat((dir() + "/owned.hard").c_str(), &b), 0);
    EXPECT_EQ(a.st_ino, b.st_ino);
    struct stat s, d;
    ASSERT_EQ(::stat((src_ + "/ro").c_str(), &s), 0);
    ASSERT_EQ(::stat((dir() + "/ro").c_str(), &d), 0);
    EXPECT_EQ(s.st_mtim.tv_sec, d.st_mtim.tv_sec);
  }

  std::string src_;
};

TEST_F(RealTarTest, AGnuFormatArchiveWithLongNamesUnpacksToTheSameTree) {
  ExpectSameTree(MakeAndUnpack("tar --format=gnu -C src -cf gnu.tar .", "gnu.tar", Compression::kNone));
}

TEST_F(RealTarTest, APaxArchiveWithXattrsCompressedByGzipUnpacksToTheSameTree) {
  Result<UnpackReport> r =
      MakeAndUnpack("tar --format=pax --xattrs --xattrs-include='user.*' -C src -cf pax.tar . && gzip pax.tar",
                    "pax.tar.gz", Compression::kGzip);
  ExpectSameTree(r);
  EXPECT_EQ(Xattr(dir() + "/noted", "user.note"), "hi");
}

TEST_F(RealTarTest, AZstdCompressedArchiveUnpacksToTheSameTree) {
  ExpectSameTree(
      MakeAndUnpack("tar --format=posix -C src -cf z.tar . && zstd -q --rm z.tar", "z.tar.zst", Compression::kZstd));
}

}  // namespace
}  // namespace isb::image::testing
