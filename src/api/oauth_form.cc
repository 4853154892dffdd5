// OAuth request parsing: nothing here trusts its input; every refusal names the field.
#include "api/oauth_form.h"

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

Status CheckStringList(const json& body, const char* field, std::initializer_list<std::string_view> allowed) {
  auto it = body.find(field);
  if (it == body.end()) return {};
  if (!it->is_array()) return Invalid(std::string(field) + ": expected an array of strings");
  for (const json& v : *it) {
    bool ok = v.is_string() && std::find(allowed.begin(), allowed.end(), v.get_ref<const std::string&>()) != allowed.end();
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

Status CheckRedirectUri(std::string_view uri) {
  if (uri.size() > kMaxRedirectUriBytes)
    return Invalid("redirect_uris: longer than " + std::to_string(kMaxRedirectUriBytes) + " bytes");
  for (unsigned char c : uri)
    if (c <= 0x20 || c >= 0x7f) return Invalid("redirect_uris: spaces, control and non-ASCII characters must be %-encoded");
  if (uri.find('#') != std::string_view::npos) return Invalid("redirect_uris: a redirect URI has no fragment");
  const bool https = uri.starts_with("https://"), http = uri.starts_with("http://");
  if (!https && !http) return Invalid("redirect_uris: must be an https:// URI, or http:// to a loopback host");
  std::string_view authority = AuthorityOf(uri);
  if (authority.find('@') != std::string_view::npos) return Invalid("redirect_uris: userinfo ('@') is not allowed");
  std::string_view host = HostOf(authority);
  if (host.empty()) return Invalid("redirect_uris: no host");
  if (http && !IsLoopbackName(host))
    return Invalid("redirect_uris: http:// is allowed only to localhost, 127.0.0.1 or [::1]; use https://");
  return {};
}

std::string RedirectHost(std::string_view uri) { return std::string(AuthorityOf(uri)); }

Result<ClientRegistration> ParseClientRegistration(std::string_view text) {
  ISB_ASSIGN_OR_RETURN(json body, ParseJson(text));
  if (!body.is_object()) return Invalid("body: expected a JSON object (RFC 7591 client metadata)");
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
    reg.name = SanitizeUtf8(name->get_ref<const std::string&>());
  }
  return reg;
}

std::string HtmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace isb::api
