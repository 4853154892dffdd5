// age X25519 keys in and out of their Bech32 text.
#include "secrets/age_identity.h"

#include <cstdlib>
#include <cstring>

#include "secrets/age_bech32.h"

namespace isb::secrets {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

Error BadIdentity(std::string why) { return Error::Of(Code::kInvalidArgument, "identity: " + std::move(why)); }

// Bech32Data whose bytes (a private key) are wiped when it goes.
struct DecodedKey {
  Bech32Data data;
  ~DecodedKey() { OPENSSL_cleanse(data.bytes.data(), data.bytes.size()); }
};

}  // namespace

AgeIdentity::AgeIdentity(const Key32& private_key) : private_(private_key) {
  auto pub = X25519Public(private_);
  // Any 32 bytes are an X25519 scalar; failing here means OpenSSL itself is broken.
  if (!pub.ok()) std::abort();
  public_ = *pub;
}

AgeIdentity AgeIdentity::Generate() {
  Key32 key;
  // Without randomness there is no key worth having: stop rather than make a guessable one.
  if (!FillRandom(key.data(), Key32::size()).ok()) std::abort();
  return AgeIdentity(key);
}

Result<AgeIdentity> AgeIdentity::Parse(std::string_view text) {
  const std::vector<KeyLine> lines = KeyLines(text);
  if (lines.empty()) return BadIdentity("no AGE-SECRET-KEY-1... line found");
  if (lines.size() > 1) return BadIdentity("more than one key line; give exactly one AGE-SECRET-KEY-1... line");
  auto decoded = Bech32Decode(lines[0].text);
  if (!decoded.ok()) return BadIdentity("not a valid age secret key (" + decoded.error().message + ")");
  DecodedKey key{std::move(decoded).value()};
  if (key.data.hrp == kAgeRecipientHrp) {
    return BadIdentity("this is a recipient (a public key, age1...); give the AGE-SECRET-KEY-1... line");
  }
  if (key.data.hrp != kAgeIdentityHrp) {
    return BadIdentity("not an X25519 age secret key (AGE-SECRET-KEY-1..., as age-keygen writes)");
  }
  if (key.data.bytes.size() != Key32::size()) return BadIdentity("the key is not 32 bytes");
  Key32 private_key;
  std::memcpy(private_key.data(), key.data.bytes.data(), Key32::size());
  return AgeIdentity(private_key);
}

std::string AgeIdentity::Recipient() const { return Bech32Encode(kAgeRecipientHrp, public_.view()); }

SecretBytes AgeIdentity::Encode() const {
  std::string text = Bech32Encode(kAgeIdentityHrp, private_.view());
  for (char& c : text) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return SecretBytes(std::move(text));
}

std::vector<KeyLine> KeyLines(std::string_view text) {
  std::vector<KeyLine> out;
  for (int number = 1; !text.empty(); ++number) {
    const size_t end = text.find('\n');
    std::string_view line = Trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.front() != '#') out.push_back({number, line});
  }
  return out;
}

Result<Key32> DecodeRecipient(std::string_view recipient) {
  auto refuse = [&](std::string why) {
    return Error::Of(Code::kInvalidArgument, "recipient '" + std::string(recipient) + "': " + std::move(why));
  };
  if (recipient.starts_with("AGE-SECRET-KEY-") || recipient.starts_with("age-secret-key-")) {
    // Said without quoting it: this is somebody's private key.
    return Error::Of(Code::kInvalidArgument,
                     "recipient: this is an identity (a private key); give its public key (age-keygen -y)");
  }
  auto decoded = Bech32Decode(recipient);
  if (!decoded.ok()) return refuse("not an age recipient (" + decoded.error().message + ")");
  if (decoded->hrp != kAgeRecipientHrp) {
    return refuse("not an X25519 age recipient (age1... as age-keygen prints); other kinds are not supported");
  }
  if (decoded->bytes.size() != Key32::size()) return refuse("the key is not 32 bytes");
  Key32 key;
  std::memcpy(key.data(), decoded->bytes.data(), Key32::size());
  return key;
}

Status CheckRecipient(std::string_view recipient) {
  auto key = DecodeRecipient(recipient);
  if (!key.ok()) return key.error();
  return {};
}

}  // namespace isb::secrets
