// WriteUpperAsLayer: a walk of the upper dir that follows no symlink, into a tar, through gzip, into a file, hashed
// on both sides of the compression.
#include "image/layer_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/fd.h"
#include "image/digest.h"
#include "image/tar_writer.h"

namespace isb::image {
namespace {

constexpr uint32_t kRange = 65536;
constexpr uint32_t kNobody = 65534;

// gzip over a file, hashing what goes in (the diff_id) and what comes out (the digest).
class GzipFile {
 public:
  explicit GzipFile(Fd out) : out_(std::move(out)) {
    zs_.zalloc = Z_NULL;
    zs_.zfree = Z_NULL;
    zs_.opaque = Z_NULL;
    ok_ = deflateInit2(&zs_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~GzipFile() {
    if (ok_) deflateEnd(&zs_);
  }

  Status Write(std::span<const uint8_t> in) {
    raw_.Update(in);
    return Pump(in, Z_NO_FLUSH);
  }
  Status Finish() {
    ISB_TRY(Pump({}, Z_FINISH));
    if (::fsync(out_.get()) != 0) return Error::Sys("writing the layer blob");
    return {};
  }
  Digest diff_id() { return raw_.Finish(); }
  Digest digest() { return packed_.Finish(); }
  uint64_t size() const { return size_; }

 private:
  Status Pump(std::span<const uint8_t> in, int flush) {
    if (!ok_) return Error::Of(Code::kInternal, "gzip: could not start the compressor");
    zs_.next_in = const_cast<Bytef*>(in.data());
    zs_.avail_in = static_cast<uInt>(in.size());
    uint8_t buf[64 << 10];
    int rc = Z_OK;
    do {
      zs_.next_out = buf;
      zs_.avail_out = sizeof buf;
      rc = deflate(&zs_, flush);
      if (rc == Z_STREAM_ERROR) return Error::Of(Code::kInternal, "gzip: the compressor failed");
      const size_t n = sizeof buf - zs_.avail_out;
      packed_.Update(std::span<const uint8_t>(buf, n));
      for (size_t off = 0; off < n;) {
        const ssize_t w = ::write(out_.get(), buf + off, n - off);
        if (w < 0) {
          if (errno == EINTR) continue;
          return Error::Sys("writing the layer blob");
        }
        off += static_cast<size_t>(w);
      }
      size_ += n;
    } while (zs_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    return {};
  }

  Fd out_;
  z_stream zs_{};
  bool ok_ = false;
  DigestHasher raw_, packed_;
  uint64_t size_ = 0;
};

class UpperWalk {
 public:
  UpperWalk(uint32_t uid_base, const std::vector<std::string>& exclude, const std::vector<std::string>& drop,
            TarWriter& tar)
      : base_(uid_base), exclude_(exclude.begin(), exclude.end()), drop_(drop.begin(), drop.end()), tar_(tar) {}

  Status Dir(int dirfd, const std::string& rel) {
    Fd dup(::dup(dirfd));
    if (!dup.valid()) return Error::Sys("reading the sandbox's layer");
    DIR* d = ::fdopendir(dup.get());
    if (d == nullptr) return Error::Sys("reading the sandbox's layer at " + rel);
    dup.Release();
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());  // the same files make the same layer
    for (const std::string& n : names) ISB_TRY(Entry(dirfd, n, rel.empty() ? n : rel + "/" + n));
    return {};
  }

  uint64_t entries() const { return entries_; }

 private:
  uint32_t Id(uint32_t host) const { return host - base_ < kRange ? host - base_ : kNobody; }

  Status Entry(int dirfd, const std::string& name, const std::string& rel) {
    if (drop_.contains(rel)) return {};
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return {};  // gone while the walk ran
      return Error::Sys("reading the sandbox's layer at " + rel);
    }
    TarHeader h;
    h.path = rel;
    h.mode = st.st_mode & 07777;
    h.uid = Id(st.st_uid);
    h.gid = Id(st.st_gid);
    h.mtime = st.st_mtim.tv_sec;
    ++entries_;
    if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {  // an overlay whiteout
      const size_t slash = rel.rfind('/');
      TarHeader w;
      w.path = (slash == std::string::npos ? "" : rel.substr(0, slash + 1)) + ".wh." + name;
      return tar_.AddFile(w, "");
    }
    if (S_ISDIR(st.st_mode)) {
      h.type = TarHeader::Type::kDir;
      ISB_TRY(tar_.Add(h));
      Fd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.valid()) return Error::Sys("reading the sandbox's layer at " + rel);
      if (Opaque(sub.get())) ISB_TRY(tar_.AddFile(TarHeader{.path = rel + "/.wh..wh..opq"}, ""));
      if (exclude_.contains(rel)) return {};
      return Dir(sub.get(), rel);
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(PATH_MAX, '\0');
      const ssize_t n = ::readlinkat(dirfd, name.c_str(), target.data(), target.size());
      if (n < 0) return Error::Sys("reading the sandbox's layer at " + rel);
      target.resize(static_cast<size_t>(n));
      h.type = TarHeader::Type::kSymlink;
      h.link = std::move(target);
      return tar_.Add(h);
    }
    if (S_ISFIFO(st.st_mode)) {
      h.type = TarHeader::Type::kFifo;
      return tar_.Add(h);
    }
    if (!S_ISREG(st.st_mode)) return {};  // devices and sockets: not part of an image
    if (st.st_nlink > 1) {
      auto [it, first] = links_.try_emplace({st.st_dev, st.st_ino}, rel);
      if (!first) {
        h.type = TarHeader::Type::kHardlink;
        h.link = it->second;
        return tar_.Add(h);
      }
    }
    Fd f(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!f.valid()) return Error::Sys("reading the sandbox's layer at " + rel);
    h.type = TarHeader::Type::kFile;
    h.size = static_cast<uint64_t>(st.st_size);
    ISB_TRY(tar_.Add(h));
    uint64_t left = h.size;
    uint8_t buf[64 << 10];
    while (left > 0) {
      const ssize_t n = ::read(f.get(), buf, std::min<uint64_t>(left, sizeof buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::Sys("reading the sandbox's layer at " + rel);
      if (n == 0) {
        // Shrunk while the walk ran: the size was promised, so zeros fill it.
        std::fill(std::begin(buf), std::end(buf), 0);
        const size_t pad = static_cast<size_t>(std::min<uint64_t>(left, sizeof buf));
        ISB_TRY(tar_.Data(std::span<const uint8_t>(buf, pad)));
        left -= pad;
        continue;
      }
      ISB_TRY(tar_.Data(std::span<const uint8_t>(buf, static_cast<size_t>(n))));
      left -= static_cast<uint64_t>(n);
    }
    return {};
  }

  static bool Opaque(int fd) {
    char v[4];
    for (const char* attr : {"trusted.overlay.opaque", "user.overlay.opaque"}) {
      const ssize_t n = ::fgetxattr(fd, attr, v, sizeof v);
      if (n == 1 && v[0] == 'y') return true;
    }
    return false;
  }

  const uint32_t base_;
  const std::set<std::string> exclude_, drop_;
  TarWriter& tar_;
  std::map<std::pair<dev_t, ino_t>, std::string> links_;
  uint64_t entries_ = 0;
};

}  // namespace

Result<WrittenLayer> WriteUpperAsLayer(const std::string& upper, uint32_t uid_base,
                                       const std::vector<std::string>& exclude, const std::vector<std::string>& drop,
                                       const std::string& out) {
  Fd root(::open(upper.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root.valid()) return Error::Sys("opening the sandbox's layer " + upper);
  Fd file(::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!file.valid()) return Error::Sys("creating " + out);
  GzipFile gz(std::move(file));
  TarWriter tar([&gz](std::span<const uint8_t> bytes) { return gz.Write(bytes); });
  UpperWalk walk(uid_base, exclude, drop, tar);
  ISB_TRY(walk.Dir(root.get(), ""));
  ISB_TRY(tar.Finish());
  ISB_TRY(gz.Finish());
  WrittenLayer w;
  w.diff_id = gz.diff_id().str();
  w.digest = gz.digest().str();
  w.size = gz.size();
  w.entries = walk.entries();
  return w;
}

}  // namespace isb::image
