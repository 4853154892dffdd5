// Fuzzes the WebSocket frame parser and the message rules over it: the first byte picks the sender, whether RSV1 is
// allowed and the frame limit; the rest is the stream. Read whole and read in pieces (cut where the second byte
// says), it must give the same frames, payloads and refusal; a frame encoded again from its header parses back to
// the same payload; close payloads and text messages go through their checks without reading past the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "net/websocket_frame.h"
#include "net/websocket_message.h"

namespace {

using isb::net::WsFrameParser;

struct Trace {
  std::vector<std::string> frames;  // each frame's encoded header and payload
  std::string error;
};

Trace Run(WsFrameParser::Options options, std::string_view bytes, size_t piece) {
  WsFrameParser parser(options);
  isb::net::WsMessageAssembler messages(1 << 16);
  Trace trace;
  std::string payload;
  while (!bytes.empty()) {
    const std::string_view in = bytes.substr(0, piece);
    WsFrameParser::Step step = parser.Feed(in, payload);
    if (step.used > in.size()) std::abort();
    bytes.remove_prefix(step.used);
    if (step.state == WsFrameParser::State::kError) {
      if (step.close_code == 0 || step.reason.empty()) std::abort();
      trace.error = std::to_string(step.close_code) + step.reason;
      break;
    }
    if (step.state == WsFrameParser::State::kMore) {
      if (step.used != in.size()) std::abort();
      continue;
    }
    const isb::net::WsFrameHeader& h = parser.header();
    if (payload.size() != h.length || h.length > options.max_frame) std::abort();
    if (isb::net::IsControlOpcode(h.opcode)) {
      if (!h.fin || h.length > isb::net::kMaxControlPayload) std::abort();
      if (h.opcode == isb::net::ws_opcode::kClose) (void)isb::net::ParseClosePayload(payload);
    } else if (messages.Begin(h).ok()) {
      (void)messages.Content(payload);
      (void)messages.EndFrame(h.fin);
    }
    // The frame again, from its header: the same payload comes back.
    std::string again = isb::net::EncodeFrame(h, payload);
    WsFrameParser reparse(options);
    std::string payload_again;
    WsFrameParser::Step back = reparse.Feed(again, payload_again);
    if (back.state != WsFrameParser::State::kFrame || back.used != again.size() || payload_again != payload)
      std::abort();
    trace.frames.push_back(std::move(again));
    payload.clear();
  }
  return trace;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  WsFrameParser::Options options;
  options.sender = (data[0] & 1) != 0 ? isb::net::WsSender::kClient : isb::net::WsSender::kServer;
  options.rsv1_allowed = (data[0] & 2) != 0;
  options.max_frame = (data[0] & 4) != 0 ? 64 : 1 << 16;
  const size_t piece = 1 + data[1] % 16;
  std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  Trace whole = Run(options, stream, stream.size() + 1);
  Trace pieces = Run(options, stream, piece);
  if (whole.frames != pieces.frames || whole.error != pieces.error) std::abort();
  return 0;
}
