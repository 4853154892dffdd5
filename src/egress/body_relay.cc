// The body relay's state machine: a body's bytes followed by their framing, or decoded, filtered and framed anew.
#include "egress/body_relay.h"

#include <algorithm>
#include <cstdio>

namespace isb::egress {

Reframe ChooseReframe(BodyFraming in, bool filtered, bool request, int receiver_minor) {
  if (!filtered || in.kind == BodyFraming::kNone) return Reframe::kAsSent;
  if (in.kind == BodyFraming::kChunked) return Reframe::kChunked;
  if (in.kind == BodyFraming::kUntilClose) return Reframe::kUntilClose;
  if (receiver_minor >= 1) return Reframe::kChunked;
  return request ? Reframe::kBuffered : Reframe::kUntilClose;
}

BodyRelay::BodyRelay(BodyFraming in, Reframe out, std::unique_ptr<BodyFilter> filter, bool keep_trailers)
    : in_(in),
      out_(filter ? out : Reframe::kAsSent),
      filter_(std::move(filter)),
      remaining_(in.length),
      keep_trailers_(keep_trailers) {}

uint64_t BodyRelay::opaque_remaining() const {
  return !filter_ && !stopped_ && in_.kind == BodyFraming::kLength ? remaining_ : 0;
}

void BodyRelay::Skipped(uint64_t n) {
  n = std::min(n, remaining_);
  remaining_ -= n;
  length_out_ += n;
}

void BodyRelay::Frame(std::string_view content, std::string& out) {
  if (content.empty()) return;
  length_out_ += content.size();
  if (out_ != Reframe::kChunked) {
    out.append(content);
    return;
  }
  char size[24];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", content.size());
  out.append(size, static_cast<size_t>(n)).append(content).append("\r\n");
}

bool BodyRelay::Pass(std::string_view content, std::string& out) {
  if (!filter_) {
    out.append(content);
    length_out_ += content.size();
    return true;
  }
  filtered_.clear();
  filter_->Take(content, filtered_);
  if (!filter_->Refusal().empty()) return false;
  Frame(filtered_, out);
  return true;
}

BodyRelay::Step BodyRelay::Refused(size_t used) { return Stop({used, State::kRefused, filter_->Refusal()}); }

BodyRelay::Step BodyRelay::Stop(Step step) {
  stopped_ = true;
  last_ = step;
  last_.used = 0;
  return step;
}

BodyRelay::Step BodyRelay::Finish(size_t used, std::string& out) {
  if (filter_) {
    filtered_.clear();
    filter_->Finish(filtered_);
    if (!filter_->Refusal().empty()) return Refused(used);
    Frame(filtered_, out);
    if (out_ == Reframe::kChunked) out.append("0\r\n").append(keep_trailers_ ? trailers_ : "").append("\r\n");
    trailers_.clear();
  }
  if (out_ == Reframe::kBuffered && length_out_ > kMaxBufferedBody)
    return Stop({used, State::kTooLarge,
                 "an HTTP/1.0 request's body that a filter changes is held whole, and this "
                 "one came to more than 1048576 bytes: send it with HTTP/1.1"});
  return Stop({used, State::kDone, ""});
}

BodyRelay::Step BodyRelay::Feed(std::string_view bytes, std::string& out) {
  if (stopped_) return last_;
  Step step;
  switch (in_.kind) {
    case BodyFraming::kNone:
      return Finish(0, out);
    case BodyFraming::kLength: {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size()));
      if (!Pass(bytes.substr(0, take), out)) return Refused(take);
      remaining_ -= take;
      if (remaining_ == 0) return Finish(take, out);
      step.used = take;
      break;
    }
    case BodyFraming::kChunked: {
      // Nothing of a piece with a fault in it goes on.
      ChunkedScanner::Step scanned;
      if (filter_) {
        data_.clear();
        scanned = scanner_.Feed(bytes, &data_, &trailers_);
      } else {
        scanned = scanner_.Feed(bytes);
      }
      if (scanned.state == ChunkedScanner::State::kMalformed)
        return Stop({scanned.used, State::kMalformed, scanned.reason});
      if (filter_) {
        if (!Pass(data_, out)) return Refused(scanned.used);
      } else {
        out.append(bytes.substr(0, scanned.used));
        length_out_ += scanned.used;
      }
      if (scanned.state == ChunkedScanner::State::kDone) return Finish(scanned.used, out);
      step.used = scanned.used;
      break;
    }
    case BodyFraming::kUntilClose:
      if (!Pass(bytes, out)) return Refused(bytes.size());
      step.used = bytes.size();
      break;
  }
  if (out_ == Reframe::kBuffered && length_out_ > kMaxBufferedBody) return Finish(step.used, out);
  return step;
}

BodyRelay::Step BodyRelay::End(std::string& out) {
  if (stopped_) return last_;
  if (in_.kind == BodyFraming::kUntilClose || in_.kind == BodyFraming::kNone) return Finish(0, out);
  return Stop({0, State::kMalformed, "the body ended before its end"});
}

}  // namespace isb::egress
