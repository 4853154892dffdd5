// The blob store's files: unique temp names (mkostemp), fsync of file and directory, rename without replacing.
#include "image/blob_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "base/file.h"

namespace isb::image {
namespace {

Status FsyncDir(const std::string& dir) {
  Fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || fsync(fd.get()) != 0) return Error::Sys("blob store: fsync " + dir);
  return {};
}

// Digests made by hand rather than by ParseDigest never become paths.
Status CheckDigest(const Digest& digest) {
  Result<Digest> parsed = ParseDigest(digest.str());
  if (!parsed.ok()) return Error::Of(Code::kInvalidArgument, "blob store: " + parsed.error().message);
  return {};
}

}  // namespace

BlobWriter::BlobWriter(std::string tmp_path, std::string final_dir, std::string final_path, Fd fd,
                       DigestVerifier verifier)
    : tmp_path_(std::move(tmp_path)),
      final_dir_(std::move(final_dir)),
      final_path_(std::move(final_path)),
      fd_(std::move(fd)),
      verifier_(std::move(verifier)) {}

BlobWriter::BlobWriter(BlobWriter&& o) noexcept
    : tmp_path_(std::move(o.tmp_path_)),
      final_dir_(std::move(o.final_dir_)),
      final_path_(std::move(o.final_path_)),
      fd_(std::move(o.fd_)),
      verifier_(std::move(o.verifier_)),
      done_(std::exchange(o.done_, true)) {}

BlobWriter::~BlobWriter() { Discard(); }

void BlobWriter::Discard() {
  if (done_) return;
  done_ = true;
  fd_.Reset();
  (void)unlink(tmp_path_.c_str());
}

Status BlobWriter::Write(std::string_view bytes) {
  if (done_) return Error::Of(Code::kInternal, "blob store: write after the blob was committed or discarded");
  Status s = verifier_.Update(bytes);
  if (!s.ok()) {
    Discard();
    return s;
  }
  while (!bytes.empty()) {
    ssize_t n = write(fd_.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = Error::Sys("blob store: write " + tmp_path_);
      Discard();
      return e;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

Status BlobWriter::Commit() {
  if (done_) return Error::Of(Code::kInternal, "blob store: commit after the blob was committed or discarded");
  Status verified = verifier_.Finish();
  if (!verified.ok()) {
    Discard();
    return verified;
  }
  if (fsync(fd_.get()) != 0) {
    Error e = Error::Sys("blob store: fsync " + tmp_path_);
    Discard();
    return e;
  }
  if (renameat2(AT_FDCWD, tmp_path_.c_str(), AT_FDCWD, final_path_.c_str(), RENAME_NOREPLACE) != 0) {
    // EEXIST: another writer of the same digest committed first; the blob there is the same verified bytes.
    if (errno != EEXIST) {
      Error e = Error::Sys("blob store: rename into " + final_path_);
      Discard();
      return e;
    }
    Discard();
    return {};
  }
  done_ = true;
  fd_.Reset();
  return FsyncDir(final_dir_);
}

Result<BlobStore> BlobStore::Open(std::string root) {
  BlobStore store(std::move(root));
  for (const char* sub : {"/blobs/sha256", "/blobs/tmp"}) ISB_TRY(MakeDirs(store.root_ + sub, 0700));
  return store;
}

std::string BlobStore::Path(const Digest& digest) const {
  return root_ + "/blobs/" + digest.algorithm + "/" + digest.hex;
}

bool BlobStore::Has(const Digest& digest) const {
  if (!CheckDigest(digest).ok()) return false;
  struct stat st;
  return stat(Path(digest).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<Fd> BlobStore::OpenBlob(const Digest& digest) const {
  ISB_TRY(CheckDigest(digest));
  Fd fd(open(Path(digest).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.valid()) return fd;
  if (errno == ENOENT) return Error::Of(Code::kNotFound, "blob store: no blob " + digest.str());
  return Error::Sys("blob store: open " + Path(digest));
}

Status BlobStore::Remove(const Digest& digest) const {
  ISB_TRY(CheckDigest(digest));
  if (unlink(Path(digest).c_str()) == 0) return {};
  if (errno == ENOENT) return Error::Of(Code::kNotFound, "blob store: no blob " + digest.str());
  return Error::Sys("blob store: remove " + Path(digest));
}

Result<BlobWriter> BlobStore::Begin(const Digest& expected, uint64_t size, std::string what) const {
  ISB_TRY(CheckDigest(expected));
  std::string dir = root_ + "/blobs/" + expected.algorithm;
  ISB_TRY(MakeDirs(dir, 0700));
  std::string tmp = TempDir() + "/" + expected.hex.substr(0, 16) + ".XXXXXX";
  Fd fd(mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) return Error::Sys("blob store: create a temp file in " + TempDir());
  if (fchmod(fd.get(), 0444) != 0) {
    Error e = Error::Sys("blob store: chmod " + tmp);
    (void)unlink(tmp.c_str());
    return e;
  }
  return BlobWriter(tmp, dir, dir + "/" + expected.hex, std::move(fd), DigestVerifier(expected, size, std::move(what)));
}

Status BlobStore::Put(const Digest& expected, std::string_view bytes, std::string what) const {
  ISB_ASSIGN_OR_RETURN(BlobWriter w, Begin(expected, bytes.size(), std::move(what)));
  ISB_TRY(w.Write(bytes));
  return w.Commit();
}

Status BlobStore::CleanTemp() const {
  DIR* d = opendir(TempDir().c_str());
  if (d == nullptr) return Error::Sys("blob store: open " + TempDir());
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  for (const std::string& name : names) {
    std::string path = TempDir() + "/" + name;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return Error::Sys("blob store: remove " + path);
  }
  return {};
}

}  // namespace isb::image
