// An org's disk quota as its images meet it: the room a pull may unpack into, and the check once an image is
// recorded, undone when the org no longer fits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "image/image_store.h"

namespace isb::api {

// The org's disk quota and what its sandboxes' disks take of it; images take the rest.
struct ImageDiskQuota {
  uint64_t limit = 0;
  uint64_t sandboxes = 0;
};
// The quota of `org`, or nullopt for an org without a disk quota.
using ImageDiskQuotaFn = std::function<Result<std::optional<ImageDiskQuota>>(const std::string& org)>;

// One pull, import or snapshot of one org, from before it starts to after its records are written.
class ImageQuotaCheck {
 public:
  // Reads the org's quota and its images now; kForbidden when they and its sandboxes fill the quota already.
  // An unset `quota` (a daemon without quotas) or an org without a disk quota: no limit.
  static Result<ImageQuotaCheck> Begin(const image::ImageStore& store, const ImageDiskQuotaFn& quota,
                                       const std::string& org);

  // The bytes the org's images may still grow by (UINT64_MAX without a quota).
  uint64_t room() const;
  bool limited() const { return quota_.has_value(); }

  // After `added` were recorded: OK while the org fits its quota. Otherwise each is undone (a record it replaced
  // put back, a new one removed) and kForbidden says by how much the image would pass the quota.
  Status Finish(image::ImageStore& store, const std::vector<image::ImageRecord>& added) const;

  // A pull that stopped at room() (kTooLarge) told as the quota it met; other errors as they are.
  Error Explain(const std::string& ref, const Error& error) const;

 private:
  ImageQuotaCheck(std::string org, std::optional<ImageDiskQuota> quota, uint64_t image_bytes,
                  std::map<std::string, image::ImageRecord> before)
      : org_(std::move(org)), quota_(quota), image_bytes_(image_bytes), before_(std::move(before)) {}
  std::string Allocated() const;

  std::string org_;
  std::optional<ImageDiskQuota> quota_;
  uint64_t image_bytes_ = 0;                          // what the org's images took at Begin
  std::map<std::string, image::ImageRecord> before_;  // the org's records at Begin, by name
};

}  // namespace isb::api
