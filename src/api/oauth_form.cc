// OAuth request parsing: nothing here trusts its input; every refusal names the field.
#include "api/oauth_form.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "api/json_util.h"

namespace isb::api {
namespace {

using json = nlohmann::json;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> Unescape(std::string_view text, std::string_view field) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] != '%') {
      out.push_back(text[i]);
    } else {
      int hi = i + 2 < text.size() ? HexDigit(text[i + 1]) : -1, lo = hi >= 0 ? HexDigit(text[i + 2]) : -1;
      if (lo < 0)
        return Error::Of(Code::kInvalidArgument,
                         std::string(field) + ": a '%' must be followed by two hex digits (URL-encode the value)");
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
  }
  return out;
}

Error Invalid(std::string message) { return Error::Of(Code::kInvalidArgument, std::move(message)); }

bool IsLoopbackName(std::string_view host) { return host == "localhost" || host == "127.0.0.1" || host == "[::1]"; }

// The authority of "scheme://authority/...": up to the first '/', '?' or '#'.
std::string_view AuthorityOf(std::string_view uri) {
  size_t start = uri.find("://");
  if (start == std::string_view::npos) return {};
  std::string_view rest = uri.substr(start + 3);
  return rest.substr(0, rest.find_first_of("/?#"));
}

// "host:port" -> "host"; "[::1]:80" -> "[::1]".
std::string_view HostOf(std::string_view authority) {
  if (authority.starts_with("[")) return authority.substr(0, authority.find(']') + 1);
  return authority.substr(0, authority.find(':'));
}

// Whether `cp` is invisible in a name and can make one name read as another: a Unicode format character (Cf:
// bidi overrides and isolates, zero-width characters, the soft hyphen, tags), another default-ignorable code point
// (Hangul fillers, variation selectors, the combining grapheme joiner), a blank that is not a space (the braille
// blank), a line or paragraph separator, or a C1 control.
bool IsInvisible(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0xad || cp == 0x34f || (cp >= 0x600 && cp <= 0x605) || cp == 0x61c ||
         cp == 0x6dd || cp == 0x70f || cp == 0x890 || cp == 0x891 || cp == 0x8e2 || cp == 0x115f || cp == 0x1160 ||
         cp == 0x17b4 || cp == 0x17b5 || (cp >= 0x180b && cp <= 0x180f) || (cp >= 0x200b && cp <= 0x200f) ||
         cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) ||
         cp == 0x2800 || cp == 0x3164 || (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff || cp == 0xffa0 ||
         (cp >= 0xfff0 && cp <= 0xfffb) || cp == 0x110bd || cp == 0x110cd || (cp >= 0x13430 && cp <= 0x1343f) ||
         (cp >= 0x1bca0 && cp <= 0x1bca3) || (cp >= 0x1d173 && cp <= 0x1d17a) || (cp >= 0xe0000 && cp <= 0xe0fff);
}

// Whether `cp` is a space other than ' ' (Unicode Zs): kept inside a name as ' ', so none can pad one out.
bool IsOtherSpace(char32_t cp) {
  return cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

Status CheckStringList(const json& body, const char* field, std::initializer_list<std::string_view> allowed) {
  auto it = body.find(field);
  if (it == body.end()) return {};
  if (!it->is_array()) return Invalid(std::string(field) + ": expected an array of strings");
  for (const json& v : *it) {
    bool ok =
        v.is_string() && std::find(allowed.begin(), allowed.end(), v.get_ref<const std::string&>()) != allowed.end();
    if (!ok) {
      std::string names;
      for (std::string_view a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
      return Invalid(std::string(field) + ": isb registers only " + names);
    }
  }
  return {};
}

}  // namespace

Result<Form> ParseForm(std::string_view text) {
  Form form;
  while (!text.empty()) {
    size_t amp = text.find('&');
    std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view() : text.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    ISB_ASSIGN_OR_RETURN(std::string name, Unescape(pair.substr(0, eq), "form field name"));
    const std::string shown = SanitizeUtf8(std::string_view(name).substr(0, 64));
    ISB_ASSIGN_OR_RETURN(std::string value,
                         Unescape(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), shown));
    if (form.contains(name)) return Invalid(shown + ": given more than once");
    if (form.size() == kMaxFormFields) return Invalid("form: more than " + std::to_string(kMaxFormFields) + " fields");
    form.emplace(std::move(name), std::move(value));
  }
  return form;
}

std::string FormValue(const Form& form, std::string_view name) {
  auto it = form.find(name);
  return it == form.end() ? "" : it->second;
}

namespace {

// The host and port of an authority as browsers and isb's pages read them alike: a DNS name or an IP literal,
// nothing a browser would reinterpret (a backslash is a '/' to it: a host shown with one in it is not where the
// browser goes), and a port from 1 to 65535. Messages start with `field`.
Status CheckAuthority(std::string_view authority, std::string_view field) {
  const std::string f(field);
  if (authority.find('@') != std::string_view::npos) return Invalid(f + ": userinfo ('@') is not allowed");
  std::string_view host = HostOf(authority);
  if (host.empty()) return Invalid(f + ": no host");
  const bool literal6 = host.starts_with("[") && host.ends_with("]");
  for (char c : literal6 ? host.substr(1, host.size() - 2) : host) {
    const bool ok = literal6 ? (std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.')
                             : (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.');
    if (!ok) return Invalid(f + ": the host may hold only letters, digits, '-' and '.' (or be an IP literal)");
  }
  if (std::string_view port = authority.substr(host.size()); !port.empty()) {
    port.remove_prefix(1);  // the ':'
    int value = 0;
    bool digits = !port.empty() && port.size() <= 5;
    for (char c : port) {
      digits = digits && c >= '0' && c <= '9';
      if (digits) value = value * 10 + (c - '0');
    }
    if (!digits || value < 1 || value > 65535 || authority[host.size()] != ':')
      return Invalid(f + ": the port must be a number from 1 to 65535");
  }
  return {};
}

// Printable ASCII only, no space: what may stand in a URL isb stores and shows. Messages start with `field`.
Status CheckUrlCharacters(std::string_view url, std::string_view field) {
  for (unsigned char c : url)
    if (c <= 0x20 || c >= 0x7f)
      return Invalid(std::string(field) + ": spaces, control and non-ASCII characters must be %-encoded");
  if (url.find('#') != std::string_view::npos) return Invalid(std::string(field) + ": a fragment ('#') is not allowed");
  return {};
}

bool IsDotSegment(std::string_view segment) {
  std::string plain;
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '%' && i + 2 < segment.size() &&
        (segment.substr(i + 1, 2) == "2e" || segment.substr(i + 1, 2) == "2E")) {
      plain.push_back('.');
      i += 2;
    } else {
      plain.push_back(segment[i]);
    }
  }
  return plain == "." || plain == "..";
}

// What a registration or a metadata document says about a public client (RFC 7591 §2).
Result<ClientRegistration> RegistrationOf(const json& body) {
  ClientRegistration reg;
  auto uris = body.find("redirect_uris");
  if (uris == body.end() || !uris->is_array() || uris->empty() || uris->size() > kMaxRedirectUris)
    return Invalid("redirect_uris: expected an array of 1 to " + std::to_string(kMaxRedirectUris) + " URIs");
  for (const json& u : *uris) {
    if (!u.is_string()) return Invalid("redirect_uris: expected strings");
    ISB_TRY(CheckRedirectUri(u.get_ref<const std::string&>()));
    reg.redirect_uris.push_back(u.get<std::string>());
  }
  ISB_TRY(CheckStringList(body, "grant_types", {"authorization_code", "refresh_token"}));
  ISB_TRY(CheckStringList(body, "response_types", {"code"}));
  reg.name = "unnamed client";
  if (auto name = body.find("client_name"); name != body.end()) {
    if (!name->is_string() || name->get_ref<const std::string&>().empty() ||
        name->get_ref<const std::string&>().size() > kMaxClientNameBytes)
      return Invalid("client_name: expected a string of 1 to " + std::to_string(kMaxClientNameBytes) + " bytes");
    for (unsigned char c : name->get_ref<const std::string&>())
      if (c < 0x20 || c == 0x7f) return Invalid("client_name: control characters are not allowed");
    reg.name = WithoutFormatCharacters(SanitizeUtf8(name->get_ref<const std::string&>()));
    if (reg.name.empty()) reg.name = "unnamed client";
  }
  return reg;
}

}  // namespace

Status CheckRedirectUri(std::string_view uri) {
  if (uri.size() > kMaxRedirectUriBytes)
    return Invalid("redirect_uris: longer than " + std::to_string(kMaxRedirectUriBytes) + " bytes");
  for (unsigned char c : uri)
    if (c <= 0x20 || c >= 0x7f)
      return Invalid("redirect_uris: spaces, control and non-ASCII characters must be %-encoded");
  if (uri.find('#') != std::string_view::npos) return Invalid("redirect_uris: a redirect URI has no fragment");
  const bool https = uri.starts_with("https://"), http = uri.starts_with("http://");
  if (!https && !http) return Invalid("redirect_uris: must be an https:// URI, or http:// to a loopback host");
  std::string_view authority = AuthorityOf(uri);
  ISB_TRY(CheckAuthority(authority, "redirect_uris"));
  if (http && !IsLoopbackName(HostOf(authority)))
    return Invalid("redirect_uris: http:// is allowed only to localhost, 127.0.0.1 or [::1]; use https://");
  return {};
}

Status CheckClientIdUrl(std::string_view url) {
  if (url.size() > kMaxClientIdUrlBytes)
    return Invalid("client_id: a URL longer than " + std::to_string(kMaxClientIdUrlBytes) + " bytes");
  if (!IsClientIdUrl(url)) return Invalid("client_id: a metadata document's URL must be https://");
  ISB_TRY(CheckUrlCharacters(url, "client_id"));
  std::string_view authority = AuthorityOf(url);
  ISB_TRY(CheckAuthority(authority, "client_id"));
  std::string_view path = url.substr(sizeof("https://") - 1 + authority.size());
  path = path.substr(0, path.find('?'));
  if (path.empty() || path == "/")
    return Invalid("client_id: the URL needs a path naming the document (https://HOST/PATH)");
  for (std::string_view rest = path.substr(1);;) {
    const size_t slash = rest.find('/');
    if (IsDotSegment(rest.substr(0, slash)))
      return Invalid("client_id: the URL's path may not hold '.' or '..' segments");
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  return {};
}

Result<ClientRegistration> ParseClientDocument(std::string_view url, std::string_view text) {
  if (text.size() > kMaxClientDocumentBytes)
    return Invalid("the document is larger than " + std::to_string(kMaxClientDocumentBytes) + " bytes");
  ISB_ASSIGN_OR_RETURN(json body, ParseJson(text));
  if (!body.is_object()) return Invalid("the document is not a JSON object (client metadata)");
  auto id = body.find("client_id");
  if (id == body.end() || !id->is_string())
    return Invalid("client_id: the document must name its own URL as client_id");
  if (id->get_ref<const std::string&>() != url)
    return Invalid("client_id: the document names another client_id, not its own URL");
  if (body.contains("client_secret") || body.contains("client_secret_expires_at"))
    return Invalid("client_secret: a metadata document's client is public and has no secret");
  if (auto method = body.find("token_endpoint_auth_method"); method != body.end()) {
    if (!method->is_string() || method->get_ref<const std::string&>() != "none")
      return Invalid("token_endpoint_auth_method: isb's clients are public: only \"none\"");
  }
  return RegistrationOf(body);
}

int64_t ClientDocumentLifetime(std::string_view cache_control) {
  int64_t ttl = kDefaultClientDocumentTtl;
  while (!cache_control.empty()) {
    const size_t comma = cache_control.find(',');
    std::string_view d = cache_control.substr(0, comma);
    cache_control = comma == std::string_view::npos ? std::string_view() : cache_control.substr(comma + 1);
    while (!d.empty() && (d.front() == ' ' || d.front() == '\t')) d.remove_prefix(1);
    while (!d.empty() && (d.back() == ' ' || d.back() == '\t')) d.remove_suffix(1);
    std::string lower;
    for (char c : d) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (lower == "no-store" || lower == "no-cache") return kMinClientDocumentTtl;
    if (lower.starts_with("max-age=")) {
      std::string_view digits = std::string_view(lower).substr(8);
      if (digits.size() >= 2 && digits.front() == '"' && digits.back() == '"')
        digits = digits.substr(1, digits.size() - 2);
      if (digits.empty() || digits.size() > 12) continue;
      int64_t v = 0;
      bool ok = true;
      for (char c : digits) {
        ok = ok && c >= '0' && c <= '9';
        if (ok) v = v * 10 + (c - '0');
      }
      if (ok) ttl = v;
    }
  }
  return std::clamp(ttl, kMinClientDocumentTtl, kMaxClientDocumentTtl);
}

std::string RedirectHost(std::string_view uri) { return std::string(AuthorityOf(uri)); }

std::string UriHostName(std::string_view uri) { return std::string(HostOf(AuthorityOf(uri))); }

bool IsLoopbackRedirect(std::string_view uri) { return IsLoopbackName(HostOf(AuthorityOf(uri))); }

Result<ClientRegistration> ParseClientRegistration(std::string_view text) {
  ISB_ASSIGN_OR_RETURN(json body, ParseJson(text));
  if (!body.is_object()) return Invalid("body: expected a JSON object (RFC 7591 client metadata)");
  return RegistrationOf(body);
}

std::string WithoutFormatCharacters(std::string_view utf8) {
  std::string out;
  for (size_t i = 0; i < utf8.size();) {
    const unsigned char lead = static_cast<unsigned char>(utf8[i]);
    const size_t len = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
    if (i + len > utf8.size()) break;  // valid UTF-8 (SanitizeUtf8) never ends inside a character
    char32_t cp = len == 1 ? lead : lead & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(utf8[i + k]) & 0x3f);
    if (IsOtherSpace(cp))
      out.push_back(' ');
    else if (!IsInvisible(cp))
      out.append(utf8.substr(i, len));
    i += len;
  }
  // What is left may have been only spaces around the characters taken out.
  const size_t first = out.find_first_not_of(' '), last = out.find_last_not_of(' ');
  return first == std::string::npos ? "" : out.substr(first, last - first + 1);
}

std::string HtmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace isb::api
