// DiskLayer: mkfs.ext4 on a sparse file, LOOP_CONFIGURE through /dev/loop-control, mount and unmount.
#include "daemon/disk_layer.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/file.h"
#include "base/mutex.h"
#include "base/program.h"

namespace isb::daemon {

namespace {

constexpr char kMkfs[] = "/usr/sbin/mkfs.ext4";
constexpr int kLoopAttempts = 16;
constexpr int kMaxStacked = 8;
constexpr unsigned kLoopMajor = 7;  // the block major of loop devices (linux/major.h, not in the uapi headers)
constexpr auto kDetachWait = std::chrono::seconds(2);

std::string Parent(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

// The device of the filesystem mounted on `dir`, or 0 when `dir` is no mount point (same device as its parent).
dev_t MountedDevice(const std::string& dir) {
  struct stat st {
  }, up{};
  if (::lstat(dir.c_str(), &st) != 0 || ::lstat(Parent(dir).c_str(), &up) != 0) return 0;
  return st.st_dev == up.st_dev ? 0 : st.st_dev;
}

struct Loop {
  Fd fd;
  std::string path;  // /dev/loopN
};

// A free loop device with `image` attached, set to detach itself when its last user (the mount) lets go. The
// kernel names the same free device to everyone who asks until one configures it, so this process's callers take
// turns (concurrent creates would otherwise lose to each other again and again); other processes on the host are
// outrun by asking again.
Result<Loop> AttachLoop(const std::string& image) {
  static Mutex one_at_a_time;
  MutexLock lock(one_at_a_time);
  Fd file(::open(image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!file.valid()) return Error::Sys("open " + image);
  Fd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control.valid()) return Error::Sys("open /dev/loop-control (disk limits need the loop module and root)");
  loop_config config{};
  config.fd = static_cast<uint32_t>(file.get());
  // Direct I/O: the loop device reads and writes the image past the host's page cache, so what the layer's
  // filesystem caches (charged to the sandbox) is not cached a second time for the image (charged to no one).
  config.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
  std::strncpy(reinterpret_cast<char*>(config.info.lo_file_name), image.c_str(), LO_NAME_SIZE - 1);
  for (int attempt = 0; attempt < kLoopAttempts; ++attempt) {
    int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return Error::Sys("find a free loop device");
    const std::string dev = "/dev/loop" + std::to_string(n);
    Fd loop(::open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop.valid()) return Error::Sys("open " + dev);
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) {
      // What the image's making left in the page cache (written back when the device turned to direct I/O) is
      // no one's to read again.
      if ((config.info.lo_flags & LO_FLAGS_DIRECT_IO) != 0)
        (void)::posix_fadvise(file.get(), 0, 0, POSIX_FADV_DONTNEED);
      return Loop{std::move(loop), dev};
    }
    // A host filesystem without direct I/O (tmpfs, say) is read through its page cache as before.
    if (errno == EINVAL && (config.info.lo_flags & LO_FLAGS_DIRECT_IO) != 0) {
      config.info.lo_flags &= ~LO_FLAGS_DIRECT_IO;
      --attempt;
      continue;
    }
    // Another process took this device between the two calls: ask again.
    if (errno != EBUSY) return Error::Sys("attach " + image + " to " + dev);
  }
  return Error::Msg("attach " + image + ": every free loop device was taken by someone else " +
                    std::to_string(kLoopAttempts) + " times in a row");
}

}  // namespace

std::string LoopBackingFile(dev_t dev) {
  if (major(dev) != kLoopMajor) return "";
  auto text = ReadFile("/sys/dev/block/" + std::to_string(major(dev)) + ":" + std::to_string(minor(dev)) +
                       "/loop/backing_file");
  if (!text.ok()) return "";
  while (!text->empty() && text->back() == '\n') text->pop_back();
  return *text;
}

namespace {

// A name beside `path` for a file being made, unique to this thread.
std::string PartName(const std::string& path) { return path + ".new" + std::to_string(::gettid()); }

// Renames the finished file `part` to `path`; on failure `part` is removed.
Status PutInPlace(const std::string& part, const std::string& path) {
  if (::rename(part.c_str(), path.c_str()) == 0) return {};
  Error e = Error::Sys("rename " + part);
  ::unlink(part.c_str());
  return e;
}

// Writes the blocks of [begin, end) of `in` that hold a nonzero byte to the same offsets of `out`: a block of
// zeros stays a hole. A filesystem without SEEK_DATA reports the whole file as data; this keeps the copy as sparse
// as the template's real contents all the same (reading the zeros, not writing them).
Status CopyNonZeroBlocks(int in, int out, off_t begin, off_t end, const std::string& from, const std::string& to) {
  constexpr size_t kBlock = 4096, kChunk = 64 * kBlock;
  static const char kZeros[kBlock] = {};
  std::vector<char> buf(kChunk);
  for (off_t at = begin; at < end;) {
    const size_t want = static_cast<size_t>(std::min<off_t>(static_cast<off_t>(kChunk), end - at));
    ssize_t n = ::pread(in, buf.data(), want, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("read " + from);
    if (n == 0) break;
    for (size_t off = 0; off < static_cast<size_t>(n); off += kBlock) {
      const size_t len = std::min(kBlock, static_cast<size_t>(n) - off);
      if (std::memcmp(buf.data() + off, kZeros, len) == 0) continue;
      if (::pwrite(out, buf.data() + off, len, at + static_cast<off_t>(off)) != static_cast<ssize_t>(len))
        return Error::Sys("write " + to);
    }
    at += n;
  }
  return {};
}

// Copies the data extents of `from` into a new file `to` of the same size (holes, and blocks of zeros, stay holes).
Status CopySparse(const std::string& from, const std::string& to) {
  Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in.valid()) return Error::Sys("open " + from);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return Error::Sys("stat " + from);
  Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!out.valid()) return Error::Sys("create " + to);
  if (::ftruncate(out.get(), st.st_size) != 0) return Error::Sys("size " + to);
  for (off_t at = 0; at < st.st_size;) {
    off_t data = ::lseek(in.get(), at, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // only a hole is left
    if (data < 0) return Error::Sys("seek " + from);
    off_t hole = ::lseek(in.get(), data, SEEK_HOLE);
    if (hole < 0) return Error::Sys("seek " + from);
    ISB_TRY(CopyNonZeroBlocks(in.get(), out.get(), data, hole, from, to));
    at = hole;
  }
  return {};
}

}  // namespace

Status DiskLayer::MakeImage(uint64_t bytes) const {
  if (template_dir_.empty()) return Format(image_, bytes);
  const std::string formatted = template_dir_ + "/" + std::to_string(bytes) + ".img";
  if (::access(formatted.c_str(), F_OK) != 0) {
    ISB_TRY(MakeDirs(template_dir_, 0700));
    ISB_TRY(Format(formatted, bytes));
  }
  const std::string part = PartName(image_);
  ::unlink(part.c_str());
  if (Status copied = CopySparse(formatted, part); !copied.ok()) {
    ::unlink(part.c_str());
    return copied;
  }
  return PutInPlace(part, image_);
}

Status DiskLayer::Format(const std::string& image, uint64_t bytes) {
  // Made under another name and renamed when complete: a daemon killed meanwhile leaves no half-made image.
  const std::string part = PartName(image);
  ::unlink(part.c_str());
  {
    Fd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return Error::Sys("create " + part);
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return Error::Sys("size " + part);
  }
  // No reserved blocks (the sandbox's root is no host root), no journal (the layer is a sandbox's scratch), no
  // blocks kept for growing it (an image keeps its size), and lazy initialization: about 30 ms for a GiB. A 2 GiB
  // image holds 152 KiB of data (1176 KiB with the growth blocks), which every copy of the template writes again.
  Result<ProgramExit> mkfs =
      RunProgram({kMkfs, "-q", "-F", "-m", "0", "-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1", "-O",
                  "^has_journal,^resize_inode", part});
  if (!mkfs.ok() || !mkfs->ok()) {
    ::unlink(part.c_str());
    if (!mkfs.ok()) return Error::Of(Code::kUnavailable, mkfs.error().message + " (install e2fsprogs)");
    return Error::Msg("mkfs.ext4 " + part + " failed: " + mkfs->stderr_text);
  }
  return PutInPlace(part, image);
}

Status DiskLayer::Attach(uint64_t bytes) {
  ISB_TRY(spec::CheckSize("disk", bytes, kMinBytes, kMaxBytes));
  ISB_TRY(MakeDirs(dir_, 0700));
  if (Attached()) return {};
  if (::access(image_.c_str(), F_OK) != 0) ISB_TRY(MakeImage(bytes));
  ISB_ASSIGN_OR_RETURN(Loop loop, AttachLoop(image_));
  // noinit_itable: the kernel does not zero the inode tables mkfs left uninitialized (flagged so in the group
  // descriptors, which ext4 honours), so a new layer costs no background writes.
  if (::mount(loop.path.c_str(), dir_.c_str(), "ext4", MS_NOSUID | MS_NODEV, "noinit_itable") != 0)
    return Error::Sys("mount " + image_ + " on " + dir_);
  return {};  // closing the loop device leaves the mount as its only user
}

Status DiskLayer::Detach() {
  dev_t attached = 0;
  std::string backing;
  // Stacked mounts are undone one by one; a mount still in use somewhere on the host is detached lazily.
  for (int i = 0; i < kMaxStacked; ++i) {
    dev_t dev = MountedDevice(dir_);
    if (dev == 0) break;
    if (std::string file = LoopBackingFile(dev); !file.empty()) {
      attached = dev;
      backing = std::move(file);
    }
    if (::umount2(dir_.c_str(), UMOUNT_NOFOLLOW) != 0 &&
        (errno != EBUSY || ::umount2(dir_.c_str(), UMOUNT_NOFOLLOW | MNT_DETACH) != 0))
      return Error::Sys("unmount " + dir_);
  }
  if (attached == 0) return {};
  // The loop device detaches itself once the filesystem is gone, which may lag the unmount a little. Once free, the
  // device may at once be another layer's (a create picks the lowest free one): what is waited for is this
  // image leaving it, not the device becoming free.
  const auto deadline = std::chrono::steady_clock::now() + kDetachWait;
  while (LoopBackingFile(attached) == backing && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return {};
}

Status DiskLayer::Remove() {
  ISB_TRY(Detach());
  if (::unlink(image_.c_str()) != 0 && errno != ENOENT) return Error::Sys("remove " + image_);
  return {};
}

bool DiskLayer::Attached() const {
  dev_t dev = MountedDevice(dir_);
  if (dev == 0) return false;
  std::error_code ec;
  auto real = std::filesystem::canonical(image_, ec);
  return !ec && LoopBackingFile(dev) == real.string();
}

bool DiskLayer::Legacy() const {
  std::error_code ec;
  return !std::filesystem::exists(image_, ec) && std::filesystem::is_directory(dir_, ec) &&
         !std::filesystem::is_empty(dir_, ec) && MountedDevice(dir_) == 0;
}

}  // namespace isb::daemon
