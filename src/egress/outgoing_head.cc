// A head written from its parts when a filter or a new framing changed it; as it came otherwise.
#include "egress/outgoing_head.h"

#include <algorithm>

#include "base/ascii.h"

namespace isb::egress {
namespace {

bool IsFramingField(const HttpHeader& h) {
  return EqualsIgnoreCase(h.name, "content-length") || EqualsIgnoreCase(h.name, "transfer-encoding");
}

}  // namespace

OutgoingHead::OutgoingHead(std::string as_sent, bool changed, std::string first_line,
                           const std::vector<HttpHeader>& original, const std::vector<HttpHeader>& edited)
    : as_sent_(std::move(as_sent)), changed_(changed), first_line_(std::move(first_line)) {
  // The edited fields, then the framing the head came with: a filter never frames a body.
  for (const HttpHeader& h : edited) {
    if (!IsFramingField(h)) headers_.push_back(h);
  }
  for (const HttpHeader& h : original) {
    if (IsFramingField(h)) headers_.push_back(h);
  }
}

OutgoingHead OutgoingHead::Request(std::string as_sent, const HttpHead& original, const HttpHead& edited) {
  const bool changed = edited.method != original.method || edited.target != original.target ||
                       edited.minor_version != original.minor_version || edited.headers != original.headers;
  std::string line = edited.method + " " + edited.target + " HTTP/1." + std::to_string(edited.minor_version);
  return OutgoingHead(std::move(as_sent), changed, std::move(line), original.headers, edited.headers);
}

OutgoingHead OutgoingHead::Response(std::string as_sent, const ResponseHead& original, const ResponseHead& edited) {
  const bool changed = edited.minor_version != original.minor_version || edited.status != original.status ||
                       edited.reason != original.reason || edited.headers != original.headers;
  std::string line =
      "HTTP/1." + std::to_string(edited.minor_version) + " " + std::to_string(edited.status) + " " + edited.reason;
  return OutgoingHead(std::move(as_sent), changed, std::move(line), original.headers, edited.headers);
}

void OutgoingHead::SetFraming(Reframe reframe, uint64_t length) {
  if (reframe == Reframe::kAsSent) return;
  changed_ = true;
  std::erase_if(headers_, IsFramingField);
  if (reframe == Reframe::kChunked) headers_.push_back({"Transfer-Encoding", "chunked"});
  if (reframe == Reframe::kBuffered) headers_.push_back({"Content-Length", std::to_string(length)});
}

std::string OutgoingHead::Bytes() const {
  if (!changed_) return as_sent_;
  std::string out = first_line_ + "\r\n";
  for (const HttpHeader& h : headers_) out.append(h.name).append(": ").append(h.value).append("\r\n");
  out.append("\r\n");
  return out;
}

}  // namespace isb::egress
