// Fuzzes the body relay: a body in any framing, filtered (by a filter that changes its length) or not, fed at once or
// in pieces of any size, ends at the same byte in the same state; unfiltered it goes out byte for byte, filtered its
// new chunked framing scans whole and carries the same content and trailers however the body arrived.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "egress/body_relay.h"
#include "egress/replacing_filter.h"

namespace {

using isb::egress::BodyFraming;
using isb::egress::BodyRelay;
using isb::egress::ChunkedScanner;
using isb::egress::Reframe;

struct Outcome {
  BodyRelay::State state = BodyRelay::State::kMore;
  size_t used = 0;
  std::string out;
};

Outcome Relay(std::string_view bytes, BodyFraming in, Reframe out, bool filtered, size_t piece) {
  std::unique_ptr<isb::egress::BodyFilter> filter;
  if (filtered) filter = std::make_unique<isb::egress::ReplacingBody>("ab", "xyz");
  BodyRelay relay(in, out, std::move(filter));
  Outcome o;
  for (size_t at = 0; at < bytes.size() && o.state == BodyRelay::State::kMore; at += piece) {
    std::string_view part = bytes.substr(at, piece);
    BodyRelay::Step step = relay.Feed(part, o.out);
    if (step.used > part.size()) std::abort();
    if (step.state == BodyRelay::State::kMore && step.used != part.size()) std::abort();
    if (step.state != BodyRelay::State::kMore && step.state != BodyRelay::State::kDone && step.reason.empty())
      std::abort();
    o.used += step.used;
    o.state = step.state;
  }
  if (o.state == BodyRelay::State::kMore) o.state = relay.End(o.out).state;
  return o;
}

// A chunked body's content and trailers; aborts unless it scans whole.
std::string Dechunk(std::string_view body) {
  ChunkedScanner scanner;
  std::string data, trailers;
  ChunkedScanner::Step step = scanner.Feed(body, &data, &trailers);
  if (step.state != ChunkedScanner::State::kDone || step.used != body.size()) std::abort();
  return data + '\0' + trailers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t piece = data[1] % 31 + 1;
  std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  const BodyFraming in = data[0] % 3 == 0   ? BodyFraming{BodyFraming::kChunked, 0}
                         : data[0] % 3 == 1 ? BodyFraming{BodyFraming::kLength, bytes.size() / 2}
                                            : BodyFraming{BodyFraming::kUntilClose, 0};
  const bool filtered = (data[0] / 3) % 2 == 1;
  const Reframe out = isb::egress::ChooseReframe(in, filtered, true, 1);
  Outcome whole = Relay(bytes, in, out, filtered, bytes.size() + 1);
  Outcome split = Relay(bytes, in, out, filtered, piece);
  if (whole.state != split.state || whole.used != split.used) std::abort();
  if (!filtered) {
    // Byte for byte; of a malformed body, only what came in pieces before the one with the fault.
    for (const Outcome* o : {&whole, &split}) {
      if (!bytes.starts_with(o->out) || o->out.size() > o->used) std::abort();
    }
    if (whole.state == BodyRelay::State::kDone && (whole.out != split.out || whole.out.size() != whole.used))
      std::abort();
    return 0;
  }
  if (whole.state != BodyRelay::State::kDone) return 0;
  if (out == Reframe::kChunked) {
    if (Dechunk(whole.out) != Dechunk(split.out)) std::abort();
  } else if (whole.out != split.out) {
    std::abort();
  }
  return 0;
}
