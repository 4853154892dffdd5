#include "engine/mounts.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace isb::engine {
namespace {

const std::string kStaging = "/run/isb-test/staging";

bool HasStep(const RootfsPlan& plan, MountStep::Kind kind, const std::string& target, const char* fstype = nullptr) {
  for (const auto& s : plan.steps())
    if (s.kind == kind && s.target == target && (fstype == nullptr || (s.fstype && std::string(s.fstype) == fstype)))
      return true;
  return false;
}

// The options of the plan's overlay mount; empty when it has none.
std::string OverlayOptions(const RootfsPlan& plan) {
  for (const auto& s : plan.steps())
    if (s.kind == MountStep::kMount && s.fstype && std::string(s.fstype) == "overlay") return s.data;
  return "";
}

TEST(RootfsPlan, StartsPrivateEndsWithPivot) {
  SandboxConfig c;
  auto plan = PlanRootfs(c, kStaging);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto& steps = plan->steps();
  ASSERT_GT(steps.size(), 10u);
  EXPECT_EQ(steps.front().kind, MountStep::kMount);
  EXPECT_EQ(steps.front().flags, static_cast<unsigned long>(MS_REC | MS_PRIVATE));
  EXPECT_EQ(steps.back().kind, MountStep::kPivotRoot);
  EXPECT_STREQ(steps.back().target, kStaging.c_str());  // the default view's root is the staging tmpfs itself
}

TEST(RootfsPlan, DefaultViewIsReadOnlyHostDirsAndFreshSpecialFilesystems) {
  auto plan = PlanRootfs(SandboxConfig{}, kStaging);
  ASSERT_TRUE(plan.ok());
  const std::string r = kStaging;
  bool usr_ro = false;
  for (const auto& s : plan->steps())
    if (s.kind == MountStep::kTreeAttrs && s.target == r + "/usr" &&
        s.flags == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV))
      usr_ro = true;
  EXPECT_TRUE(usr_ro);
  EXPECT_TRUE(HasStep(*plan, MountStep::kMount, r + "/proc", "proc"));
  EXPECT_TRUE(HasStep(*plan, MountStep::kMount, r + "/proc/kallsyms"));
  // Masks only what this kernel has.
  EXPECT_EQ(HasStep(*plan, MountStep::kMount, r + "/proc/kcore"), ::access("/proc/kcore", F_OK) == 0);
  EXPECT_TRUE(HasStep(*plan, MountStep::kMount, r + "/proc/sys"));
  EXPECT_TRUE(HasStep(*plan, MountStep::kMount, r + "/dev", "tmpfs"));
  EXPECT_TRUE(HasStep(*plan, MountStep::kMount, r + "/dev/pts", "devpts"));
  EXPECT_TRUE(HasStep(*plan, MountStep::kMount, r + "/tmp", "tmpfs"));
  EXPECT_TRUE(HasStep(*plan, MountStep::kWriteFile, r + "/etc/passwd"));
  for (const auto& s : plan->steps()) {
    if (s.kind == MountStep::kMount && s.fstype && std::string(s.fstype) == "sysfs") {
      EXPECT_TRUE(s.flags & MS_RDONLY);
    }
    // Nothing of the host's /etc beyond the loader cache, alternatives, TLS roots and the time zone.
    if (s.kind == MountStep::kMount && s.source && std::string(s.source).rfind("/etc/", 0) == 0) {
      std::string src = s.source;
      EXPECT_TRUE(src == "/etc/ld.so.cache" || src == "/etc/ld.so.conf" || src == "/etc/ld.so.conf.d" ||
                  src == "/etc/alternatives" || src == "/etc/ssl" || src == "/etc/ca-certificates")
          << src;
    }
  }
}

// The image is put into the staging dir (its idmapped tree from the parent, else a bind that follows no symlink:
// overlayfs would follow them in a lowerdir), read-only, and the overlay layers it, its options relative to the
// staging dir (the sandbox reads them in its mountinfo).
TEST(RootfsPlan, ImageIsAnOverlayWithADiscardedLayer) {
  SandboxConfig c;
  c.image = "/usr";  // any existing directory
  auto plan = PlanRootfs(c, kStaging);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  int bound = -1, overlay = -1;
  const auto& steps = plan->steps();
  for (size_t i = 0; i < steps.size(); ++i) {
    const MountStep& s = steps[i];
    const std::string target = s.target ? s.target : "";
    if (s.kind == MountStep::kImage && std::string(s.source) == "/usr" && target == kStaging + "/image")
      bound = static_cast<int>(i);
    if (bound >= 0 && static_cast<int>(i) == bound + 1) {
      EXPECT_EQ(s.kind, MountStep::kTreeAttrs);
      EXPECT_EQ(target, kStaging + "/image");
      EXPECT_EQ(s.flags, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    }
    if (s.kind == MountStep::kMount && s.fstype && std::string(s.fstype) == "overlay") {
      overlay = static_cast<int>(i);
      EXPECT_EQ(std::string(s.data), "lowerdir=image,upperdir=upper,workdir=work");
      EXPECT_TRUE(s.flags & MS_NOSUID);
      ASSERT_GT(i, 0u);
      EXPECT_EQ(steps[i - 1].kind, MountStep::kChdir);
      EXPECT_EQ(std::string(steps[i - 1].target), kStaging);
    }
  }
  EXPECT_GE(bound, 0);
  EXPECT_GT(overlay, bound);
}

// An image in layers: each put into the staging dir under a short name (its tree from the parent, picked by the
// layer's index, else a bind that follows no symlink), read-only, and stacked top first; the overlay reads opaque
// directories from user.overlay.* (userxattr). The single image, if also given, is not used.
TEST(RootfsPlan, ImageLayersAreStackedTopFirstUnderShortNames) {
  SandboxConfig c;
  c.image = "/nonexistent-isb-image";
  c.image_layers = {"/usr", "/usr/share", "/etc"};
  auto plan = PlanRootfs(c, kStaging);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::vector<std::string> images;
  const auto& steps = plan->steps();
  for (size_t i = 0; i < steps.size(); ++i) {
    const MountStep& s = steps[i];
    if (s.kind == MountStep::kImage) {
      images.push_back(std::string(s.source) + " " + s.target + " " + std::to_string(s.layer));
      ASSERT_LT(i + 1, steps.size());
      EXPECT_EQ(steps[i + 1].kind, MountStep::kTreeAttrs);
      EXPECT_EQ(steps[i + 1].flags, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    }
  }
  EXPECT_EQ(images, (std::vector<std::string>{"/usr " + kStaging + "/l0 0", "/usr/share " + kStaging + "/l1 1",
                                              "/etc " + kStaging + "/l2 2"}));
  EXPECT_EQ(OverlayOptions(*plan), "lowerdir=l2:l1:l0,upperdir=upper,workdir=work,userxattr");

  c.writable_dir = "/var/lib/isb-test/layer";
  plan = PlanRootfs(c, kStaging);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(OverlayOptions(*plan), "lowerdir=l2:l1:l0,upperdir=layer/upper,workdir=layer/work,userxattr");
}

TEST(RootfsPlan, RefusesMoreLayersThanASandboxStacksAndBadLayers) {
  SandboxConfig c;
  c.image_layers.assign(kMaxImageLayers, "/usr");
  EXPECT_TRUE(PlanRootfs(c, kStaging).ok());
  c.image_layers.push_back("/usr");
  EXPECT_EQ(PlanRootfs(c, kStaging).error().message,
            "image_layers: 129 layers, more than the 128 one sandbox stacks; flatten the lower layers into one");
  c.image_layers = {"/usr", "/usr/../etc"};
  EXPECT_EQ(PlanRootfs(c, kStaging).error().message,
            "image layer 1 '/usr/../etc' must be an absolute path without '..'");
  c.image_layers = {"/usr", "/nonexistent-isb-layer"};
  EXPECT_EQ(PlanRootfs(c, kStaging).error().message, "image layer 1 '/nonexistent-isb-layer' is not a directory");
}

TEST(RootfsPlan, RefusesBadPaths) {
  SandboxConfig c;
  c.image = "relative/dir";
  EXPECT_NE(PlanRootfs(c, kStaging).error().message.find("must be an absolute path"), std::string::npos);
  c.image = "/nonexistent-isb-image";
  EXPECT_EQ(PlanRootfs(c, kStaging).error().message, "image '/nonexistent-isb-image' is not a directory");
  // The staging dir names the overlay's layers: a runtime dir with an overlay separator is refused.
  c.image = "/usr";
  EXPECT_EQ(PlanRootfs(c, "/run/isb:/etc/staging").error().message,
            "'/run/isb:/etc/staging' cannot be an overlay layer: a path with ':', ',' or '\\' would be read as more "
            "than one layer or option");
  c.image.clear();
  c.binds = {{"/usr", "/a/../../etc", true}};
  EXPECT_NE(PlanRootfs(c, kStaging).error().message.find("without '..'"), std::string::npos);
  c.binds = {{"/nonexistent-isb-src", "/x", true}};
  EXPECT_EQ(PlanRootfs(c, kStaging).error().err, ENOENT);
  c.binds.clear();
  c.workdir = "work";
  EXPECT_FALSE(PlanRootfs(c, kStaging).ok());
}

TEST(RootfsPlan, BindsAreNosuidAndReadOnlyByDefault) {
  SandboxConfig c;
  c.binds = {{"/usr/bin", "/opt/tools/bin", true}, {"/tmp", "/scratch", false}};
  auto plan = PlanRootfs(c, kStaging);
  ASSERT_TRUE(plan.ok());
  const std::string r = kStaging;
  EXPECT_TRUE(HasStep(*plan, MountStep::kMkdir, r + "/opt/tools"));
  int ro = 0, nosuid_rw = 0;
  for (const auto& s : plan->steps()) {
    if (s.kind != MountStep::kTreeAttrs) continue;  // set on the bind and every mount below it
    if (s.target == r + "/opt/tools/bin" && s.flags == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) ++ro;
    if (s.target == r + "/scratch" && s.flags == (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) ++nosuid_rw;
  }
  EXPECT_EQ(ro, 1);
  EXPECT_EQ(nosuid_rw, 1);
}

TEST(RootfsPlan, DescribeNamesTheStep) {
  auto plan = PlanRootfs(SandboxConfig{}, kStaging);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->Describe(plan->steps().size() - 1), "pivot_root into " + kStaging);
  EXPECT_EQ(plan->Describe(1), "mount tmpfs on " + kStaging);
  for (size_t i = 0; i < plan->steps().size(); ++i) {
    if (plan->steps()[i].kind == MountStep::kTreeAttrs && plan->steps()[i].target == kStaging + "/usr") {
      EXPECT_EQ(plan->Describe(i), "make " + kStaging + "/usr and the mounts below it read-only, nosuid and nodev");
    }
  }
}

}  // namespace
}  // namespace isb::engine
