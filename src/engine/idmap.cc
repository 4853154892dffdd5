// Id-range leases and user-namespace maps.
#include "engine/idmap.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

namespace isb::engine {

IdLease& IdLease::operator=(IdLease&& o) noexcept {
  if (this != &o) {
    Release();
    lock_ = std::move(o.lock_);
    path_ = std::move(o.path_);
    base_ = o.base_;
    index_ = o.index_;
  }
  return *this;
}

IdLease::~IdLease() { Release(); }

void IdLease::Release() {
  // Unlink while still holding the lock: a racing Acquire that opened the old inode sees it unlinked and retries.
  if (lock_.valid()) ::unlink(path_.c_str());
  lock_.Reset();
}

IdAllocator IdAllocator::ForHost() { return IdAllocator(kHostLeaseDir, kHostFirstBase, kHostRanges); }

Result<IdLease> IdAllocator::Acquire() {
  ISB_TRY(MakeDirs(dir_, 0700));
  // Start at a pid-derived index so concurrent callers rarely contend for the same file.
  uint32_t start = static_cast<uint32_t>(::getpid()) % count_;
  for (uint32_t k = 0; k < count_; ++k) {
    uint32_t i = (start + k) % count_;
    std::string path = dir_ + "/" + std::to_string(i);
    Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return Error::Sys("open id lease " + path);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) continue;
      return Error::Sys("flock " + path);
    }
    struct stat held {
    }, now{};
    if (::fstat(fd.get(), &held) != 0) return Error::Sys("fstat " + path);
    if (::stat(path.c_str(), &now) != 0 || now.st_ino != held.st_ino) continue;  // released meanwhile
    IdLease lease;
    lease.lock_ = std::move(fd);
    lease.path_ = std::move(path);
    lease.index_ = i;
    lease.base_ = first_base_ + i * kRangeSize;
    return lease;
  }
  return Error::Msg("all " + std::to_string(count_) + " uid ranges in " + dir_ +
                    " are in use; remove sandboxes or wait for some to exit");
}

bool IdAllocator::Reclaim(uint32_t index) {
  std::string path = dir_ + "/" + std::to_string(index);
  Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return errno == ENOENT;
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false;
  // Still the file at that path? Another Reclaim may have unlinked it meanwhile and a new lease taken the path with
  // a file of its own, locked: that one is not ours to unlink.
  struct stat held {
  }, now{};
  if (::fstat(fd.get(), &held) != 0 || ::stat(path.c_str(), &now) != 0) return true;  // gone already
  if (held.st_ino != now.st_ino || held.st_dev != now.st_dev) return true;
  ::unlink(path.c_str());
  return true;
}

Status WriteIdMaps(pid_t pid, uid_t base, const std::vector<IdMapping>& mappings) {
  std::string proc = "/proc/" + std::to_string(pid);
  ISB_TRY(WriteKernelFile(proc + "/uid_map", IdMapText(base, mappings, IdMapKind::kUid)));
  ISB_TRY(WriteKernelFile(proc + "/gid_map", IdMapText(base, mappings, IdMapKind::kGid)));
  return {};
}

}  // namespace isb::engine
