// SandboxConfig: everything a caller decides about one sandbox, validated before any step runs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/id_mapping.h"

namespace isb::engine {

struct BindMount {
  std::string source;  // host path, reached without following symlinks: resolve it first (a symlink is ELOOP)
  std::string target;  // absolute path inside the sandbox
  bool read_only = true;
};

struct Limits {
  uint64_t memory_bytes = 512ull << 20;  // memory and swap together
  uint32_t millicpus = 2000;             // CPU quota: 1000 = one core
  uint32_t pids = 64;
};

// The most layers one sandbox stacks: each is a descriptor in the one message that starts the sandbox (SCM_RIGHTS
// takes at most 253) and a name in the overlay's options (one page). An image with more has its lowest layers
// flattened into one by its caller (image::ImageStore::StackedLayerRoots; image::kMaxStackedLayers is this).
inline constexpr size_t kMaxImageLayers = 128;

struct SandboxConfig {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "K=V"; replaces isb's defaults for the same K
  std::string workdir = "/";
  std::string hostname = "sandbox";
  uid_t uid = 0;  // inside the sandbox
  gid_t gid = 0;
  // No user namespace of its own: the sandbox's root is the host's root and its ids are the host's (no id lease).
  // Every other namespace, the cgroup, the capability set and seccomp stay as for any sandbox.
  bool privileged = false;
  // Host ids mapped into the sandbox's user namespace beside its own range (ValidateIdMappings); not with
  // `privileged`.
  std::vector<IdMapping> idmap;
  // Read-only root; empty means the default view of the host (/usr, /bin, /lib*, /sbin, a minimal /etc).
  std::string image;
  // An image in layers (host directories, bottom layer first), stacked read-only under the writable layer in place
  // of `image` when not empty. Each is checked as `image` is. OCI whiteouts as overlayfs writes them: a character
  // device 0/0 hides a lower layer's file, a directory with the xattr user.overlay.opaque=y hides the lower layers'
  // directory there (the sandbox's overlay, mounted in its own user namespace, cannot read trusted.* xattrs: it
  // reads user.overlay.*). At most kMaxImageLayers.
  std::vector<std::string> image_layers{};
  // The image seen through the sandbox's id mapping (IdmappedTree): its host ids 0..65535 are the sandbox's, so the
  // sandbox's root owns (and may read and change, in its layer) whatever the host's root owns there. For images
  // the host chose (`isb run`, the host's and superadmins' sandboxes); a remote caller's image (a directory below a
  // bind root) is bound as it is, seen as `other`.
  bool idmap_image = false;
  // Where the writable layer is kept between runs; empty means a tmpfs discarded at exit.
  std::string writable_dir;
  std::vector<BindMount> binds;
  // /etc/resolv.conf (the default view's, or in place of an image's; empty: no name service); a sandbox with an
  // egress list names isb's DNS.
  std::string resolv_conf;
  // A tmpfs at /run/secrets of the sandbox's own, owned by its root, for secrets given as files (the daemon writes
  // them there once the sandbox runs): never in its layer or image.
  bool secrets_tmpfs = false;
  Limits limits;
  // Wall-clock limit for the whole tree; zero means none.
  std::chrono::milliseconds timeout{0};
  uint64_t output_limit = 1ull << 20;  // per stream
};

}  // namespace isb::engine
