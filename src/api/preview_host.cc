// Preview host names: parsing a Host field, writing a name, and checking the preview domain.
#include "api/preview_host.h"

#include <algorithm>
#include <charconv>

#include "base/ascii.h"
#include "egress/public_suffix.h"

namespace isb::api {
namespace {

constexpr std::string_view kSandboxPrefix = "sb-";
constexpr size_t kSandboxHex = 16;

bool EndsWithNoCase(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  std::string_view tail = s.substr(s.size() - suffix.size());
  return std::equal(tail.begin(), tail.end(), suffix.begin(),
                    [](char a, char b) { return AsciiLower(a) == AsciiLower(b); });
}

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool IsOrgChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

// The host part of a Host field: without ":port" (digits only) and one trailing dot. An IPv6 literal is no preview.
std::optional<std::string_view> NameOf(std::string_view field) {
  if (field.empty() || field.front() == '[') return std::nullopt;
  if (size_t colon = field.rfind(':'); colon != std::string_view::npos) {
    std::string_view port = field.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    field = field.substr(0, colon);
  }
  if (!field.empty() && field.back() == '.') field.remove_suffix(1);
  return field;
}

bool IsDnsName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  for (;;) {
    size_t dot = name.find('.', start);
    std::string_view label = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    if (!std::all_of(label.begin(), label.end(), IsOrgChar)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace

std::optional<PreviewHost> ParsePreviewHost(std::string_view host_field, std::string_view domain) {
  std::optional<std::string_view> name = NameOf(host_field);
  if (!name || domain.empty() || name->size() <= domain.size() + 1 || !EndsWithNoCase(*name, domain))
    return std::nullopt;
  if ((*name)[name->size() - domain.size() - 1] != '.') return std::nullopt;
  std::string label(name->substr(0, name->size() - domain.size() - 1));
  for (char& ch : label) ch = AsciiLower(ch);
  // "<port>-sb-<16 hex>-<org>": the sandbox id has a fixed length, so the org is whatever follows it.
  size_t dash = label.find('-');
  if (dash == std::string::npos || dash == 0 || dash > 5 || label[0] == '0') return std::nullopt;
  unsigned port = 0;
  auto [end, ec] = std::from_chars(label.data(), label.data() + dash, port);
  if (ec != std::errc() || end != label.data() + dash || port < 1 || port > 65535) return std::nullopt;
  std::string_view rest = std::string_view(label).substr(dash + 1);
  const size_t id_len = kSandboxPrefix.size() + kSandboxHex;
  if (rest.size() < id_len + 2 || rest.substr(0, kSandboxPrefix.size()) != kSandboxPrefix || rest[id_len] != '-')
    return std::nullopt;
  std::string_view hex = rest.substr(kSandboxPrefix.size(), kSandboxHex);
  if (!std::all_of(hex.begin(), hex.end(), IsHex)) return std::nullopt;
  std::string_view org = rest.substr(id_len + 1);
  // As identity/names.h has org names: up to 63, starting with a letter or digit.
  if (org.empty() || org.size() > 63 || org.front() == '-' || !std::all_of(org.begin(), org.end(), IsOrgChar))
    return std::nullopt;
  return PreviewHost{static_cast<uint16_t>(port), std::string(rest.substr(0, id_len)), std::string(org)};
}

std::optional<PreviewHost> ParsePreviewOfRequest(std::string_view host_field, std::string_view target,
                                                 std::string_view domain) {
  for (std::string_view scheme : {std::string_view("http://"), std::string_view("https://")}) {
    if (target.size() < scheme.size() || !EndsWithNoCase(target.substr(0, scheme.size()), scheme)) continue;
    std::string_view authority = target.substr(scheme.size());
    authority = authority.substr(0, authority.find_first_of("/?#"));
    if (size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
    return ParsePreviewHost(authority, domain);
  }
  return ParsePreviewHost(host_field, domain);
}

namespace {

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

RequestNames ScanRequestNames(std::string_view head) {
  RequestNames out;
  if (size_t end = head.find("\r\n\r\n"); end != std::string_view::npos) head = head.substr(0, end + 2);
  size_t eol = head.find('\n');
  std::string_view line = head.substr(0, eol);
  if (size_t sp = line.find(' '); sp != std::string_view::npos) {
    std::string_view rest = line.substr(sp + 1);
    out.target = TrimBlanks(rest.substr(0, rest.find(' ')));
  }
  if (eol != std::string_view::npos) out.host = ScanHostField(head.substr(eol + 1));
  return out;
}

std::string_view ScanHostField(std::string_view fields) {
  if (size_t end = fields.find("\r\n\r\n"); end != std::string_view::npos) fields = fields.substr(0, end + 2);
  for (;;) {
    const size_t eol = fields.find('\n');
    const std::string_view line = fields.substr(0, eol);
    if (line.size() >= 5 && EqualsIgnoreCase(line.substr(0, 5), "Host:")) return TrimBlanks(line.substr(5));
    if (eol == std::string_view::npos) return {};
    fields.remove_prefix(eol + 1);
  }
}

std::string PreviewHostName(const PreviewHost& host, std::string_view domain) {
  return std::to_string(host.port) + "-" + host.sandbox + "-" + host.org + "." + std::string(domain);
}

namespace {

// The registrable domain of a DNS name (its site, eTLD+1): its shortest suffix that is not a public suffix; empty
// when the name is one itself.
std::string_view SiteOf(std::string_view name, const egress::PublicSuffixList& suffixes) {
  size_t end = name.size();
  while (true) {
    const size_t dot = end == 0 ? std::string_view::npos : name.rfind('.', end - 1);
    const std::string_view suffix = dot == std::string_view::npos ? name : name.substr(dot + 1);
    if (!suffixes.IsPublicSuffix(suffix)) return suffix;
    if (dot == std::string_view::npos || dot == 0) return {};
    end = dot;
  }
}

}  // namespace

Status CheckPreviewDomain(std::string_view domain, const std::vector<std::string>& isb_hosts) {
  if (!IsDnsName(domain)) {
    return Error::Of(Code::kInvalidArgument,
                     "--preview-domain: '" + std::string(domain) +
                         "' is not a DNS name of lower-case labels (a-z, 0-9, '-'), such as previews.example.net");
  }
  for (const std::string& raw : isb_hosts) {
    std::string host(raw);
    for (char& ch : host) ch = AsciiLower(ch);
    if (!host.empty() && host.back() == '.') host.pop_back();
    const bool same = host == domain;
    const bool parent =
        host.size() > domain.size() && EndsWithNoCase(host, domain) && host[host.size() - domain.size() - 1] == '.';
    if (same || parent) {
      return Error::Of(Code::kInvalidArgument,
                       "--preview-domain: " + std::string(domain) + (same ? " is" : " is a parent of") +
                           " isb's own host name " + host +
                           ": a preview could set cookies for isb there; use a domain of its own (best: a registrable "
                           "domain that is not isb's)");
    }
  }
  // A page's script may set a cookie for any parent of its host short of a public suffix: previews under a sibling
  // or a child of isb's name (previews.example.com beside isb.example.com) could set one for example.com, which the
  // browser sends to isb too (a session of the attacker's, or one that locks the viewer out).
  ISB_ASSIGN_OR_RETURN(const egress::PublicSuffixList* suffixes, egress::PublicSuffixList::System());
  const std::string_view site = SiteOf(domain, *suffixes);
  if (site.empty()) {
    return Error::Of(Code::kInvalidArgument, "--preview-domain: " + std::string(domain) +
                                                 " is a public suffix, under which anyone may register names; use a "
                                                 "domain of your own");
  }
  for (const std::string& raw : isb_hosts) {
    std::string host(raw);
    for (char& ch : host) ch = AsciiLower(ch);
    if (!host.empty() && host.back() == '.') host.pop_back();
    if (!IsDnsName(host)) continue;  // an address: no cookie is shared with a name
    if (SiteOf(host, *suffixes) == site) {
      return Error::Of(Code::kInvalidArgument,
                       "--preview-domain: " + std::string(domain) + " is in the same registrable domain (" +
                           std::string(site) + ") as isb's own host name " + host +
                           ": a preview could set cookies for isb there; use a registrable domain that is not isb's");
    }
  }
  return {};
}

Result<PreviewBase> ParsePreviewBase(std::string_view value) {
  PreviewBase base;
  std::string_view rest = value;
  for (std::string_view scheme : {std::string_view("https"), std::string_view("http")}) {
    if (rest.size() > scheme.size() + 3 && EqualsIgnoreCase(rest.substr(0, scheme.size()), scheme) &&
        rest.substr(scheme.size(), 3) == "://") {
      base.scheme = std::string(scheme);
      base.fronted = true;
      rest.remove_prefix(scheme.size() + 3);
      break;
    }
  }
  if (!base.fronted && rest.find("://") != std::string_view::npos)
    return Error::Of(Code::kInvalidArgument, "--preview-domain: '" + std::string(value) +
                                                 "': the scheme is https or http (https://DOMAIN[:PORT])");
  if (base.fronted && !rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (!rest.empty() && rest.front() == '[')
    return Error::Of(Code::kInvalidArgument, "--preview-domain: '" + std::string(value) +
                                                 "': previews are served under a DNS name, not an address");
  if (rest.find_first_of("/?#@") != std::string_view::npos)
    return Error::Of(Code::kInvalidArgument,
                     "--preview-domain: '" + std::string(value) + "' has more than a scheme, a domain and a port");
  if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    if (!base.fronted)
      return Error::Of(Code::kInvalidArgument, "--preview-domain: '" + std::string(value) +
                                                   "': a port goes with a scheme (https://DOMAIN:PORT); without one, "
                                                   "links name isb's own port");
    const std::string_view digits = rest.substr(colon + 1);
    unsigned port = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || port < 1 || port > 65535)
      return Error::Of(Code::kInvalidArgument,
                       "--preview-domain: '" + std::string(value) + "': the port is a number from 1 to 65535");
    const bool usual = (base.scheme == "https" && port == 443) || (base.scheme == "http" && port == 80);
    base.port = usual ? 0 : static_cast<uint16_t>(port);
    rest = rest.substr(0, colon);
  }
  base.domain = std::string(rest);
  return base;
}

}  // namespace isb::api
