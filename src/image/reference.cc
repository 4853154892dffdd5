// The reference grammar of the distribution project (name components, tag, digest, registry host) and Docker's
// normalization of short names.
#include "image/reference.h"

#include "egress/host_port.h"
#include "image/digest.h"

namespace isb::image {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

Error Bad(std::string_view text, const std::string& why) {
  return Error::Of(Code::kInvalidArgument, "image reference '" + egress::Printable(text) + "' " + why);
}

// [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)*
bool IsPathComponent(std::string_view c) {
  if (c.empty() || !IsLowerAlnum(c.front()) || !IsLowerAlnum(c.back())) return false;
  for (size_t i = 0; i < c.size();) {
    if (IsLowerAlnum(c[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < c.size() && !IsLowerAlnum(c[j])) ++j;
    std::string_view sep = c.substr(i, j - i);
    bool dashes = sep.find_first_not_of('-') == std::string_view::npos;
    if (sep != "." && sep != "_" && sep != "__" && !dashes) return false;
    i = j;
  }
  return true;
}

// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
bool IsTag(std::string_view t) {
  if (t.empty() || t.size() > 128 || t.front() == '.' || t.front() == '-') return false;
  for (char c : t) {
    bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word && c != '.' && c != '-') return false;
  }
  return true;
}

// A registry host: a DNS name (letters, digits, dots, dashes), an IPv4 address or a bracketed IPv6 address, and an
// optional port.
bool IsRegistry(std::string_view r) {
  std::optional<egress::HostPort> hp = egress::SplitHostPort(r);
  if (!hp || hp->host.empty()) return false;
  if (hp->port && !egress::ParsePort(*hp->port)) return false;
  if (hp->bracketed) return true;
  for (std::string_view label = hp->host; !label.empty();) {
    size_t dot = label.find('.');
    std::string_view l = label.substr(0, dot);
    if (l.empty() || l.size() > 63 || l.front() == '-' || l.back() == '-') return false;
    for (char c : l) {
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    if (dot == std::string_view::npos) break;
    label = label.substr(dot + 1);
    if (label.empty()) return false;
  }
  return true;
}

// Docker's rule: the first component names a registry when it has a dot or a port, or is "localhost".
bool NamesRegistry(std::string_view first) {
  return first.find_first_of(".:[") != std::string_view::npos || first == "localhost";
}

}  // namespace

std::string RegistryApiHost(std::string_view registry) {
  return registry == kDockerHub ? std::string(kDockerHubApi) : std::string(registry);
}

std::string ImageReference::ApiHost() const { return RegistryApiHost(registry); }

std::string ImageReference::str() const {
  std::string out = registry + "/" + repository;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

Result<ImageReference> ParseImageReference(std::string_view text) {
  if (text.empty()) return Error::Of(Code::kInvalidArgument, "image reference is empty");
  ImageReference ref;
  std::string_view rest = text;
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    Result<Digest> d = ParseDigest(rest.substr(at + 1));
    if (!d.ok()) return Bad(text, "has an invalid digest: " + d.error().message);
    ref.digest = d->str();
    rest = rest.substr(0, at);
  }
  // The tag's colon comes after the last slash; a colon before it is the registry's port.
  size_t slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    std::string_view tag = rest.substr(colon + 1);
    if (!IsTag(tag))
      return Bad(text, "has an invalid tag '" + egress::Printable(tag) +
                           "': use up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'");
    ref.tag = std::string(tag);
    rest = rest.substr(0, colon);
  }
  size_t first_slash = rest.find('/');
  if (first_slash != std::string_view::npos && NamesRegistry(rest.substr(0, first_slash))) {
    std::string_view registry = rest.substr(0, first_slash);
    if (!IsRegistry(registry)) return Bad(text, "has an invalid registry '" + egress::Printable(registry) + "'");
    ref.registry = std::string(registry);
    rest = rest.substr(first_slash + 1);
  } else {
    ref.registry = kDockerHub;
  }
  if (ref.registry == "index.docker.io") ref.registry = kDockerHub;
  if (rest.empty()) return Bad(text, "has no repository name");
  for (std::string_view path = rest;;) {
    size_t s = path.find('/');
    std::string_view component = path.substr(0, s);
    if (!IsPathComponent(component))
      return Bad(text, "has an invalid repository component '" + egress::Printable(component) +
                           "': use lower-case letters and digits, separated by '.', '_', '__' or dashes");
    if (s == std::string_view::npos) break;
    path = path.substr(s + 1);
  }
  ref.repository = std::string(rest);
  if (ref.registry == kDockerHub && ref.repository.find('/') == std::string::npos)
    ref.repository = "library/" + ref.repository;
  if (ref.repository.size() > kMaxRepositoryLength)
    return Bad(text, "names a repository longer than " + std::to_string(kMaxRepositoryLength) + " characters");
  if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
  return ref;
}

}  // namespace isb::image
