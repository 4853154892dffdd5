// An image in layers for real: stacked with OCI whiteouts and opaque directories, seen through the sandbox's id
// mapping, written only in the writable layer, and capped at kMaxImageLayers.
#include "engine/image_trees.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/file.h"
#include "cgroup_parents.h"
#include "engine/run.h"
#include "must_work.h"

namespace isb::engine {
namespace {

namespace fs = std::filesystem;

// What a layer holds, path by path: type and mode, owner, device number, contents or link target, xattrs.
using LayerState = std::map<std::string, std::string>;

std::string XattrsOf(const std::string& path) {
  char names[4096];
  ssize_t n = ::llistxattr(path.c_str(), names, sizeof names);
  if (n < 0) return "listxattr failed";
  std::string out;
  for (ssize_t at = 0; at < n; at += static_cast<ssize_t>(std::strlen(names + at)) + 1) {
    char value[256];
    ssize_t len = ::lgetxattr(path.c_str(), names + at, value, sizeof value);
    out += std::string(names + at) + "=" + (len < 0 ? "?" : std::string(value, static_cast<size_t>(len))) + ";";
  }
  return out;
}

LayerState StateOf(const std::string& layer) {
  LayerState state;
  for (const auto& e : fs::recursive_directory_iterator(layer)) {
    const std::string path = e.path().string();
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      state[path] = "lstat failed";
      continue;
    }
    std::string what = std::to_string(st.st_mode) + " " + std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) +
                       " " + std::to_string(major(st.st_rdev)) + "," + std::to_string(minor(st.st_rdev)) + " " +
                       XattrsOf(path);
    if (S_ISREG(st.st_mode)) {
      auto contents = isb::ReadFile(path);
      what += " " + (contents.ok() ? *contents : "unreadable");
    }
    if (S_ISLNK(st.st_mode)) what += " -> " + fs::read_symlink(e.path()).string();
    state[path] = what;
  }
  return state;
}

void SetOpaque(const std::string& dir) {
  for (const char* name : {"trusted.overlay.opaque", "user.overlay.opaque"})
    ASSERT_EQ(::setxattr(dir.c_str(), name, "y", 1, 0), 0) << name << ": " << std::strerror(errno);
}

void WriteOwned(const std::string& path, const std::string& contents, uid_t owner) {
  ASSERT_TRUE(isb::WriteFile(path, contents).ok()) << path;
  ASSERT_EQ(::chown(path.c_str(), owner, owner), 0) << path;
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0) << path;
}

void MakeDir(const std::string& path, uid_t owner = 0) {
  fs::create_directories(path);
  ASSERT_EQ(::chown(path.c_str(), owner, owner), 0) << path;
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0) << path;
}

class ImageLayersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-layers-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
    opts_.runtime_dir = dir_ + "/run";
    opts_.capture = true;
    opts_.forward_signals = false;
  }
  // Nothing of the sandboxes is left: no mount under the test's dir, no cgroup of a run this process made.
  void TearDown() override {
    auto mounts = isb::ReadFile("/proc/self/mountinfo");
    ASSERT_TRUE(mounts.ok());
    EXPECT_EQ(mounts->find(dir_), std::string::npos) << *mounts;
    const std::string ours = "run-" + std::to_string(::getpid()) + "-";
    std::error_code ec;
    for (const std::string& parent : isb::testing::IsbCgroupParents())
      for (const auto& e : fs::directory_iterator(parent, ec))
        EXPECT_NE(e.path().filename().string().rfind(ours, 0), 0u) << "cgroup left behind: " << e.path();
    fs::remove_all(dir_);
  }

  // Three layers, bottom first:
  //   l0: busybox, /etc, /gone, /d/old, /keep/x, /over ("base"), /mine (uid 1000's)
  //   l1: /gone whited out (a character device 0/0), /d opaque with /d/new (uid 1000's) alone
  //   l2: /over ("top")
  void MakeLayers() {
    ASSERT_TRUE(fs::exists("/bin/busybox")) << "the busybox-static package provides /bin/busybox";
    const std::string l0 = dir_ + "/l0", l1 = dir_ + "/l1", l2 = dir_ + "/l2";
    ASSERT_NO_FATAL_FAILURE(MakeDir(l0 + "/bin"));
    fs::copy_file("/bin/busybox", l0 + "/bin/busybox");
    for (const char* applet : {"sh", "ls", "cat", "stat", "echo", "rm", "mkdir", "grep", "sed", "true"})
      fs::create_symlink("busybox", l0 + "/bin/" + applet);
    for (const char* d : {"", "/etc", "/d", "/keep"}) ASSERT_NO_FATAL_FAILURE(MakeDir(l0 + d));
    ASSERT_NO_FATAL_FAILURE(WriteOwned(l0 + "/gone", "gone\n", 0));
    ASSERT_NO_FATAL_FAILURE(WriteOwned(l0 + "/d/old", "old\n", 0));
    ASSERT_NO_FATAL_FAILURE(WriteOwned(l0 + "/keep/x", "x\n", 0));
    ASSERT_NO_FATAL_FAILURE(WriteOwned(l0 + "/over", "base\n", 0));
    ASSERT_NO_FATAL_FAILURE(WriteOwned(l0 + "/mine", "mine\n", 1000));
    ASSERT_NO_FATAL_FAILURE(MakeDir(l1));
    ASSERT_EQ(::mknod((l1 + "/gone").c_str(), S_IFCHR | 0, makedev(0, 0)), 0) << std::strerror(errno);
    ASSERT_NO_FATAL_FAILURE(MakeDir(l1 + "/d"));
    ASSERT_NO_FATAL_FAILURE(SetOpaque(l1 + "/d"));
    ASSERT_NO_FATAL_FAILURE(WriteOwned(l1 + "/d/new", "new\n", 1000));
    ASSERT_NO_FATAL_FAILURE(MakeDir(l2));
    ASSERT_NO_FATAL_FAILURE(WriteOwned(l2 + "/over", "top\n", 0));
    layers_ = {l0, l1, l2};
    for (const std::string& l : layers_) before_[l] = StateOf(l);
  }
  void ExpectLayersUnchanged() {
    for (const std::string& l : layers_) EXPECT_EQ(StateOf(l), before_[l]) << l;
  }
  // Runs `script` in a sandbox of `c` on the three layers, checks its whole outcome, and that no layer changed.
  void ExpectRun(SandboxConfig c, const std::string& script, const std::string& out, const std::string& err,
                 int exit_code) {
    c.image_layers = layers_;
    c.argv = {"sh", "-c", script};
    auto r = RunSandbox(c, opts_);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->stdout_data, out);
    EXPECT_EQ(r->stderr_data, err);
    EXPECT_EQ(r->exit_code, exit_code);
    ExpectLayersUnchanged();
  }

  std::string dir_;
  RunOptions opts_;
  std::vector<std::string> layers_;
  std::map<std::string, LayerState> before_;
};

// The merged view: the top layer's file over the bottom's, the whited-out file gone, the opaque directory with its
// own file alone, and every owner as the sandbox sees it through its id mapping.
TEST_F(ImageLayersTest, TheLayersStackWithTheirWhiteoutsAndOpaqueDirectoriesAsTheSandboxsOwn) {
  ISB_REQUIRE_ROOT();
  ISB_REQUIRE_MACHINE(OverlayTakesIdmappedLayers(), "an idmapped overlay layer needs Linux 5.19");
  ASSERT_NO_FATAL_FAILURE(MakeLayers());
  SandboxConfig c;
  c.image = "/nonexistent-isb-image";  // image_layers wins
  c.idmap_image = true;
  ExpectRun(c,
            "ls -A /; echo --; ls -A /d; echo --; cat /over /d/new /mine; "
            "stat -c '%u:%g %n' /bin/busybox /d /d/new /over /mine; cat /gone",
            "bin\nd\ndev\netc\nkeep\nmine\nover\nproc\nsys\ntmp\n--\nnew\n--\ntop\nnew\nmine\n"
            "0:0 /bin/busybox\n0:0 /d\n1000:1000 /d/new\n0:0 /over\n1000:1000 /mine\n",
            "cat: can't open '/gone': No such file or directory\n", 1);
}

// Writes, removals and a directory removed and made again land in the writable layer, a kept one here, and in no
// layer; the sandbox's mountinfo names its layers by their short names in the staging dir, never a host path.
TEST_F(ImageLayersTest, WritesLandInTheWritableLayerAndMountinfoNamesNoHostPath) {
  ISB_REQUIRE_ROOT();
  ISB_REQUIRE_MACHINE(OverlayTakesIdmappedLayers(), "an idmapped overlay layer needs Linux 5.19");
  ASSERT_NO_FATAL_FAILURE(MakeLayers());
  SandboxConfig c;
  c.idmap_image = true;
  c.writable_dir = dir_ + "/layer";
  ASSERT_NO_FATAL_FAILURE(ExpectRun(
      c,
      "echo changed > /over && echo made > /made && rm /d/new /mine && rm -r /keep && mkdir /keep && "
      "echo again > /keep/y && echo made > /d/other && ls -A /keep /d && cat /over; "
      "grep -c ' / / ' /proc/self/mountinfo; "
      "sed -n 's/.* \\/ \\/ .*\\(lowerdir=[^,]*,upperdir=[^,]*,workdir=[^,]*\\).*\\(,userxattr\\).*/\\1\\2/p' "
      "/proc/self/mountinfo; "
      "grep -c " +
          dir_ + " /proc/self/mountinfo",
      "/d:\nother\n\n/keep:\ny\nchanged\n1\n"
      "lowerdir=l2:l1:l0,upperdir=layer/upper,workdir=layer/work,userxattr\n0\n",
      "", 1));  // 1: the last grep found nothing
  EXPECT_EQ(*isb::ReadFile(c.writable_dir + "/upper/over"), "changed\n");
  EXPECT_EQ(*isb::ReadFile(c.writable_dir + "/upper/made"), "made\n");
  EXPECT_EQ(*isb::ReadFile(c.writable_dir + "/upper/keep/y"), "again\n");

  // The next run of the same layers and writable layer sees what the first left.
  ExpectRun(c, "ls -A /keep /d; cat /over /made; cat /mine", "/d:\nother\n\n/keep:\ny\nchanged\nmade\n",
            "cat: can't open '/mine': No such file or directory\n", 1);
}

// Without the id mapping (a remote caller's image) each layer is bound as it is: its files are no one's in the
// sandbox, and the whiteouts and opaque directories work all the same.
TEST_F(ImageLayersTest, LayersBoundWithoutTheIdMappingStackAlike) {
  ISB_REQUIRE_ROOT();
  ASSERT_NO_FATAL_FAILURE(MakeLayers());
  SandboxConfig c;
  c.idmap_image = false;
  ExpectRun(c, "ls -A /d; cat /over; stat -c '%u:%g %n' /d/new /over; cat /gone; echo x > /over",
            "new\ntop\n65534:65534 /d/new\n65534:65534 /over\n",
            "cat: can't open '/gone': No such file or directory\nsh: can't create /over: Permission denied\n", 1);
}

// A privileged sandbox (the host's ids, no user namespace of its own) stacks the same layers the same way.
TEST_F(ImageLayersTest, APrivilegedSandboxStacksTheLayersAlike) {
  ISB_REQUIRE_ROOT();
  ASSERT_NO_FATAL_FAILURE(MakeLayers());
  SandboxConfig c;
  c.privileged = true;
  ExpectRun(c, "ls -A /d; cat /over; stat -c '%u:%g %n' /d/new /over; cat /gone; rm -r /keep && mkdir /keep",
            "new\ntop\n1000:1000 /d/new\n0:0 /over\n", "cat: can't open '/gone': No such file or directory\n", 0);
}

// As many layers as a sandbox stacks start (their trees ride in one message); one more is refused before anything
// runs, saying what to do.
TEST_F(ImageLayersTest, AtMostKMaxImageLayersAreStacked) {
  ISB_REQUIRE_ROOT();
  ASSERT_NO_FATAL_FAILURE(MakeLayers());
  SandboxConfig c;
  c.image_layers = {layers_[0]};
  for (size_t i = 1; i < kMaxImageLayers; ++i) {
    const std::string layer = dir_ + "/many/" + std::to_string(i);
    ASSERT_NO_FATAL_FAILURE(MakeDir(layer));
    ASSERT_NO_FATAL_FAILURE(WriteOwned(layer + "/top", std::to_string(i) + "\n", 0));
    c.image_layers.push_back(layer);
  }
  c.idmap_image = true;
  c.argv = {"sh", "-c", "cat /top; stat -c %u /top"};
  auto r = RunSandbox(c, opts_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, OverlayTakesIdmappedLayers() ? "127\n0\n" : "127\n65534\n");
  EXPECT_EQ(r->exit_code, 0) << r->stderr_data;

  c.image_layers.push_back(layers_[2]);
  r = RunSandbox(c, opts_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "image_layers: 129 layers, more than the 128 one sandbox stacks; flatten the lower layers into one");
}

// Each layer is checked as the single image is: a directory, not a symlink to one, its path one overlayfs would
// not split.
TEST_F(ImageLayersTest, EachLayerIsCheckedAsTheImageIs) {
  ISB_REQUIRE_ROOT();
  ASSERT_NO_FATAL_FAILURE(MakeLayers());
  SandboxConfig c;
  c.argv = {"true"};
  c.idmap_image = true;
  c.image_layers = {layers_[0], dir_ + "/missing"};
  auto r = RunSandbox(c, opts_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "image layer 1 '" + dir_ + "/missing' is not a directory");
  fs::create_directory_symlink(layers_[1], dir_ + "/link");
  c.image_layers = {layers_[0], dir_ + "/link"};
  r = RunSandbox(c, opts_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "image layer 1 '" + dir_ + "/link' is not a directory");
  // A symlink higher up the path is found as the layer is bound, following none.
  fs::create_directory_symlink(dir_, dir_ + "/up");
  c.image_layers = {layers_[0], dir_ + "/up/l1"};
  r = RunSandbox(c, opts_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "sandbox setup failed while building the root filesystem (image " + dir_ +
                                   "/up/l1 (no symlinks) on " + dir_ +
                                   "/run/staging/l1): Too many levels of symbolic "
                                   "links");
  EXPECT_EQ(r.error().err, ELOOP);
  c.image_layers = {"relative/l0"};
  r = RunSandbox(c, opts_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "image layer 0 'relative/l0' must be an absolute path without '..'");
  MakeDir(dir_ + "/a:b");
  c.image_layers = {layers_[0], dir_ + "/a:b"};
  r = RunSandbox(c, opts_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "'" + dir_ +
                                   "/a:b' cannot be an overlay layer: a path with ':', ',' or '\\' would "
                                   "be read as more than one layer or option");
}

}  // namespace
}  // namespace isb::engine
