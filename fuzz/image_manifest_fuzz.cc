// Fuzzes what a registry sends and what a user types: the manifest, index and config parsers, the platform choice
// over any parsed index, the auth challenge and token parsers, and image references. Any bytes must give a result;
// whatever parses keeps within the limits the parsers promise.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "image/manifest.h"
#include "image/reference.h"
#include "image/registry_auth.h"

namespace {

using namespace isb::image;

void CheckDigest(const Digest& d) {
  if (!ParseDigest(d.str()).ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (isb::Result<ImageManifest> m = ParseManifest(bytes); m.ok()) {
    if (m->layers.size() > kMaxLayers || !IsManifestType(m->media_type)) std::abort();
    CheckDigest(m->config.digest);
    for (const Descriptor& layer : m->layers) {
      CheckDigest(layer.digest);
      if (!LayerCompressionOf(layer.media_type).ok()) std::abort();
    }
  } else if (m.error().message.empty()) {
    std::abort();
  }
  if (isb::Result<ImageIndex> index = ParseIndex(bytes); index.ok()) {
    if (index->manifests.size() > kMaxIndexEntries || !IsIndexType(index->media_type)) std::abort();
    isb::Result<Descriptor> chosen = SelectPlatform(*index, Platform{"linux", "amd64", ""});
    if (chosen.ok() && (!chosen->platform || chosen->platform->architecture != "amd64")) std::abort();
    (void)SelectPlatform(*index, Platform{"linux", "arm", "v7"});
  }
  if (isb::Result<ImageConfig> config = ParseImageConfig(bytes); config.ok()) {
    if (config->diff_ids.size() > kMaxLayers) std::abort();
    for (const Digest& d : config->diff_ids) CheckDigest(d);
  }
  if (isb::Result<ImageReference> ref = ParseImageReference(bytes); ref.ok()) {
    // The normalized form parses back to itself.
    isb::Result<ImageReference> again = ParseImageReference(ref->str());
    if (!again.ok() || !(*again == *ref)) std::abort();
  }
  (void)ParseAuthChallenge(bytes);
  if (isb::Result<BearerToken> token = ParseTokenResponse(bytes); token.ok() && token->token.empty()) std::abort();
  return 0;
}
