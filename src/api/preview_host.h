// Port preview host names: "<port>-<sandbox>-<org>.<domain>", each preview an origin of its own (spec 002,
// "Workspace port previews"). The parser reads the Host a client sent, untrusted bytes, before anything else does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace isb::api {

// The domain previews are under when --preview-domain is not given: x.localhost is not the same site as localhost
// or 127.0.0.1, and browsers resolve every name under it to loopback.
inline constexpr char kDefaultPreviewDomain[] = "localhost";

struct PreviewHost {
  uint16_t port = 0;    // in the sandbox, 1 to 65535
  std::string sandbox;  // "sb-" and 16 hex digits
  std::string org;      // an org name (a-z, 0-9, '-')
  bool operator==(const PreviewHost&) const = default;
};

// The preview a Host field names under `domain` (lower case, no trailing dot), or nullopt when it names none: the
// name is matched without regard to case and to one trailing dot, and its ":port", if any, is not looked at (isb's
// listener, or a proxy in front of it, is what the client reached). The label is "<port>-sb-<16 hex>-<org>", the
// port without leading zeros.
std::optional<PreviewHost> ParsePreviewHost(std::string_view host_field, std::string_view domain);

// The preview a request names: by its target when that is in absolute form ("http://host/..."), which HTTP puts
// before the Host field, else by its Host field.
std::optional<PreviewHost> ParsePreviewOfRequest(std::string_view host_field, std::string_view target,
                                                 std::string_view domain);

// The Host field and target of a request head the HTTP server could not parse (malformed, or too large): the request
// line's second word and the value of the first line named "Host:" in any case, both as sent (without surrounding
// blanks); empty when missing. Only to tell whether the head was a preview's, whose proxy then answers it (never to
// relay it: the proxy parses every head again).
struct RequestNames {
  std::string_view host;
  std::string_view target;
};
RequestNames ScanRequestNames(std::string_view head);
// The value of the first line named "Host:" among `fields`, field lines only (no request line first), up to a blank
// line; empty when none. For a head whose request line was parsed already and is gone from the bytes.
std::string_view ScanHostField(std::string_view fields);

// The label and name for `host` under `domain`: "8080-sb-0123456789abcdef-acme.localhost".
std::string PreviewHostName(const PreviewHost& host, std::string_view domain);

// Checks --preview-domain: a DNS name (labels of a-z, 0-9 and '-', lower case) that is neither one of isb's own
// host names (`isb_hosts`: the listen address and --allow-host names) nor a parent of one, since a sibling name can
// set cookies for its parent domain, nor in the same registrable domain as one (by the public suffix list), nor a
// public suffix itself. kInvalidArgument naming the conflict; the list's own error when it cannot be read.
Status CheckPreviewDomain(std::string_view domain, const std::vector<std::string>& isb_hosts);

// --preview-domain as given: "DOMAIN" (links are http://...DOMAIN:<isb's port>/), or "https://DOMAIN[:PORT]" and
// "http://DOMAIN[:PORT]" for previews reached through a front (a TLS-terminating proxy with a wildcard certificate):
// links then name that scheme and port (none: the scheme's own), and under https the preview cookie is Secure.
struct PreviewBase {
  std::string domain;
  std::string scheme = "http";
  uint16_t port = 0;     // with `fronted`: the links' port, 0 for none
  bool fronted = false;  // a scheme was given: links do not name isb's own port
};
// kInvalidArgument for another scheme, a path, a query, userinfo or a port out of 1..65535; the domain itself is
// CheckPreviewDomain's to check.
Result<PreviewBase> ParsePreviewBase(std::string_view value);

}  // namespace isb::api
