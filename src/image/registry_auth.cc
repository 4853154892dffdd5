// Challenge and token parsing (RFC 9110 auth-params; the distribution project's token specification) and the cache.
#include "image/registry_auth.h"

#include <nlohmann/json.hpp>

#include "api/json_util.h"
#include "base/base64.h"

namespace isb::image {
namespace {

using Clock = std::chrono::steady_clock;

Error Malformed(const std::string& why) {
  return Error::Of(Code::kUnavailable, "registry sent a malformed WWW-Authenticate challenge: " + why);
}

bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void SkipSpace(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

std::string_view TakeToken(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && IsTokenChar(s[n])) ++n;
  std::string_view t = s.substr(0, n);
  s.remove_prefix(n);
  return t;
}

// A quoted-string after its opening quote; nullopt when it does not close.
std::optional<std::string> TakeQuoted(std::string_view& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out += s[++i];
    } else if (s[i] == '"') {
      s.remove_prefix(i + 1);
      return out;
    } else if (static_cast<unsigned char>(s[i]) < 0x20 && s[i] != '\t') {
      return std::nullopt;
    } else {
      out += s[i];
    }
  }
  return std::nullopt;
}

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string CacheKey(const AuthChallenge& c) { return c.realm + '\n' + c.service + '\n' + c.scope; }

}  // namespace

Result<AuthChallenge> ParseAuthChallenge(std::string_view header) {
  if (header.size() > 4096) return Malformed("it is longer than 4096 bytes");
  std::string_view s = header;
  SkipSpace(s);
  std::string scheme = Lower(TakeToken(s));
  AuthChallenge c;
  if (scheme == "basic") {
    c.scheme = AuthChallenge::Scheme::kBasic;
    return c;  // its realm is only a label for people
  }
  if (scheme != "bearer") return Malformed("the scheme is neither Basic nor Bearer");
  c.scheme = AuthChallenge::Scheme::kBearer;
  std::map<std::string, std::string> params;
  for (;;) {
    SkipSpace(s);
    if (s.empty()) break;
    std::string name = Lower(TakeToken(s));
    if (name.empty()) return Malformed("a parameter has no name");
    SkipSpace(s);
    if (s.empty() || s.front() != '=') return Malformed("parameter '" + name + "' has no value");
    s.remove_prefix(1);
    SkipSpace(s);
    std::string value;
    if (!s.empty() && s.front() == '"') {
      s.remove_prefix(1);
      std::optional<std::string> quoted = TakeQuoted(s);
      if (!quoted) return Malformed("parameter '" + name + "' has an unterminated quoted value");
      value = *quoted;
    } else {
      value = std::string(TakeToken(s));
    }
    if (!params.emplace(name, value).second) return Malformed("parameter '" + name + "' appears twice");
    SkipSpace(s);
    if (s.empty()) break;
    if (s.front() != ',') return Malformed("parameters must be separated by commas");
    s.remove_prefix(1);
  }
  c.realm = params["realm"];
  c.service = params["service"];
  c.scope = params["scope"];
  if (c.realm.empty()) return Malformed("a Bearer challenge has no realm");
  return c;
}

Result<BearerToken> ParseTokenResponse(std::string_view body) {
  Result<nlohmann::json> doc = api::ParseJson(body);
  if (!doc.ok() || !doc->is_object())
    return Error::Of(Code::kUnavailable, "the registry's token endpoint did not answer with a JSON object");
  BearerToken t;
  for (const char* key : {"token", "access_token"}) {
    auto it = doc->find(key);
    if (it != doc->end() && it->is_string() && !it->get<std::string>().empty()) {
      t.token = it->get<std::string>();
      break;
    }
  }
  if (t.token.empty()) return Error::Of(Code::kUnavailable, "the registry's token endpoint answered without a token");
  for (char c : t.token) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return Error::Of(Code::kUnavailable,
                       "the registry's token endpoint answered with a token that has spaces or control bytes");
  }
  auto expires = doc->find("expires_in");
  if (expires != doc->end() && expires->is_number_unsigned())
    t.expires_in = std::chrono::seconds(std::min<uint64_t>(expires->get<uint64_t>(), 24 * 3600));
  if (t.expires_in < std::chrono::seconds(60)) t.expires_in = std::chrono::seconds(60);
  return t;
}

std::string BasicAuthorization(const RegistryCredentials& credentials) {
  return "Basic " + Base64Encode(credentials.user + ":" + credentials.password);
}

std::string TokenQuery(const AuthChallenge& challenge, bool realm_has_query) {
  std::string q;
  auto add = [&](const char* name, const std::string& value) {
    if (value.empty()) return;
    q += (q.empty() && !realm_has_query) ? '?' : '&';
    q += std::string(name) + "=" + PercentEncode(value);
  };
  add("service", challenge.service);
  add("scope", challenge.scope);
  return q;
}

std::optional<std::string> TokenCache::Get(const AuthChallenge& challenge) {
  MutexLock lock(mu_);
  auto it = tokens_.find(CacheKey(challenge));
  if (it == tokens_.end()) return std::nullopt;
  if (Clock::now() >= it->second.expires) {
    tokens_.erase(it);
    return std::nullopt;
  }
  return it->second.token;
}

void TokenCache::Put(const AuthChallenge& challenge, const BearerToken& token) {
  MutexLock lock(mu_);
  // Renewed 10 s early, so a token is never sent as it expires.
  tokens_[CacheKey(challenge)] = Entry{token.token, Clock::now() + token.expires_in - std::chrono::seconds(10)};
}

void TokenCache::Forget(const AuthChallenge& challenge, const std::string& token) {
  MutexLock lock(mu_);
  auto it = tokens_.find(CacheKey(challenge));
  if (it != tokens_.end() && it->second.token == token) tokens_.erase(it);
}

}  // namespace isb::image
