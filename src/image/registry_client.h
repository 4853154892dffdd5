// A client of one registry's OCI distribution API (manifests and blobs by GET): anonymous, bearer-token and basic
// auth, redirects to blob storage, blobs verified against their digest and size while they stream.
//
//   ISB_ASSIGN_OR_RETURN(std::unique_ptr<RegistryClient> client, RegistryClient::Create(ref.registry, options));
//   ISB_ASSIGN_OR_RETURN(FetchedManifest m, client->FetchManifest(ref));
//   ISB_ASSIGN_OR_RETURN(ImageManifest manifest, ParseManifest(m.bytes));
//   ISB_TRY(client->FetchBlobToStore(store, ref.repository, manifest.layers[0], "layer"));
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/result.h"
#include "image/blob_store.h"
#include "image/digest.h"
#include "image/manifest.h"
#include "image/reference.h"
#include "image/registry_auth.h"
#include "image/registry_http.h"

namespace isb::image {

inline constexpr int kMaxRedirects = 3;

struct RegistryClientOptions {
  TransportOptions transport;
  // Sent to this client's registry (and its token realm) when it asks; never to a redirect's other host.
  std::optional<RegistryCredentials> credentials;
  // Whether the credentials may go to a token realm the registry names (a host other than its own); unset: they
  // may. A realm refused here is asked for a token without them.
  std::function<bool(const egress::HttpUrl& realm)> may_send_credentials{};
  std::chrono::milliseconds manifest_timeout{60000};  // a whole manifest fetch, auth and redirects included
  std::chrono::milliseconds blob_timeout{3600000};    // a whole blob fetch
};

struct FetchedManifest {
  std::string bytes;
  std::string media_type;  // the response's Content-Type: one of the four manifest and index types
  Digest digest;           // sha256 of `bytes` (the reference's algorithm when it names a digest)
};

// Thread-safe: manifests and blobs may be fetched in parallel; tokens are shared.
class RegistryClient {
 public:
  // `registry` is an ImageReference's registry ("docker.io", "127.0.0.1:5000"): spoken to in https, or in plain
  // http when options.transport.plain_http names it. Errors (kInvalidArgument): a registry that is no HOST[:PORT].
  static Result<std::unique_ptr<RegistryClient>> Create(std::string registry, RegistryClientOptions options);

  // GET /v2/<repository>/manifests/<tag or digest>, accepting the four manifest types; the body is at most
  // kMaxManifestBytes. A reference by digest must get those exact bytes; a Docker-Content-Digest header must name
  // them. Errors: kInvalidArgument (another registry's reference, a digest mismatch, a media type that is no
  // manifest), kNotFound, kUnauthenticated, kForbidden, kTimeout, kUnavailable, each naming the registry.
  Result<FetchedManifest> FetchManifest(const ImageReference& ref);

  // GET /v2/<repository>/blobs/<digest>, each piece handed to `sink` as it arrives, counted and hashed; a blob longer
  // or shorter than blob.size, or with another digest, is an error naming it ("layer sha256:…: digest mismatch
  // (got sha256:…)"). The sink has then seen unverified bytes: it must not use them until this returns success.
  Status FetchBlob(const std::string& repository, const Descriptor& blob, const BodySink& sink,
                   const std::string& what = "blob");
  // FetchBlob into `store`, which renames the blob into place only once verified (nothing is left on failure). A
  // blob the store has already is not fetched again.
  Status FetchBlobToStore(const BlobStore& store, const std::string& repository, const Descriptor& blob,
                          const std::string& what = "blob");

 private:
  RegistryClient(std::string registry, egress::HttpUrl base, RegistryClientOptions options);

  struct Target {
    std::string what;        // for messages: "manifest team/app:1.0", "layer sha256:…"
    std::string repository;  // the scope a token is asked for
    std::string path;        // "/v2/..."
  };
  // GET with auth (answering one 401 challenge) and redirects; 2xx bodies to `sink` when set.
  Result<HttpGetResponse> Request(const Target& target, std::vector<egress::HttpHeader> headers, const BodySink* sink,
                                  size_t max_kept_body, egress::Deadline overall);
  Result<HttpGetResponse> Follow(const egress::HttpUrl& start, const std::vector<egress::HttpHeader>& headers,
                                 const std::string& authorization, const BodySink* sink, size_t max_kept_body,
                                 egress::Deadline overall);
  // The Authorization value to send for `repository` before being asked, if the registry asked before.
  std::string KnownAuthorization(const std::string& repository);
  // Answers a 401 to a request that carried `refused` (or nothing): the Authorization value to retry with. A cached
  // token the registry refused (revoked, or expired early) is dropped, so a fresh one is fetched.
  Result<std::string> Answer(const HttpGetResponse& response, const std::string& repository, const std::string& refused,
                             egress::Deadline overall);
  Result<std::string> FetchToken(const AuthChallenge& challenge, egress::Deadline overall);
  // "the credentials of user 'alice'", or `anonymous` without credentials: what a refusal says was refused.
  std::string Who(const char* anonymous) const;
  Status CheckStatus(const HttpGetResponse& response, const Target& target) const;
  Status FetchRaw(const std::string& repository, const Descriptor& blob, const BodySink& sink, const std::string& what);

  std::string registry_;  // as in references
  egress::HttpUrl base_;  // scheme, API host and port
  RegistryClientOptions options_;
  RegistryTransport transport_;
  TokenCache tokens_;
  Mutex mu_;
  std::optional<AuthChallenge> challenge_ ISB_GUARDED_BY(mu_);  // the last one the registry sent
};

}  // namespace isb::image
