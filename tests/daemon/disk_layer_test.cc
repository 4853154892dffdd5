// DiskLayer for real: a loop-mounted ext4 image of the asked size, full at that size, gone without a trace after.
#include "daemon/disk_layer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/file.h"
#include "daemon/mount_table.h"
#include "must_work.h"

namespace isb::daemon {
namespace {

using isb::testing::LoopsOf;
using isb::testing::MountsOn;

// Writes `bytes` of zeros to `path`; the errno of the first failed write, 0 when all were written.
int WriteZeros(const std::string& path, uint64_t bytes) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return errno;
  std::string block(1 << 20, '\0');
  for (uint64_t done = 0; done < bytes;) {
    ssize_t n = ::write(fd.get(), block.data(), std::min<uint64_t>(block.size(), bytes - done));
    if (n < 0) return errno;
    done += static_cast<uint64_t>(n);
  }
  return ::fsync(fd.get()) == 0 ? 0 : errno;
}

class DiskLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ISB_REQUIRE_ROOT();
    char tmpl[] = "/tmp/isb-disk-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = std::filesystem::canonical(tmpl).string();
  }
  void TearDown() override {
    if (root_.empty()) return;
    DiskLayer(image(), dir()).Remove().ok();
    std::filesystem::remove_all(root_);
  }
  std::string image() const { return root_ + "/layer.img"; }
  std::string dir() const { return root_ + "/layer"; }
  std::string root_;
};

TEST_F(DiskLayerTest, WritingBeyondItsSizeIsENOSPCAndRemoveLeavesNothing) {
  DiskLayer layer(image(), dir());
  ASSERT_TRUE(layer.Attach(32ull << 20).ok());
  EXPECT_TRUE(layer.Attached());
  // One mount, nosuid and nodev, on a loop device reading this image.
  std::vector<std::string> mounts = MountsOn(dir());
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_NE(mounts[0].find(" rw,nosuid,nodev,"), std::string::npos) << mounts[0];
  EXPECT_NE(mounts[0].find(" - ext4 /dev/loop"), std::string::npos) << mounts[0];
  EXPECT_EQ(LoopsOf(image()).size(), 1u);
  // Sparse: the image takes next to nothing of the host's disk until the layer is written.
  struct stat st {};
  ASSERT_EQ(::stat(image().c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 32 << 20);
  EXPECT_LT(st.st_blocks * 512, 4 << 20);
  // No blocks reserved for a root the sandbox does not have (mkfs's default 5%); ext4 keeps only its own 2% back
  // for delayed allocation.
  struct statvfs fs {};
  ASSERT_EQ(::statvfs(dir().c_str(), &fs), 0);
  EXPECT_LT(fs.f_bfree - fs.f_bavail, fs.f_bfree * 3 / 100);
  EXPECT_LE(fs.f_blocks * fs.f_frsize, 32u << 20);
  EXPECT_EQ(WriteZeros(dir() + "/fits", 8 << 20), 0);
  EXPECT_EQ(WriteZeros(dir() + "/too-big", 40 << 20), ENOSPC);

  ASSERT_TRUE(layer.Remove().ok());
  EXPECT_FALSE(layer.Attached());
  EXPECT_TRUE(MountsOn(dir()).empty());
  EXPECT_TRUE(LoopsOf(image()).empty());
  EXPECT_FALSE(std::filesystem::exists(image()));
}

TEST_F(DiskLayerTest, DataSurvivesDetachAndAttachAndAttachTwiceMountsOnce) {
  DiskLayer layer(image(), dir());
  ASSERT_TRUE(layer.Attach(16ull << 20).ok());
  ASSERT_TRUE(WriteFile(dir() + "/kept", "still here").ok());
  ASSERT_TRUE(layer.Attach(16ull << 20).ok());
  EXPECT_EQ(MountsOn(dir()).size(), 1u);

  ASSERT_TRUE(layer.Detach().ok());
  EXPECT_FALSE(layer.Attached());
  EXPECT_TRUE(MountsOn(dir()).empty());
  EXPECT_TRUE(LoopsOf(image()).empty());
  EXPECT_FALSE(std::filesystem::exists(dir() + "/kept"));
  EXPECT_TRUE(layer.Detach().ok());  // nothing mounted: nothing to do

  // Attached again, even when asked for another size: the image keeps its own size and its data.
  ASSERT_TRUE(layer.Attach(64ull << 20).ok());
  auto kept = ReadFile(dir() + "/kept");
  EXPECT_EQ(kept.ok() ? *kept : "", "still here");
  struct stat st {};
  ASSERT_EQ(::stat(image().c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 16 << 20);
}

// Pages of `path` in the host's page cache.
size_t CachedPages(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || st.st_size == 0) return 0;
  const size_t len = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return 0;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((len + page - 1) / page);
  size_t n = 0;
  if (::mincore(map, len, in_core.data()) == 0)
    for (unsigned char c : in_core) n += c & 1;
  ::munmap(map, len);
  return n;
}

// The loop device reads and writes the image with direct I/O: what the layer's filesystem caches (charged to the
// sandbox that reads it) is not cached a second time as the image's pages on the host, charged to no one.
TEST_F(DiskLayerTest, TheImageIsReadAndWrittenPastTheHostsPageCache) {
  {
    Fd probe(::open((root_ + "/probe").c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600));
    const bool direct_io = probe.valid() || errno != EINVAL;
    ISB_REQUIRE_MACHINE(direct_io, root_ + " is on a filesystem without direct I/O");
  }
  DiskLayer layer(image(), dir());
  ASSERT_TRUE(layer.Attach(32ull << 20).ok());
  std::vector<std::string> loops = LoopsOf(image());
  ASSERT_EQ(loops.size(), 1u);
  auto dio = ReadFile("/sys/block/" + loops[0] + "/loop/dio");
  EXPECT_EQ(dio.ok() ? *dio : "", "1\n");
  EXPECT_EQ(CachedPages(image()), 0u);  // not even what making the image wrote
  ASSERT_EQ(WriteZeros(dir() + "/four-mib", 4 << 20), 0);
  ::sync();
  EXPECT_EQ(CachedPages(image()), 0u);
}

// A detach waits for its image to leave the loop device, not for the device to be free: a create may take the
// device the moment it is free, and a removal must not then wait out its whole 2 s for an image that is not its own.
TEST_F(DiskLayerTest, ADetachIsNotHeldUpByTheNextImageOnItsLoopDevice) {
  DiskLayer a(image(), dir());
  ASSERT_TRUE(a.Attach(16ull << 20).ok());
  std::vector<std::string> loops = LoopsOf(image());
  ASSERT_EQ(loops.size(), 1u);
  const std::string device = "/dev/" + loops[0];
  const std::string next = root_ + "/next.img";
  Fd next_file(::open(next.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  ASSERT_TRUE(next_file.valid() && ::ftruncate(next_file.get(), 16 << 20) == 0);
  // Held open here, the device stays this image's after the unmount, until this closes it.
  Fd held(::open(device.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(held.valid()) << std::strerror(errno);
  auto detached = std::async(std::launch::async, [&] { return a.Detach(); });
  for (int i = 0; i < 1000 && !MountsOn(dir()).empty(); ++i) ::usleep(1000);
  ASSERT_TRUE(MountsOn(dir()).empty()) << "the detach never unmounted";
  // The last close lets the image go (the kernel clears the device a moment later, and an open of it before then
  // would keep it this image's); another image is put on the device the moment it is free. Under a parallel test
  // run another test's layer may take it first: the same case, with someone else's image.
  held = Fd();
  Fd taken;
  loop_config config{};
  config.fd = static_cast<uint32_t>(next_file.get());
  bool configured = false, taken_by_another = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       !configured && !taken_by_another && std::chrono::steady_clock::now() < until;) {
    auto backing = ReadFile("/sys/block/" + loops[0] + "/loop/backing_file");
    const std::string now_on = backing.ok() ? *backing : "";
    if (now_on == image() + "\n") {
      ::usleep(20);
      continue;
    }
    taken_by_another = !now_on.empty();
    if (taken_by_another) break;
    taken = Fd(::open(device.c_str(), O_RDWR | O_CLOEXEC));
    configured = taken.valid() && ::ioctl(taken.get(), LOOP_CONFIGURE, &config) == 0;
    if (!configured) taken = Fd();  // another took it between the look and the open: look again
  }
  ASSERT_TRUE(configured || taken_by_another) << "the loop device kept the image after its last user closed it";
  const auto reused = std::chrono::steady_clock::now();
  if (configured) {
    EXPECT_EQ(LoopsOf(next), loops);
  }
  const bool ready = detached.wait_for(std::chrono::milliseconds(1500)) == std::future_status::ready;
  if (configured) ::ioctl(taken.get(), LOOP_CLR_FD, 0);
  ASSERT_TRUE(ready) << "the detach waited for " << device << ", which holds another image now";
  EXPECT_TRUE(detached.get().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - reused, std::chrono::milliseconds(1500));
  taken = Fd();
  for (int i = 0; i < 1000 && !LoopsOf(next).empty(); ++i) ::usleep(1000);
  EXPECT_TRUE(LoopsOf(next).empty());
}

// With a template dir, the first image of a size formats the template; every image of that size is a sparse copy
// of it, a filesystem of its own.
TEST_F(DiskLayerTest, ImagesOfOneSizeAreCopiesOfOneFormattedTemplate) {
  const std::string templates = root_ + "/templates";
  DiskLayer first(image(), dir(), templates), second(root_ + "/second.img", root_ + "/second", templates);
  ASSERT_TRUE(first.Attach(32ull << 20).ok());
  struct stat formatted {
  }, copy{};
  ASSERT_EQ(::stat((templates + "/" + std::to_string(32ull << 20) + ".img").c_str(), &formatted), 0);
  ASSERT_TRUE(second.Attach(32ull << 20).ok());
  ASSERT_EQ(::stat(second.image().c_str(), &copy), 0);
  EXPECT_EQ(copy.st_size, 32 << 20);
  EXPECT_LE(copy.st_blocks, formatted.st_blocks) << "holes stay holes";
  EXPECT_EQ(std::filesystem::directory_iterator(templates)->path().filename(), std::to_string(32ull << 20) + ".img");
  {
    // What each new layer writes: the default 2 GiB comes to under 256 KiB (mkfs's blocks kept for growing a
    // filesystem, which a layer never does, would add a megabyte to every copy).
    DiskLayer big(root_ + "/big.img", root_ + "/big", templates);
    ASSERT_TRUE(big.Attach(2ull << 30).ok());
    struct stat st {};
    ASSERT_EQ(::stat(big.image().c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 2ll << 30);
    EXPECT_LT(st.st_blocks * 512, 256 << 10);
    ASSERT_TRUE(big.Remove().ok());
  }
  // Each a filesystem of its own: what one holds the other does not.
  ASSERT_TRUE(WriteFile(dir() + "/mine", "first").ok());
  EXPECT_FALSE(std::filesystem::exists(second.dir() + "/mine"));
  EXPECT_EQ(WriteZeros(second.dir() + "/too-big", 40 << 20), ENOSPC);
  EXPECT_EQ(WriteZeros(dir() + "/fits", 8 << 20), 0);
  ASSERT_TRUE(second.Remove().ok());
  EXPECT_TRUE(MountsOn(second.dir()).empty());
  EXPECT_TRUE(LoopsOf(second.image()).empty());
}

// A copy writes only the template's blocks that hold data: blocks of zeros stay holes, even where the template has
// them allocated (as every block is on a filesystem without SEEK_DATA, which reports the whole file as data).
TEST_F(DiskLayerTest, BlocksOfZerosInTheTemplateStayHolesInItsCopies) {
  const std::string templates = root_ + "/templates";
  DiskLayer first(image(), dir(), templates);
  ASSERT_TRUE(first.Attach(32ull << 20).ok());
  ASSERT_TRUE(first.Remove().ok());
  const std::string formatted = templates + "/" + std::to_string(32ull << 20) + ".img";
  {
    // One MiB of written zeros where the template has a hole: its contents do not change, its blocks do.
    Fd fd(::open(formatted.c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(fd.valid());
    off_t hole = ::lseek(fd.get(), 0, SEEK_HOLE);
    ASSERT_GE(hole, 0);
    off_t next = ::lseek(fd.get(), hole, SEEK_DATA);
    if (next < 0) next = 32ll << 20;
    ASSERT_GE(next - hole, 1 << 20) << "no hole of 1 MiB in the template";
    std::string zeros(1 << 20, '\0');
    ASSERT_EQ(::pwrite(fd.get(), zeros.data(), zeros.size(), hole), static_cast<ssize_t>(zeros.size()));
    ASSERT_EQ(::fsync(fd.get()), 0);
  }
  struct stat tmpl {
  }, copy{};
  ASSERT_EQ(::stat(formatted.c_str(), &tmpl), 0);
  DiskLayer second(root_ + "/second.img", root_ + "/second", templates);
  ASSERT_TRUE(second.Attach(32ull << 20).ok()) << "the copy is a filesystem that mounts";
  ASSERT_TRUE(WriteFile(second.dir() + "/f", "data").ok());
  ASSERT_TRUE(second.Detach().ok());
  ASSERT_EQ(::stat(second.image().c_str(), &copy), 0);
  EXPECT_LE((copy.st_blocks + 2048) * 512, tmpl.st_blocks * 512)
      << "the copy holds " << copy.st_blocks * 512 << " bytes, the template " << tmpl.st_blocks * 512;
  ASSERT_TRUE(second.Attach(32ull << 20).ok());
  auto kept = ReadFile(second.dir() + "/f");
  EXPECT_EQ(kept.ok() ? *kept : "", "data");
  ASSERT_TRUE(second.Remove().ok());
}

TEST_F(DiskLayerTest, SizesOutsideTheRangeAreRefused) {
  DiskLayer layer(image(), dir());
  auto small = layer.Attach(DiskLayer::kMinBytes - 1);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().code, Code::kInvalidArgument);
  EXPECT_EQ(small.error().message, "disk: must be at least 16 MiB (16777216 bytes)");
  EXPECT_FALSE(layer.Attach(DiskLayer::kMaxBytes + 1).ok());
  EXPECT_FALSE(std::filesystem::exists(image()));
}

// A layer written before disk limits (files, no image) is kept as it is rather than hidden under a new mount.
TEST_F(DiskLayerTest, ALayerWithFilesAndNoImageIsLegacy) {
  DiskLayer layer(image(), dir());
  EXPECT_FALSE(layer.Legacy());
  ASSERT_TRUE(MakeDirs(dir()).ok());
  EXPECT_FALSE(layer.Legacy());
  ASSERT_TRUE(WriteFile(dir() + "/.isb-range", "100000").ok());
  EXPECT_TRUE(layer.Legacy());
}

}  // namespace
}  // namespace isb::daemon
