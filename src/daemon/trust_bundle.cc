#include "daemon/trust_bundle.h"

#include <fcntl.h>
#include <unistd.h>

#include <optional>

#include "base/fd.h"
#include "image/layered_file.h"

namespace isb::daemon {
namespace {

constexpr const char* kSystemBundles[] = {"etc/ssl/certs/ca-certificates.crt", "etc/pki/tls/certs/ca-bundle.crt",
                                          "etc/ssl/cert.pem", "etc/ssl/ca-bundle.pem"};

// The first system bundle in the stack `layers` (a directory alone is a stack of one): a regular file of at most
// kMaxSystemBundle, read as the sandbox sees it (image/layered_file.h), or "".
std::string SystemBundle(const std::vector<std::string>& layers) {
  for (const char* path : kSystemBundles) {
    if (std::optional<std::string> text = image::ReadLayeredFile(layers, path, kMaxSystemBundle)) return *text;
  }
  return std::string();
}

std::string Joined(std::string bundle, const std::string& ca_pem) {
  if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
  return bundle + ca_pem;
}

}  // namespace

Result<std::string> TrustBundle(const std::string& root, const std::string& ca_pem) {
  if (Fd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)); !dir.valid())
    return Error::Sys("opening " + root + " for its CA bundle");
  return Joined(SystemBundle({root}), ca_pem);
}

Result<std::string> SandboxTrustBundle(const spec::SandboxSpec& spec, const std::string& ca_pem) {
  if (!spec::IsImageReference(spec.image)) return TrustBundle(spec.image.empty() ? "/" : spec.image, ca_pem);
  // The image's bundle as its sandboxes see it: the layers stacked, whiteouts and links honoured.
  return Joined(SystemBundle(spec.image_layers), ca_pem);
}

}  // namespace isb::daemon
