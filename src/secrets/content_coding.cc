// The four codings over zlib, libbrotli and libzstd, each library's streaming API behind Decoder and Encoder, and
// RecodedBody's loop: decode a bounded piece, filter it, encode it.
#include "secrets/content_coding.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cctype>

namespace isb::secrets {

namespace {

constexpr size_t kPiece = 16 * 1024;

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trimmed(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// Bytes given to a decoder and not yet used.
struct Input {
  std::string bytes;
  size_t used = 0;
  void Give(std::string_view more) {
    bytes.erase(0, used);
    used = 0;
    bytes.append(more);
  }
  size_t left() const { return bytes.size() - used; }
  const unsigned char* at() const { return reinterpret_cast<const unsigned char*>(bytes.data()) + used; }
};

class ZlibDecoder : public Decoder {
 public:
  explicit ZlibDecoder(Coding coding) : gzip_(coding == Coding::kGzip) {}
  ~ZlibDecoder() override {
    if (started_) inflateEnd(&z_);
  }
  void Give(std::string_view encoded) override { in_.Give(encoded); }
  bool ended() const override { return ended_; }
  bool raw() const override { return raw_; }

  Result<bool> Pull(std::string& out, size_t max) override {
    if (ended_ && !NextMember()) return false;
    if (!started_) {
      // deflate: a zlib header is a CMF of method 8 and a check making CMF*256+FLG a multiple of 31; anything else
      // is taken as raw deflate, which browsers accept too.
      if (!gzip_ && in_.left() < 2) return false;
      if (!gzip_) {
        const unsigned cmf = in_.at()[0], flg = in_.at()[1];
        raw_ = (cmf & 0x0F) != 8 || (cmf * 256 + flg) % 31 != 0;
      }
      if (inflateInit2(&z_, gzip_ ? 16 + MAX_WBITS : raw_ ? -MAX_WBITS : MAX_WBITS) != Z_OK)
        return Error::Of(Code::kInternal, "zlib could not start a decoder");
      started_ = true;
    }
    const size_t had = out.size();
    out.resize(had + max);
    z_.next_in = const_cast<Bytef*>(in_.at());
    z_.avail_in = static_cast<uInt>(in_.left());
    z_.next_out = reinterpret_cast<Bytef*>(out.data() + had);
    z_.avail_out = static_cast<uInt>(max);
    const int rc = inflate(&z_, Z_NO_FLUSH);
    in_.used = in_.bytes.size() - z_.avail_in;
    out.resize(had + max - z_.avail_out);
    if (rc == Z_STREAM_END) {
      ended_ = true;
      return NextMember();
    }
    if (rc == Z_BUF_ERROR) return false;  // no progress possible until more comes
    if (rc != Z_OK) return Error::Of(Code::kInvalidArgument, z_.msg != nullptr ? z_.msg : "invalid compressed data");
    return z_.avail_out == 0 || in_.left() > 0;
  }

 private:
  // After a stream's end: gzip may have another member next (RFC 1952 allows several), whose first byte is 0x1f;
  // anything else, and everything after it, is dropped. True when a member starts.
  bool NextMember() {
    if (gzip_ && !trailing_ && in_.left() > 0 && in_.at()[0] == 0x1f) {
      inflateReset(&z_);
      ended_ = false;
      return true;
    }
    if (in_.left() > 0) trailing_ = true;
    in_.used = in_.bytes.size();
    return false;
  }

  bool gzip_;
  bool trailing_ = false;
  bool raw_ = false;
  bool started_ = false;
  bool ended_ = false;
  z_stream z_{};
  Input in_;
};

class BrotliDecoder : public Decoder {
 public:
  BrotliDecoder() : state_(BrotliDecoderCreateInstance(nullptr, nullptr, nullptr)) {}
  ~BrotliDecoder() override { BrotliDecoderDestroyInstance(state_); }
  void Give(std::string_view encoded) override { in_.Give(encoded); }
  bool ended() const override { return ended_; }

  Result<bool> Pull(std::string& out, size_t max) override {
    if (state_ == nullptr) return Error::Of(Code::kInternal, "brotli could not start a decoder");
    if (ended_) {
      in_.used = in_.bytes.size();
      return false;
    }
    const size_t had = out.size();
    out.resize(had + max);
    size_t avail_in = in_.left(), avail_out = max;
    const uint8_t* next_in = in_.at();
    uint8_t* next_out = reinterpret_cast<uint8_t*>(out.data() + had);
    const BrotliDecoderResult rc =
        BrotliDecoderDecompressStream(state_, &avail_in, &next_in, &avail_out, &next_out, nullptr);
    in_.used = in_.bytes.size() - avail_in;
    out.resize(had + max - avail_out);
    switch (rc) {
      case BROTLI_DECODER_RESULT_SUCCESS:
        ended_ = true;
        in_.used = in_.bytes.size();
        return false;
      case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
        return false;
      case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
        return true;
      case BROTLI_DECODER_RESULT_ERROR:
        break;
    }
    return Error::Of(Code::kInvalidArgument, BrotliDecoderErrorString(BrotliDecoderGetErrorCode(state_)));
  }

 private:
  BrotliDecoderState* state_;
  bool ended_ = false;
  Input in_;
};

class ZstdDecoder : public Decoder {
 public:
  ZstdDecoder() : ctx_(ZSTD_createDCtx()) {
    if (ctx_ != nullptr) ZSTD_DCtx_setParameter(ctx_, ZSTD_d_windowLogMax, kMaxZstdWindowLog);
  }
  ~ZstdDecoder() override { ZSTD_freeDCtx(ctx_); }
  void Give(std::string_view encoded) override { in_.Give(encoded); }
  // Frames may follow one another: the stream is whole when the last one is.
  bool ended() const override { return frame_done_; }

  Result<bool> Pull(std::string& out, size_t max) override {
    if (ctx_ == nullptr) return Error::Of(Code::kInternal, "zstd could not start a decoder");
    if (in_.left() == 0 && (frame_done_ || !maybe_more_)) return false;
    const size_t had = out.size();
    out.resize(had + max);
    ZSTD_inBuffer input{in_.at(), in_.left(), 0};
    ZSTD_outBuffer output{out.data() + had, max, 0};
    const size_t rc = ZSTD_decompressStream(ctx_, &output, &input);
    in_.used += input.pos;
    out.resize(had + output.pos);
    if (ZSTD_isError(rc)) return Error::Of(Code::kInvalidArgument, ZSTD_getErrorName(rc));
    if (input.pos > 0 || output.pos > 0) frame_done_ = rc == 0;
    // A full output buffer may leave decoded bytes inside the decoder even with no input left.
    maybe_more_ = output.pos == max;
    return maybe_more_ || in_.left() > 0;
  }

 private:
  ZSTD_DCtx* ctx_;
  bool frame_done_ = false;
  bool maybe_more_ = false;
  Input in_;
};

class ZlibEncoder : public Encoder {
 public:
  ZlibEncoder(Coding coding, bool raw) {
    const int bits = coding == Coding::kGzip ? 16 + MAX_WBITS : raw ? -MAX_WBITS : MAX_WBITS;
    ok_ = deflateInit2(&z_, 1, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~ZlibEncoder() override {
    if (ok_) deflateEnd(&z_);
  }
  Status Run(std::string_view in, Op op, std::string& out) override {
    if (!ok_) return Error::Of(Code::kInternal, "zlib could not start an encoder");
    const int flush = op == Op::kFinish ? Z_FINISH : op == Op::kFlush ? Z_SYNC_FLUSH : Z_NO_FLUSH;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    for (;;) {
      const size_t had = out.size();
      out.resize(had + kPiece);
      z_.next_out = reinterpret_cast<Bytef*>(out.data() + had);
      z_.avail_out = kPiece;
      const int rc = deflate(&z_, flush);
      out.resize(had + kPiece - z_.avail_out);
      if (rc == Z_STREAM_END) return Status();
      if (rc != Z_OK && rc != Z_BUF_ERROR) return Error::Of(Code::kInternal, "zlib failed to encode");
      if (z_.avail_out != 0 && z_.avail_in == 0 && op != Op::kFinish) return Status();
    }
  }

 private:
  bool ok_ = false;
  z_stream z_{};
};

class BrotliEncoder : public Encoder {
 public:
  BrotliEncoder() : state_(BrotliEncoderCreateInstance(nullptr, nullptr, nullptr)) {
    if (state_ != nullptr) BrotliEncoderSetParameter(state_, BROTLI_PARAM_QUALITY, 1);
  }
  ~BrotliEncoder() override { BrotliEncoderDestroyInstance(state_); }
  Status Run(std::string_view in, Op op, std::string& out) override {
    if (state_ == nullptr) return Error::Of(Code::kInternal, "brotli could not start an encoder");
    const BrotliEncoderOperation operation = op == Op::kFinish  ? BROTLI_OPERATION_FINISH
                                             : op == Op::kFlush ? BROTLI_OPERATION_FLUSH
                                                                : BROTLI_OPERATION_PROCESS;
    size_t avail_in = in.size();
    const uint8_t* next_in = reinterpret_cast<const uint8_t*>(in.data());
    for (;;) {
      const size_t had = out.size();
      out.resize(had + kPiece);
      size_t avail_out = kPiece;
      uint8_t* next_out = reinterpret_cast<uint8_t*>(out.data() + had);
      const bool ok =
          BrotliEncoderCompressStream(state_, operation, &avail_in, &next_in, &avail_out, &next_out, nullptr);
      out.resize(had + kPiece - avail_out);
      if (!ok) return Error::Of(Code::kInternal, "brotli failed to encode");
      if (avail_in == 0 && !BrotliEncoderHasMoreOutput(state_)) {
        if (op != Op::kFinish || BrotliEncoderIsFinished(state_)) return Status();
      }
    }
  }

 private:
  BrotliEncoderState* state_;
};

class ZstdEncoder : public Encoder {
 public:
  ZstdEncoder() : ctx_(ZSTD_createCCtx()) {
    if (ctx_ != nullptr) ZSTD_CCtx_setParameter(ctx_, ZSTD_c_compressionLevel, 1);
  }
  ~ZstdEncoder() override { ZSTD_freeCCtx(ctx_); }
  Status Run(std::string_view in, Op op, std::string& out) override {
    if (ctx_ == nullptr) return Error::Of(Code::kInternal, "zstd could not start an encoder");
    const ZSTD_EndDirective mode = op == Op::kFinish ? ZSTD_e_end : op == Op::kFlush ? ZSTD_e_flush : ZSTD_e_continue;
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    for (;;) {
      const size_t had = out.size();
      out.resize(had + kPiece);
      ZSTD_outBuffer output{out.data() + had, kPiece, 0};
      const size_t left = ZSTD_compressStream2(ctx_, &output, &input, mode);
      out.resize(had + output.pos);
      if (ZSTD_isError(left)) return Error::Of(Code::kInternal, ZSTD_getErrorName(left));
      if (mode == ZSTD_e_continue ? input.pos == input.size : left == 0) return Status();
    }
  }

 private:
  ZSTD_CCtx* ctx_;
};

}  // namespace

std::string_view CodingName(Coding coding) {
  switch (coding) {
    case Coding::kGzip:
      return "gzip";
    case Coding::kDeflate:
      return "deflate";
    case Coding::kBrotli:
      return "br";
    case Coding::kZstd:
      return "zstd";
  }
  return "";
}

Result<std::vector<Coding>> ParseContentEncoding(std::string_view value) {
  std::vector<Coding> codings;
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string name = Lower(Trimmed(value.substr(0, comma)));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    if (name.empty() || name == "identity") continue;
    if (name == "gzip" || name == "x-gzip") {
      codings.push_back(Coding::kGzip);
    } else if (name == "deflate") {
      codings.push_back(Coding::kDeflate);
    } else if (name == "br") {
      codings.push_back(Coding::kBrotli);
    } else if (name == "zstd") {
      codings.push_back(Coding::kZstd);
    } else {
      return Error::Of(Code::kInvalidArgument, "content coding \"" + name + "\" is not one of gzip, deflate, br, zstd");
    }
  }
  return codings;
}

std::unique_ptr<Decoder> Decoder::For(Coding coding) {
  switch (coding) {
    case Coding::kGzip:
    case Coding::kDeflate:
      return std::make_unique<ZlibDecoder>(coding);
    case Coding::kBrotli:
      return std::make_unique<BrotliDecoder>();
    case Coding::kZstd:
      return std::make_unique<ZstdDecoder>();
  }
  return nullptr;
}

std::unique_ptr<Encoder> Encoder::For(Coding coding, bool raw) {
  switch (coding) {
    case Coding::kGzip:
    case Coding::kDeflate:
      return std::make_unique<ZlibEncoder>(coding, raw);
    case Coding::kBrotli:
      return std::make_unique<BrotliEncoder>();
    case Coding::kZstd:
      return std::make_unique<ZstdEncoder>();
  }
  return nullptr;
}

RecodedBody::RecodedBody(Coding coding, std::unique_ptr<egress::BodyFilter> inner, ExpansionLimit limit)
    : coding_(coding), inner_(std::move(inner)), limit_(limit), decoder_(Decoder::For(coding)) {}

std::string RecodedBody::Refusal() const { return refusal_.empty() ? inner_->Refusal() : refusal_; }

void RecodedBody::Encode(std::string_view content, Encoder::Op op, std::string& out) {
  if (!encoder_) encoder_ = Encoder::For(coding_, decoder_->raw());
  Status encoded = encoder_->Run(content, op, out);
  if (!encoded.ok())
    refusal_ =
        "isb: encoding the body again as " + std::string(CodingName(coding_)) + " failed: " + encoded.error().message;
}

void RecodedBody::Drain(std::string& out) {
  for (;;) {
    decoded_piece_.clear();
    Result<bool> more = decoder_->Pull(decoded_piece_, kPiece);
    if (!more.ok()) {
      refusal_ = "isb: the body is not valid " + std::string(CodingName(coding_)) + ": " + more.error().message;
      return;
    }
    decoded_ += decoded_piece_.size();
    if (decoded_ > std::max(limit_.floor, limit_.ratio * encoded_)) {
      refusal_ = "isb: the body decodes to more than " + std::to_string(limit_.ratio) + " times its " +
                 std::string(CodingName(coding_)) + " size: refused as a decompression bomb";
      return;
    }
    if (!decoded_piece_.empty()) {
      filtered_.clear();
      inner_->Take(decoded_piece_, filtered_);
      if (!inner_->Refusal().empty()) return;
      Encode(filtered_, Encoder::Op::kContinue, out);
      if (!refusal_.empty()) return;
    }
    if (!*more) return;
  }
}

void RecodedBody::Take(std::string_view data, std::string& out) {
  if (!Refusal().empty()) return;
  encoded_ += data.size();
  decoder_->Give(data);
  Drain(out);
  if (Refusal().empty() && encoder_) Encode({}, Encoder::Op::kFlush, out);
}

void RecodedBody::Finish(std::string& out) {
  if (!Refusal().empty() || encoded_ == 0) return;
  Drain(out);
  if (!Refusal().empty()) return;
  if (!decoder_->ended()) {
    refusal_ = "isb: the body's " + std::string(CodingName(coding_)) + " stream ends before its end";
    return;
  }
  filtered_.clear();
  inner_->Finish(filtered_);
  if (!inner_->Refusal().empty()) return;
  Encode(filtered_, Encoder::Op::kFinish, out);
}

}  // namespace isb::secrets
