// Host uid/gid ranges: each live sandbox leases 65536 ids that no other live sandbox has.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/fd.h"
#include "base/result.h"
#include "engine/id_mapping.h"

namespace isb::engine {

inline constexpr uint32_t kRangeSize = 65536;
// The ranges isb leases on a host: kHostRanges of them from kHostFirstBase (IdAllocator::ForHost).
inline constexpr uid_t kHostFirstBase = 1u << 28;
inline constexpr uint32_t kHostRanges = 4096;

// A lease on one range, held by an flock on <dir>/<index>; a crashed holder's lock is released by the kernel,
// so a range is never lost. Destroying the lease unlinks its file.
class IdLease {
 public:
  IdLease() = default;
  IdLease(IdLease&&) noexcept = default;
  IdLease& operator=(IdLease&& o) noexcept;
  ~IdLease();

  // False for a lease never acquired (a privileged sandbox's): base() is then 0, the host's own ids.
  bool held() const { return lock_.valid(); }
  uid_t base() const { return base_; }
  uint32_t index() const { return index_; }
  const std::string& path() const { return path_; }
  int fd() const { return lock_.get(); }
  // Closes this process's descriptor but leaves the file: a sandbox's init holds the lock from here on.
  void Detach() {
    lock_.Reset();
    path_.clear();
  }

 private:
  friend class IdAllocator;
  void Release();
  Fd lock_;
  std::string path_;
  uid_t base_ = 0;
  uint32_t index_ = 0;
};

class IdAllocator {
 public:
  // Ranges are [first_base + i*65536, +65536) for i in [0, count).
  IdAllocator(std::string lease_dir, uid_t first_base, uint32_t count)
      : dir_(std::move(lease_dir)), first_base_(first_base), count_(count) {}

  // The ranges isb uses on a host: 4096 ranges from 2^28, well above ordinary and subuid-allocated ids, leased
  // in one directory per host (/run/isb/ids) whatever the runtime dir, so that every isb process on the host
  // (isb run, the daemon) draws from the same pool.
  static IdAllocator ForHost();
  static constexpr const char* kHostLeaseDir = "/run/isb/ids";

  Result<IdLease> Acquire();
  // Removes the lease file of range `index` if nobody holds it (its sandbox has exited). Returns true if removed
  // or absent.
  bool Reclaim(uint32_t index);

 private:
  std::string dir_;
  uid_t first_base_;
  uint32_t count_;
};

// Writes uid_map and gid_map of `pid`: the range from `base`, split around `mappings` (IdMapText). The caller must
// hold CAP_SETUID/CAP_SETGID in the parent namespace.
Status WriteIdMaps(pid_t pid, uid_t base, const std::vector<IdMapping>& mappings = {});

}  // namespace isb::engine
