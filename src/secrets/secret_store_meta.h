// A secret's metadata (meta.json beside its version files): never its value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace isb::secrets {

struct SecretMeta {
  std::string org, name;
  int version = 0;  // the latest; versions are 1..version
  int64_t created_ms = 0, updated_ms = 0;
  std::map<std::string, std::string> labels;
  // Where the value may ever be sent: egress host strings as given ("api.example.com", "*.example.com:8443").
  std::vector<std::string> hosts;
  // Where in a request to those hosts the placeholder is swapped for the value: "header" always; "query" (the request
  // target, path and query) and "body" (bodies and WebSocket messages) only when an admin opts in, since an origin
  // that echoes them back (a search, an error page, a paste) would hand the value to whoever reads the answer.
  std::vector<std::string> substitute = {"header"};
  // Header fields the placeholder is swapped in besides the credential headers (credential_headers.h), as an admin
  // named them; empty (and absent from meta.json written before it): the credential headers only.
  std::vector<std::string> headers{};

  bool operator==(const SecretMeta&) const = default;
};

std::string FormatSecretMeta(const SecretMeta& meta);
// kInternal naming what is wrong: the store wrote this file, so a bad one is damage, not input.
Result<SecretMeta> ParseSecretMeta(std::string_view text);

}  // namespace isb::secrets
