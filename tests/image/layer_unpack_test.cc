// The layer unpacker on well-formed layers: ownership, modes, mtimes, set-id bits, xattrs, whiteouts, names that
// collide, limits; each test asserts the whole tree left on disk.
#include "image/layer_unpack.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "image/decompress.h"
#include "image/layer_fixture.h"
#include "image/tar_builder.h"
#include "secrets/zlib_whole.h"

namespace isb::image::testing {
namespace {

using Lines = std::vector<std::string>;

int64_t MtimeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mtim.tv_sec;
}

TEST_F(LayerTest, FilesDirectoriesAndLinksLandWithTheirOwnersModesAndTimes) {
  const std::string tar =
      TarBuilder()
          .Entry({.name = "./", .type = '5', .mode = 0750, .mtime = 500})
          .Entry({.name = "etc/", .type = '5', .mode = 0750, .gid = 42, .mtime = 1000})
          .Entry({.name = "etc/hosts", .mode = 0640, .uid = 1000, .gid = 1001, .mtime = 2000}, "hosts")
          .Symlink("etc/link", "/etc/hosts")
          .Hardlink("etc/hosts.bak", "etc/hosts")
          .Entry({.name = "ro/", .type = '5', .mode = 0555, .mtime = 3000})
          .File("ro/inside", "x", 0444)
          .End();
  Result<UnpackReport> r = Unpack(tar);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()),
            (Lines{"etc d0750 0:42", "etc/hosts f0640 1000:1001 =hosts", "etc/hosts.bak f0640 1000:1001 =hosts",
                   "etc/link l0:0 ->/etc/hosts", "ro d0555 0:0", "ro/inside f0444 0:0 =x"}));
  EXPECT_EQ(r->files, 2u);
  EXPECT_EQ(r->dirs, 3u);
  EXPECT_EQ(r->symlinks, 1u);
  EXPECT_EQ(r->hardlinks, 1u);
  EXPECT_EQ(r->bytes, 6u);
  EXPECT_EQ(r->setid_stripped, 0u);
  EXPECT_TRUE(r->skipped.empty());
  struct stat root;
  ASSERT_EQ(::stat(dir().c_str(), &root), 0);
  EXPECT_EQ(root.st_mode & 07777, 0750u);
  EXPECT_EQ(root.st_mtim.tv_sec, 500);
  EXPECT_EQ(MtimeOf(dir() + "/etc"), 1000);
  EXPECT_EQ(MtimeOf(dir() + "/etc/hosts"), 2000);
  EXPECT_EQ(MtimeOf(dir() + "/etc/link"), 1700000000);
  EXPECT_EQ(MtimeOf(dir() + "/ro"), 3000);
}

TEST_F(LayerTest, PaxNanosecondsReachTheFile) {
  ASSERT_TRUE(Unpack(TarBuilder().Pax({{"mtime", "1600000000.5"}}).File("f", "").End()).ok());
  struct stat st;
  ASSERT_EQ(::stat((dir() + "/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 1600000000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 500000000);
}

TEST_F(LayerTest, MissingParentsAreMadeAsRootOwned0755Directories) {
  ASSERT_TRUE(Unpack(TarBuilder().File("a/b/c", "deep").End()).ok());
  EXPECT_EQ(Tree(dir()), (Lines{"a d0755 0:0", "a/b d0755 0:0", "a/b/c f0644 0:0 =deep"}));
}

TEST_F(LayerTest, SetIdBitsAreStrippedOnDiskAndCountedStickyStays) {
  Result<UnpackReport> r = Unpack(TarBuilder()
                                      .File("bin/su", "su", 04755)
                                      .File("bin/wall", "wall", 02755)
                                      .Dir("shared", 02775)
                                      .Dir("tmp", 01777)
                                      .End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"bin d0755 0:0", "bin/su f0755 0:0 =su", "bin/wall f0755 0:0 =wall", "shared d0775 0:0",
                                "tmp d1777 0:0"}));
  EXPECT_EQ(r->setid_stripped, 3u);
}

TEST_F(LayerTest, UserXattrsAreKeptAndEveryOtherNamespaceIsDroppedAndListed) {
  Result<UnpackReport> r = Unpack(TarBuilder()
                                      .Pax({{"SCHILY.xattr.user.note", "hello"},
                                            {"SCHILY.xattr.security.capability", "\x01\x00\x00\x02"},
                                            {"SCHILY.xattr.trusted.overlay.opaque", "y"},
                                            {"SCHILY.xattr.user.overlay.redirect", "/x"},
                                            {"SCHILY.xattr.system.posix_acl_access", "acl"}})
                                      .File("bin/ping", "ping", 0755)
                                      .Pax({{"SCHILY.xattr.user.dir", "d"}})
                                      .Dir("d")
                                      .End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Xattr(dir() + "/bin/ping", "user.note"), "hello");
  EXPECT_EQ(Xattr(dir() + "/bin/ping", "security.capability"), "<none>");
  EXPECT_EQ(Xattr(dir() + "/bin/ping", "trusted.overlay.opaque"), "<none>");
  EXPECT_EQ(Xattr(dir() + "/bin/ping", "user.overlay.redirect"), "<none>");
  EXPECT_EQ(Xattr(dir() + "/d", "user.dir"), "d");
  EXPECT_EQ(
      r->skipped,
      (Lines{"bin/ping: xattr security.capability dropped", "bin/ping: xattr trusted.overlay.opaque dropped",
             "bin/ping: xattr user.overlay.redirect dropped", "bin/ping: xattr system.posix_acl_access dropped"}));
}

TEST_F(LayerTest, WhiteoutsBecomeCharacterDevicesAndOpaqueMarkersXattrs) {
  Result<UnpackReport> r = Unpack(TarBuilder()
                                      .Dir("a")
                                      .File("a/keep", "k")
                                      .File("a/gone", "g")
                                      .File("a/.wh.gone", "")
                                      .File("a/.wh.lower", "")
                                      .File("a/.wh..wh.plnk", "")
                                      .File("b/.wh..wh..opq", "")
                                      .Dir("c")
                                      .File("c/f", "x")
                                      .File(".wh.c", "")
                                      .End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"a d0755 0:0", "a/gone c0000 0:0 0/0", "a/keep f0644 0:0 =k", "a/lower c0000 0:0 0/0",
                                "b d0755 0:0", "c c0000 0:0 0/0"}));
  EXPECT_EQ(Xattr(dir() + "/b", "trusted.overlay.opaque"), "y");
  EXPECT_EQ(Xattr(dir() + "/b", "user.overlay.opaque"), "y");
  EXPECT_EQ(Xattr(dir() + "/a", "trusted.overlay.opaque"), "<none>");
  EXPECT_EQ(r->whiteouts, 3u);
  EXPECT_EQ(r->opaque_dirs, 1u);
  EXPECT_EQ(r->files, 3u);
  EXPECT_EQ(r->skipped, (Lines{"a/.wh..wh.plnk: reserved whiteout name skipped"}));
}

TEST_F(LayerTest, AnOpaqueMarkerKeepsWhatTheSameLayerPutInTheDirectory) {
  ASSERT_TRUE(Unpack(TarBuilder().Dir("d").File("d/mine", "m").File("d/.wh..wh..opq", "").End()).ok());
  EXPECT_EQ(Tree(dir()), (Lines{"d d0755 0:0", "d/mine f0644 0:0 =m"}));
  EXPECT_EQ(Xattr(dir() + "/d", "trusted.overlay.opaque"), "y");
}

TEST_F(LayerTest, AWhiteoutOfNoNameIsRefused) {
  for (const std::string name : {".wh.", "a/.wh..", "a/.wh..."}) {
    Result<UnpackReport> r = Unpack(TarBuilder().File(name, "").End());
    ASSERT_FALSE(r.ok()) << name;
    const std::string leaf = name.substr(name.rfind('/') + 1);
    EXPECT_EQ(r.error().message, "layer entry \"" + name + "\": a whiteout of no name (\"" + leaf + "\")");
  }
}

TEST_F(LayerTest, DeviceNodesAndFifosAreSkippedAndListed) {
  Result<UnpackReport> r = Unpack(TarBuilder()
                                      .Device("dev/sda", '4', 8, 0)
                                      .Device("dev/null", '3', 1, 3)
                                      .Device("dev/fake-whiteout", '3', 0, 0)
                                      .Entry({.name = "run/fifo", .type = '6'})
                                      .End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), Lines{});
  EXPECT_EQ(r->skipped, (Lines{"dev/sda: device node skipped", "dev/null: device node skipped",
                               "dev/fake-whiteout: device node skipped", "run/fifo: fifo skipped"}));
}

TEST_F(LayerTest, TheSkippedListStopsAtAThousandLinesAndCountsTheRest) {
  TarBuilder tar;
  for (int i = 0; i < 1002; ++i) tar.Entry({.name = "f" + std::to_string(i), .type = '6'});
  Result<UnpackReport> r = Unpack(tar.End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->skipped.size(), 1001u);
  EXPECT_EQ(r->skipped[999], "f999: fifo skipped");
  EXPECT_EQ(r->skipped[1000], "and 2 more skipped");
}

TEST_F(LayerTest, NamesEqualAfterNormalizationAreOneNameAndTheLaterEntryWins) {
  Result<UnpackReport> r = Unpack(TarBuilder().File("a/./b", "one").File("a//b", "two").File("./a/b/", "three").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"a d0755 0:0", "a/b f0644 0:0 =three"}));
  EXPECT_EQ(r->files, 3u);
}

TEST_F(LayerTest, AFileReplacesADirectoryAndAllBelowIt) {
  Result<UnpackReport> r = Unpack(
      TarBuilder().Dir("d", 0500).File("d/in", "x").Dir("d/sub").File("d/sub/deep", "y").File("d", "file").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"d f0644 0:0 =file"}));
}

TEST_F(LayerTest, ADirectoryMadeAgainAfterItsRemovalReceivesTheEntriesThatFollow) {
  Result<UnpackReport> r = Unpack(TarBuilder().File("a/b/f1", "1").File("a", "x").Dir("a").File("a/b/f2", "2").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"a d0755 0:0", "a/b d0755 0:0", "a/b/f2 f0644 0:0 =2"}));
}

TEST_F(LayerTest, ADirectoryReplacesAFile) {
  ASSERT_TRUE(Unpack(TarBuilder().File("e", "x").Dir("e", 0700).File("e/f", "y").End()).ok());
  EXPECT_EQ(Tree(dir()), (Lines{"e d0700 0:0", "e/f f0644 0:0 =y"}));
}

TEST_F(LayerTest, ADirectoryOverADirectoryMergesAndTakesTheLaterMode) {
  ASSERT_TRUE(Unpack(TarBuilder().Dir("m", 0700).File("m/f", "1").Dir("m", 0751).File("m/g", "2").End()).ok());
  EXPECT_EQ(Tree(dir()), (Lines{"m d0751 0:0", "m/f f0644 0:0 =1", "m/g f0644 0:0 =2"}));
}

TEST_F(LayerTest, AFileOverAHardlinkLeavesTheOtherNameAlone) {
  ASSERT_TRUE(Unpack(TarBuilder().File("f", "old").Hardlink("h", "f").File("h", "new").End()).ok());
  EXPECT_EQ(Tree(dir()), (Lines{"f f0644 0:0 =old", "h f0644 0:0 =new"}));
}

TEST_F(LayerTest, ANameWhitedOutAndAddedAgainIsTheNewEntry) {
  ASSERT_TRUE(Unpack(TarBuilder().File("x", "1").File(".wh.x", "").File("x", "2").End()).ok());
  EXPECT_EQ(Tree(dir()), (Lines{"x f0644 0:0 =2"}));
}

TEST_F(LayerTest, AHardlinkToANameRemovedWithItsDirectoryIsRefused) {
  Result<UnpackReport> r = Unpack(TarBuilder().File("d/in", "x").File("d", "f").Hardlink("h", "d/in").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "layer entry \"h\": a hardlink to \"d/in\", which is no file this layer extracted "
            "before it (a hardlink may only name an earlier file of its own layer)");
}

TEST_F(LayerTest, AnEntryBelowAFileIsAnError) {
  Result<UnpackReport> r = Unpack(TarBuilder().File("f", "x").File("f/g", "y").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "layer entry \"f/g\": parent \"f\" is not a directory");
}

TEST_F(LayerTest, TheRootMayOnlyBeNamedAsADirectory) {
  Result<UnpackReport> r = Unpack(TarBuilder().Entry({.name = "./", .type = '2', .link = "/"}).End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "layer entry \"./\": names the layer's root, not as a directory");
}

TEST_F(LayerTest, OwnersOutsideTheImageIdsAreRefused) {
  Result<UnpackReport> r = Unpack(TarBuilder().Entry({.name = "f", .uid = 70000}).End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "layer entry \"f\": owner 70000:0 is outside the image ids 0..65535");
  EXPECT_EQ(Tree(dir()), Lines{});
}

TEST_F(LayerTest, MoreEntriesThanMaxEntriesIsTooLarge) {
  Result<UnpackReport> r =
      Unpack(TarBuilder().File("a", "").File("b", "").File("c", "").File("d", "").End(), {1 << 20, 3});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  EXPECT_EQ(r.error().message,
            "layer: more than 3 entries, missing parent directories made included (the limit max_entries)");
}

TEST_F(LayerTest, EveryMissingParentDirectoryMadeCountsAsAnEntry) {
  std::string deep = "u";
  for (int i = 0; i < 100; ++i) deep += "/a";
  const std::string tar = TarBuilder().Pax({{"path", deep + "/f"}}).File("x", "").End();
  // One tar entry and 101 directories made (u and 100 a's).
  Result<UnpackReport> r = Unpack(tar, {1 << 30, 101});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  EXPECT_EQ(r.error().message,
            "layer: more than 101 entries, missing parent directories made included (the limit max_entries)");
  EXPECT_EQ(Tree(dir()).size(), 100u);
  std::filesystem::remove_all(dir());
  ASSERT_EQ(::mkdir(dir().c_str(), 0700), 0);
  r = Unpack(tar, {1 << 30, 102});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()).size(), 102u);
  EXPECT_EQ(Tree(dir()).back(), deep + "/f f0644 0:0 =");
}

TEST_F(LayerTest, EmptyFilesAreChargedAnEntryAgainstMaxBytes) {
  Result<UnpackReport> r = Unpack(TarBuilder().File("a", "").File("b", "").File("c", "").End(), {1024, 100});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  EXPECT_EQ(r.error().message,
            "layer entry \"c\": the layer takes more than 1024 bytes (the limit max_bytes: file "
            "data, 512 bytes an entry and 4096 a directory made)");
  EXPECT_EQ(Tree(dir()), (Lines{"a f0644 0:0 =", "b f0644 0:0 ="}));
}

TEST_F(LayerTest, DirectoriesMadeDeclaredOrMissingAreChargedAnEntryAndABlockAgainstMaxBytes) {
  for (const std::string& tar : {TarBuilder().Dir("d").End(), TarBuilder().File("p/f", "").End()}) {
    const std::string name = tar.substr(0, tar.find('\0'));
    Result<UnpackReport> r = Unpack(tar, {512 + 4096 - 1, 100});
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code, Code::kTooLarge);
    EXPECT_EQ(r.error().message, "layer entry \"" + name +
                                     "\": the layer takes more than 4607 bytes (the limit "
                                     "max_bytes: file data, 512 bytes an entry and 4096 a directory made)");
    EXPECT_EQ(Tree(dir()), Lines{}) << name;
  }
  Result<UnpackReport> d = Unpack(TarBuilder().Dir("d").End(), {512 + 4096, 100});
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"d d0755 0:0"}));
}

TEST_F(LayerTest, NamesKeptPastMaxNameBytesAreTooLargeAndARemovedNameStopsCounting) {
  // 200-byte names, files and directories alternating: five fit in 1000 bytes.
  auto name = [](int i) { return std::string(195, 'n') + std::to_string(10000 + i); };
  TarBuilder fits;
  for (int i = 0; i < 5; ++i) {
    fits.Pax({{"path", name(i)}});
    if (i % 2 == 0)
      fits.File("x", "");
    else
      fits.Dir("x");
  }
  const UnpackLimits limits{.max_bytes = 1 << 30, .max_entries = 100, .max_name_bytes = 1000};
  TarBuilder removed = fits;
  removed.Pax({{"path", ".wh." + name(0)}}).File("x", "").Pax({{"path", name(5)}}).File("x", "");
  Result<UnpackReport> r = Unpack(removed.End(), limits);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->whiteouts, 1u);

  std::filesystem::remove_all(dir());
  ASSERT_EQ(::mkdir(dir().c_str(), 0700), 0);
  fits.Pax({{"path", name(5)}}).Dir("x");
  r = Unpack(fits.End(), limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  EXPECT_EQ(r.error().message, "layer entry \"" + name(5) +
                                   "\": the names kept for hardlinks and directories' "
                                   "modes take more than 1000 bytes (the limit max_name_bytes)");
}

TEST_F(LayerTest, MoreFileBytesThanMaxBytesIsTooLargeAndLeavesThePartForTheCallerToRemove) {
  // "a" takes 512 + 6 bytes, "b" 512 + 5: b's data passes 1030.
  Result<UnpackReport> r = Unpack(TarBuilder().File("a", "aaaaaa").File("b", "bbbbb").End(), {1030, 100});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  EXPECT_EQ(r.error().message,
            "layer entry \"b\": the layer takes more than 1030 bytes (the limit max_bytes: file "
            "data, 512 bytes an entry and 4096 a directory made)");
  EXPECT_EQ(Tree(dir()), (Lines{"a f0644 0:0 =aaaaaa"}));
}

TEST_F(LayerTest, TruncatedDataIsAnErrorAndTheHalfWrittenFileIsLeftForTheCaller) {
  const std::string tar = TarBuilder().Entry({.name = "f", .size = 100}, "short").bytes();
  Result<UnpackReport> r = Unpack(tar.substr(0, 512 + 5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "tar entry \"f\": truncated (the archive ended after 5 of its 100 data bytes)");
  EXPECT_EQ(Tree(dir()), (Lines{"f f0600 0:0 =short"}));
}

TEST_F(LayerTest, AFileWithMoreDataThanDeclaredKeepsItsDeclaredBytesAndTheRestFailsAsAHeader) {
  const std::string tar = TarBuilder().Entry({.name = "f", .size = 3}, std::string(600, 'A')).End();
  Result<UnpackReport> r = Unpack(tar);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "tar header at byte 1024: checksum mismatch (stored 0, computed 5976): not a tar "
            "header, or a corrupt one");
  EXPECT_EQ(Tree(dir()), (Lines{"f f0644 0:0 =AAA"}));
}

TEST_F(LayerTest, AGzipBombStopsAtMaxOut) {
  const std::string tar = TarBuilder().File("zeros", std::string(8 << 20, '\0')).End();
  const std::string gz = secrets::ZlibWhole(tar, 31);
  StringSource compressed(gz);
  std::unique_ptr<ByteSource> plain = Decompressing(compressed, Compression::kGzip, 1 << 20);
  TarReader reader(*plain);
  Result<UnpackReport> r = UnpackLayer(reader, dir(), {1ull << 40, 100});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  EXPECT_EQ(r.error().message, "gzip stream: decompresses to more than 1048576 bytes (the limit max_out)");
}

TEST_F(LayerTest, TheWholeStreamIsReadSoAnObserverSeesEveryByte) {
  const std::string tar = TarBuilder().File("f", "x").End() + std::string(8192, '\0');
  StringSource in(tar);
  std::string seen;
  ObservedSource observed(in, [&](std::span<const uint8_t> b) { seen.append(b.begin(), b.end()); });
  TarReader reader(observed);
  ASSERT_TRUE(UnpackLayer(reader, dir(), {1 << 20, 100}).ok());
  EXPECT_EQ(seen, tar);
}

}  // namespace
}  // namespace isb::image::testing
