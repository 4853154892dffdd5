// How the registry client reaches a URL: one HTTP/1.1 GET per connection, dialled through the daemon's SSRF-safe
// dialer (or, for hosts a platform admin allowed, to their private address), TLS verified unless plain http is
// allowed for that host, every step within a deadline, the body streamed into a sink. The daemon's other GETs of
// a URL someone else names (an OAuth client's metadata document) go through it too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "egress/dialer.h"
#include "egress/http_client.h"
#include "egress/http_head.h"
#include "egress/stream.h"

namespace isb::image {

// Appended to the dialer's refusal of a non-public registry.
inline constexpr std::string_view kRegistryAllowHint =
    "; a registry on a private or loopback address is reachable when allowed (isb serve --registry-allow HOST[:PORT])";

// Receives a response body piece by piece; an error stops the transfer and is returned as the GET's.
using BodySink = std::function<Status(std::string_view piece)>;

// "host:port" of a URL ("[fd00::1]:443"), as messages name a registry or the storage it redirects to.
std::string HostPortText(const egress::HttpUrl& url);

struct HttpGetResponse {
  int status = 0;
  std::vector<egress::HttpHeader> headers;
  std::string body;  // bodies not streamed into the sink (see RegistryTransport::Get)
  // Every value of header `name` (ASCII case-insensitive).
  std::vector<std::string> All(std::string_view name) const;
  const std::string* Find(std::string_view name) const { return egress::FindHeader(headers, name); }
};

// A host a platform admin allows: "HOST" (any port) or "HOST:PORT"; HOST a name or an address ([v6] bracketed).
struct HostRule {
  std::string host;  // a normalized name, or an address as IpAddress::ToString writes it
  std::optional<uint16_t> port;
};
// Errors (kInvalidArgument) quote the entry.
Result<HostRule> ParseHostRule(std::string_view text);

struct TransportOptions {
  const egress::Dialer* dialer = nullptr;         // every host not in allowed_private; required
  std::shared_ptr<const egress::TlsTrust> trust;  // required for https
  // Registries (and their token realms and redirect targets) that may be on loopback or private addresses: these
  // hosts are resolved and dialled whatever their address (`isb serve --registry-allow HOST[:PORT]`).
  std::vector<HostRule> allowed_private;
  // Hosts spoken to in plain http; every other URL must be https.
  std::vector<HostRule> plain_http;
  // The longest any one step may take: connecting, the TLS handshake, sending, the response head, each read.
  std::chrono::milliseconds step_timeout{30000};
  // What messages call the peer ("registry 10.0.0.5:5000: ..."), and what is appended to the dialer's refusal of
  // a host on a non-public address.
  std::string peer = "registry";
  std::string allow_hint = std::string(kRegistryAllowHint);
};

class RegistryTransport {
 public:
  explicit RegistryTransport(TransportOptions options) : options_(std::move(options)) {}

  // Whether `url` may be fetched at all: https, or http to a host in plain_http. Errors: kForbidden naming the host.
  Status CheckScheme(const egress::HttpUrl& url) const;

  // GETs `url` with `headers` (Host, Connection and User-Agent are added). A 2xx body goes to `sink` when there is
  // one; any other body (and a 2xx one without a sink) is kept in the response, up to `max_kept_body` bytes
  // (kTooLarge beyond). Each step ends by the step timeout or `overall`, whichever is first (kTimeout).
  // Errors never quote header values.
  Result<HttpGetResponse> Get(const egress::HttpUrl& url, const std::vector<egress::HttpHeader>& headers,
                              const BodySink* sink, size_t max_kept_body, egress::Deadline overall) const;

 private:
  Result<HttpGetResponse> Exchange(const egress::HttpUrl& url, const std::vector<egress::HttpHeader>& headers,
                                   const BodySink* sink, size_t max_kept_body, egress::Deadline overall) const;
  Result<Fd> Connect(const egress::HttpUrl& url) const;
  egress::Deadline StepDeadline(egress::Deadline overall) const;

  TransportOptions options_;
};

}  // namespace isb::image
