// The secret store's limits and the messages that explain them.
#include "secrets/secret_store_limits.h"

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
  return {};
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
