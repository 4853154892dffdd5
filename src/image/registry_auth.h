// Registry authentication: the WWW-Authenticate challenge (Basic, or Bearer with realm, service and scope), the token
// endpoint's answer, and a cache of tokens per realm, service and scope.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/result.h"

namespace isb::image {

// A user and password for a registry, given by the caller. The password is never logged nor put in an error.
struct RegistryCredentials {
  std::string user;
  std::string password;
};

struct AuthChallenge {
  enum class Scheme { kBasic, kBearer } scheme = Scheme::kBasic;
  std::string realm;    // Bearer: the token endpoint's URL
  std::string service;  // Bearer, may be empty
  std::string scope;    // Bearer, may be empty
};

// One challenge: `Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull"` or
// `Basic realm="x"`. Errors (kUnavailable) say what is malformed, without quoting the header.
Result<AuthChallenge> ParseAuthChallenge(std::string_view header);

struct BearerToken {
  std::string token;
  std::chrono::seconds expires_in{60};
};
// The token endpoint's JSON: "token" or "access_token", and "expires_in" (at least 60 s is assumed, as the token
// specification says). Errors (kUnavailable) never quote the body.
Result<BearerToken> ParseTokenResponse(std::string_view body);

// "Basic base64(user:password)".
std::string BasicAuthorization(const RegistryCredentials& credentials);

// The query of a token request: "?service=S&scope=SC" (percent-encoded), or the realm's own query extended.
std::string TokenQuery(const AuthChallenge& challenge, bool realm_has_query);

// Tokens by realm, service and scope, until shortly before they expire. Thread-safe.
class TokenCache {
 public:
  std::optional<std::string> Get(const AuthChallenge& challenge);
  void Put(const AuthChallenge& challenge, const BearerToken& token);
  // Drops the challenge's token if it is still `token` (one the registry refused); a newer one stays.
  void Forget(const AuthChallenge& challenge, const std::string& token);

 private:
  struct Entry {
    std::string token;
    std::chrono::steady_clock::time_point expires;
  };
  Mutex mu_;
  std::map<std::string, Entry> tokens_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::image
