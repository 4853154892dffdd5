// RFC 7692 permessage-deflate: the Sec-WebSocket-Extensions list (offers and responses) and the extension's
// parameters, and the per-message codec: raw DEFLATE with the 0x00 0x00 0xff 0xff tail taken off each message and
// put back before inflating, with or without context takeover, inflating in bounded pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <zlib.h>

#include "base/result.h"

namespace isb::net {

inline constexpr char kPermessageDeflate[] = "permessage-deflate";

struct WsExtensionParam {
  std::string name;
  std::optional<std::string> value;  // unquoted
};
struct WsExtension {
  std::string name;
  std::vector<WsExtensionParam> params;
};

// A Sec-WebSocket-Extensions value (several fields joined with ", "): extensions, each a token with ";"-separated
// parameters, a value a token or a quoted string. Refusals are kInvalidArgument naming what was wrong.
Result<std::vector<WsExtension>> ParseExtensionList(std::string_view value);
// One extension as a list element ("permessage-deflate; client_max_window_bits").
std::string FormatExtension(const WsExtension& extension);

// The parameters of one permessage-deflate offer or response.
struct DeflateParams {
  bool server_no_context_takeover = false;
  bool client_no_context_takeover = false;
  std::optional<int> server_max_window_bits;  // 8 to 15; absent: 15
  std::optional<int> client_max_window_bits;  // 8 to 15; absent: 15
  bool client_max_window_bits_bare = false;   // an offer's client_max_window_bits without a value

  int server_window() const { return server_max_window_bits.value_or(15); }
  int client_window() const { return client_max_window_bits.value_or(15); }
};

// A permessage-deflate element's parameters: each known at most once, window bits 8 to 15 (a bare
// client_max_window_bits only in an offer, `response` false). Refusals are kInvalidArgument.
Result<DeflateParams> ParseDeflateParams(const WsExtension& extension, bool response);
// Why `response` cannot answer `offer` (RFC 7692 section 7.1), or empty.
std::string DeflateResponseRefusal(const DeflateParams& offer, const DeflateParams& response);

// Inflates the messages of one direction of a connection.
class WsInflater {
 public:
  // `no_context_takeover`: the sender resets its window each message (so may we). `max_message`: the most bytes one
  // message may inflate to.
  WsInflater(bool no_context_takeover, uint64_t max_message);
  ~WsInflater();
  WsInflater(const WsInflater&) = delete;
  WsInflater& operator=(const WsInflater&) = delete;

  // The current message's next compressed bytes: appends at most `max_out` bytes of content to `out` and returns how
  // many input bytes it took (call again with the rest: a small input may inflate to much). Errors: kInvalidArgument
  // (not DEFLATE data), kTooLarge (past max_message).
  Result<size_t> Take(std::string_view in, std::string& out, size_t max_out);
  // The message has ended: inflates the tail the sender took off, appending at most `max_out` bytes; true when the
  // message is whole (call again while false).
  Result<bool> Finish(std::string& out, size_t max_out);

 private:
  Result<size_t> Run(std::string_view in, std::string& out, size_t max_out);
  z_stream z_{};
  bool no_context_takeover_;
  uint64_t max_message_;
  uint64_t message_size_ = 0;
  size_t tail_used_ = 0;       // of the 4 tail bytes, while finishing
  bool stream_ended_ = false;  // the message held a final block
};

// Deflates the messages of one direction of a connection.
class WsDeflater {
 public:
  // `window_bits` 8 to 15, what the receiver allows; zlib's raw DEFLATE has no window of 8, so with 8 it finds no
  // matches at all (Huffman coding alone refers to no earlier byte, which any window allows).
  // `no_context_takeover`: each message on its own.
  WsDeflater(int window_bits, bool no_context_takeover);
  ~WsDeflater();
  WsDeflater(const WsDeflater&) = delete;
  WsDeflater& operator=(const WsDeflater&) = delete;

  // The current message's next content; appends what is compressed so far.
  void Take(std::string_view in, std::string& out);
  // The message has ended: appends the rest, without the 0x00 0x00 0xff 0xff tail.
  void Finish(std::string& out);

 private:
  void Run(std::string_view in, int flush, std::string& out);
  z_stream z_{};
  bool no_context_takeover_;
};

}  // namespace isb::net
