// ImageService::Pull: the manifest (through an index to this host's platform), the config, then the layers in
// parallel, each streamed at once into the blob store and, through a socket pair, into the unpacker — so a layer is
// unpacked while it arrives, and kept only once both its blob digest and its diff_id check out.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <thread>

#include "base/fd.h"
#include "base/mutex.h"
#include "image/digest.h"
#include "image/image_service.h"
#include "image/layer_store_io.h"
#include "image/manifest.h"
#include "image/reference.h"
#include "image/registry_client.h"
#include "image/registry_http.h"

namespace isb::image {

struct ImageService::PullJob {
  std::string org;
  std::string repository;
  RegistryClient* client = nullptr;
  ImageManifest manifest;
  ImageConfig config;
  const PullProgressFn* progress = nullptr;
  const std::function<bool()>* cancelled = nullptr;
  uint64_t max_bytes = 0;             // what one layer may unpack to
  Mutex progress_mu;                  // progress reports come from every layer's thread
  std::atomic<bool> failed{false};    // one layer failed: the others stop at their next piece
  std::atomic<int> first_failed{-1};  // which: its error is the pull's
};

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sends all of `piece` on a socket whose reader may have gone (EPIPE, never SIGPIPE).
Status SendAll(int fd, std::string_view piece) {
  while (!piece.empty()) {
    const ssize_t n = ::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("handing the layer to the unpacker");
    piece.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

std::vector<HostRule> Rules(const std::vector<std::string>& entries) {
  std::vector<HostRule> out;
  for (const std::string& e : entries) {
    if (Result<HostRule> r = ParseHostRule(e); r.ok()) out.push_back(*r);
  }
  return out;
}

// "host" and port of a HOST[:PORT] text (port 443 when none).
std::pair<std::string, uint16_t> SplitHostPort(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || text.find(']', colon) != std::string::npos) return {text, 443};
  const int port = std::atoi(text.c_str() + colon + 1);
  return {text.substr(0, colon), static_cast<uint16_t>(port > 0 && port < 65536 ? port : 443)};
}

}  // namespace

bool HostListed(const std::vector<std::string>& entries, const std::string& host, uint16_t port) {
  const std::string suffix = ":" + std::to_string(port);
  for (const std::string& e : entries) {
    if (!e.ends_with(suffix)) continue;
    const std::string name = e.substr(0, e.size() - suffix.size());
    if (name == host) return true;
    if (name.starts_with("*.") && host.size() > name.size() - 1 && host.ends_with(name.substr(1))) return true;
  }
  return false;
}

bool ImageService::OperatorAllows(const std::string& registry) const {
  const auto [host, port] = SplitHostPort(registry);
  const bool port_given = registry.rfind(':') != std::string::npos;
  for (const std::string& entry : settings_.allow) {
    Result<HostRule> rule = ParseHostRule(entry);
    if (!rule.ok() || rule->host != host) continue;
    if (!rule->port || (port_given && *rule->port == port)) return true;
  }
  return false;
}

Result<LayerRecord> ImageService::PullLayer(PullJob& job, size_t index) {
  const Descriptor& layer = job.manifest.layers[index];
  const std::string diff_id = job.config.diff_ids[index].str();
  ISB_ASSIGN_OR_RETURN(LayerCompression lc, LayerCompressionOf(layer.media_type));
  LayerRecord record{layer.digest.str(), diff_id, layer.media_type, layer.size, 0};
  // A layer the org holds already (an image of its own has this blob and diff_id) is not fetched again. Any other
  // is fetched and unpacked in full even when another org's copy is stored: that shows this registry has it. Its
  // unpacked size is the org's record's of it: what the org is charged for it, and what bounds a flatten over it.
  if (std::optional<LayerRecord> held = store_.HeldLayer(job.org, diff_id);
      held && store_.OrgHolds(job.org, record.digest) && store_.HasLayer(diff_id) && blobs_.Has(layer.digest)) {
    record.unpacked_bytes = held->unpacked_bytes;
    return record;
  }

  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return Error::Sys("pulling a layer");
  Fd reader(pair[0]), writer(pair[1]);
  ISB_ASSIGN_OR_RETURN(BlobWriter blob, blobs_.Begin(layer.digest, layer.size, "layer"));

  // The fetch runs beside the unpack: it writes the blob and feeds the socket; its outcome (the blob's digest
  // checked, the blob committed) decides whether the unpacked layer is kept.
  Status fetched;
  bool unpacker_gone = false;  // the fetch stopped because the unpacker stopped reading (it failed first)
  std::thread fetch([&] {
    uint64_t done = 0;
    auto last = std::chrono::steady_clock::now();
    BodySink sink = [&](std::string_view piece) -> Status {
      if (job.failed.load()) return Error::Of(Code::kUnavailable, "another layer of the pull failed");
      ISB_TRY(blob.Write(piece));
      if (Status sent = SendAll(writer.get(), piece); !sent.ok()) {
        unpacker_gone = true;
        return sent;
      }
      done += piece.size();
      const auto now = std::chrono::steady_clock::now();
      if (now - last >= std::chrono::milliseconds(250) || done == layer.size) {
        last = now;
        if (job.cancelled != nullptr && *job.cancelled && (*job.cancelled)())
          return Error::Of(Code::kUnavailable, "the pull was cancelled");
        if (job.progress != nullptr && *job.progress) {
          MutexLock lock(job.progress_mu);
          (*job.progress)(PullProgress{"layer", layer.digest.str(), done, layer.size});
        }
      }
      return {};
    };
    fetched = job.client->FetchBlob(job.repository, layer, sink, "layer");
    ::shutdown(writer.get(), SHUT_WR);  // the unpacker reads to the end either way
    if (fetched.ok()) fetched = blob.Commit();
  });
  bool joined = false;
  auto join = [&]() -> Status {
    if (!joined) fetch.join();
    joined = true;
    return fetched;
  };
  FdSource source(reader.get());
  Result<UnpackedLayer> unpacked = UnpackIntoStore(store_, source, ToCompression(lc), diff_id, job.max_bytes, join);
  reader.Reset();  // a fetch still sending (the unpack failed) gets EPIPE
  Status fetch_status = join();
  // The blob's own error says most (a digest that does not match, a transfer cut short), unless the fetch stopped
  // only because the unpacker had stopped reading: then the unpacker's (a layer past the quota, a bad tar) is why.
  if (!unpacked.ok() && unpacker_gone) return unpacked.error();
  if (!fetch_status.ok()) return fetch_status.error();
  if (!unpacked.ok()) return unpacked.error();
  record.unpacked_bytes = unpacked->bytes;
  return record;
}

Result<ImageRecord> ImageService::Pull(const std::string& org, const std::string& ref_text,
                                       const std::optional<RegistryLogin>& login, const PullProgressFn& progress,
                                       const std::function<bool()>& cancelled, uint64_t max_bytes) {
  Result<ImageRecord> r = PullOnce(org, ref_text, login, progress, cancelled, max_bytes);
  // A registry that refused the login (or asked for one) failed the pull; kUnauthenticated is for isb's own callers
  // whose credentials isb refused.
  if (!r.ok() && r.error().code == Code::kUnauthenticated) return Error::Of(Code::kForbidden, r.error().message);
  return r;
}

Result<ImageRecord> ImageService::PullOnce(const std::string& org, const std::string& ref_text,
                                           const std::optional<RegistryLogin>& login, const PullProgressFn& progress,
                                           const std::function<bool()>& cancelled, uint64_t max_bytes) {
  ISB_ASSIGN_OR_RETURN(ImageReference ref, ParseImageReference(ref_text));
  RegistryClientOptions options;
  options.transport.dialer = &dialer_;
  options.transport.trust = trust_;
  options.transport.allowed_private = Rules(settings_.allow);
  options.transport.plain_http = Rules(settings_.insecure);
  if (login) {
    options.credentials = RegistryCredentials{login->user, login->password};
    const std::string api_host = ref.ApiHost();
    options.may_send_credentials = [this, login_hosts = login->hosts, api_host](const egress::HttpUrl& realm) {
      const std::string realm_host = realm.host + ":" + std::to_string(realm.port);
      return realm_host == api_host || realm.host == api_host || OperatorAllows(realm_host) ||
             HostListed(login_hosts, realm.host, realm.port);
    };
  }
  ISB_ASSIGN_OR_RETURN(std::unique_ptr<RegistryClient> client, RegistryClient::Create(ref.registry, options));

  if (progress) progress(PullProgress{"manifest", "", 0, 0});
  ISB_ASSIGN_OR_RETURN(FetchedManifest fetched, client->FetchManifest(ref));
  if (IsIndexType(fetched.media_type)) {
    ISB_ASSIGN_OR_RETURN(ImageIndex index, ParseIndex(fetched.bytes));
    // An index listed by the index is fetched by its digest (which the registry client checks) from this repository.
    IndexLoader load = [&](const Descriptor& d) -> Result<ImageIndex> {
      ImageReference inner = ref;
      inner.digest = d.digest.str();
      ISB_ASSIGN_OR_RETURN(FetchedManifest got, client->FetchManifest(inner));
      if (!IsIndexType(got.media_type))
        return Error::Of(Code::kInvalidArgument,
                         "image '" + ref.str() + "': " + d.digest.str() + " is listed as an index but is not one");
      return ParseIndex(got.bytes);
    };
    ISB_ASSIGN_OR_RETURN(Descriptor chosen, SelectPlatformNested(index, HostPlatform(), load));
    ImageReference by_digest = ref;
    by_digest.digest = chosen.digest.str();
    ISB_ASSIGN_OR_RETURN(fetched, client->FetchManifest(by_digest));
    if (!IsManifestType(fetched.media_type))
      return Error::Of(Code::kInvalidArgument, "image '" + ref.str() + "': the index's entry for " +
                                                   HostPlatform().str() + " is not an image manifest");
  }
  ISB_ASSIGN_OR_RETURN(ImageManifest manifest, ParseManifest(fetched.bytes));
  ImageStore::Pins pins(store_);
  std::vector<std::string> pinned = {fetched.digest.str(), manifest.config.digest.str()};
  for (const Descriptor& l : manifest.layers) pinned.push_back(l.digest.str());
  pins.Add(pinned);
  // The config from the registry unless the org holds it: its bytes, checked against the digest, show this
  // registry has the image (a digest alone would take another org's config from the store).
  std::string config_bytes;
  if (store_.OrgHolds(org, manifest.config.digest.str()) && blobs_.Has(manifest.config.digest)) {
    ISB_ASSIGN_OR_RETURN(config_bytes, ReadBlob(blobs_, manifest.config.digest.str(), kMaxConfigBytes));
  } else {
    if (manifest.config.size > kMaxConfigBytes)
      return Error::Of(Code::kTooLarge, "image '" + ref.str() + "': its config is larger than 8 MiB");
    ISB_TRY(client->FetchBlob(
        ref.repository, manifest.config,
        [&config_bytes](std::string_view piece) {
          config_bytes.append(piece);
          return Status();
        },
        "config"));
    if (!blobs_.Has(manifest.config.digest)) ISB_TRY(blobs_.Put(manifest.config.digest, config_bytes, "config"));
  }
  ISB_ASSIGN_OR_RETURN(ImageConfig config, ParseImageConfig(config_bytes));
  ISB_TRY(CheckConfigMatches(manifest, config));
  std::vector<std::string> diff_ids;
  for (const Digest& d : config.diff_ids) diff_ids.push_back(d.str());
  pins.Add(diff_ids);
  if (!blobs_.Has(fetched.digest)) ISB_TRY(blobs_.Put(fetched.digest, fetched.bytes, "manifest"));

  PullJob job;
  job.org = org;
  job.repository = ref.repository;
  job.client = client.get();
  job.manifest = manifest;
  job.config = config;
  job.progress = &progress;
  job.cancelled = &cancelled;
  job.max_bytes = std::min(settings_.max_image_bytes, max_bytes);
  const size_t n = manifest.layers.size();
  std::vector<Result<LayerRecord>> results(n, Error::Of(Code::kInternal, "layer not pulled"));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) {
      results[i] = PullLayer(job, i);
      if (!results[i].ok()) {
        int none = -1;
        job.first_failed.compare_exchange_strong(none, static_cast<int>(i));
        job.failed = true;
      }
    }
  };
  std::vector<std::thread> workers;
  const size_t threads = std::min<size_t>(n, static_cast<size_t>(std::max(1, settings_.parallel_layers)));
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(worker);
  worker();
  for (std::thread& t : workers) t.join();

  ImageRecord r;
  r.org = org;
  r.name = ref.str();
  r.manifest_digest = fetched.digest.str();
  r.config_digest = manifest.config.digest.str();
  r.manifest_media_type = manifest.media_type;
  // The layer that failed first, for its own reason: the others stopped for it.
  if (const int i = job.first_failed.load(); i >= 0) return results[static_cast<size_t>(i)].error();
  for (Result<LayerRecord>& l : results) r.layers.push_back(std::move(*l));
  r.config = RunConfig{config.env,  config.entrypoint, config.cmd,         config.working_dir,
                       config.user, config.os,         config.architecture};
  r.source = "pull";
  r.created_ms = NowMs();
  ISB_TRY(store_.Put(r));
  if (progress) progress(PullProgress{"done", "", 0, 0});
  return r;
}

}  // namespace isb::image
