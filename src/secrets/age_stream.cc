// STREAM over ChaCha20-Poly1305: nonce = 11-byte big-endian chunk counter || last-chunk flag.
#include "secrets/age_stream.h"

#include <array>
#include <cstdint>

namespace isb::secrets {
namespace {

constexpr size_t kSealedChunkSize = kAgeChunkSize + kAeadTagSize;

std::string ChunkNonce(uint64_t counter, bool last) {
  std::string nonce(kAeadNonceSize, '\0');
  for (size_t i = 0; i < 8; ++i) nonce[10 - i] = static_cast<char>((counter >> (8 * i)) & 0xff);
  nonce[11] = last ? 1 : 0;
  return nonce;
}

Result<Key32> PayloadKey(const FileKey& file_key, std::string_view nonce) {
  return HkdfSha256(file_key.view(), nonce, "payload");
}

Error Refuse(std::string why) { return Error::Of(Code::kInvalidArgument, "age file: " + std::move(why)); }

}  // namespace

Status SealAgePayload(const FileKey& file_key, std::string_view plaintext, std::string& out) {
  std::array<unsigned char, kAgePayloadNonceSize> nonce;
  ISB_TRY(FillRandom(nonce.data(), nonce.size()));
  const std::string_view nonce_view(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  ISB_ASSIGN_OR_RETURN(Key32 key, PayloadKey(file_key, nonce_view));
  out += nonce_view;
  const size_t chunks = plaintext.empty() ? 1 : (plaintext.size() + kAgeChunkSize - 1) / kAgeChunkSize;
  out.reserve(out.size() + plaintext.size() + chunks * kAeadTagSize);
  for (size_t i = 0; i < chunks; ++i) {
    std::string_view chunk = plaintext.substr(i * kAgeChunkSize, kAgeChunkSize);
    const size_t at = out.size();
    out.resize(at + chunk.size() + kAeadTagSize);
    ISB_TRY(AeadSeal(key, ChunkNonce(i, i + 1 == chunks), chunk, out.data() + at));
  }
  return {};
}

Result<SecretBytes> OpenAgePayload(const FileKey& file_key, std::string_view payload) {
  if (payload.size() < kAgePayloadNonceSize) return Refuse("truncated: the payload nonce is missing");
  ISB_ASSIGN_OR_RETURN(Key32 key, PayloadKey(file_key, payload.substr(0, kAgePayloadNonceSize)));
  std::string_view rest = payload.substr(kAgePayloadNonceSize);
  // Decrypted in place into what is returned; on any error it goes out of scope and is wiped whole.
  SecretBytes plain = SecretBytes::Allocate(rest.size());
  size_t size = 0;
  for (uint64_t i = 0;; ++i) {
    const std::string chunk_name = "chunk " + std::to_string(i);
    if (rest.size() < kAeadTagSize) {
      return Refuse(i == 0 ? "truncated: the payload has no chunk" : "truncated: " + chunk_name + " is cut short");
    }
    if (rest.size() > kSealedChunkSize) {
      std::string_view sealed = rest.substr(0, kSealedChunkSize);
      if (!AeadOpen(key, ChunkNonce(i, false), sealed, plain.data() + size)) {
        // A valid final chunk followed by more bytes fails as a middle chunk; say what it is.
        if (AeadOpen(key, ChunkNonce(i, true), sealed, plain.data() + size)) {
          return Refuse("data after the final chunk (" + chunk_name + ")");
        }
        return Refuse(chunk_name + " does not authenticate (the file is corrupted)");
      }
      size += kAgeChunkSize;
      rest.remove_prefix(kSealedChunkSize);
      continue;
    }
    if (!AeadOpen(key, ChunkNonce(i, true), rest, plain.data() + size)) {
      if (rest.size() == kSealedChunkSize && AeadOpen(key, ChunkNonce(i, false), rest, plain.data() + size)) {
        return Refuse("truncated: the file ends after " + chunk_name + ", before its final chunk");
      }
      return Refuse(chunk_name +
                    " does not authenticate as the final chunk (the file is corrupted, truncated, or has data "
                    "appended)");
    }
    if (rest.size() == kAeadTagSize && i > 0) {
      return Refuse("the final chunk is empty, which only an empty file may have");
    }
    size += rest.size() - kAeadTagSize;
    plain.Truncate(size);
    return plain;
  }
}

}  // namespace isb::secrets
