// What OAuth clients send isb before they are anyone: form bodies and query strings
// (application/x-www-form-urlencoded), dynamic client registration (RFC 7591), redirect URIs, and Client ID
// Metadata Documents (an https URL as client_id, naming the JSON document that describes the client).
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
inline constexpr size_t kMaxClientIdUrlBytes = 512;
// A client metadata document's body: the OAuth Client ID Metadata Document draft asks for a limit of about 5 KB.
inline constexpr size_t kMaxClientDocumentBytes = 5 * 1024;
// How long a fetched document is used before it is fetched again: its Cache-Control max-age within these bounds,
// kDefaultClientDocumentTtl without one.
inline constexpr int64_t kMinClientDocumentTtl = 60;
inline constexpr int64_t kMaxClientDocumentTtl = 24 * 3600;
inline constexpr int64_t kDefaultClientDocumentTtl = 3600;

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
// The host alone, without the port: "app.example.com", "[::1]".
std::string UriHostName(std::string_view uri);
// Whether a URI's host is localhost, 127.0.0.1 or [::1]: whatever program listens there on this computer.
bool IsLoopbackRedirect(std::string_view uri);

struct ClientRegistration {
  std::string name;  // client_name, or "unnamed client"
  std::vector<std::string> redirect_uris;
};
// Whether a client_id names a metadata document (it is an https URL) rather than a registered client.
inline bool IsClientIdUrl(std::string_view client_id) { return client_id.starts_with("https://"); }
// A client_id URL isb fetches: "https://HOST[:PORT]/PATH[?QUERY]" with a path other than "/", no "." or ".."
// segment (nor their %-encodings), no fragment, no userinfo, no whitespace or control characters, at most
// kMaxClientIdUrlBytes. kInvalidArgument "client_id: ..." saying which rule it broke.
Status CheckClientIdUrl(std::string_view url);
// The JSON document fetched from `url` (a client_id that passed CheckClientIdUrl): its client_id must be `url`
// exactly; a public client (token_endpoint_auth_method "none" or absent, no client_secret); the rest read as a
// registration (ParseClientRegistration). kInvalidArgument naming the field otherwise.
Result<ClientRegistration> ParseClientDocument(std::string_view url, std::string_view body);
// Seconds a fetched document is trusted before it is fetched again, from its Cache-Control header: max-age within
// [kMinClientDocumentTtl, kMaxClientDocumentTtl]; no-store or no-cache the minimum; none the default.
int64_t ClientDocumentLifetime(std::string_view cache_control);

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
