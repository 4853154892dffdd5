// Layers into the store through the safe unpacker, the tar's digest checked on the way; blobs by digest.
#include "image/layer_store_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "base/fd.h"
#include "base/file.h"
#include "base/random.h"
#include "image/digest.h"
#include "image/layer_unpack.h"
#include "image/tar_reader.h"

namespace isb::image {

Compression ToCompression(LayerCompression c) {
  switch (c) {
    case LayerCompression::kNone:
      return Compression::kNone;
    case LayerCompression::kGzip:
      return Compression::kGzip;
    case LayerCompression::kZstd:
      return Compression::kZstd;
  }
  return Compression::kNone;
}

Result<UnpackedLayer> UnpackIntoStore(ImageStore& store, ByteSource& compressed, Compression c,
                                      const std::string& expect_diff_id, uint64_t max_bytes,
                                      const std::function<Status()>& before_commit) {
  // Unpacked and checked even when a layer of that diff_id is stored already: only the tar's own digest shows that
  // whoever handed it over holds that content (CommitLayer then keeps the one there).
  ISB_ASSIGN_OR_RETURN(std::filesystem::path dir, store.BeginLayer());
  DigestHasher hasher;
  std::unique_ptr<ByteSource> plain = Decompressing(compressed, c, max_bytes);
  ObservedSource observed(*plain, [&hasher](std::span<const uint8_t> bytes) { hasher.Update(bytes); });
  TarReader tar(observed);
  Result<UnpackReport> report = UnpackLayer(tar, dir.string(), UnpackLimits{max_bytes, 4u << 20});
  if (report.ok()) {
    // What follows the tar's end (padding blocks) is part of the digest too.
    uint8_t rest[16 << 10];
    for (;;) {
      Result<size_t> n = observed.Read(rest);
      if (!n.ok()) {
        report = n.error();
        break;
      }
      if (*n == 0) break;
    }
  }
  if (!report.ok()) {
    store.DiscardLayer(dir);
    return report.error();
  }
  const std::string diff_id = hasher.Finish().str();
  if (!expect_diff_id.empty() && diff_id != expect_diff_id) {
    store.DiscardLayer(dir);
    return Error::Of(Code::kInvalidArgument,
                     "layer " + expect_diff_id + ": the unpacked tar's digest is " + diff_id + ", not its diff_id");
  }
  if (before_commit) {
    if (Status st = before_commit(); !st.ok()) {
      store.DiscardLayer(dir);
      return st.error();
    }
  }
  ISB_TRY(store.CommitLayer(dir, diff_id));
  return UnpackedLayer{diff_id, report->bytes};
}

Result<std::string> BlobTempPath(const BlobStore& blobs) {
  ISB_ASSIGN_OR_RETURN(std::string name, RandomHex(12));
  return blobs.TempDir() + "/snap-" + name;
}

Status AdoptBlob(const BlobStore& blobs, const std::string& temp, const std::string& digest) {
  Result<Digest> d = ParseDigest(digest);
  if (!d.ok()) return d.error();
  if (::rename(temp.c_str(), blobs.Path(*d).c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    errno = err;
    return Error::Sys("storing blob " + digest);
  }
  return {};
}

Result<std::string> PutBlob(const BlobStore& blobs, std::string_view bytes) {
  const Digest d = DigestOf(bytes);
  if (!blobs.Has(d)) ISB_TRY(blobs.Put(d, bytes));
  return d.str();
}

Result<std::string> ReadBlob(const BlobStore& blobs, const std::string& digest, size_t max) {
  ISB_ASSIGN_OR_RETURN(Digest d, ParseDigest(digest));
  ISB_ASSIGN_OR_RETURN(Fd f, blobs.OpenBlob(d));
  struct stat st {};
  if (::fstat(f.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) > max)
    return Error::Of(Code::kInvalidArgument, "blob " + digest + " is larger than " + std::to_string(max) + " bytes");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(f.get(), bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::Sys("reading blob " + digest);
    got += static_cast<size_t>(n);
  }
  if (DigestOf(bytes) != d)
    return Error::Of(Code::kInvalidArgument, "blob " + digest + " in the image store does not match its digest");
  return bytes;
}

}  // namespace isb::image
