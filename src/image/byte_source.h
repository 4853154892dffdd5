// ByteSource: a stream of untrusted bytes read in pieces (an fd, a string, or another source watched on the way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <utility>

#include "base/result.h"

namespace isb::image {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills a prefix of `out` (at least one byte while `out` is not empty and the stream goes on); 0: the end.
  virtual Result<size_t> Read(std::span<uint8_t> out) = 0;
};

// Reads until `out` is full or the stream ends: how many bytes came (fewer than out.size() only at the end).
Result<size_t> ReadFull(ByteSource& in, std::span<uint8_t> out);

// Reads an fd it does not own (a file, a pipe, a socket), retrying EINTR.
class FdSource : public ByteSource {
 public:
  explicit FdSource(int fd) : fd_(fd) {}
  Result<size_t> Read(std::span<uint8_t> out) override;

 private:
  int fd_;
};

// Reads a view of bytes the caller keeps alive (tests, small blobs).
class StringSource : public ByteSource {
 public:
  explicit StringSource(std::string_view bytes) : rest_(bytes) {}
  Result<size_t> Read(std::span<uint8_t> out) override;

 private:
  std::string_view rest_;
};

// Hands every byte read from `in` to `observe`, in order, before the reader sees it: the caller hashes a stream
// (a layer's diff_id) with it while another consumer reads it.
class ObservedSource : public ByteSource {
 public:
  using Observer = std::function<void(std::span<const uint8_t>)>;
  ObservedSource(ByteSource& in, Observer observe) : in_(in), observe_(std::move(observe)) {}
  Result<size_t> Read(std::span<uint8_t> out) override;

 private:
  ByteSource& in_;
  Observer observe_;
};

}  // namespace isb::image
