// DiskLayer: a sandbox's writable layer in a filesystem of exactly its disk size (a sparse ext4 image on a loop
// device, mounted on the layer dir), so one sandbox cannot fill the host's disk.
#pragma once

#include <cstdint>
#include <string>

#include "api/sandboxes.h"
#include "base/result.h"

namespace isb::daemon {

// The image and the mount live on the host, not in any process: they outlive the daemon (a sandbox adopted after a
// kill -9 keeps writing to its mounted layer), so this is a handle on that state, not an owner; Detach and
// Remove release it. Not thread-safe for one image: the manager serializes state changes per sandbox.
class DiskLayer {
 public:
  // With `template_dir`, a new image is a copy of the formatted template of its size kept there (made by mkfs the
  // first time that size is asked for), instead of running mkfs for every sandbox: only the template's blocks that
  // hold data are written (blocks of zeros stay holes). Without one, each image is formatted on its own.
  DiskLayer(std::string image, std::string dir, std::string template_dir = "")
      : image_(std::move(image)), dir_(std::move(dir)), template_dir_(std::move(template_dir)) {}

  // Smallest and largest sizes an image may have: ext4 needs room for its own metadata below that.
  static constexpr uint64_t kMinBytes = spec::kMinDisk;
  static constexpr uint64_t kMaxBytes = spec::kMaxDisk;

  // Makes the image (sparse, `bytes` long, ext4 with every block usable by anyone) unless it exists, then mounts
  // it on the dir (nosuid, nodev) through a free loop device that detaches itself when unmounted. Already mounted
  // there: nothing to do. A later Attach of an existing image keeps its size and data.
  Status Attach(uint64_t bytes);
  // Unmounts whatever is mounted on the dir and waits (at most 2 s) for the loop device to let go of the image.
  // Nothing mounted: nothing to do.
  Status Detach();
  // Detach, then deletes the image.
  Status Remove();
  // Whether the dir is the mount point of this image now.
  bool Attached() const;
  // A layer dir from before disk limits: it holds files and there is no image. Attach would hide them; the
  // manager keeps such a layer as it is.
  bool Legacy() const;

  const std::string& image() const { return image_; }
  const std::string& dir() const { return dir_; }

 private:
  Status MakeImage(uint64_t bytes) const;
  // A new sparse file of `bytes` at `image`, formatted ext4 by mkfs (made beside it and renamed when complete).
  static Status Format(const std::string& image, uint64_t bytes);

  std::string image_, dir_, template_dir_;
};

// The image a loop device reads ("" when it is not attached): /sys/block/loopN/loop/backing_file, for `dev` (its
// st_rdev, or the st_dev of a file on a filesystem it holds).
std::string LoopBackingFile(dev_t dev);

}  // namespace isb::daemon
