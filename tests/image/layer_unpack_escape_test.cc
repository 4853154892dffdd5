// Layers that try to write outside their directory: "..", absolute names, symlinks written through, hardlinks out
// or forward or to symlinks; each refused or neutralized, the error and the tree on disk asserted, and the
// directory beside the layer's untouched (LayerTest's TearDown checks it after every test).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "image/layer_fixture.h"
#include "image/tar_builder.h"

namespace isb::image::testing {
namespace {

using Lines = std::vector<std::string>;

TEST_F(LayerTest, ANameWithADotDotComponentIsRefused) {
  for (const std::string name : {"a/../../outside/secret", "..", "../x", "a/..", "./../x"}) {
    Result<UnpackReport> r = Unpack(TarBuilder().File(name, "pwned").End());
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
    EXPECT_EQ(r.error().message,
              "layer entry \"" + name + "\": the name has a \"..\" component (a layer names nothing outside itself)");
  }
  EXPECT_EQ(Tree(dir()), Lines{});
}

TEST_F(LayerTest, AnAbsoluteNameLosesItsLeadingSlashAndLandsBelowTheLayer) {
  const std::string host_secret = outside() + "/secret";
  Result<UnpackReport> r = Unpack(TarBuilder().File("/etc/passwd", "root").File(host_secret, "pwned").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  Lines expected{"etc d0755 0:0", "etc/passwd f0644 0:0 =root", host_secret.substr(1) + " f0644 0:0 =pwned"};
  const std::string rel = host_secret.substr(1);
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1)) {
    expected.push_back(rel.substr(0, slash) + " d0755 0:0");
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(Tree(dir()), expected);
}

TEST_F(LayerTest, AFileBelowASymlinkIsRefusedWhereverTheSymlinkPoints) {
  for (const std::string& target :
       {outside(), std::string(".."), std::string("/"), std::string("."), std::string("sub")}) {
    std::filesystem::remove_all(dir());
    ASSERT_EQ(::mkdir(dir().c_str(), 0700), 0);
    Result<UnpackReport> r = Unpack(TarBuilder().Dir("sub").Symlink("evil", target).File("evil/secret", "pwned").End());
    ASSERT_FALSE(r.ok()) << target;
    EXPECT_EQ(r.error().message,
              "layer entry \"evil/secret\": parent \"evil\" is a symlink (the unpacker follows "
              "no symlink)");
    // An error leaves directories as they were while unpacking (0700): the caller removes the directory.
    EXPECT_EQ(Tree(dir()), (Lines{"evil l0:0 ->" + target, "sub d0700 0:0"}));
  }
}

TEST_F(LayerTest, ASymlinkDeeperInThePathIsRefusedToo) {
  Result<UnpackReport> r = Unpack(TarBuilder().Dir("d").Symlink("d/s", "../../outside").Dir("d/s/x").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "layer entry \"d/s/x\": parent \"d/s\" is a symlink (the unpacker follows no "
            "symlink)");
}

TEST_F(LayerTest, WhiteoutsAndOpaqueMarkersBelowASymlinkAreRefused) {
  for (const std::string name : {"evil/.wh.secret", "evil/.wh..wh..opq"}) {
    std::filesystem::remove_all(dir());
    ASSERT_EQ(::mkdir(dir().c_str(), 0700), 0);
    Result<UnpackReport> r = Unpack(TarBuilder().Symlink("evil", outside()).File(name, "").End());
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().message,
              "layer entry \"" + name + "\": parent \"evil\" is a symlink (the unpacker follows no symlink)");
  }
  EXPECT_EQ(Xattr(outside(), "trusted.overlay.opaque"), "<none>");
}

TEST_F(LayerTest, AFileNamedLikeASymlinkReplacesTheSymlinkNotItsTarget) {
  Result<UnpackReport> r = Unpack(TarBuilder().Symlink("s", outside() + "/secret").File("s", "new").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"s f0644 0:0 =new"}));
}

TEST_F(LayerTest, ADirectoryNamedLikeASymlinkReplacesIt) {
  Result<UnpackReport> r = Unpack(TarBuilder().Symlink("d", outside()).Dir("d").File("d/x", "in").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"d d0755 0:0", "d/x f0644 0:0 =in"}));
}

TEST_F(LayerTest, SymlinksPointingAnywhereAreCreatedAsTheyAreAndNeverFollowed) {
  Result<UnpackReport> r =
      Unpack(TarBuilder().Symlink("abs", outside() + "/secret").Symlink("up", "../../../../etc/shadow").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"abs l0:0 ->" + outside() + "/secret", "up l0:0 ->../../../../etc/shadow"}));
}

TEST_F(LayerTest, AnEmptySymlinkTargetIsRefused) {
  Result<UnpackReport> r = Unpack(TarBuilder().Symlink("s", "").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "layer entry \"s\": a symlink with an empty target");
}

TEST_F(LayerTest, AHardlinkToAnAbsoluteNameOutsideIsRefused) {
  const std::string target = outside() + "/secret";
  Result<UnpackReport> r = Unpack(TarBuilder().Hardlink("h", target).End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "layer entry \"h\": a hardlink to \"" + target +
                                   "\", which is no file this layer "
                                   "extracted before it (a hardlink may only name an earlier file of its own layer)");
  EXPECT_EQ(Tree(dir()), Lines{});
}

TEST_F(LayerTest, AHardlinkWithADotDotTargetIsRefused) {
  Result<UnpackReport> r = Unpack(TarBuilder().Hardlink("h", "../outside/secret").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "layer entry \"h\": the hardlink target \"../outside/secret\" has a \"..\" component "
            "(a layer names nothing outside itself)");
}

TEST_F(LayerTest, AHardlinkToANameNotYetExtractedIsRefused) {
  Result<UnpackReport> r = Unpack(TarBuilder().Hardlink("h", "later").File("later", "x").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "layer entry \"h\": a hardlink to \"later\", which is no file this layer extracted "
            "before it (a hardlink may only name an earlier file of its own layer)");
}

TEST_F(LayerTest, AHardlinkToADirectoryOrToItselfIsRefused) {
  Result<UnpackReport> to_dir = Unpack(TarBuilder().Dir("d").Hardlink("h", "d").End());
  ASSERT_FALSE(to_dir.ok());
  EXPECT_EQ(to_dir.error().message,
            "layer entry \"h\": a hardlink to \"d\", which is no file this layer extracted "
            "before it (a hardlink may only name an earlier file of its own layer)");
  std::filesystem::remove_all(dir());
  ASSERT_EQ(::mkdir(dir().c_str(), 0700), 0);
  Result<UnpackReport> self = Unpack(TarBuilder().File("f", "x").Hardlink("./f", "f").End());
  ASSERT_FALSE(self.ok());
  EXPECT_EQ(self.error().message, "layer entry \"./f\": a hardlink to itself");
}

TEST_F(LayerTest, AHardlinkThroughASymlinkedDirectoryIsRefused) {
  Result<UnpackReport> r = Unpack(TarBuilder().Symlink("d", outside()).Hardlink("h", "d/secret").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "layer entry \"h\": a hardlink to \"d/secret\", which is no file this layer "
            "extracted before it (a hardlink may only name an earlier file of its own layer)");
}

TEST_F(LayerTest, AHardlinkToASymlinkPointingOutsideLinksTheSymlinkItself) {
  const std::string target = outside() + "/secret";
  Result<UnpackReport> r = Unpack(TarBuilder().Symlink("s", target).Hardlink("h", "s").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(Tree(dir()), (Lines{"h l0:0 ->" + target, "s l0:0 ->" + target}));
  struct stat s, h;
  ASSERT_EQ(::lstat((dir() + "/s").c_str(), &s), 0);
  ASSERT_EQ(::lstat((dir() + "/h").c_str(), &h), 0);
  EXPECT_EQ(s.st_ino, h.st_ino);
  EXPECT_EQ(h.st_nlink, 2u);
  // A file written over the hardlinked symlink replaces the name; the target outside is untouched.
  std::filesystem::remove_all(dir());
  ASSERT_EQ(::mkdir(dir().c_str(), 0700), 0);
  ASSERT_TRUE(Unpack(TarBuilder().Symlink("s", target).Hardlink("h", "s").File("h", "pwned").End()).ok());
  EXPECT_EQ(Tree(dir()), (Lines{"h f0644 0:0 =pwned", "s l0:0 ->" + target}));
}

TEST_F(LayerTest, ANameLongerThanAPathIsRefused) {
  std::string name;
  while (name.size() <= 4100) name += "aaaaaaaaa/";
  name += "f";
  Result<UnpackReport> r = Unpack(TarBuilder().Pax({{"path", name}}).File("x", "").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "layer entry \"" + name.substr(0, 256) + "...\": the name is longer than 4096 bytes");
  EXPECT_EQ(Tree(dir()), Lines{});
}

}  // namespace
}  // namespace isb::image::testing
