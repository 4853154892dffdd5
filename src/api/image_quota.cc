// An org's disk quota as its images meet it.
#include "api/image_quota.h"

#include "api/org_sandboxes.h"

namespace isb::api {

Result<ImageQuotaCheck> ImageQuotaCheck::Begin(const image::ImageStore& store, const ImageDiskQuotaFn& quota,
                                               const std::string& org) {
  std::optional<ImageDiskQuota> q;
  if (quota) {
    ISB_ASSIGN_OR_RETURN(q, quota(org));
  }
  if (!q) return ImageQuotaCheck(org, std::nullopt, 0, {});
  std::vector<image::ImageRecord> records = store.List(org);
  const uint64_t image_bytes = store.BytesOf(records);
  std::map<std::string, image::ImageRecord> before;
  for (image::ImageRecord& r : records) before.emplace(r.name, std::move(r));
  ImageQuotaCheck check(org, q, image_bytes, std::move(before));
  if (check.room() == 0)
    return Error::Of(Code::kForbidden, check.Allocated() + "; its sandboxes take " + MiB(q->sandboxes) +
                                           " and its images " + MiB(check.image_bytes_) +
                                           ": remove images or sandboxes first");
  return check;
}

uint64_t ImageQuotaCheck::room() const {
  if (!quota_) return UINT64_MAX;
  const uint64_t used = quota_->sandboxes + image_bytes_;
  return used >= quota_->limit ? 0 : quota_->limit - used;
}

std::string ImageQuotaCheck::Allocated() const {
  return "quota: org '" + org_ + "' may be allocated " + MiB(quota_ ? quota_->limit : 0) + " of disk";
}

Status ImageQuotaCheck::Finish(image::ImageStore& store, const std::vector<image::ImageRecord>& added) const {
  if (!quota_ || added.empty()) return {};
  const uint64_t now = store.OrgBytes(org_);
  if (quota_->sandboxes + now <= quota_->limit) return {};
  for (const image::ImageRecord& r : added) {
    // Undone as it was: what the name held before comes back, so a refused pull of a tag keeps the old image.
    if (auto was = before_.find(r.name); was != before_.end()) {
      (void)store.Put(was->second);
    } else {
      (void)store.Remove(org_, r.name);
    }
  }
  const std::string what = added.size() == 1 ? "image '" + added.front().name + "'" : "these images";
  return Error::Of(Code::kForbidden, Allocated() + "; its sandboxes take " + MiB(quota_->sandboxes) +
                                         " and its images would take " + MiB(now) + " with " + what + " (it had " +
                                         MiB(image_bytes_) + "): remove images or sandboxes first");
}

Error ImageQuotaCheck::Explain(const std::string& ref, const Error& error) const {
  if (!quota_ || error.code != Code::kTooLarge) return error;
  return Error::Of(Code::kForbidden,
                   Allocated() + ", which leaves " + MiB(room()) + " for image '" + ref + "': " + error.message);
}

}  // namespace isb::api
