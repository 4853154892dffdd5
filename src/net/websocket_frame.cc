// The parser keeps at most a frame header's 14 bytes of its own; the payload goes straight to the caller, unmasked,
// so memory does not grow with a frame's length (max_frame bounds what the caller may choose to hold).
#include "net/websocket_frame.h"

namespace isb::net {

namespace {

// The header's length once its first two bytes are known.
size_t HeaderSize(uint8_t second) {
  const uint8_t len7 = second & 0x7F;
  const size_t extended = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
  return 2 + extended + ((second & 0x80) != 0 ? 4 : 0);
}

bool KnownOpcode(uint8_t opcode) {
  return opcode <= ws_opcode::kBinary || (opcode >= ws_opcode::kClose && opcode <= ws_opcode::kPong);
}

}  // namespace

void MaskPayload(const std::array<uint8_t, 4>& key, uint64_t offset, char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>(static_cast<uint8_t>(data[i]) ^ key[(offset + i) & 3]);
}

std::string EncodeFrameHeader(const WsFrameHeader& h) {
  std::string out;
  out.push_back(static_cast<char>((h.fin ? 0x80 : 0) | (h.rsv1 ? 0x40 : 0) | (h.opcode & 0x0F)));
  const uint8_t mask_bit = h.masked ? 0x80 : 0;
  if (h.length < 126) {
    out.push_back(static_cast<char>(mask_bit | h.length));
  } else if (h.length <= 0xFFFF) {
    out.push_back(static_cast<char>(mask_bit | 126));
    for (int shift = 8; shift >= 0; shift -= 8) out.push_back(static_cast<char>((h.length >> shift) & 0xFF));
  } else {
    out.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((h.length >> shift) & 0xFF));
  }
  if (h.masked) out.append(reinterpret_cast<const char*>(h.mask.data()), 4);
  return out;
}

std::string EncodeFrame(WsFrameHeader header, std::string_view payload) {
  header.length = payload.size();
  std::string out = EncodeFrameHeader(header);
  const size_t start = out.size();
  out.append(payload);
  if (header.masked) MaskPayload(header.mask, 0, out.data() + start, payload.size());
  return out;
}

WsFrameParser::Step WsFrameParser::Refuse(size_t used, uint16_t code, std::string reason) {
  failed_ = true;
  failure_ = Step{used, State::kError, code, std::move(reason)};
  Step step = failure_;
  failure_.used = 0;
  return step;
}

std::string WsFrameParser::Check() const {
  const WsFrameHeader& h = header_;
  if (!KnownOpcode(h.opcode)) return "a frame has an unknown opcode (" + std::to_string(h.opcode) + ")";
  if (h.rsv1 && !options_.rsv1_allowed) return "a frame has RSV1 set but no extension was negotiated";
  if (h.rsv1 && (IsControlOpcode(h.opcode) || h.opcode == ws_opcode::kContinuation))
    return "RSV1 is set on a control or continuation frame";
  if (IsControlOpcode(h.opcode) && !h.fin) return "a control frame is fragmented";
  if (options_.sender == WsSender::kClient && !h.masked) return "a frame from the client is not masked";
  if (options_.sender == WsSender::kServer && h.masked) return "a frame from the server is masked";
  return "";
}

WsFrameParser::Step WsFrameParser::Feed(std::string_view bytes, std::string& payload) {
  if (failed_) return failure_;
  size_t used = 0;
  if (!have_header_) {
    // The header arrives byte by byte at worst: take only what it still needs.
    while (used < bytes.size()) {
      const size_t need = head_.size() < 2 ? 2 : HeaderSize(static_cast<uint8_t>(head_[1]));
      if (head_.size() == need) break;
      const size_t take = std::min(need - head_.size(), bytes.size() - used);
      head_.append(bytes.substr(used, take));
      used += take;
      if (head_.size() == 2) {
        const auto first = static_cast<uint8_t>(head_[0]);
        const auto second = static_cast<uint8_t>(head_[1]);
        header_.fin = (first & 0x80) != 0;
        header_.rsv1 = (first & 0x40) != 0;
        header_.opcode = first & 0x0F;
        header_.masked = (second & 0x80) != 0;
        if ((first & 0x30) != 0) return Refuse(used, ws_close::kProtocolError, "a frame has RSV2 or RSV3 set");
        if (std::string refusal = Check(); !refusal.empty())
          return Refuse(used, ws_close::kProtocolError, std::move(refusal));
        if (IsControlOpcode(header_.opcode) && (second & 0x7F) > kMaxControlPayload)
          return Refuse(used, ws_close::kProtocolError, "a control frame's payload is longer than 125 bytes");
      }
    }
    if (head_.size() < 2 || head_.size() < HeaderSize(static_cast<uint8_t>(head_[1])))
      return Step{used, State::kMore, 0, ""};
    const auto* h = reinterpret_cast<const uint8_t*>(head_.data());
    const uint8_t len7 = h[1] & 0x7F;
    size_t at = 2;
    uint64_t length = len7;
    if (len7 >= 126) {
      const size_t n = len7 == 126 ? 2 : 8;
      length = 0;
      for (size_t i = 0; i < n; ++i) length = (length << 8) | h[at + i];
      at += n;
      // Lengths longer than they need be are allowed (RFC 6455 section 5.2 asks for the minimal form from
      // senders, not refusal from receivers); a 64-bit one must have its most significant bit clear.
      if ((length >> 63) != 0)
        return Refuse(used, ws_close::kProtocolError, "a frame's 64-bit length has its most significant bit set");
    }
    header_.length = length;
    if (header_.masked) std::copy(h + at, h + at + 4, header_.mask.begin());
    if (length > options_.max_frame)
      return Refuse(used, ws_close::kTooBig,
                    "a frame's payload (" + std::to_string(length) + " bytes) is longer than the limit of " +
                        std::to_string(options_.max_frame));
    have_header_ = true;
    payload_seen_ = 0;
  }
  const size_t take = static_cast<size_t>(std::min<uint64_t>(payload_remaining(), bytes.size() - used));
  const size_t start = payload.size();
  payload.append(bytes.substr(used, take));
  if (header_.masked) MaskPayload(header_.mask, payload_seen_, payload.data() + start, take);
  payload_seen_ += take;
  used += take;
  if (payload_remaining() > 0) return Step{used, State::kMore, 0, ""};
  // The frame is whole; header() still describes it until the next call.
  have_header_ = false;
  head_.clear();
  return Step{used, State::kFrame, 0, ""};
}

}  // namespace isb::net
