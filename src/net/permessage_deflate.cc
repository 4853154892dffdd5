// zlib's raw DEFLATE (negative window bits) is the codec; the extension list is parsed strictly, as a proxy must
// understand every extension it lets through.
#include "net/permessage_deflate.h"

#include <algorithm>
#include <array>

#include "base/ascii.h"

namespace isb::net {

namespace {

constexpr std::array<unsigned char, 4> kTail = {0x00, 0x00, 0xFF, 0xFF};

Error Invalid(std::string message) { return Error::Of(Code::kInvalidArgument, "Sec-WebSocket-Extensions: " + message); }

// A reader over one header value.
class ListReader {
 public:
  explicit ListReader(std::string_view text) : text_(text) {}
  void SkipBlanks() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t')) ++at_;
  }
  bool AtEnd() const { return at_ == text_.size(); }
  bool Eat(char c) {
    SkipBlanks();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  std::string Token() {
    SkipBlanks();
    const size_t start = at_;
    while (at_ < text_.size() && IsTokenChar(text_[at_])) ++at_;
    return std::string(text_.substr(start, at_ - start));
  }
  // A quoted string's content, or nullopt when it is not closed or holds a control byte.
  std::optional<std::string> Quoted() {
    std::string out;
    for (++at_; at_ < text_.size(); ++at_) {
      char c = text_[at_];
      if (c == '"') {
        ++at_;
        return out;
      }
      if (c == '\\' && ++at_ == text_.size()) break;
      if (static_cast<unsigned char>(text_[at_]) < 0x20 || text_[at_] == 0x7F) break;
      out.push_back(text_[at_]);
    }
    return std::nullopt;
  }
  bool AtQuote() {
    SkipBlanks();
    return at_ < text_.size() && text_[at_] == '"';
  }

 private:
  std::string_view text_;
  size_t at_ = 0;
};

Result<int> WindowBits(const WsExtensionParam& param) {
  const std::string& v = *param.value;
  if (v.size() == 1 && v[0] >= '8' && v[0] <= '9') return v[0] - '0';
  if (v.size() == 2 && v[0] == '1' && v[1] >= '0' && v[1] <= '5') return 10 + (v[1] - '0');
  return Invalid(param.name + " must be 8 to 15, not " + v);
}

}  // namespace

Result<std::vector<WsExtension>> ParseExtensionList(std::string_view value) {
  std::vector<WsExtension> out;
  ListReader r(value);
  for (;;) {
    WsExtension extension;
    extension.name = r.Token();
    if (extension.name.empty()) return Invalid("an extension name is missing or not a token");
    while (r.Eat(';')) {
      WsExtensionParam param;
      param.name = r.Token();
      if (param.name.empty()) return Invalid("a parameter of " + extension.name + " is not a token");
      if (r.Eat('=')) {
        if (r.AtQuote()) {
          param.value = r.Quoted();
          if (!param.value) return Invalid("a quoted value of " + extension.name + " is not closed");
        } else {
          param.value = r.Token();
        }
        if (param.value->empty() || !std::all_of(param.value->begin(), param.value->end(), IsTokenChar))
          return Invalid("the value of " + param.name + " is not a token");
      }
      extension.params.push_back(std::move(param));
    }
    out.push_back(std::move(extension));
    if (r.Eat(',')) continue;
    r.SkipBlanks();
    if (!r.AtEnd()) return Invalid("unexpected text after " + out.back().name);
    return out;
  }
}

std::string FormatExtension(const WsExtension& extension) {
  std::string out = extension.name;
  for (const WsExtensionParam& p : extension.params) {
    out += "; " + p.name;
    if (p.value) out += "=" + *p.value;
  }
  return out;
}

Result<DeflateParams> ParseDeflateParams(const WsExtension& extension, bool response) {
  if (extension.name != kPermessageDeflate) return Invalid(extension.name + " is not permessage-deflate");
  DeflateParams out;
  bool seen[4] = {};
  for (const WsExtensionParam& p : extension.params) {
    int which = p.name == "server_no_context_takeover"   ? 0
                : p.name == "client_no_context_takeover" ? 1
                : p.name == "server_max_window_bits"     ? 2
                : p.name == "client_max_window_bits"     ? 3
                                                         : -1;
    if (which < 0) return Invalid("permessage-deflate has no parameter " + p.name);
    if (seen[which]) return Invalid("permessage-deflate has " + p.name + " twice");
    seen[which] = true;
    if (which < 2) {
      if (p.value) return Invalid(p.name + " takes no value");
      (which == 0 ? out.server_no_context_takeover : out.client_no_context_takeover) = true;
      continue;
    }
    if (!p.value) {
      if (which == 2 || response) return Invalid(p.name + " needs a value");
      out.client_max_window_bits_bare = true;
      continue;
    }
    ISB_ASSIGN_OR_RETURN(int bits, WindowBits(p));
    (which == 2 ? out.server_max_window_bits : out.client_max_window_bits) = bits;
  }
  return out;
}

std::string DeflateResponseRefusal(const DeflateParams& offer, const DeflateParams& response) {
  if (offer.server_no_context_takeover && !response.server_no_context_takeover)
    return "the response drops server_no_context_takeover, which the offer asked for";
  if (offer.server_max_window_bits &&
      (!response.server_max_window_bits || *response.server_max_window_bits > *offer.server_max_window_bits))
    return "the response's server_max_window_bits exceeds the offer's";
  if (response.client_max_window_bits) {
    if (!offer.client_max_window_bits && !offer.client_max_window_bits_bare)
      return "the response sets client_max_window_bits, which the offer did not allow";
    if (offer.client_max_window_bits && *response.client_max_window_bits > *offer.client_max_window_bits)
      return "the response's client_max_window_bits exceeds the offer's";
  }
  return "";
}

WsInflater::WsInflater(bool no_context_takeover, uint64_t max_message)
    : no_context_takeover_(no_context_takeover), max_message_(max_message) {
  // A window of 15 reads whatever window the sender used.
  inflateInit2(&z_, -15);
}

WsInflater::~WsInflater() { inflateEnd(&z_); }

Result<size_t> WsInflater::Run(std::string_view in, std::string& out, size_t max_out) {
  if (stream_ended_) return in.size();  // past a final block, as any DEFLATE decoder, nothing more is read
  const uint64_t room = max_message_ - message_size_ + 1;  // one past the limit shows it was passed
  const size_t limit = static_cast<size_t>(std::min<uint64_t>(max_out, room));
  const size_t start = out.size();
  out.resize(start + limit);
  z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z_.avail_in = static_cast<uInt>(in.size());
  z_.next_out = reinterpret_cast<Bytef*>(out.data() + start);
  z_.avail_out = static_cast<uInt>(limit);
  int rc = limit == 0 ? Z_BUF_ERROR : inflate(&z_, Z_SYNC_FLUSH);
  const size_t produced = limit - z_.avail_out;
  out.resize(start + produced);
  message_size_ += produced;
  // A sender may end a message with a final block (RFC 7692 section 7.2.3.4); the next message starts a new stream.
  if (rc == Z_STREAM_END) stream_ended_ = true;
  if (rc != Z_STREAM_END && rc != Z_OK && rc != Z_BUF_ERROR)
    return Error::Of(Code::kInvalidArgument, "a compressed message is not valid DEFLATE data");
  if (message_size_ > max_message_)
    return Error::Of(Code::kTooLarge,
                     "a message inflates past the limit of " + std::to_string(max_message_) + " bytes");
  return stream_ended_ ? in.size() : in.size() - z_.avail_in;
}

Result<size_t> WsInflater::Take(std::string_view in, std::string& out, size_t max_out) {
  if (in.size() > 1u << 30) in = in.substr(0, 1u << 30);
  return Run(in, out, max_out);
}

Result<bool> WsInflater::Finish(std::string& out, size_t max_out) {
  std::string_view tail(reinterpret_cast<const char*>(kTail.data()) + tail_used_, kTail.size() - tail_used_);
  ISB_ASSIGN_OR_RETURN(size_t used, Run(tail, out, max_out));
  tail_used_ += used;
  // Whole once the tail is in and inflate has nothing more to give (its output buffer was not filled).
  if (tail_used_ < kTail.size() || (!stream_ended_ && z_.avail_out == 0)) return false;
  tail_used_ = 0;
  message_size_ = 0;
  if (no_context_takeover_ || stream_ended_) inflateReset(&z_);
  stream_ended_ = false;
  return true;
}

WsDeflater::WsDeflater(int window_bits, bool no_context_takeover) : no_context_takeover_(no_context_takeover) {
  deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -std::max(window_bits, 9), 8,
               window_bits < 9 ? Z_HUFFMAN_ONLY : Z_DEFAULT_STRATEGY);
}

WsDeflater::~WsDeflater() { deflateEnd(&z_); }

void WsDeflater::Run(std::string_view in, int flush, std::string& out) {
  z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z_.avail_in = static_cast<uInt>(in.size());
  char buffer[16 * 1024];
  do {
    z_.next_out = reinterpret_cast<Bytef*>(buffer);
    z_.avail_out = sizeof buffer;
    deflate(&z_, flush);
    out.append(buffer, sizeof buffer - z_.avail_out);
  } while (z_.avail_out == 0 || z_.avail_in > 0);
}

void WsDeflater::Take(std::string_view in, std::string& out) { Run(in, Z_NO_FLUSH, out); }

void WsDeflater::Finish(std::string& out) {
  std::string flushed;
  Run({}, Z_SYNC_FLUSH, flushed);
  // A sync flush always ends with the empty stored block's 0x00 0x00 0xff 0xff (RFC 7692 section 7.2.1).
  flushed.resize(flushed.size() - kTail.size());
  out.append(flushed);
  if (no_context_takeover_) deflateReset(&z_);
}

}  // namespace isb::net
