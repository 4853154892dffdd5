// age v1 encryption and decryption: X25519 stanzas wrap a 16-byte file key; a header MAC; the STREAM payload.
#include "secrets/age.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "secrets/age_crypto.h"
#include "secrets/age_stream.h"

namespace isb::secrets {
namespace {

constexpr std::string_view kX25519Type = "X25519";
constexpr std::string_view kX25519Info = "age-encryption.org/v1/X25519";
constexpr std::string_view kScryptType = "scrypt";
const std::string kZeroNonce(kAeadNonceSize, '\0');

Error Refuse(std::string why) { return Error::Of(Code::kInvalidArgument, "age file: " + std::move(why)); }

Result<Key32> WrapKey(const Key32& shared, std::string_view share, std::string_view recipient) {
  std::string salt(share);
  salt += recipient;
  return HkdfSha256(shared.view(), salt, kX25519Info);
}

Result<AgeStanza> WrapForRecipient(const FileKey& file_key, const std::string& recipient) {
  ISB_ASSIGN_OR_RETURN(Key32 recipient_key, DecodeRecipient(recipient));
  Key32 ephemeral;
  ISB_TRY(FillRandom(ephemeral.data(), Key32::size()));
  ISB_ASSIGN_OR_RETURN(Key32 share, X25519Public(ephemeral));
  auto shared = X25519Shared(ephemeral, recipient_key.view());
  if (!shared.ok()) {
    return Error::Of(Code::kInvalidArgument, "recipient '" + recipient + "': " + shared.error().message);
  }
  ISB_ASSIGN_OR_RETURN(Key32 wrap, WrapKey(*shared, share.view(), recipient_key.view()));
  AgeStanza stanza{{std::string(kX25519Type), AgeBase64Encode(share.view())}, std::string(32, '\0')};
  ISB_TRY(AeadSeal(wrap, kZeroNonce, file_key.view(), stanza.body.data()));
  return stanza;
}

Result<Key32> HeaderMac(const FileKey& file_key, std::string_view header_text) {
  ISB_ASSIGN_OR_RETURN(Key32 mac_key, HkdfSha256(file_key.view(), "", "header"));
  return HmacSha256(mac_key.view(), header_text);
}

// The file key from an X25519 stanza addressed to `identity`: false when it is addressed to another key.
Result<bool> UnwrapX25519(const AgeStanza& stanza, size_t number, const AgeIdentity& identity, FileKey& file_key) {
  const std::string name = "X25519 stanza " + std::to_string(number);
  if (stanza.args.size() != 2) return Refuse(name + " does not have exactly one argument, its share");
  auto share = AgeBase64Decode(stanza.args[1]);
  if (!share.ok() || share->size() != Key32::size()) {
    return Refuse(name + ": the share is not 32 bytes of canonical base64");
  }
  // Checked before any decryption, so a body of another size tells an attacker nothing about the key.
  if (stanza.body.size() != FileKey::size() + kAeadTagSize) return Refuse(name + ": the body is not 32 bytes");
  auto shared = X25519Shared(identity.private_key(), *share);
  if (!shared.ok()) return Refuse(name + ": " + shared.error().message);
  ISB_ASSIGN_OR_RETURN(Key32 wrap, WrapKey(*shared, *share, identity.public_key().view()));
  return AeadOpen(wrap, kZeroNonce, stanza.body, reinterpret_cast<char*>(file_key.data()));
}

// The stanzas' types for a message, each cut short and the list too: they are the file's words, not ours.
std::string StanzaTypes(const AgeHeader& header) {
  constexpr size_t kShownTypes = 4, kShownChars = 32;
  std::vector<std::string> types;
  for (const AgeStanza& stanza : header.stanzas) {
    std::string type = stanza.args[0].substr(0, kShownChars);
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(std::move(type));
  }
  std::string out;
  for (size_t i = 0; i < types.size() && i < kShownTypes; ++i) out += (i == 0 ? "" : ", ") + types[i];
  if (types.size() > kShownTypes) out += ", ...";
  return out;
}

Result<FileKey> FindFileKey(const AgeHeader& header, const AgeIdentity& identity) {
  for (const AgeStanza& stanza : header.stanzas) {
    if (stanza.args[0] == kScryptType) {
      return Refuse(
          "encrypted with a passphrase (scrypt); isb reads only files encrypted to X25519 recipients "
          "(age -r age1...)");
    }
  }
  FileKey file_key;
  bool any_x25519 = false;
  for (size_t i = 0; i < header.stanzas.size(); ++i) {
    const AgeStanza& stanza = header.stanzas[i];
    if (stanza.args[0] != kX25519Type) continue;  // another kind of recipient: not ours to judge
    any_x25519 = true;
    ISB_ASSIGN_OR_RETURN(bool opened, UnwrapX25519(stanza, i + 1, identity, file_key));
    if (opened) return file_key;
  }
  if (!any_x25519) {
    return Error::Of(Code::kForbidden, "age file: encrypted only to other kinds of recipient (" + StanzaTypes(header) +
                                           "); isb reads files encrypted to X25519 recipients (age -r " +
                                           identity.Recipient() + ")");
  }
  return Error::Of(Code::kForbidden, "age file: not encrypted to this key (" + identity.Recipient() +
                                         "): none of its " + std::to_string(header.stanzas.size()) +
                                         " recipient stanzas opens with it");
}

}  // namespace

Result<std::string> AgeEncrypt(std::string_view plaintext, const std::vector<std::string>& recipients,
                               const std::vector<AgeStanza>& extra) {
  if (recipients.empty()) return Error::Of(Code::kInvalidArgument, "recipients: give at least one age1... key");
  FileKey file_key;
  ISB_TRY(FillRandom(file_key.data(), FileKey::size()));
  std::vector<AgeStanza> stanzas;
  for (const std::string& recipient : recipients) {
    ISB_ASSIGN_OR_RETURN(AgeStanza stanza, WrapForRecipient(file_key, recipient));
    stanzas.push_back(std::move(stanza));
  }
  stanzas.insert(stanzas.end(), extra.begin(), extra.end());
  std::string out = FormatAgeHeaderForMac(stanzas);
  ISB_ASSIGN_OR_RETURN(Key32 mac, HeaderMac(file_key, out));
  out += ' ';
  out += AgeBase64Encode(mac.view());
  out += '\n';
  ISB_TRY(SealAgePayload(file_key, plaintext, out));
  return out;
}

Result<SecretBytes> AgeDecrypt(std::string_view file, const AgeIdentity& identity) {
  ISB_ASSIGN_OR_RETURN(AgeHeader header, ParseAgeHeader(file));
  ISB_ASSIGN_OR_RETURN(FileKey file_key, FindFileKey(header, identity));
  ISB_ASSIGN_OR_RETURN(Key32 mac, HeaderMac(file_key, file.substr(0, header.mac_input_size)));
  if (header.mac.size() != Key32::size() || CRYPTO_memcmp(mac.data(), header.mac.data(), Key32::size()) != 0) {
    return Refuse("the header MAC does not verify (the header was changed or corrupted)");
  }
  return OpenAgePayload(file_key, file.substr(header.payload_offset));
}

}  // namespace isb::secrets
