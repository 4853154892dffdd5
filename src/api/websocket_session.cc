// WebSocketSession: RFC 6455 frames read and written with poll on a non-blocking socket.
#include "api/websocket_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace isb::api {
namespace {

using net::WsFrameParser;
namespace op = net::ws_opcode;

constexpr int kPollMs = 200;
constexpr auto kCloseWait = std::chrono::nanoseconds(std::chrono::seconds(1));

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

WebSocketSession::WebSocketSession(int fd, std::string_view pending, std::function<bool()> stopping, Options options)
    : fd_(fd),
      options_(options),
      heard_at_(std::chrono::steady_clock::now()),
      in_(pending),
      stopping_(std::move(stopping)),
      parser_(WsFrameParser::Options{.sender = net::WsSender::kClient, .max_frame = options.max_message}),
      assembler_(options.max_message) {}

bool WebSocketSession::PeerAlive() {
  const auto now = std::chrono::steady_clock::now();
  if (ping_out_) {
    if (now - pinged_at_ <= options_.pong_wait) return true;
    broken_ = true;
    return false;
  }
  if (now - heard_at_ < options_.ping_after) return true;
  ping_out_ = true;
  pinged_at_ = now;
  return Send(op::kPing, "") || close_sent_;
}

bool WebSocketSession::Fill() {
  char buf[16 << 10];
  for (;;) {
    if (broken_ || (stopping_ && stopping_())) return false;
    if (close_sent_ && SteadyNs() - close_sent_at_ns_.load() > kCloseWait.count()) return false;
    if (!PeerAlive()) return false;
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, kPollMs);
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      heard_at_ = std::chrono::steady_clock::now();
      ping_out_ = false;
      return true;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      broken_ = true;
      return false;
    }
  }
}

std::optional<WebSocketSession::Message> WebSocketSession::Read() {
  for (;;) {
    if (in_.empty() && !Fill()) return std::nullopt;
    WsFrameParser::Step step = parser_.Feed(in_, frame_);
    in_.erase(0, step.used);
    if (step.state == WsFrameParser::State::kError) {
      Close(step.close_code, step.reason);
      return std::nullopt;
    }
    if (step.state == WsFrameParser::State::kMore) continue;
    const net::WsFrameHeader header = parser_.header();
    std::string payload = std::move(frame_);
    frame_.clear();
    if (net::IsControlOpcode(header.opcode)) {
      if (header.opcode == op::kPing) (void)Send(op::kPong, payload);
      if (header.opcode == op::kClose) {
        Result<net::WsClose> close = net::ParseClosePayload(payload);
        if (!close_sent_) peer_close_code_ = close.ok() ? close->code : net::ws_close::kProtocolError;
        Close(close.ok() ? (close->code == net::ws_close::kNoStatus ? net::ws_close::kNormal : close->code)
                         : net::ws_close::kProtocolError,
              "");
        return std::nullopt;
      }
      continue;
    }
    if (close_sent_) continue;  // data after our close is dropped (RFC 6455 section 5.5.1)
    net::WsRefusal refusal = assembler_.Begin(header);
    if (refusal.ok()) refusal = assembler_.Content(payload);
    if (refusal.ok()) refusal = assembler_.EndFrame(header.fin);
    if (!refusal.ok()) {
      Close(refusal.close_code, refusal.reason);
      return std::nullopt;
    }
    message_ += payload;
    if (header.fin) {
      Message m{assembler_.opcode(), std::move(message_)};
      message_.clear();
      return m;
    }
  }
}

bool WebSocketSession::Send(uint8_t opcode, std::string_view payload) {
  MutexLock lock(write_mu_);
  if (close_sent_) return false;
  return Write(net::EncodeFrame(net::WsFrameHeader{.fin = true, .opcode = opcode}, payload));
}

void WebSocketSession::Close(uint16_t code, std::string_view reason) {
  MutexLock lock(write_mu_);
  if (close_sent_) return;
  close_sent_at_ns_ = SteadyNs();
  close_sent_ = true;
  (void)Write(
      net::EncodeFrame(net::WsFrameHeader{.fin = true, .opcode = op::kClose}, net::EncodeClosePayload(code, reason)));
}

bool WebSocketSession::Write(std::string_view bytes) {
  const auto deadline = std::chrono::steady_clock::now() + options_.write_wait;
  while (!bytes.empty()) {
    if (broken_) return false;
    if (std::chrono::steady_clock::now() > deadline) {
      broken_ = true;  // the peer may hold part of this frame: nothing sent after it would parse
      return false;
    }
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      broken_ = true;
      return false;
    }
    pollfd p{fd_, POLLOUT, 0};
    (void)::poll(&p, 1, kPollMs);
  }
  return true;
}

}  // namespace isb::api
