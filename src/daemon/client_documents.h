// How the daemon reads an OAuth client's metadata document (its client_id is the document's https URL): one GET
// through the daemon's SSRF-safe dialer, so a client_id naming a loopback, private or link-local address (the
// host's own services, a cloud's metadata endpoint) is refused unless a platform admin allowed that host; TLS
// verified against the system's roots (and --oauth-client-ca); no redirect followed; the body capped at
// api::kMaxClientDocumentBytes; every step and the whole fetch within a timeout.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "api/oauth_server.h"
#include "base/result.h"
#include "egress/dialer.h"

namespace isb::daemon {

// Appended to the dialer's refusal of a client_id on a non-public address.
inline constexpr char kClientAllowHint[] =
    "; a client published on a private or loopback address is read when allowed (isb serve --oauth-client-allow "
    "HOST[:PORT])";

struct ClientDocumentSettings {
  // HOST[:PORT] entries (`isb serve --oauth-client-allow`): hosts on loopback or private addresses whose documents
  // may be read. Others: public addresses only.
  std::vector<std::string> allow{};
  // A PEM file of CAs trusted beside the system's (`--oauth-client-ca`).
  std::string ca_file{};
  // Tests: the dialer's resolver.
  egress::Resolver resolver = egress::ResolveSystem;
  // The whole fetch, connecting included.
  std::chrono::milliseconds timeout{5000};
};

// Errors (kInvalidArgument) name the flag whose value is wrong.
Result<api::DocumentFetch> MakeClientDocumentFetch(ClientDocumentSettings settings);

}  // namespace isb::daemon
