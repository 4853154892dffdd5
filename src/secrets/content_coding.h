// HTTP content codings as streams: decoders and encoders for gzip, deflate (zlib-wrapped or raw, as browsers take
// it), br and zstd, and RecodedBody, a body filter run on a body's decoded content with the result encoded again in
// the same coding, under a limit on how far a body may expand (a decompression bomb is refused, never buffered).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "egress/message_filter.h"

namespace isb::secrets {

enum class Coding { kGzip, kDeflate, kBrotli, kZstd };

std::string_view CodingName(Coding coding);  // "gzip", "deflate", "br", "zstd"

// A Content-Encoding value: its codings in the order they were applied ("identity" and empty entries left out).
// Errors (kInvalidArgument): a coding not among the four, named.
Result<std::vector<Coding>> ParseContentEncoding(std::string_view value);

// The most a decoder keeps besides its caller's buffers: zstd windows past 8 MiB (2^23) are refused, as RFC 8878
// asks of HTTP; brotli's large windows are off; zlib's window is 32 KiB.
inline constexpr int kMaxZstdWindowLog = 23;

class Decoder {
 public:
  static std::unique_ptr<Decoder> For(Coding coding);
  virtual ~Decoder() = default;
  // The next encoded bytes; they are copied, and decoded by the Pulls that follow.
  virtual void Give(std::string_view encoded) = 0;
  // Appends at most `max` decoded bytes to `out`; true while there may be more from what was given. Errors
  // (kInvalidArgument): the data is not valid in its coding (the library's reason).
  virtual Result<bool> Pull(std::string& out, size_t max) = 0;
  // Whether what was given so far is a whole encoded stream (bytes after its end are dropped).
  virtual bool ended() const = 0;
  // deflate: whether the stream came without its zlib wrapper (known once two bytes came).
  virtual bool raw() const { return false; }
};

class Encoder {
 public:
  // `raw`: deflate without the zlib wrapper. Fast settings (gzip/deflate level 1, br quality 1, zstd level 1): the
  // proxy encodes every body it scrubs.
  static std::unique_ptr<Encoder> For(Coding coding, bool raw = false);
  virtual ~Encoder() = default;
  enum class Op { kContinue, kFlush, kFinish };
  // Encodes `in`, appending what comes out; kFlush makes everything given so far decodable at the receiver,
  // kFinish ends the stream.
  virtual Status Run(std::string_view in, Op op, std::string& out) = 0;
};

// How far a decoded body may grow: past max(floor, ratio x its encoded size so far) it is refused.
struct ExpansionLimit {
  uint64_t floor = 64ull << 20;
  uint64_t ratio = 1024;
};

// `inner` applied to the decoded content of a body in `coding`; what it gives is encoded again in that coding
// (deflate keeps the wrapper it came with) and flushed at the end of each Take, so a streamed body stays streamed.
// Memory: a decoded piece (16 KiB) at a time and what `inner` keeps back. Refusal (the body is cut): data invalid
// in its coding, a stream that ends early, a body past `limit`, or `inner`'s own refusal.
class RecodedBody : public egress::BodyFilter {
 public:
  RecodedBody(Coding coding, std::unique_ptr<egress::BodyFilter> inner, ExpansionLimit limit = {});

  void Take(std::string_view data, std::string& out) override;
  void Finish(std::string& out) override;
  std::string Refusal() const override;

  uint64_t decoded_bytes() const { return decoded_; }

 private:
  void Drain(std::string& out);
  void Encode(std::string_view content, Encoder::Op op, std::string& out);

  Coding coding_;
  std::unique_ptr<egress::BodyFilter> inner_;
  ExpansionLimit limit_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<Encoder> encoder_;  // made once the decoder knows the stream's wrapper
  std::string decoded_piece_, filtered_;
  uint64_t encoded_ = 0, decoded_ = 0;
  std::string refusal_;
};

}  // namespace isb::secrets
