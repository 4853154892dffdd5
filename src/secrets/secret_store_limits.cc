// The secret store's limits and the messages that explain them.
#include "secrets/secret_store_limits.h"

#include <algorithm>
#include <iterator>

#include "base/ascii.h"
#include "secrets/credential_headers.h"

namespace isb::secrets {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// A name is quoted in the refusal, cut short so a huge one cannot make a huge message.
std::string Quoted(std::string_view text) {
  constexpr size_t kShown = 160;
  if (text.size() <= kShown) return "'" + std::string(text) + "'";
  return "'" + std::string(text.substr(0, kShown)) + "...'";
}

Status CheckPathName(std::string_view field, std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxSecretNameSize && name != "." && name != "..";
  for (char c : name) ok = ok && IsNameChar(c);
  if (ok) return {};
  return Error::Of(Code::kInvalidArgument,
                   std::string(field) + ": use 1-128 letters, digits, '_', '.' or '-', got " + Quoted(name));
}

}  // namespace

Status CheckSecretName(std::string_view name) { return CheckPathName("name", name); }

Status CheckOrgDirName(std::string_view org) { return CheckPathName("org", org); }

Status CheckSecretValueSize(size_t size) {
  if (size <= kMaxSecretValueSize) return {};
  return Error::Of(Code::kTooLarge,
                   "value: " + std::to_string(size) + " bytes is over the limit of 1 MiB (1048576 bytes)");
}

Status CheckPlaceholderValue(std::string_view value) {
  if (value.size() > kMaxPlaceholderValueSize) {
    return Error::Of(Code::kInvalidArgument,
                     "value: " + std::to_string(value.size()) +
                         " bytes is too long to stand behind a placeholder (at most 64 KiB, as it is swapped into "
                         "HTTP requests); deliver it as a file instead, which takes up to 1 MiB");
  }
  if (value.find_first_of("\r\n") != std::string_view::npos) {
    return Error::Of(Code::kInvalidArgument,
                     "value: holds a CR or LF, which a placeholder cannot carry into an HTTP header; deliver it as "
                     "a file instead, which takes any bytes");
  }
  if (value.size() < kMinPlaceholderValueSize) return CheckValueWithHosts(value.size());
  return {};
}

Status CheckValueWithHosts(size_t size) {
  if (size >= kMinPlaceholderValueSize) return {};
  return Error::Of(Code::kInvalidArgument,
                   "value: " + std::to_string(size) +
                       " bytes is too short for a secret with hosts (at least 8 bytes: every copy of the value in a "
                       "response is turned back into its placeholder, and a shorter value would match ordinary "
                       "bytes); give a longer value, or no hosts to deliver it as a file only");
}

Result<std::vector<std::string>> CanonicalSubstitute(const std::vector<std::string>& parts) {
  static constexpr std::string_view kParts[] = {"header", "query", "body"};
  for (const std::string& part : parts) {
    if (std::find(std::begin(kParts), std::end(kParts), part) == std::end(kParts))
      return Error::Of(
          Code::kInvalidArgument,
          "substitute: " + Quoted(part) + " is not a part of a request; give \"header\", \"query\" or \"body\"");
  }
  if (std::find(parts.begin(), parts.end(), "header") == parts.end())
    return Error::Of(Code::kInvalidArgument,
                     "substitute: \"header\" is always among the parts (the placeholder is swapped in headers)");
  std::vector<std::string> out;
  for (std::string_view part : kParts)
    if (std::find(parts.begin(), parts.end(), part) != parts.end()) out.emplace_back(part);
  return out;
}

// Headers that route, frame or hop a request, or that servers commonly reflect or log: a value swapped into one
// would travel where the credential headers never go (a Host is logged and echoed; a Cookie is set on the client).
bool ReservedHeader(std::string_view name) {
  static constexpr std::string_view kReserved[] = {
      "Host",         "Connection", "Upgrade",       "Transfer-Encoding", "Content-Length",
      "Content-Type", "TE",         "Trailer",       "Keep-Alive",        "Proxy-Connection",
      "Origin",       "Referer",    "Cookie",        "Set-Cookie",        "Forwarded",
      "Via",          "User-Agent", "Expect",        "Content-Encoding",  "Accept-Encoding",
      "Range",        "If-Match",   "If-None-Match", "Location"};
  for (std::string_view r : kReserved) {
    if (EqualsIgnoreCase(r, name)) return true;
  }
  for (std::string_view prefix : {"sec-websocket-", "x-forwarded-", "x-real-ip"}) {
    if (name.size() >= prefix.size() && EqualsIgnoreCase(name.substr(0, prefix.size()), prefix)) return true;
  }
  return false;
}

Result<std::vector<std::string>> CanonicalSwapHeaders(const std::vector<std::string>& names) {
  if (names.size() > kMaxExtraSwapHeaders)
    return Error::Of(Code::kInvalidArgument, "headers: " + std::to_string(names.size()) +
                                                 " names; a secret adds at most 16 headers to the credential ones");
  std::vector<std::string> out;
  for (const std::string& name : names) {
    if (name.empty() || name.size() > kMaxSecretNameSize || !std::all_of(name.begin(), name.end(), IsTokenChar))
      return Error::Of(Code::kInvalidArgument, "headers: " + Quoted(name) +
                                                   " is not a header name; use 1-128 letters, digits or "
                                                   "!#$%&'*+-.^_`|~ (such as X-Custom-Key)");
    if (ReservedHeader(name))
      return Error::Of(Code::kInvalidArgument,
                       "headers: " + Quoted(name) +
                           " routes, frames or is echoed by servers; a secret is swapped only into headers that carry "
                           "credentials (such as X-Custom-Key)");
    if (std::none_of(out.begin(), out.end(), [&](const std::string& seen) { return EqualsIgnoreCase(seen, name); }))
      out.push_back(name);
  }
  return out;
}

Status CheckSecretHosts(const std::vector<std::string>& hosts) {
  for (const std::string& host : hosts) {
    if (host.empty()) {
      return Error::Of(Code::kInvalidArgument,
                       "hosts: an empty host; give names such as api.example.com or *.example.com:8443");
    }
  }
  return {};
}

}  // namespace isb::secrets
