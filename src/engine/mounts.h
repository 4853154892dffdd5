// The sandbox's filesystem: planned in the parent as a list of steps, carried out in the child without allocating.
#pragma once

#include <sys/types.h>

#include <deque>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "engine/config.h"

namespace isb::engine {

struct MountStep {
  // kBindNoFollow: a recursive bind of `source`, reached without following any symlink (ELOOP if a component is
  // one), so a path checked on the host cannot be swapped for a symlink to somewhere else before it is mounted.
  // kTreeAttrs: sets the MOUNT_ATTR_* bits in `flags` on the mount at `target` and on every mount below it (a
  // bind's submounts come along with it, and a remount would change the top one alone).
  // kImage: the tree the parent made of image layer `layer` for this sandbox (TakeImageTree) moved to `target`;
  // without one, a bind of `source` as kBindNoFollow.
  // kReplaceFile: `source` written as a new file beside `target`, then renamed over whatever is there (a file, a
  // symlink, a FIFO; not a directory).
  // kChdir: makes `target` (reached without following symlinks) the working directory, which the relative paths
  // of a later mount's options are resolved from.
  enum Kind {
    kMount,
    kMkdir,
    kTouch,
    kSymlink,
    kWriteFile,
    kReplaceFile,
    kPivotRoot,
    kBindNoFollow,
    kTreeAttrs,
    kImage,
    kChdir
  } kind;
  const char* source = nullptr;  // kMount, kBindNoFollow: source; kSymlink: link target; k*File: contents
  const char* target = nullptr;
  const char* fstype = nullptr;
  unsigned long flags = 0;
  const char* data = nullptr;
  unsigned mode = 0755;
  bool optional = false;     // a missing target (ENOENT) is skipped, for /proc entries some kernels lack
  bool best_effort = false;  // a refusal (EACCES, EPERM, EROFS, ...) is skipped: what an image's own files may refuse
  size_t layer = 0;          // kImage: which of the image's layers (bottom first)
};

// The steps, and the storage for every string they point to (a deque: its elements never move).
class RootfsPlan {
 public:
  const std::vector<MountStep>& steps() const { return steps_; }
  std::string Describe(size_t step) const;

  const char* Keep(std::string s);
  void Add(MountStep s) { steps_.push_back(s); }

 private:
  std::deque<std::string> strings_;
  std::vector<MountStep> steps_;
};

// Characters overlayfs reads as separators in its mount options (',' between options, ':' between lower layers,
// '\' escaping them): a layer path holding one would be read as more layers or options than it is.
inline constexpr const char* kOverlaySpecialChars = ":,\\";

// Where every sandbox stages its root, inside its own mount namespace (the host never sees mounts there).
std::string StagingDir(const std::string& runtime_dir);
// The sandbox's /etc/hosts: its hostname on the loopback addresses.
std::string HostsFile(const std::string& hostname);
// The options of a tmpfs the sandbox writes to (/tmp, /dev/shm), at most `bytes` large (0: the kernel's default, half
// the host's memory). What the sandbox's own processes write there is charged to its memory limit; what the daemon
// writes for it (the file tools) is charged to the daemon, so the size is what bounds that.
std::string ScratchTmpfs(uint64_t bytes);

// Plans the root for `config`: the image (overlay with a writable layer) or the default host view, binds,
// /proc with masked and read-only paths, a minimal /dev, /tmp, read-only /sys, then pivot_root.
Result<RootfsPlan> PlanRootfs(const SandboxConfig& config, const std::string& staging_dir);

// Runs the plan. Async-signal-safe. Returns -1 when all steps succeeded, else the index of the failed step
// with errno set.
int ExecuteRootfs(const RootfsPlan& plan);

// Prepares a kept writable layer for a sandbox whose ids start at host uid `base` and whose root is host
// `root_uid`/`root_gid` (base itself unless an idmap maps id 0): creates it, owned by that root, and moves files
// left by an earlier run under another range into this one (the range is recorded in <dir>/.isb-range).
Status PrepareWritableDir(const std::string& dir, uid_t base, uid_t root_uid, gid_t root_gid, bool image);

}  // namespace isb::engine
