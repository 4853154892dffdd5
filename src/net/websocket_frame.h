// RFC 6455 frames (section 5): the frame parser, incremental over any split of the bytes and bounded, and the
// encoder. A frame the parser refuses carries the close code an endpoint answers with.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace isb::net {

namespace ws_opcode {
inline constexpr uint8_t kContinuation = 0x0;
inline constexpr uint8_t kText = 0x1;
inline constexpr uint8_t kBinary = 0x2;
inline constexpr uint8_t kClose = 0x8;
inline constexpr uint8_t kPing = 0x9;
inline constexpr uint8_t kPong = 0xA;
}  // namespace ws_opcode

// Close codes (RFC 6455 section 7.4.1) an endpoint or the proxy sends.
namespace ws_close {
inline constexpr uint16_t kNormal = 1000;
inline constexpr uint16_t kGoingAway = 1001;
inline constexpr uint16_t kProtocolError = 1002;
inline constexpr uint16_t kUnsupportedData = 1003;
inline constexpr uint16_t kNoStatus = 1005;     // never sent: what an empty close payload means
inline constexpr uint16_t kInvalidData = 1007;  // a text message that is not UTF-8
inline constexpr uint16_t kPolicy = 1008;
inline constexpr uint16_t kTooBig = 1009;
inline constexpr uint16_t kInternalError = 1011;
}  // namespace ws_close

inline constexpr bool IsControlOpcode(uint8_t opcode) { return (opcode & 0x8) != 0; }
// A control frame's payload is at most this long (and the frame is never fragmented).
inline constexpr size_t kMaxControlPayload = 125;

// Who sent the frames a parser reads: a client masks every frame, a server none (RFC 6455 section 5.1).
enum class WsSender { kClient, kServer };

struct WsFrameHeader {
  bool fin = true;
  bool rsv1 = false;  // with permessage-deflate: the message is compressed (on its first frame only)
  uint8_t opcode = ws_opcode::kText;
  bool masked = false;
  std::array<uint8_t, 4> mask{};
  uint64_t length = 0;  // of the payload
};

// XORs `data`, the bytes of a payload starting at `offset`, with `key` (masking and unmasking are the same).
void MaskPayload(const std::array<uint8_t, 4>& key, uint64_t offset, char* data, size_t size);

// The frame's header bytes, its length in the shortest form.
std::string EncodeFrameHeader(const WsFrameHeader& header);
// A whole frame: the header, then `payload` masked with header.mask when header.masked (header.length is taken from
// the payload).
std::string EncodeFrame(WsFrameHeader header, std::string_view payload);

class WsFrameParser {
 public:
  struct Options {
    WsSender sender = WsSender::kClient;
    uint64_t max_frame = 1 << 20;  // the longest payload taken; a longer one is refused with 1009
    bool rsv1_allowed = false;     // an extension using RSV1 (permessage-deflate) was negotiated
  };
  explicit WsFrameParser(Options options) : options_(options) {}

  enum class State { kMore, kFrame, kError };
  struct Step {
    size_t used = 0;  // bytes taken from the start of the input
    State state = State::kMore;
    uint16_t close_code = 0;  // kError: what to close with
    std::string reason;       // kError: one sentence
  };
  // Takes the bytes from the start of `bytes`, none past the current frame's end, and appends the frame's payload,
  // unmasked, to `payload` as it arrives. kMore: all of `bytes` was taken and the frame goes on. kFrame: the frame
  // ended after `used` bytes (header() describes it) and the next call starts the next frame. kError: the frame is
  // refused; every later call returns the same, taking nothing.
  Step Feed(std::string_view bytes, std::string& payload);

  // Whether the current frame's header has been read (from then on header() describes it).
  bool has_header() const { return have_header_; }
  const WsFrameHeader& header() const { return header_; }
  // Payload bytes of the current frame still to come.
  uint64_t payload_remaining() const { return header_.length - payload_seen_; }

 private:
  Step Refuse(size_t used, uint16_t code, std::string reason);
  std::string Check() const;  // the header's refusal, or empty

  Options options_;
  std::string head_;  // the header's bytes while it arrives (at most 14)
  WsFrameHeader header_;
  bool have_header_ = false;
  uint64_t payload_seen_ = 0;
  bool failed_ = false;
  Step failure_;
};

}  // namespace isb::net
