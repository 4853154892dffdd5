// The trust store a sandbox with a network is given: the CA certificates its image trusts (or, without an image, the
// host's) followed by the sandbox's own CA, which the proxy's certificates for intercepted names chain to. isb keeps
// the bundle in the sandbox's own state directory and binds it read-only at kSandboxTrustBundle; the host's trust
// store and the image are never written.
#pragma once

#include <string>

#include "base/result.h"
#include "spec/sandbox_spec.h"

namespace isb::daemon {

// Where the bundle is inside every sandbox with an egress list; SSL_CERT_FILE and friends point here.
inline constexpr char kSandboxTrustBundle[] = "/etc/isb/ca-bundle.pem";
// The variables that make common tools read it: OpenSSL (curl, wget, python's ssl), curl, python requests, Node.
inline constexpr const char* kTrustBundleVariables[] = {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
                                                        "NODE_EXTRA_CA_CERTS"};
inline constexpr size_t kMaxSystemBundle = 8 << 20;

// The system bundle of `root` ("/" for the host), read inside `root` only (its symlinks resolved as if it were the
// root, never to the host), from the first of the usual places (Debian, Fedora, Alpine, SUSE) that holds a regular
// file of at most kMaxSystemBundle; then `ca_pem`. With no system bundle in `root`, `ca_pem` alone.
Result<std::string> TrustBundle(const std::string& root, const std::string& ca_pem);
// The bundle of a sandbox's root: its image directory's, the top-most of its image's layers that holds one, or the
// host's.
Result<std::string> SandboxTrustBundle(const spec::SandboxSpec& spec, const std::string& ca_pem);

}  // namespace isb::daemon
