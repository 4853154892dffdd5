// What OAuth clients send isb before they are anyone: form bodies and query strings
// (application/x-www-form-urlencoded), dynamic client registration (RFC 7591) and redirect URIs.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace isb::api {

inline constexpr size_t kMaxFormFields = 32;
inline constexpr size_t kMaxRedirectUris = 8;
inline constexpr size_t kMaxRedirectUriBytes = 512;
inline constexpr size_t kMaxClientNameBytes = 100;

using Form = std::map<std::string, std::string, std::less<>>;

// "a=1&b=x%20y+z" -> {a: "1", b: "x y z"}. kInvalidArgument naming the field for a bad %-escape, a name given
// twice (RFC 6749 §3.1: parameters must not repeat), or more than kMaxFormFields fields.
Result<Form> ParseForm(std::string_view text);
// The field's value, or "" when absent.
std::string FormValue(const Form& form, std::string_view name);

// A redirect URI a client may register: "https://HOST[:PORT]/...", or "http://" to a loopback host (localhost,
// 127.0.0.1, [::1]) for a native client; no fragment, no userinfo, no whitespace or control characters, at most
// kMaxRedirectUriBytes. kInvalidArgument "redirect_uris: ..." saying which rule it broke.
Status CheckRedirectUri(std::string_view uri);
// The host (and port) a redirect URI sends the browser to, for the consent page: "app.example.com".
std::string RedirectHost(std::string_view uri);

struct ClientRegistration {
  std::string name;  // client_name, or "unnamed client"
  std::vector<std::string> redirect_uris;
};
// A registration request's JSON body (RFC 7591 §2). Only public clients of the authorization code grant are
// registered: grant_types, when sent, within authorization_code and refresh_token; response_types within code.
// kInvalidArgument naming the field otherwise.
Result<ClientRegistration> ParseClientRegistration(std::string_view body);

// `text` with & < > " ' escaped, for HTML text and attribute values.
std::string HtmlEscape(std::string_view text);
// `utf8` (valid UTF-8) without invisible characters (Unicode format characters, other default-ignorable code points,
// blanks, separators, C1 controls), its other spaces as ' ', and no space at either end.
std::string WithoutFormatCharacters(std::string_view utf8);

}  // namespace isb::api
