// TarReader: the entries of a tar stream (ustar, GNU long names and links, pax) read one by one from untrusted bytes,
// each header checked (checksum, numbers, sizes) before it is believed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "image/byte_source.h"

namespace isb::image {

struct TarEntry {
  enum class Type { kFile, kDir, kSymlink, kHardlink, kChar, kBlock, kFifo };
  Type type = Type::kFile;
  std::string path;   // as the archive says it (pax path, GNU long name, ustar prefix/name, or name); never empty
  std::string link;   // a symlink's target, a hardlink's target name in the archive
  uint64_t size = 0;  // data bytes of a kFile; 0 for every other type (their data, if any, is skipped)
  uint32_t mode = 0;  // permission bits with set-id and sticky (07777)
  uint32_t uid = 0, gid = 0;
  int64_t mtime = 0;                      // seconds since the epoch (pax: the whole seconds, rounded down)
  uint32_t mtime_nsec = 0;                // pax only: the fraction of mtime
  uint32_t dev_major = 0, dev_minor = 0;  // kChar and kBlock
  std::vector<std::pair<std::string, std::string>> xattrs;  // pax SCHILY.xattr.NAME=VALUE, in archive order
};

// The most pax headers, GNU long names and long links may hold, one alone or all before one entry together (and a
// pax global header alone): past it kTooLarge.
inline constexpr uint64_t kMaxTarMetaBytes = 1 << 20;

// Reads `in` (which must outlive the reader). Every error names the byte offset of the header or the entry it is
// about; after an error the reader is done (further calls repeat nothing useful, the caller stops).
class TarReader {
 public:
  explicit TarReader(ByteSource& in) : in_(in) {}

  // The next entry, skipping what the caller did not read of the previous entry's data; nullopt at the end (a zero
  // block, or the stream's end at a header boundary). Pax global headers are skipped. Errors (kInvalidArgument):
  // a truncated header or data, a checksum that does not match, a malformed number or pax record, a NUL in a name,
  // an empty name, an unsupported type (GNU sparse, multi-volume); kTooLarge: metadata past kMaxTarMetaBytes.
  Result<std::optional<TarEntry>> Next();

  // The current entry's data into `out`: how many bytes (at least one while some remain and `out` is not empty);
  // 0 at its end. Error: the stream ended before the entry's declared size.
  Result<size_t> ReadData(std::span<uint8_t> out);

  // After Next() returned nullopt: reads the stream to its end (the padding after the end blocks), so that an
  // ObservedSource below sees every byte of it. Returns how many bytes were discarded.
  Result<uint64_t> Drain();

  uint64_t offset() const { return offset_; }  // bytes consumed from the stream so far

 private:
  Result<size_t> ReadRaw(std::span<uint8_t> out);
  Status Skip(uint64_t n);
  Result<std::string> ReadMeta(uint64_t size, uint64_t header_at, const char* what);

  ByteSource& in_;
  uint64_t offset_ = 0;
  uint64_t remaining_ = 0;  // data bytes of the current entry not yet read
  uint64_t padding_ = 0;    // zero bytes after them to the next block
  uint64_t declared_ = 0;   // the current entry's data size, for messages
  std::string current_;     // the current entry's path, for messages
  bool ended_ = false;
};

}  // namespace isb::image
