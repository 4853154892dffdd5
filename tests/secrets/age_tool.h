// Test helpers for the secrets store: a temp dir that goes with the test, the real age and age-keygen binaries, and
// hand-built age files for cases no honest encoder writes.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "base/program.h"
#include "secrets/age.h"
#include "secrets/age_crypto.h"
#include "secrets/age_stream.h"

namespace isb::secrets::testing {

// A fresh directory under /tmp, removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "isb-secrets-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteAll(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs a program; its stderr comes back (no secret ever goes to argv or stderr here: test keys are files).
inline ProgramExit RunTool(const std::vector<std::string>& argv, size_t stdout_limit = 0) {
  auto exit = RunProgram(argv, {}, stdout_limit);
  if (!exit.ok()) {
    ADD_FAILURE() << "cannot run " << argv[0] << ": " << exit.error().message;
    return {};
  }
  return *exit;
}

// A key made by the real age-keygen, as a file: its path and its recipient.
struct KeygenKey {
  std::filesystem::path file;
  std::string recipient;
};

inline KeygenKey AgeKeygen(const TempDir& dir, const std::string& name) {
  KeygenKey key{dir / name, {}};
  ProgramExit made = RunTool({"age-keygen", "-o", key.file.string()});
  EXPECT_TRUE(made.ok()) << made.stderr_text;
  ProgramExit pub = RunTool({"age-keygen", "-y", key.file.string()}, 4096);
  EXPECT_TRUE(pub.ok()) << pub.stderr_text;
  key.recipient = pub.stdout_text;
  return key;
}

// An age file built by hand for `identity`: `extra` stanzas first, then an honest X25519 one, a valid MAC, and the
// given chunks with the given last-chunk flags, so tests can make files the STREAM rules forbid.
struct ForgedChunk {
  std::string plaintext;
  bool last = false;
};

inline std::string ForgeAgeFile(const AgeIdentity& identity, const std::vector<ForgedChunk>& chunks,
                                std::vector<AgeStanza> extra = {}) {
  FileKey file_key;
  EXPECT_TRUE(FillRandom(file_key.data(), FileKey::size()).ok());
  Key32 ephemeral;
  EXPECT_TRUE(FillRandom(ephemeral.data(), Key32::size()).ok());
  Key32 share = *X25519Public(ephemeral);
  Key32 shared = *X25519Shared(ephemeral, identity.public_key().view());
  std::string salt = std::string(share.view()) + std::string(identity.public_key().view());
  Key32 wrap = *HkdfSha256(shared.view(), salt, "age-encryption.org/v1/X25519");
  AgeStanza ours{{"X25519", AgeBase64Encode(share.view())}, std::string(32, '\0')};
  EXPECT_TRUE(AeadSeal(wrap, std::string(12, '\0'), file_key.view(), ours.body.data()).ok());
  extra.push_back(std::move(ours));
  std::string out = FormatAgeHeaderForMac(extra);
  Key32 mac = *HmacSha256(HkdfSha256(file_key.view(), "", "header")->view(), out);
  out += " " + AgeBase64Encode(mac.view()) + "\n";
  const std::string nonce(16, 'n');
  out += nonce;
  Key32 payload_key = *HkdfSha256(file_key.view(), nonce, "payload");
  for (size_t i = 0; i < chunks.size(); ++i) {
    std::string chunk_nonce(12, '\0');
    chunk_nonce[10] = static_cast<char>(i);
    chunk_nonce[11] = chunks[i].last ? 1 : 0;
    std::string sealed(chunks[i].plaintext.size() + 16, '\0');
    EXPECT_TRUE(AeadSeal(payload_key, chunk_nonce, chunks[i].plaintext, sealed.data()).ok());
    out += sealed;
  }
  return out;
}

}  // namespace isb::secrets::testing
