// A sandbox's writable layer made into a layer blob (layer_writer.h) and read back by the unpacker and by GNU tar:
// ids as the sandbox saw them, overlay whiteouts and opaque directories as OCI's, what isb put there left out.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/fd.h"
#include "base/file.h"
#include "image/byte_source.h"
#include "image/decompress.h"
#include "image/digest.h"
#include "image/layer_fixture.h"
#include "image/layer_unpack.h"
#include "image/layer_writer.h"
#include "image/tar_reader.h"
#include "image/tar_writer.h"
#include "must_work.h"

namespace isb::image {
namespace {

namespace fs = std::filesystem;
using testing::Tree;

constexpr uint32_t kBase = 400000;

// A shell pipeline's stdout.
std::string Sh(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

class LayerWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ISB_REQUIRE_ROOT();  // chown, mknod
    char tmpl[] = "/tmp/isb-layer-writer-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    upper_ = dir_ + "/upper";
    fs::create_directories(upper_);
    ASSERT_EQ(::chown(upper_.c_str(), kBase, kBase), 0);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // The directories a sandbox made are its own: owned by its root (kBase on the host).
  void Dirs(const std::string& rel) {
    fs::path at = upper_;
    for (const auto& part : fs::path(rel)) {
      at /= part;
      fs::create_directory(at);
      ASSERT_EQ(::chown(at.c_str(), kBase, kBase), 0);
    }
  }
  void File(const std::string& rel, const std::string& data, uint32_t uid, mode_t mode = 0644) {
    const std::string p = upper_ + "/" + rel;
    Dirs(fs::path(rel).parent_path().string());
    std::ofstream(p) << data;
    ASSERT_EQ(::chown(p.c_str(), uid, uid), 0);
    ASSERT_EQ(::chmod(p.c_str(), mode), 0);
  }

  std::string dir_, upper_;
};

TEST_F(LayerWriterTest, AnUpperDirBecomesALayerTheUnpackerRestoresWithTheSandboxsIds) {
  File("etc/kept", "kept\n", kBase);
  File("home/u/notes", "mine\n", kBase + 1000, 0600);
  ASSERT_EQ(::chown((upper_ + "/home/u").c_str(), kBase + 1000, kBase + 1000), 0);
  ASSERT_EQ(::link((upper_ + "/etc/kept").c_str(), (upper_ + "/etc/kept2").c_str()), 0);
  ASSERT_EQ(::symlink("/etc/kept", (upper_ + "/etc/link").c_str()), 0);
  ASSERT_EQ(::lchown((upper_ + "/etc/link").c_str(), kBase, kBase), 0);
  ASSERT_EQ(::mknod((upper_ + "/etc/gone").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
  Dirs("opt/fresh");
  ASSERT_EQ(::setxattr((upper_ + "/opt/fresh").c_str(), "user.overlay.opaque", "y", 1, 0), 0);
  File("opt/fresh/new", "n", kBase);
  File("run/secrets/TOKEN", "never", kBase);
  File("etc/hostname", "sandbox\n", kBase);
  File("owned-elsewhere", "x", 12345);

  const std::string blob = dir_ + "/layer.tar.gz";
  auto w = WriteUpperAsLayer(upper_, kBase, {"run"}, {"etc/hostname"}, blob);
  ASSERT_TRUE(w.ok()) << w.error().message;
  auto bytes = ReadFile(blob);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(w->digest, DigestOf(*bytes).str());
  EXPECT_EQ(w->size, bytes->size());

  // The tar as GNU tar reads it: the whiteout is a .wh. file, the opaque dir holds .wh..wh..opq.
  EXPECT_EQ(Sh("tar -tzvf " + blob + " --numeric-owner | awk '{print $2, $6}' | sort"),
            "0/0 etc/\n0/0 etc/.wh.gone\n0/0 etc/kept\n0/0 etc/kept2\n0/0 etc/link\n0/0 home/\n0/0 opt/\n"
            "0/0 opt/fresh/\n0/0 opt/fresh/.wh..wh..opq\n0/0 opt/fresh/new\n0/0 run/\n1000/1000 home/u/\n"
            "1000/1000 home/u/notes\n65534/65534 owned-elsewhere\n");
  // The diff_id is the digest of the uncompressed tar.
  EXPECT_EQ("sha256:" + Sh("gzip -dc " + blob + " | sha256sum").substr(0, 64), w->diff_id);

  fs::create_directories(dir_ + "/back");
  Fd f(::open(blob.c_str(), O_RDONLY | O_CLOEXEC));
  FdSource src(f.get());
  auto plain = Decompressing(src, Compression::kGzip, 1 << 20);
  TarReader tar(*plain);
  auto report = UnpackLayer(tar, dir_ + "/back", {1 << 20, 1000});
  ASSERT_TRUE(report.ok()) << report.error().message;
  struct stat a {
  }, b{};
  ASSERT_EQ(::stat((dir_ + "/back/etc/kept").c_str(), &a), 0);
  ASSERT_EQ(::stat((dir_ + "/back/etc/kept2").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(testing::Xattr(dir_ + "/back/opt/fresh", "user.overlay.opaque"), "y");
  std::vector<std::string> tree = Tree(dir_ + "/back");
  EXPECT_NE(std::find(tree.begin(), tree.end(), "etc/gone c0000 0:0 0/0"), tree.end());
  EXPECT_NE(std::find(tree.begin(), tree.end(), "home/u/notes f0600 1000:1000 =mine\n"), tree.end());
  EXPECT_NE(std::find(tree.begin(), tree.end(), "run d0755 0:0"), tree.end());
  for (const std::string& line : tree) {
    EXPECT_EQ(line.find("secrets"), std::string::npos) << line;
    EXPECT_EQ(line.find("hostname"), std::string::npos) << line;
  }
}

TEST(TarWriterTest, LongNamesLinksAndLargeIdsGoInPaxRecordsThatGnuTarReads) {
  std::string out;
  TarWriter tar([&out](std::span<const uint8_t> b) {
    out.append(reinterpret_cast<const char*>(b.data()), b.size());
    return Status();
  });
  const std::string long_name = std::string(120, 'a') + "/" + std::string(130, 'b');
  const std::string long_link = "/" + std::string(150, 'c');
  ASSERT_TRUE(tar.AddFile(TarHeader{.path = long_name, .uid = 3000000, .gid = 7}, "data").ok());
  ASSERT_TRUE(tar.Add(TarHeader{.type = TarHeader::Type::kSymlink, .path = "l", .link = long_link}).ok());
  ASSERT_TRUE(
      tar.Add(TarHeader{.type = TarHeader::Type::kDir, .path = "d", .mode = 0750, .xattrs = {{"user.k", "v"}}}).ok());
  ASSERT_TRUE(tar.Finish().ok());
  EXPECT_EQ(out.size() % 512, 0u);
  EXPECT_EQ(tar.bytes_written(), out.size());

  StringSource src(out);
  TarReader reader(src);
  auto e = reader.Next();
  ASSERT_TRUE(e.ok() && e->has_value()) << (e.ok() ? "end" : e.error().message);
  EXPECT_EQ((*e)->path, long_name);
  EXPECT_EQ((*e)->uid, 3000000u);
  EXPECT_EQ((*e)->size, 4u);
  uint8_t data[8];
  auto n = reader.ReadData(data);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(reinterpret_cast<char*>(data), *n), "data");
  e = reader.Next();
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((*e)->link, long_link);
  e = reader.Next();
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((*e)->type, TarEntry::Type::kDir);
  EXPECT_EQ((*e)->mode & 07777, 0750u);
  ASSERT_EQ((*e)->xattrs.size(), 1u);
  EXPECT_EQ((*e)->xattrs[0], (std::pair<std::string, std::string>{"user.k", "v"}));
  e = reader.Next();
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->has_value());
}

}  // namespace
}  // namespace isb::image
