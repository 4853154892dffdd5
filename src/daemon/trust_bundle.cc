#include "daemon/trust_bundle.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <optional>

#include "base/fd.h"
#include "base/file.h"
#include "image/layered_file.h"

namespace isb::daemon {
namespace {

constexpr const char* kSystemBundles[] = {"etc/ssl/certs/ca-certificates.crt", "etc/pki/tls/certs/ca-bundle.crt",
                                          "etc/ssl/cert.pem", "etc/ssl/ca-bundle.pem"};

// `path` (relative) inside the directory `root`, its symlinks and ".." kept within it, opened for reading only if
// it is a regular file of at most kMaxSystemBundle (nothing else is opened: no device, no FIFO).
std::optional<std::string> ReadInRoot(int root, const char* path) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  Fd where(static_cast<int>(::syscall(SYS_openat2, root, path, &how, sizeof how)));
  struct stat st{};
  if (!where.valid() || ::fstat(where.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) > kMaxSystemBundle)
    return std::nullopt;
  Result<std::string> text = ReadFile("/proc/self/fd/" + std::to_string(where.get()));
  if (!text.ok() || text->size() > kMaxSystemBundle) return std::nullopt;
  return *text;
}

// The first system bundle found in `root`, or "".
Result<std::string> SystemBundle(const std::string& root) {
  Fd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return Error::Sys("opening " + root + " for its CA bundle");
  for (const char* path : kSystemBundles) {
    if (std::optional<std::string> text = ReadInRoot(dir.get(), path)) return std::move(*text);
  }
  return std::string();
}

std::string Joined(std::string bundle, const std::string& ca_pem) {
  if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
  return bundle + ca_pem;
}

}  // namespace

Result<std::string> TrustBundle(const std::string& root, const std::string& ca_pem) {
  ISB_ASSIGN_OR_RETURN(std::string bundle, SystemBundle(root));
  return Joined(std::move(bundle), ca_pem);
}

Result<std::string> SandboxTrustBundle(const spec::SandboxSpec& spec, const std::string& ca_pem) {
  if (!spec::IsImageReference(spec.image)) return TrustBundle(spec.image.empty() ? "/" : spec.image, ca_pem);
  // The image's bundle as its sandboxes see it: the layers stacked, whiteouts and links honoured.
  for (const char* path : kSystemBundles) {
    if (std::optional<std::string> bundle = image::ReadLayeredFile(spec.image_layers, path, kMaxSystemBundle))
      return Joined(std::move(*bundle), ca_pem);
  }
  return ca_pem;
}

}  // namespace isb::daemon
