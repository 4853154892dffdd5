// What the first bytes of a sandbox's connection ask for, read with the ClientHello and HTTP head parsers: the
// proxy's Classifier.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "egress/http_body.h"
#include "egress/http_head.h"
#include "egress/proxy.h"

namespace isb::egress {

// On a listed port: a TLS ClientHello names its server (SNI); an HTTP request its Host; anything else carries no
// name. On the explicit proxy port: CONNECT host:port, or an absolute-form request (rewritten to origin form for the
// upstream, the proxy's own headers dropped); nothing else.
Sniff ClassifyConnection(std::string_view bytes, uint16_t port, bool explicit_proxy);

// One request of a relayed plain HTTP connection (the first included), read where a request head must start: what
// the relay checks against the connection's host and forwards, and where its body ends.
struct RelayedRequest {
  enum class State { kNeedMore, kParsed, kNotHttp, kMalformed } state = State::kNeedMore;
  HttpHead head;              // kParsed
  std::string origin_form;    // kParsed on the explicit proxy port: the head as the origin gets it; elsewhere the
                              // head goes as sent and this stays empty
  BodyFraming body;           // kParsed
  bool opaque_after = false;  // an Upgrade: what follows its body may be another protocol
  int status = 0;             // kNotHttp, kMalformed: the status to answer
  std::string reason;         // kNotHttp, kMalformed: one line

  // kParsed: the head as it goes upstream, given the bytes it was read from: the origin form when there is one,
  // else the head as sent (no copy).
  std::string_view Upstream(std::string_view read) const {
    return origin_form.empty() ? read.substr(0, head.size) : std::string_view(origin_form);
  }
};
// On the explicit proxy port every request carries an absolute http:// URI. No relayed request is a CONNECT.
RelayedRequest ReadRelayedRequest(std::string_view bytes, bool explicit_proxy);

}  // namespace isb::egress
