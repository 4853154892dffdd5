// An OAuth client's metadata document, fetched with the registry client's transport (image/registry_http.h).
#include "daemon/client_documents.h"

#include <memory>

#include "api/oauth_form.h"
#include "egress/stream.h"
#include "image/registry_http.h"

namespace isb::daemon {
namespace {

// The dialer and the transport that points at it, alive as long as any copy of the fetch function.
struct Fetcher {
  explicit Fetcher(egress::Dialer d) : dialer(std::move(d)) {}
  egress::Dialer dialer;
  std::unique_ptr<image::RegistryTransport> transport;
  std::chrono::milliseconds timeout{};
};

}  // namespace

Result<api::DocumentFetch> MakeClientDocumentFetch(ClientDocumentSettings settings) {
  image::TransportOptions options;
  for (const std::string& entry : settings.allow) {
    Result<image::HostRule> rule = image::ParseHostRule(entry);
    if (!rule.ok()) return Error::Of(Code::kInvalidArgument, "--oauth-client-allow: " + rule.error().message);
    options.allowed_private.push_back(*rule);
  }
  Result<std::shared_ptr<const egress::TlsTrust>> trust = egress::TlsTrust::Create(settings.ca_file);
  if (!trust.ok()) return Error::Of(Code::kInvalidArgument, "--oauth-client-ca: " + trust.error().message);
  egress::DialerOptions d;
  d.resolver = settings.resolver;
  d.connect_timeout = settings.timeout;
  d.refuser = "isb";
  d.refusal_hint = "";
  ISB_ASSIGN_OR_RETURN(egress::Dialer dialer, egress::Dialer::Create(std::move(d)));
  auto fetcher = std::make_shared<Fetcher>(std::move(dialer));
  options.dialer = &fetcher->dialer;
  options.trust = std::move(*trust);
  options.step_timeout = settings.timeout;
  options.peer = "host";
  options.allow_hint = kClientAllowHint;
  fetcher->transport = std::make_unique<image::RegistryTransport>(std::move(options));
  fetcher->timeout = settings.timeout;
  return api::DocumentFetch([fetcher](const std::string& url) -> Result<api::FetchedDocument> {
    ISB_ASSIGN_OR_RETURN(egress::HttpUrl parsed, egress::ParseHttpUrl(url));
    if (!parsed.tls) return Error::Of(Code::kInvalidArgument, "only https:// is fetched");
    const egress::Deadline overall = std::chrono::steady_clock::now() + fetcher->timeout;
    ISB_ASSIGN_OR_RETURN(image::HttpGetResponse r,
                         fetcher->transport->Get(parsed, {{"Accept", "application/json"}}, nullptr,
                                                 api::kMaxClientDocumentBytes, overall));
    api::FetchedDocument out;
    out.status = r.status;
    if (const std::string* v = r.Find("content-type")) out.content_type = *v;
    if (const std::string* v = r.Find("cache-control")) out.cache_control = *v;
    out.body = std::move(r.body);
    return out;
  });
}

}  // namespace isb::daemon
