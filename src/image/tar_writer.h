// TarWriter: a POSIX tar stream (ustar headers, pax records for what they cannot hold), written to a sink — the
// layers of snapshots and the archives of exports.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace isb::image {

// Where a writer's bytes go.
using ByteSink = std::function<Status(std::span<const uint8_t>)>;

struct TarHeader {
  enum class Type : char {
    kFile = '0',
    kHardlink = '1',
    kSymlink = '2',
    kChar = '3',
    kBlock = '4',
    kDir = '5',
    kFifo = '6'
  };
  Type type = Type::kFile;
  std::string path;    // relative, '/'-separated; a directory's without a trailing '/'
  std::string link{};  // a symlink's target or a hardlink's first name
  uint64_t size = 0;   // a file's data bytes
  uint32_t mode = 0644;
  uint32_t uid = 0, gid = 0;
  int64_t mtime = 0;
  uint32_t dev_major = 0, dev_minor = 0;
  std::vector<std::pair<std::string, std::string>> xattrs{};  // as SCHILY.xattr.NAME pax records
};

class TarWriter {
 public:
  explicit TarWriter(ByteSink sink) : sink_(std::move(sink)) {}

  // The header of one entry; a file's `size` bytes follow through Data before the next Add or Finish.
  Status Add(const TarHeader& header);
  Status Data(std::span<const uint8_t> bytes);
  // A regular file with its contents in one call.
  Status AddFile(TarHeader header, std::string_view contents);
  // The two zero blocks that end an archive.
  Status Finish();

  uint64_t bytes_written() const { return written_; }

 private:
  Status Write(std::span<const uint8_t> bytes);
  Status Pad();

  ByteSink sink_;
  uint64_t written_ = 0;
  uint64_t data_left_ = 0;  // of the current entry
  uint64_t data_size_ = 0;
};

}  // namespace isb::image
