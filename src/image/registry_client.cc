// The distribution API's GETs with their auth dance, redirects and verification (see registry_client.h).
#include "image/registry_client.h"

#include "egress/host_port.h"

namespace isb::image {
namespace {

using Clock = std::chrono::steady_clock;

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// A Location header's target, absolute or relative to `from` (a path on the same origin), held to ParseHttpUrl's
// rules either way.
Result<egress::HttpUrl> RedirectTarget(const egress::HttpUrl& from, const std::string& location) {
  std::string absolute = location;
  if (location.starts_with("/") && !location.starts_with("//"))
    absolute = (from.tls ? "https://" : "http://") + HostPortText(from) + location;
  Result<egress::HttpUrl> to = egress::ParseHttpUrl(absolute);
  if (!to.ok())
    return Error::Of(Code::kUnavailable, "registry " + HostPortText(from) + " redirected to a malformed location");
  return to;
}

bool SameOrigin(const egress::HttpUrl& a, const egress::HttpUrl& b) {
  return a.tls == b.tls && a.host == b.host && a.port == b.port;
}

// Repository names as references allow them; nothing else goes into a URL path.
Status CheckRepository(const std::string& repository) {
  bool ok = !repository.empty() && repository.size() <= kMaxRepositoryLength && repository.front() != '/' &&
            repository.find("..") == std::string::npos;
  for (char c : repository)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '/');
  if (ok) return {};
  return Error::Of(Code::kInvalidArgument, "repository '" + egress::Printable(repository) + "' is not a valid name");
}

std::string MediaTypeOf(const HttpGetResponse& response) {
  const std::string* type = response.Find("content-type");
  if (type == nullptr) return "";
  std::string t = type->substr(0, type->find(';'));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  return t;
}

}  // namespace

Result<std::unique_ptr<RegistryClient>> RegistryClient::Create(std::string registry, RegistryClientOptions options) {
  if (options.transport.dialer == nullptr) return Error::Of(Code::kInternal, "registry client: no dialer given");
  std::string api = RegistryApiHost(registry);
  Result<HostRule> host = ParseHostRule(api);
  Result<egress::HttpUrl> base = egress::ParseHttpUrl("https://" + api + "/");
  if (!host.ok() || !base.ok())
    return Error::Of(Code::kInvalidArgument, "registry '" + egress::Printable(registry) + "' is not HOST[:PORT]");
  egress::HttpUrl plain = *base;
  plain.tls = false;
  if (!host->port) plain.port = 80;
  if (RegistryTransport(options.transport).CheckScheme(plain).ok()) base = plain;
  return std::unique_ptr<RegistryClient>(new RegistryClient(std::move(registry), *base, std::move(options)));
}

RegistryClient::RegistryClient(std::string registry, egress::HttpUrl base, RegistryClientOptions options)
    : registry_(std::move(registry)),
      base_(std::move(base)),
      options_(std::move(options)),
      transport_(options_.transport) {}

Result<FetchedManifest> RegistryClient::FetchManifest(const ImageReference& ref) {
  if (ref.registry != registry_)
    return Error::Of(Code::kInvalidArgument, "image reference '" + ref.str() + "' is not of registry " + registry_);
  ISB_TRY(CheckRepository(ref.repository));
  std::string name = ref.repository + (ref.digest.empty() ? ":" + ref.tag : "@" + ref.digest);
  Target target{"manifest " + name, ref.repository, "/v2/" + ref.repository + "/manifests/" + ref.ManifestReference()};
  auto overall = Clock::now() + options_.manifest_timeout;
  ISB_ASSIGN_OR_RETURN(HttpGetResponse response,
                       Request(target, {{"Accept", ManifestAccept()}}, nullptr, kMaxManifestBytes, overall));
  ISB_TRY(CheckStatus(response, target));

  FetchedManifest m;
  m.media_type = MediaTypeOf(response);
  if (!IsManifestType(m.media_type) && !IsIndexType(m.media_type))
    return Error::Of(Code::kInvalidArgument, "registry " + registry_ + ": " + target.what + " has media type '" +
                                                 egress::Printable(m.media_type) +
                                                 "', which is not a manifest or index isb takes");
  std::optional<Digest> wanted;
  if (!ref.digest.empty()) {
    ISB_ASSIGN_OR_RETURN(wanted, ParseDigest(ref.digest));
  }
  m.digest = DigestOf(response.body, wanted ? wanted->algorithm : "sha256");
  if (wanted && *wanted != m.digest)
    return Error::Of(Code::kInvalidArgument,
                     "registry " + registry_ + ": " + target.what + ": digest mismatch (got " + m.digest.str() + ")");
  if (const std::string* header = response.Find("docker-content-digest")) {
    Result<Digest> said = ParseDigest(*header);
    if (said.ok() && said->algorithm == m.digest.algorithm && *said != m.digest)
      return Error::Of(Code::kInvalidArgument, "registry " + registry_ + ": " + target.what +
                                                   ": Docker-Content-Digest names other bytes than were sent (got " +
                                                   m.digest.str() + ")");
  }
  m.bytes = std::move(response.body);
  return m;
}

Status RegistryClient::FetchBlob(const std::string& repository, const Descriptor& blob, const BodySink& sink,
                                 const std::string& what) {
  DigestVerifier verifier(blob.digest, blob.size, what);
  BodySink checked = [&](std::string_view piece) -> Status {
    ISB_TRY(verifier.Update(piece));
    return sink(piece);
  };
  ISB_TRY(FetchRaw(repository, blob, checked, what));
  return verifier.Finish();
}

Status RegistryClient::FetchBlobToStore(const BlobStore& store, const std::string& repository, const Descriptor& blob,
                                        const std::string& what) {
  if (store.Has(blob.digest)) return {};
  ISB_ASSIGN_OR_RETURN(BlobWriter writer, store.Begin(blob.digest, blob.size, what));
  BodySink write = [&](std::string_view piece) { return writer.Write(piece); };
  ISB_TRY(FetchRaw(repository, blob, write, what));
  return writer.Commit();
}

Status RegistryClient::FetchRaw(const std::string& repository, const Descriptor& blob, const BodySink& sink,
                                const std::string& what) {
  ISB_TRY(CheckRepository(repository));
  ISB_TRY(ParseDigest(blob.digest.str()));
  Target target{what + " " + blob.digest.Short() + "\u2026", repository,
                "/v2/" + repository + "/blobs/" + blob.digest.str()};
  auto overall = Clock::now() + options_.blob_timeout;
  ISB_ASSIGN_OR_RETURN(HttpGetResponse response, Request(target, {}, &sink, 64 * 1024, overall));
  return CheckStatus(response, target);
}

Status RegistryClient::CheckStatus(const HttpGetResponse& response, const Target& target) const {
  int status = response.status;
  if (status >= 200 && status < 300) return {};
  std::string prefix = "registry " + registry_ + ": " + target.what;
  std::string code = " (HTTP " + std::to_string(status) + ")";
  if (status == 404) return Error::Of(Code::kNotFound, prefix + " not found in " + target.repository + code);
  if (status == 403) return Error::Of(Code::kForbidden, prefix + ": access denied" + code);
  if (status == 429) return Error::Of(Code::kTooManyRequests, prefix + ": too many requests, try again later" + code);
  return Error::Of(Code::kUnavailable, prefix + ": the registry answered" + code);
}

Result<HttpGetResponse> RegistryClient::Request(const Target& target, std::vector<egress::HttpHeader> headers,
                                                const BodySink* sink, size_t max_kept_body, egress::Deadline overall) {
  egress::HttpUrl url = base_;
  url.target = target.path;
  std::string authorization = KnownAuthorization(target.repository);
  for (int attempt = 0;; ++attempt) {
    ISB_ASSIGN_OR_RETURN(HttpGetResponse response, Follow(url, headers, authorization, sink, max_kept_body, overall));
    if (response.status != 401) return response;
    if (attempt > 0) {  // asked again after an answer: the answer was refused
      return Error::Of(Code::kUnauthenticated, "registry " + registry_ + " refused " + Who("anonymous access") +
                                                   " to " + target.what + " (HTTP 401)");
    }
    ISB_ASSIGN_OR_RETURN(authorization, Answer(response, target.repository, authorization, overall));
  }
}

Result<HttpGetResponse> RegistryClient::Follow(const egress::HttpUrl& start,
                                               const std::vector<egress::HttpHeader>& headers,
                                               const std::string& authorization, const BodySink* sink,
                                               size_t max_kept_body, egress::Deadline overall) {
  egress::HttpUrl url = start;
  for (int redirects = 0;; ++redirects) {
    std::vector<egress::HttpHeader> sent = headers;
    // Credentials go to the registry itself only, never to the storage a blob redirects to.
    if (!authorization.empty() && SameOrigin(url, base_)) sent.push_back({"Authorization", authorization});
    ISB_ASSIGN_OR_RETURN(HttpGetResponse response, transport_.Get(url, sent, sink, max_kept_body, overall));
    if (!IsRedirect(response.status)) return response;
    if (redirects == kMaxRedirects)
      return Error::Of(Code::kUnavailable, "registry " + registry_ + ": more than " + std::to_string(kMaxRedirects) +
                                               " redirects for " + start.target);
    const std::string* location = response.Find("location");
    if (location == nullptr)
      return Error::Of(Code::kUnavailable, "registry " + HostPortText(url) + " redirected without a Location");
    ISB_ASSIGN_OR_RETURN(url, RedirectTarget(url, *location));
    ISB_TRY(transport_.CheckScheme(url));
  }
}

std::string RegistryClient::Who(const char* anonymous) const {
  if (!options_.credentials) return anonymous;
  return "the credentials of user '" + egress::Printable(options_.credentials->user) + "'";  // never the password
}

std::string RegistryClient::KnownAuthorization(const std::string& repository) {
  std::optional<AuthChallenge> challenge;
  {
    MutexLock lock(mu_);
    challenge = challenge_;
  }
  if (!challenge) return "";
  if (challenge->scheme == AuthChallenge::Scheme::kBasic)
    return options_.credentials ? BasicAuthorization(*options_.credentials) : "";
  challenge->scope = "repository:" + repository + ":pull";
  std::optional<std::string> token = tokens_.Get(*challenge);
  return token ? "Bearer " + *token : "";
}

Result<std::string> RegistryClient::Answer(const HttpGetResponse& response, const std::string& repository,
                                           const std::string& refused, egress::Deadline overall) {
  std::optional<AuthChallenge> chosen;
  for (const std::string& header : response.All("www-authenticate")) {
    Result<AuthChallenge> c = ParseAuthChallenge(header);
    if (c.ok() && (!chosen || c->scheme == AuthChallenge::Scheme::kBearer)) chosen = *c;
  }
  if (!chosen)
    return Error::Of(
        Code::kUnauthenticated,
        "registry " + registry_ + " asks for authentication (HTTP 401) without a Basic or Bearer challenge");
  if (chosen->scope.empty()) chosen->scope = "repository:" + repository + ":pull";
  {
    MutexLock lock(mu_);
    challenge_ = chosen;
  }
  if (chosen->scheme == AuthChallenge::Scheme::kBasic) {
    if (!options_.credentials)
      return Error::Of(Code::kUnauthenticated,
                       "registry " + registry_ + " asks for a user and password (HTTP 401, Basic); none were given");
    return BasicAuthorization(*options_.credentials);
  }
  if (refused.starts_with("Bearer ")) tokens_.Forget(*chosen, refused.substr(7));
  ISB_ASSIGN_OR_RETURN(std::string token, FetchToken(*chosen, overall));
  return "Bearer " + token;
}

Result<std::string> RegistryClient::FetchToken(const AuthChallenge& challenge, egress::Deadline overall) {
  if (std::optional<std::string> cached = tokens_.Get(challenge)) return *cached;
  Result<egress::HttpUrl> realm = egress::ParseHttpUrl(challenge.realm);
  if (!realm.ok())
    return Error::Of(Code::kUnavailable, "registry " + registry_ + " names a token realm that is not an http(s) URL");
  realm->target += TokenQuery(challenge, realm->target.find('?') != std::string::npos);
  std::vector<egress::HttpHeader> headers;
  const bool send = options_.credentials && (!options_.may_send_credentials || options_.may_send_credentials(*realm));
  if (send) headers.push_back({"Authorization", BasicAuthorization(*options_.credentials)});
  ISB_ASSIGN_OR_RETURN(HttpGetResponse response, transport_.Get(*realm, headers, nullptr, 64 * 1024, overall));
  if (response.status != 200) {
    Code code = response.status == 401   ? Code::kUnauthenticated
                : response.status == 403 ? Code::kForbidden
                                         : Code::kUnavailable;
    return Error::Of(code, "registry " + registry_ + "'s token endpoint " + HostPortText(*realm) + " refused " +
                               Who("an anonymous token") + " for " + challenge.scope + " (HTTP " +
                               std::to_string(response.status) + ")");
  }
  ISB_ASSIGN_OR_RETURN(BearerToken token, ParseTokenResponse(response.body));
  tokens_.Put(challenge, token);
  return token.token;
}

}  // namespace isb::image
