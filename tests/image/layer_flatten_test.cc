// The flattener over layers the unpacker made in the test from tars: whiteouts, opaque directories, replacements,
// merges, hardlinks, symlinks never followed, what a file and a directory keep, limits; each test asserts the whole
// tree left in the result.
#include "image/layer_flatten.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "image/layer_fixture.h"
#include "image/layer_unpack.h"
#include "image/tar_builder.h"

namespace isb::image::testing {
namespace {

using Lines = std::vector<std::string>;

// LayerTest's dir() is the result; the layers are made beside it.
class FlattenTest : public LayerTest {
 protected:
  void TearDown() override {
    // The layers are as the unpacker left them.
    for (size_t i = 0; i < layers_.size(); ++i) EXPECT_EQ(Tree(layers_[i]), trees_[i]) << layers_[i];
    LayerTest::TearDown();
  }

  std::string out() const { return dir(); }

  // A layer unpacked from `tar`, stacked above the ones before it.
  void Layer(const std::string& tar) {
    const std::string layer = base_ + "/l" + std::to_string(layers_.size());
    ASSERT_EQ(::mkdir(layer.c_str(), 0700), 0);
    StringSource source(tar);
    TarReader reader(source);
    Result<UnpackReport> r = UnpackLayer(reader, layer, UnpackLimits{1 << 30, 1 << 20});
    ASSERT_TRUE(r.ok()) << r.error().message;
    layers_.push_back(layer);
    trees_.push_back(Tree(layer));
  }

  Result<FlattenReport> Flatten(FlattenLimits limits = {1 << 30, 1 << 20}) {
    return FlattenLayers(layers_, out(), limits);
  }
  // Flatten into a fresh result directory.
  Result<FlattenReport> FlattenAgain(FlattenLimits limits) {
    std::filesystem::remove_all(out());
    EXPECT_EQ(::mkdir(out().c_str(), 0700), 0);
    return Flatten(limits);
  }

  static struct stat Stat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
  }

  std::vector<std::string> layers_;
  std::vector<Lines> trees_;
};

TEST_F(FlattenTest, AWhiteoutRemovesAFileOrADirectoryBelowAndLeavesNothing) {
  ASSERT_NO_FATAL_FAILURE(
      Layer(TarBuilder().File("a/f", "f").File("a/g", "g").File("d/x/y", "y").File(".wh.never", "").End()));
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder().File("a/.wh.f", "").File(".wh.d", "").File(".wh.absent", "").End()));
  Result<FlattenReport> r = Flatten();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(out()), (Lines{"a d0755 0:0", "a/g f0644 0:0 =g"}));
  EXPECT_EQ(r->files, 3u);
  EXPECT_EQ(r->dirs, 3u);
  EXPECT_EQ(r->removed, 2u);
  EXPECT_EQ(r->bytes, 3u);
}

TEST_F(FlattenTest, AnOpaqueDirectoryReplacesTheOneBelowWhollyAndIsNotMarkedInTheResult) {
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder().File("o/old", "old").File("o/sub/z", "z").File("p/kept", "k").End()));
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder().File("o/.wh..wh..opq", "").File("o/new", "new").End()));
  // A layer root's opaque marker hides nothing: overlayfs always merges the root.
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder().File(".wh..wh..opq", "").File("top", "t").End()));
  ASSERT_EQ(Xattr(layers_[1] + "/o", "user.overlay.opaque"), "y");
  Result<FlattenReport> r = Flatten();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(out()),
            (Lines{"o d0755 0:0", "o/new f0644 0:0 =new", "p d0755 0:0", "p/kept f0644 0:0 =k", "top f0644 0:0 =t"}));
  for (const std::string& dir : {out(), out() + "/o"}) {
    EXPECT_EQ(Xattr(dir, "trusted.overlay.opaque"), "<none>") << dir;
    EXPECT_EQ(Xattr(dir, "user.overlay.opaque"), "<none>") << dir;
  }
}

TEST_F(FlattenTest, ADirectoryOverADirectoryMergesAndTakesTheUpperOnesOwnerModeTimeAndXattrs) {
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder()
                                    .Pax({{"SCHILY.xattr.user.a", "1"}})
                                    .Entry({.name = "d/", .type = '5', .mode = 0700, .uid = 5, .gid = 5, .mtime = 100})
                                    .File("d/a", "a")
                                    .File("d/both", "lower")
                                    .End()));
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder()
                                    .Pax({{"SCHILY.xattr.user.b", "2"}})
                                    .Entry({.name = "d/", .type = '5', .mode = 0750, .uid = 6, .gid = 7, .mtime = 200})
                                    .File("d/b", "b")
                                    .File("d/both", "upper")
                                    .End()));
  Result<FlattenReport> r = Flatten();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(out()), (Lines{"d d0750 6:7", "d/a f0644 0:0 =a", "d/b f0644 0:0 =b", "d/both f0644 0:0 =upper"}));
  EXPECT_EQ(Xattr(out() + "/d", "user.a"), "<none>");
  EXPECT_EQ(Xattr(out() + "/d", "user.b"), "2");
  EXPECT_EQ(Stat(out() + "/d").st_mtim.tv_sec, 200);
}

TEST_F(FlattenTest, AFileReplacesADirectoryAndADirectoryAFile) {
  ASSERT_NO_FATAL_FAILURE(
      Layer(TarBuilder().File("x", "file-x").File("y/in", "deep").File("y/sub/in", "deeper").End()));
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder().File("x/in", "now-a-dir").File("y", "file-y").End()));
  Result<FlattenReport> r = Flatten();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(out()), (Lines{"x d0755 0:0", "x/in f0644 0:0 =now-a-dir", "y f0644 0:0 =file-y"}));
  EXPECT_EQ(r->removed, 2u);
}

TEST_F(FlattenTest, FilesHardlinkedInALayerStayHardlinkedAndAnUpperLayerReplacesOneNameOnly) {
  ASSERT_NO_FATAL_FAILURE(Layer(
      TarBuilder().File("h/a", "data").Hardlink("h/b", "h/a").Hardlink("other/c", "h/a").File("h/solo", "s").End()));
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder().File("h/b", "new").End()));
  Result<FlattenReport> r = Flatten();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(out()), (Lines{"h d0755 0:0", "h/a f0644 0:0 =data", "h/b f0644 0:0 =new", "h/solo f0644 0:0 =s",
                                "other d0755 0:0", "other/c f0644 0:0 =data"}));
  const struct stat a = Stat(out() + "/h/a"), b = Stat(out() + "/h/b"), c = Stat(out() + "/other/c");
  EXPECT_EQ(a.st_ino, c.st_ino);
  EXPECT_NE(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_nlink, 2u);
  EXPECT_EQ(b.st_nlink, 1u);
  EXPECT_EQ(Stat(out() + "/h/solo").st_nlink, 1u);
  // The result's files are its own: not the layers' inodes.
  EXPECT_NE(a.st_ino, Stat(layers_[0] + "/h/a").st_ino);
  // One copy of the linked file and one of h/solo from the first layer, h/b from the second; two links.
  EXPECT_EQ(r->files, 3u);
  EXPECT_EQ(r->hardlinks, 2u);
}

TEST_F(FlattenTest, ASymlinkPointingOutsideIsCopiedAsItIsAndNeverFollowed) {
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder()
                                    .Symlink("s", outside())
                                    .Symlink("up", "../outside")
                                    .Symlink("gone", outside() + "/secret")
                                    .Symlink("file", outside() + "/secret")
                                    .Symlink("kept", outside() + "/secret")
                                    .End()));
  // Over each symlink: a directory with a file in it, a whiteout, a file; a directory into `up` that is a symlink.
  ASSERT_NO_FATAL_FAILURE(
      Layer(TarBuilder().File("s/secret", "layer").File(".wh.gone", "").File("file", "mine").File("up/x", "x").End()));
  Result<FlattenReport> r = Flatten();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(out()), (Lines{"file f0644 0:0 =mine", "kept l0:0 ->" + outside() + "/secret", "s d0755 0:0",
                                "s/secret f0644 0:0 =layer", "up d0755 0:0", "up/x f0644 0:0 =x"}));
}

TEST_F(FlattenTest, OwnersModesMtimesAndKeptXattrsArePreservedAndSetIdBitsStayStripped) {
  ASSERT_NO_FATAL_FAILURE(
      Layer(TarBuilder()
                .Entry({.name = "./", .type = '5', .mode = 0700, .mtime = 10})
                .Pax({{"mtime", "1600000000.25"}, {"SCHILY.xattr.user.note", "hello"}})
                .Entry({.name = "bin/tool", .mode = 06755, .uid = 1000, .gid = 1001}, "#!")
                .Entry({.name = "ro/", .type = '5', .mode = 0555, .uid = 3, .gid = 4, .mtime = 3000})
                .File("ro/inside", "x", 0444)
                .Entry({.name = "ln", .type = '2', .uid = 8, .gid = 9, .mtime = 77, .link = "bin/tool"})
                .Entry({.name = "tmp/", .type = '5', .mode = 01777, .mtime = 400})
                .End()));
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder()
                                    .Entry({.name = "./", .type = '5', .mode = 0751, .uid = 2, .gid = 2, .mtime = 20})
                                    .File("tmp/new", "n")
                                    .End()));
  // The upper layer's tmp/ was made for its file (0755, now): that is the directory overlayfs shows.
  const struct stat made = Stat(layers_[1] + "/tmp");
  Result<FlattenReport> r = Flatten();
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Before Tree reads it (a read moves atime on).
  const struct stat tool = Stat(out() + "/bin/tool");
  EXPECT_EQ(Tree(out()), (Lines{"bin d0755 0:0", "bin/tool f0755 1000:1001 =#!", "ln l8:9 ->bin/tool", "ro d0555 3:4",
                                "ro/inside f0444 0:0 =x", "tmp d0755 0:0", "tmp/new f0644 0:0 =n"}));
  EXPECT_EQ(tool.st_mtim.tv_sec, 1600000000);
  EXPECT_EQ(tool.st_mtim.tv_nsec, 250000000);
  EXPECT_EQ(tool.st_atim.tv_sec, 1600000000);
  EXPECT_EQ(Xattr(out() + "/bin/tool", "user.note"), "hello");
  EXPECT_EQ(Stat(out() + "/ro").st_mtim.tv_sec, 3000);
  EXPECT_EQ(Stat(out() + "/ln").st_mtim.tv_sec, 77);
  EXPECT_EQ(Stat(out() + "/tmp").st_mtim.tv_sec, made.st_mtim.tv_sec);
  const struct stat root = Stat(out());
  EXPECT_EQ(root.st_mode & 07777, 0751u);
  EXPECT_EQ(root.st_uid, 2u);
  EXPECT_EQ(root.st_mtim.tv_sec, 20);
}

TEST_F(FlattenTest, TheLimitsStopAFlattenNamingThem) {
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder().File("a", "12345").File("b", "67890").End()));
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder().File("c", "x").End()));
  Result<FlattenReport> bytes = Flatten({.max_bytes = 10, .max_entries = 100});
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.error().code, Code::kTooLarge);
  EXPECT_EQ(bytes.error().message,
            "flatten: layer 2 of 2, entry \"c\": the result's files take more than 10 bytes (the limit max_bytes)");
  Result<FlattenReport> entries = FlattenAgain({.max_bytes = 100, .max_entries = 2});
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.error().code, Code::kTooLarge);
  EXPECT_EQ(entries.error().message,
            "flatten: layer 2 of 2, entry \"c\": the result has more than 2 names (the limit max_entries)");
  Result<FlattenReport> exact = FlattenAgain({.max_bytes = 11, .max_entries = 3});
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  EXPECT_EQ(exact->bytes, 11u);
}

TEST_F(FlattenTest, ANodeNoStoredLayerHoldsIsRefused) {
  ASSERT_NO_FATAL_FAILURE(Layer(TarBuilder().File("f", "f").End()));
  // Not something the unpacker makes: placed in the stored layer behind its back.
  ASSERT_EQ(::mkfifo((layers_[0] + "/pipe").c_str(), 0600), 0);
  trees_[0] = Tree(layers_[0]);
  Result<FlattenReport> r = Flatten();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "flatten: layer 1 of 1, entry \"pipe\": a device, fifo or socket, which no stored layer holds");
}

// Removes `name` in `dir` and all below it through fds: for a tree deeper than one path reaches.
void RemoveBeneath(int dir, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr) {
      std::vector<std::string> names;
      while (const dirent* e = ::readdir(d)) {
        if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") names.push_back(e->d_name);
      }
      for (const std::string& child : names) RemoveBeneath(::dirfd(d), child);
      ::closedir(d);
    }
  }
  ::unlinkat(dir, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
}

// A directory whose path below the layer is 4096 bytes, as long as the unpacker takes: the flattener opens it one name
// at a time, so it gets its mode at the end like any other (one open of the whole path fails: ENAMETOOLONG).
TEST(FlattenLongPathTest, ADirectoryWhosePathIs4096BytesGetsItsMode) {
  ISB_REQUIRE_ROOT();
  char tmpl[] = "/tmp/isb-flatten-long-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  // Removed whatever the test's outcome.
  struct Cleanup {
    const std::string& base;
    ~Cleanup() {
      const int top = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      RemoveBeneath(top, "l0");
      RemoveBeneath(top, "out");
      ::close(top);
      EXPECT_EQ(::rmdir(base.c_str()), 0) << "left behind below " << base;
    }
  } cleanup{base};
  ASSERT_EQ(::mkdir((base + "/l0").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((base + "/out").c_str(), 0700), 0);
  // 15 names of 255 bytes, then 128 and 127: 4080 bytes and 16 slashes.
  std::vector<std::string> names;
  for (int i = 0; i < 15; ++i) names.push_back(std::string(255, static_cast<char>('a' + i)));
  names.push_back(std::string(128, 'p'));
  names.push_back(std::string(127, 'q'));
  std::string path;
  for (const std::string& n : names) path += (path.empty() ? "" : "/") + n;
  ASSERT_EQ(path.size(), 4096u);
  const std::string tar = TarBuilder().GnuLongName(path).Dir(path, 0750).End();
  StringSource source(tar);
  TarReader reader(source);
  Result<UnpackReport> unpacked = UnpackLayer(reader, base + "/l0", UnpackLimits{1 << 30, 1 << 20});
  ASSERT_TRUE(unpacked.ok()) << unpacked.error().message;
  Result<FlattenReport> r = FlattenLayers({base + "/l0"}, base + "/out", FlattenLimits{1 << 30, 1 << 20});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->dirs, 17u);
  int fd = ::open((base + "/out").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (const std::string& n : names) {
    const int next = ::openat(fd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    ::close(fd);
    fd = next;
    ASSERT_GE(fd, 0) << n.substr(0, 8);
  }
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  ::close(fd);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
}

// EraseTree (the flattener's and the unpacker's): a path and what is below it go, and only they are looked at;
// siblings sharing its first bytes ("a!", "a0", "ab") stay, before and after "a/" in the order.
TEST(EraseTreeTest, ErasesAPathAndWhatIsBelowItAndNoSiblingSharingItsFirstBytes) {
  std::map<std::string, DirTimes> dirs;
  for (const char* p : {"a", "a!", "a/b", "a/b/c", "a0", "ab", "b", ""}) dirs[p] = DirTimes{};
  EXPECT_EQ(EraseTree(dirs, "a"), 1u + 3u + 5u);
  Lines left;
  for (const auto& [path, times] : dirs) left.push_back(path);
  EXPECT_EQ(left, (Lines{"", "a!", "a0", "ab", "b"}));
  std::set<std::string> names = {"x", "x/y", "x-", "xy"};
  EXPECT_EQ(EraseTree(names, "x/y"), 3u);
  EXPECT_EQ(EraseTree(names, "z"), 0u);
  EXPECT_EQ(names, (std::set<std::string>{"x", "x-", "xy"}));
}

}  // namespace
}  // namespace isb::image::testing
