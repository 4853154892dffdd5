// What the first bytes of a sandbox's connection ask for, read with the ClientHello and HTTP head parsers: the
// proxy's Classifier.
#pragma once

#include <cstdint>
#include <string_view>

#include "egress/proxy.h"

namespace isb::egress {

// On a listed port: a TLS ClientHello names its server (SNI); an HTTP request its Host; anything else carries no
// name. On the explicit proxy port: CONNECT host:port, or an absolute-form request (rewritten to origin form for the
// upstream, the proxy's own headers dropped); nothing else.
Sniff ClassifyConnection(std::string_view bytes, uint16_t port, bool explicit_proxy);

}  // namespace isb::egress
