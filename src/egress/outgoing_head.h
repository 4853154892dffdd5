// A message head on its way out of the proxy: the bytes as they came while nothing changes it, else written again
// from its parsed parts (a filter's edits, a body framed anew), its framing fields always the relay's own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "egress/body_relay.h"
#include "egress/http_head.h"
#include "egress/http_response.h"

namespace isb::egress {

class OutgoingHead {
 public:
  // `as_sent`: the head's bytes as they go when unchanged; `original`: their parse; `edited`: the same after a
  // filter. Content-Length and Transfer-Encoding are taken from `original` whatever `edited` says of them.
  static OutgoingHead Request(std::string as_sent, const HttpHead& original, const HttpHead& edited);
  static OutgoingHead Response(std::string as_sent, const ResponseHead& original, const ResponseHead& edited);

  // The framing fields for a body going out as `reframe` (kBuffered: with `length`); kAsSent changes nothing.
  void SetFraming(Reframe reframe, uint64_t length = 0);
  bool changed() const { return changed_; }
  std::string Bytes() const;

 private:
  OutgoingHead(std::string as_sent, bool changed, std::string first_line, const std::vector<HttpHeader>& original,
               const std::vector<HttpHeader>& edited);

  std::string as_sent_;
  bool changed_ = false;
  std::string first_line_;  // without its CRLF
  std::vector<HttpHeader> headers_;
};

}  // namespace isb::egress
