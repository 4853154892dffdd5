// A frame's way is chosen when its header is whole: a control frame is held (at most 139 bytes) and passed whole; a
// data frame of a message passed as it came goes on piece by piece as read; a rewritten message's content goes
// through inflate, the filter and deflate, and out in frames of its own. Compressed messages are always rewritten:
// with context takeover the receiver's window is what the proxy wrote, so the proxy must keep writing it.
#include "egress/websocket_pump.h"

#include <random>

#include "base/random.h"

namespace isb::egress {

namespace {

constexpr size_t kInflatePiece = 64 * 1024;
constexpr size_t kMaskBatch = 256;

}  // namespace

WebSocketPump::WebSocketPump(MessageFilter& filter, const Exchange& exchange, bool to_origin,
                             const WebSocketSession& session)
    : filter_(filter),
      exchange_(exchange),
      to_origin_(to_origin),
      parser_(net::WsFrameParser::Options{to_origin ? net::WsSender::kClient : net::WsSender::kServer,
                                          kMaxWebSocketFrame, session.deflate.has_value()}),
      messages_(kMaxWebSocketMessage) {
  if (!session.deflate) return;
  const net::DeflateParams& p = *session.deflate;
  const bool sender_resets = to_origin ? p.client_no_context_takeover : p.server_no_context_takeover;
  const int receiver_window = to_origin ? p.client_window() : p.server_window();
  inflater_ = std::make_unique<net::WsInflater>(sender_resets, kMaxWebSocketMessage);
  deflater_ = std::make_unique<net::WsDeflater>(receiver_window, sender_resets);
}

net::WsRefusal WebSocketPump::Fail(net::WsRefusal refusal) {
  failed_ = true;
  failure_ = refusal;
  return refusal;
}

net::WsRefusal WebSocketPump::Feed(std::string_view bytes, std::string& out) {
  if (failed_) return failure_;
  while (!bytes.empty()) {
    payload_.clear();
    net::WsFrameParser::Step step = parser_.Feed(bytes, payload_);
    const std::string_view raw = bytes.substr(0, step.used);
    bytes.remove_prefix(step.used);
    if (step.state == net::WsFrameParser::State::kError) return Fail({step.close_code, step.reason});
    const bool whole = step.state == net::WsFrameParser::State::kFrame;
    bool fresh = false;
    if (!frame_started_) {
      held_.append(raw);
      if (!parser_.has_header() && !whole) continue;
      frame_started_ = fresh = true;
      if (net::WsRefusal r = StartFrame(); !r.ok()) return Fail(r);
    }
    const net::WsFrameHeader& h = parser_.header();
    if (net::IsControlOpcode(h.opcode)) {
      if (!fresh) held_.append(raw);
    } else if (mode_ == Mode::kRaw) {
      if (fresh) {
        out.append(held_);
        held_.clear();
      } else {
        out.append(raw);
      }
      raw_frame_open_ = !whole;
    } else if (net::WsRefusal r = Rewrite(payload_, out); !r.ok()) {
      return Fail(r);
    }
    if (!whole) continue;
    frame_started_ = false;
    if (net::IsControlOpcode(h.opcode)) {
      if (h.opcode == net::ws_opcode::kClose) {
        // The close frame's payload is the whole of this frame's, unmasked: the held bytes past the header.
        std::string payload = held_.substr(held_.size() - h.length);
        if (h.masked) net::MaskPayload(h.mask, 0, payload.data(), payload.size());
        Result<net::WsClose> close = net::ParseClosePayload(payload);
        if (!close.ok()) return Fail({net::ws_close::kProtocolError, close.error().message});
        closed_ = true;
      }
      if (net::WsRefusal r = FilterControl(h, out); !r.ok()) return Fail(r);
      held_.clear();
      continue;
    }
    if (net::WsRefusal r = messages_.EndFrame(h.fin); !r.ok()) return Fail(r);
    if (mode_ == Mode::kRewrite && h.fin) {
      if (net::WsRefusal r = EndMessage(out); !r.ok()) return Fail(r);
    }
  }
  return {};
}

net::WsRefusal WebSocketPump::FilterControl(const net::WsFrameHeader& h, std::string& out) {
  // A ping's, pong's or close's payload passes the filter too (a close reason may quote what a message carried): as
  // it came when the filter leaves it alone, else framed again, cut to what a control frame holds.
  std::unique_ptr<BodyFilter> body = filter_.WebSocketMessage(exchange_, to_origin_, false);
  if (body == nullptr || h.length == 0) {
    out.append(held_);
    return {};
  }
  std::string payload = held_.substr(held_.size() - h.length);
  if (h.masked) net::MaskPayload(h.mask, 0, payload.data(), payload.size());
  std::string filtered;
  body->Take(payload, filtered);
  body->Finish(filtered);
  if (std::string refusal = body->Refusal(); !refusal.empty()) return {net::ws_close::kPolicy, refusal};
  if (filtered == payload) {
    out.append(held_);
    return {};
  }
  if (filtered.size() > net::kMaxControlPayload) filtered.resize(net::kMaxControlPayload);
  net::WsFrameHeader header = h;
  header.length = filtered.size();
  out.append(net::EncodeFrame(header, filtered));
  return {};
}

net::WsRefusal WebSocketPump::StartFrame() {
  const net::WsFrameHeader& h = parser_.header();
  if (closed_) return {net::ws_close::kProtocolError, "a frame came after the close frame"};
  if (net::IsControlOpcode(h.opcode)) return {};
  if (net::WsRefusal r = messages_.Begin(h); !r.ok()) return r;
  if (h.opcode != net::ws_opcode::kContinuation) {
    message_compressed_ = h.rsv1;
    body_ = filter_.WebSocketMessage(exchange_, to_origin_, h.opcode == net::ws_opcode::kText);
    mode_ = body_ != nullptr || message_compressed_ ? Mode::kRewrite : Mode::kRaw;
    first_out_ = true;
  }
  if (mode_ == Mode::kRewrite) held_.clear();  // the header is written anew
  return {};
}

net::WsRefusal WebSocketPump::Rewrite(std::string_view payload, std::string& out) {
  if (!message_compressed_) return Decoded(payload, out);
  while (!payload.empty()) {
    decoded_.clear();
    Result<size_t> used = inflater_->Take(payload, decoded_, kInflatePiece);
    if (!used.ok()) {
      const uint16_t code = used.error().code == Code::kTooLarge ? net::ws_close::kTooBig : net::ws_close::kInvalidData;
      return {code, used.error().message};
    }
    payload.remove_prefix(*used);
    if (net::WsRefusal r = Decoded(decoded_, out); !r.ok()) return r;
  }
  return {};
}

net::WsRefusal WebSocketPump::Decoded(std::string_view content, std::string& out) {
  if (net::WsRefusal r = messages_.Content(content); !r.ok()) return r;
  filtered_.clear();
  if (body_ != nullptr) {
    body_->Take(content, filtered_);
    // A filter that refuses the message (a secret headed where it may not go) ends the connection: the message goes
    // no further, and both sides are told why (1008).
    if (std::string refusal = body_->Refusal(); !refusal.empty()) return {net::ws_close::kPolicy, refusal};
    Encode(filtered_, out);
  } else {
    Encode(content, out);
  }
  return {};
}

net::WsRefusal WebSocketPump::EndMessage(std::string& out) {
  if (message_compressed_) {
    for (bool whole = false; !whole;) {
      decoded_.clear();
      Result<bool> done = inflater_->Finish(decoded_, kInflatePiece);
      if (!done.ok()) {
        const uint16_t code =
            done.error().code == Code::kTooLarge ? net::ws_close::kTooBig : net::ws_close::kInvalidData;
        return {code, done.error().message};
      }
      whole = *done;
      if (net::WsRefusal r = Decoded(decoded_, out); !r.ok()) return r;
    }
  }
  if (body_ != nullptr) {
    filtered_.clear();
    body_->Finish(filtered_);
    if (std::string refusal = body_->Refusal(); !refusal.empty()) return {net::ws_close::kPolicy, refusal};
    Encode(filtered_, out);
    body_.reset();
  }
  if (message_compressed_) deflater_->Finish(pending_);
  Emit(true, out);
  return {};
}

void WebSocketPump::Encode(std::string_view filtered, std::string& out) {
  if (message_compressed_) {
    deflater_->Take(filtered, pending_);
  } else {
    pending_.append(filtered);
  }
  if (pending_.size() >= kWebSocketOutFrame) Emit(false, out);
}

void WebSocketPump::Emit(bool fin, std::string& out) {
  const uint8_t opcode = first_out_ ? messages_.opcode() : net::ws_opcode::kContinuation;
  out.append(net::EncodeFrame(OutHeader(opcode, fin, first_out_ && message_compressed_), pending_));
  pending_.clear();
  first_out_ = false;
}

net::WsFrameHeader WebSocketPump::OutHeader(uint8_t opcode, bool fin, bool rsv1) {
  net::WsFrameHeader h;
  h.fin = fin;
  h.rsv1 = rsv1;
  h.opcode = opcode;
  h.masked = to_origin_;
  if (!to_origin_) return h;
  if (mask_pool_.size() < h.mask.size()) {
    mask_pool_.resize(kMaskBatch);
    if (!RandomBytes(mask_pool_.data(), mask_pool_.size()).ok()) {
      std::random_device device;  // getrandom(2) does not fail once the pool is ready; this is a last resort
      for (char& c : mask_pool_) c = static_cast<char>(device());
    }
  }
  for (size_t i = 0; i < h.mask.size(); ++i) h.mask[i] = static_cast<uint8_t>(mask_pool_[mask_pool_.size() - 1 - i]);
  mask_pool_.resize(mask_pool_.size() - h.mask.size());
  return h;
}

std::string WebSocketPump::CloseFrame(uint16_t code, std::string_view reason) {
  return net::EncodeFrame(OutHeader(net::ws_opcode::kClose, true, false), net::EncodeClosePayload(code, reason));
}

}  // namespace isb::egress
