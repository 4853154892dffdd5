// Verified blobs on disk, by digest: <root>/blobs/<algorithm>/<hex>. A blob is written to a temp file in
// <root>/blobs/tmp/, checked against its digest and size, fsynced and only then renamed into place, so nothing
// half-written or unverified is ever visible under its digest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/fd.h"
#include "base/result.h"
#include "image/digest.h"

namespace isb::image {

// One blob being written. Move-only; unless committed, its temp file is removed when it goes away.
class BlobWriter {
 public:
  BlobWriter(BlobWriter&& o) noexcept;
  BlobWriter& operator=(BlobWriter&&) = delete;
  ~BlobWriter();

  // Fails (and stops taking bytes) once more came than the declared size.
  Status Write(std::string_view bytes);
  // Verifies size and digest (the errors name the blob, see DigestVerifier), fsyncs and renames the file into
  // place. A concurrent writer of the same digest that committed first wins; this one's file is dropped, and both
  // succeed. On failure the temp file is removed.
  Status Commit();

 private:
  friend class BlobStore;
  BlobWriter(std::string tmp_path, std::string final_dir, std::string final_path, Fd fd, DigestVerifier verifier);
  void Discard();

  std::string tmp_path_, final_dir_, final_path_;
  Fd fd_;
  DigestVerifier verifier_;
  bool done_ = false;
};

// Thread-safe: writers never share a file, and renames are atomic.
class BlobStore {
 public:
  // Makes <root>/blobs/{sha256,tmp} (mode 0700) when missing.
  static Result<BlobStore> Open(std::string root);

  std::string Path(const Digest& digest) const;
  bool Has(const Digest& digest) const;
  // The blob for reading. Errors: kNotFound naming the digest.
  Result<Fd> OpenBlob(const Digest& digest) const;
  // Errors: kNotFound naming the digest.
  Status Remove(const Digest& digest) const;
  // A writer of the blob `expected` of `size` bytes; `what` names it in errors ("layer", "config").
  Result<BlobWriter> Begin(const Digest& expected, uint64_t size, std::string what = "blob") const;
  // Begin, Write and Commit at once, for small blobs held in memory (manifests, configs).
  Status Put(const Digest& expected, std::string_view bytes, std::string what = "blob") const;
  // Removes temp files a crashed writer left behind. Call only while no writer is open.
  Status CleanTemp() const;

  const std::string& root() const { return root_; }
  std::string TempDir() const { return root_ + "/blobs/tmp"; }

 private:
  explicit BlobStore(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

}  // namespace isb::image
