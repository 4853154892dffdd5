// The ways a layer gets into the image store and blobs into its blob dir, shared by pull, import and snapshot.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include <functional>

#include "image/blob_store.h"
#include "image/byte_source.h"
#include "image/decompress.h"
#include "image/image_store.h"
#include "image/manifest.h"

namespace isb::image {

// The unpacker's name for a manifest's layer compression.
Compression ToCompression(LayerCompression c);

// Unpacks the layer `compressed` streams (a tar, compressed as `c`) into the store; when a layer of that diff_id is
// there already, the one there stays and this one is checked and dropped. The tar's digest must be `expect_diff_id`
// when that is given, else the layer is discarded with an error naming it. `before_commit`, when set, is the last word:
// its error discards the layer too (a pull's blob whose digest turned out wrong). Returns the diff_id and the bytes
// unpacked.
struct UnpackedLayer {
  std::string diff_id;
  uint64_t bytes = 0;
};
Result<UnpackedLayer> UnpackIntoStore(ImageStore& store, ByteSource& compressed, Compression c,
                                      const std::string& expect_diff_id, uint64_t max_bytes,
                                      const std::function<Status()>& before_commit = {});

// A new temp file's path in the blob store's temp dir, for a blob whose digest is known only once written.
Result<std::string> BlobTempPath(const BlobStore& blobs);
// Renames such a temp file (fsynced by its writer) to its digest's place; one there already wins.
Status AdoptBlob(const BlobStore& blobs, const std::string& temp, const std::string& digest);
// Stores `bytes` as a blob; returns its digest.
Result<std::string> PutBlob(const BlobStore& blobs, std::string_view bytes);
// A small blob's bytes (manifests, configs: at most `max`), checked against its digest.
Result<std::string> ReadBlob(const BlobStore& blobs, const std::string& digest, size_t max);

}  // namespace isb::image
