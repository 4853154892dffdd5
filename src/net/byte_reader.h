// ByteReader: a bounds-checked cursor over untrusted bytes; a read past the end fails and reads nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace isb::net {

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t offset() const { return at_; }
  size_t remaining() const { return bytes_.size() - at_; }
  bool empty() const { return at_ == bytes_.size(); }

  bool U8(uint8_t& out) {
    if (remaining() < 1) return false;
    out = bytes_[at_++];
    return true;
  }
  bool U16(uint16_t& out) {
    if (remaining() < 2) return false;
    out = static_cast<uint16_t>(bytes_[at_] << 8 | bytes_[at_ + 1]);
    at_ += 2;
    return true;
  }
  bool U24(uint32_t& out) {
    if (remaining() < 3) return false;
    out = static_cast<uint32_t>(bytes_[at_] << 16 | bytes_[at_ + 1] << 8 | bytes_[at_ + 2]);
    at_ += 3;
    return true;
  }
  bool U32(uint32_t& out) {
    if (remaining() < 4) return false;
    out = static_cast<uint32_t>(bytes_[at_]) << 24 | static_cast<uint32_t>(bytes_[at_ + 1]) << 16 |
          static_cast<uint32_t>(bytes_[at_ + 2]) << 8 | bytes_[at_ + 3];
    at_ += 4;
    return true;
  }
  bool Skip(size_t n) {
    if (remaining() < n) return false;
    at_ += n;
    return true;
  }
  // The next `n` bytes as a span of their own.
  bool Bytes(size_t n, std::span<const uint8_t>& out) {
    if (remaining() < n) return false;
    out = bytes_.subspan(at_, n);
    at_ += n;
    return true;
  }
  // A vector with a big-endian length prefix of `prefix_bytes` (1, 2 or 3), as TLS writes them.
  bool Prefixed(int prefix_bytes, std::span<const uint8_t>& out) {
    uint32_t n = 0;
    uint8_t n8 = 0;
    uint16_t n16 = 0;
    bool ok = prefix_bytes == 1 ? U8(n8) : prefix_bytes == 2 ? U16(n16) : U24(n);
    if (!ok) return false;
    if (prefix_bytes == 1) n = n8;
    if (prefix_bytes == 2) n = n16;
    return Bytes(n, out);
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

}  // namespace isb::net
