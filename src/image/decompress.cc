// gzip and zstd decompressing sources, bounded in what they hand out.
#include "image/decompress.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

namespace isb::image {
namespace {

constexpr size_t kInputChunk = 64 << 10;

// What every decompressing source shares: the compressed input, read in chunks, and the count of bytes handed out
// against the limit.
class BoundedSource : public ByteSource {
 public:
  BoundedSource(ByteSource& in, Compression c, uint64_t max_out) : in_(in), c_(c), max_out_(max_out) {}

 protected:
  // Refills the input buffer once it is used up; false once the input has ended.
  Result<bool> Refill() {
    if (pos_ < len_) return true;
    if (ended_) return false;
    input_.resize(kInputChunk);
    ISB_ASSIGN_OR_RETURN(size_t n, in_.Read(input_));
    pos_ = 0;
    len_ = n;
    ended_ = n == 0;
    return !ended_;
  }
  Result<size_t> Count(size_t produced) {
    if (produced > max_out_ - total_) {
      return Error::Of(Code::kTooLarge, std::string(CompressionName(c_)) + " stream: decompresses to more than " +
                                            std::to_string(max_out_) + " bytes (the limit max_out)");
    }
    total_ += produced;
    return produced;
  }
  Error Corrupt(const std::string& why) const {
    return Error::Of(Code::kInvalidArgument, std::string(CompressionName(c_)) + " stream: " + why);
  }
  Error Truncated() const {
    return Corrupt("truncated (the input ended before the end of the stream, after " + std::to_string(total_) +
                   " bytes out)");
  }

  ByteSource& in_;
  Compression c_;
  uint64_t max_out_;
  uint64_t total_ = 0;
  std::vector<uint8_t> input_;
  size_t pos_ = 0, len_ = 0;
  bool ended_ = false;
};

class PlainSource : public BoundedSource {
 public:
  using BoundedSource::BoundedSource;
  Result<size_t> Read(std::span<uint8_t> out) override {
    ISB_ASSIGN_OR_RETURN(size_t n, in_.Read(out));
    return Count(n);
  }
};

// gzip, one member after another as gzip(1) writes them when files are concatenated; anything after a member's end
// must be another member.
class GzipSource : public BoundedSource {
 public:
  GzipSource(ByteSource& in, uint64_t max_out) : BoundedSource(in, Compression::kGzip, max_out) {
    ok_ = inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK;
  }
  ~GzipSource() override { inflateEnd(&z_); }

  Result<size_t> Read(std::span<uint8_t> out) override {
    if (!ok_) return Error::Msg("gzip stream: zlib failed to start (out of memory)");
    if (out.empty()) return size_t{0};
    for (;;) {
      ISB_ASSIGN_OR_RETURN(bool more, Refill());
      z_.next_in = input_.data() + pos_;
      z_.avail_in = static_cast<uInt>(len_ - pos_);
      z_.next_out = out.data();
      z_.avail_out = static_cast<uInt>(std::min<size_t>(out.size(), UINT_MAX));
      const int rc = inflate(&z_, Z_NO_FLUSH);
      const size_t consumed = (len_ - pos_) - z_.avail_in;
      const size_t produced = std::min<size_t>(out.size(), UINT_MAX) - z_.avail_out;
      pos_ += consumed;
      if (consumed > 0) at_member_end_ = false;
      if (rc == Z_STREAM_END) {
        inflateReset(&z_);
        at_member_end_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Corrupt(std::string("corrupt (") + (z_.msg != nullptr ? z_.msg : "zlib error " + std::to_string(rc)) +
                       ")");
      }
      if (produced > 0) return Count(produced);
      if (!more && pos_ == len_) {
        if (at_member_end_) return size_t{0};
        return Truncated();
      }
    }
  }

 private:
  z_stream z_{};
  bool ok_ = false;
  bool at_member_end_ = false;
};

// zstd, frame after frame; anything after a frame must be another frame.
class ZstdSource : public BoundedSource {
 public:
  ZstdSource(ByteSource& in, uint64_t max_out)
      : BoundedSource(in, Compression::kZstd, max_out), ctx_(ZSTD_createDCtx()) {}
  ~ZstdSource() override { ZSTD_freeDCtx(ctx_); }

  Result<size_t> Read(std::span<uint8_t> out) override {
    if (ctx_ == nullptr) return Error::Msg("zstd stream: libzstd failed to start (out of memory)");
    if (out.empty()) return size_t{0};
    for (;;) {
      ISB_ASSIGN_OR_RETURN(bool more, Refill());
      ZSTD_inBuffer zin{input_.data(), len_, pos_};
      ZSTD_outBuffer zout{out.data(), out.size(), 0};
      const size_t rc = ZSTD_decompressStream(ctx_, &zout, &zin);
      if (ZSTD_isError(rc)) return Corrupt(std::string("corrupt (") + ZSTD_getErrorName(rc) + ")");
      if (zin.pos > pos_) frame_ended_ = false;
      pos_ = zin.pos;
      if (rc == 0) frame_ended_ = true;
      if (zout.pos > 0) return Count(zout.pos);
      if (!more && pos_ == len_) {
        if (frame_ended_) return size_t{0};
        return Truncated();
      }
    }
  }

 private:
  ZSTD_DCtx* ctx_;
  bool frame_ended_ = false;
};

}  // namespace

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
    case Compression::kNone:
      break;
  }
  return "none";
}

Compression SniffCompression(std::span<const uint8_t> first) {
  if (first.size() >= 2 && first[0] == 0x1f && first[1] == 0x8b) return Compression::kGzip;
  if (first.size() >= 4 && first[0] == 0x28 && first[1] == 0xb5 && first[2] == 0x2f && first[3] == 0xfd) {
    return Compression::kZstd;
  }
  return Compression::kNone;
}

std::unique_ptr<ByteSource> Decompressing(ByteSource& in, Compression c, uint64_t max_out) {
  switch (c) {
    case Compression::kGzip:
      return std::make_unique<GzipSource>(in, max_out);
    case Compression::kZstd:
      return std::make_unique<ZstdSource>(in, max_out);
    case Compression::kNone:
      break;
  }
  return std::make_unique<PlainSource>(in, c, max_out);
}

}  // namespace isb::image
