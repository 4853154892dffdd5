// age v1: isb's files round-trip, read the real age CLI's files and are read by it, and bad files never yield bytes.
#include "secrets/age.h"

#include <gtest/gtest.h>

#include <cctype>

#include <cstring>
#include <string>

#include "secrets/age_bech32.h"
#include "secrets/age_tool.h"

namespace isb::secrets {
namespace {

using testing::AgeKeygen;
using testing::ForgeAgeFile;
using testing::ReadAll;
using testing::RunTool;
using testing::TempDir;
using testing::WriteAll;

std::string Pattern(size_t size) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 131 + 7) % 251);
  return out;
}

constexpr size_t kChunk = size_t{64} * 1024;
constexpr size_t kSealedChunk = kChunk + 16;

// The error of a decryption that must fail, after checking it gave no value.
Error DecryptError(std::string_view file, const AgeIdentity& identity) {
  auto value = AgeDecrypt(file, identity);
  EXPECT_FALSE(value.ok()) << "a bad file decrypted";
  return value.ok() ? Error{} : value.error();
}

class AgeSizes : public ::testing::TestWithParam<size_t> {};

TEST_P(AgeSizes, AFileIsbWroteDecryptsToTheSameBytes) {
  AgeIdentity key = AgeIdentity::Generate();
  const std::string plain = Pattern(GetParam());
  auto file = AgeEncrypt(plain, {key.Recipient()});
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto value = AgeDecrypt(*file, key);
  ASSERT_TRUE(value.ok()) << value.error().message;
  EXPECT_TRUE(value->view() == plain);
}

INSTANTIATE_TEST_SUITE_P(EmptyOneByteChunkEdgesAndOneMiB, AgeSizes,
                         ::testing::Values(0, 1, kChunk - 1, kChunk, kChunk + 1, 2 * kChunk, 1024 * 1024));

TEST(AgeHeaderTest, AFileForTwoRecipientsHasTwoX25519StanzasAMacAndItsChunks) {
  AgeIdentity a = AgeIdentity::Generate(), b = AgeIdentity::Generate();
  auto file = AgeEncrypt(Pattern(kChunk + 5), {a.Recipient(), b.Recipient()});
  ASSERT_TRUE(file.ok());
  auto header = ParseAgeHeader(*file);
  ASSERT_TRUE(header.ok()) << header.error().message;
  ASSERT_EQ(header->stanzas.size(), 2u);
  for (const AgeStanza& stanza : header->stanzas) {
    ASSERT_EQ(stanza.args.size(), 2u);
    EXPECT_EQ(stanza.args[0], "X25519");
    EXPECT_EQ(stanza.args[1].size(), 43u);
    EXPECT_EQ(stanza.body.size(), 32u);
  }
  EXPECT_EQ(header->mac.size(), 32u);
  EXPECT_EQ(file->substr(header->mac_input_size - 3, 4), "--- ");
  EXPECT_EQ(file->size() - header->payload_offset, 16 + (kChunk + 16) + (5 + 16));
  EXPECT_TRUE(file->starts_with("age-encryption.org/v1\n-> X25519 "));
}

TEST(AgeHeaderTest, UnknownStanzasAreParsedAndSkippedAndAScryptStanzaIsRefusedByName) {
  AgeIdentity key = AgeIdentity::Generate();
  std::string file = ForgeAgeFile(key, {{"hello", true}}, {{{"example.com/enigma", "arg"}, std::string(70, 'z')}});
  auto header = ParseAgeHeader(file);
  ASSERT_TRUE(header.ok()) << header.error().message;
  ASSERT_EQ(header->stanzas.size(), 2u);
  EXPECT_EQ(header->stanzas[0].args, (std::vector<std::string>{"example.com/enigma", "arg"}));
  EXPECT_EQ(header->stanzas[0].body, std::string(70, 'z'));
  auto value = AgeDecrypt(file, key);
  ASSERT_TRUE(value.ok()) << value.error().message;
  EXPECT_TRUE(value->view() == "hello");

  std::string scrypt =
      ForgeAgeFile(key, {{"hello", true}}, {{{"scrypt", "c2FsdHNhbHRzYWx0c2FsdA", "18"}, std::string(32, 's')}});
  header = ParseAgeHeader(scrypt);
  ASSERT_TRUE(header.ok()) << header.error().message;
  EXPECT_EQ(header->stanzas[0].args.size(), 3u);
  Error e = DecryptError(scrypt, key);
  EXPECT_EQ(e.code, Code::kInvalidArgument);
  EXPECT_EQ(e.message,
            "age file: encrypted with a passphrase (scrypt); isb reads only files encrypted to X25519 "
            "recipients (age -r age1...)");
}

TEST(AgeDecryptTest, AnX25519StanzaWithALowOrderShareOrTheWrongShapeIsRefusedBeforeOursIsTried) {
  AgeIdentity key = AgeIdentity::Generate();
  const std::string zero_share(43, 'A');  // 32 zero bytes: a low-order point, so the shared secret would be zero
  const std::string share = AgeBase64Encode(AgeIdentity::Generate().public_key().view());
  struct Case {
    AgeStanza stanza;
    std::string message;
  };
  const Case cases[] = {
      {{{"X25519", zero_share}, std::string(32, 'b')}, "age file: X25519 stanza 1: X25519 share is a low-order point"},
      {{{"X25519"}, std::string(32, 'b')}, "age file: X25519 stanza 1 does not have exactly one argument, its share"},
      {{{"X25519", share, "extra"}, std::string(32, 'b')},
       "age file: X25519 stanza 1 does not have exactly one argument, its share"},
      {{{"X25519", share.substr(0, 42)}, std::string(32, 'b')},
       "age file: X25519 stanza 1: the share is not 32 bytes of canonical base64"},
      {{{"X25519", share}, std::string(31, 'b')}, "age file: X25519 stanza 1: the body is not 32 bytes"},
  };
  for (const Case& c : cases) {
    Error e = DecryptError(ForgeAgeFile(key, {{"value", true}}, {c.stanza}), key);
    EXPECT_EQ(e.code, Code::kInvalidArgument);
    EXPECT_EQ(e.message, c.message);
  }
}

TEST(AgeHeaderTest, MalformedHeadersAreRefusedWithTheLineAndTheReason) {
  struct Case {
    std::string file, message;
  };
  const std::string share = "-> X25519 TEiF0ypqr+bpvcqXNyCVJpL7OuwPdVwPL7KQEbFDOCc\n";
  const std::string mac = "--- AYeVZK262kiO9KRKUZNEldKRzXDG1vPMXdWs2fF0iJY\n";
  const std::string body = "hjabGXwSLQ9c3S6Lw2i+S2Tu2fiwQHHslbBN6B41FLE\n";
  const Case cases[] = {
      {"", "age file: empty"},
      {"hello\n", "age file: not an age file (it does not start with 'age-encryption.org/v1')"},
      {"age-encryption.org/v2\n", "age file: not version v1, the only version isb reads"},
      {"-----BEGIN AGE ENCRYPTED FILE-----\nYWdl\n",
       "age file: ASCII-armored (-----BEGIN AGE ENCRYPTED FILE-----) files are not read; give the binary form "
       "(encrypt without -a/--armor)"},
      {"age-encryption.org/v1\n", "age file: header truncated before its MAC line"},
      {"age-encryption.org/v1\n" + mac, "age file: the header has no recipient stanza"},
      {"age-encryption.org/v1\n" + share, "age file: header truncated inside a stanza body"},
      {"age-encryption.org/v1\n-> X25519  x\n" + body + mac,
       "age file: header line 2: a stanza argument is empty or holds a character outside printable ASCII"},
      {"age-encryption.org/v1\n->\n" + body + mac,
       "age file: header line 2: expected a stanza ('-> ') or the MAC line ('--- ')"},
      {"age-encryption.org/v1\n" + share + std::string(65, 'A') + "\n" + mac,
       "age file: header line 3: a stanza body line is over 64 columns"},
      {"age-encryption.org/v1\n" + share + "AAA=\n" + mac,
       "age file: header line 3: a stanza body line is not unpadded base64"},
      {"age-encryption.org/v1\n" + share + "AB\n" + mac,
       "age file: header line 3: the stanza body is not canonical base64"},
      {"age-encryption.org/v1\n" + share + body + "--- short\n",
       "age file: header line 4: the MAC line is not '--- ' and 43 base64 characters"},
      {"age-encryption.org/v1\n" + share + body + "---\n",
       "age file: header line 4: the MAC line is not '--- ' and 43 base64 characters"},
      {"age-encryption.org/v1\n" + share + body + "--- AYeVZK262kiO9KRKUZNEldKRzXDG1vPMXdWs2fF0iJZ\n",
       "age file: header line 4: the MAC is not canonical base64"},
  };
  for (const Case& c : cases) {
    auto header = ParseAgeHeader(c.file);
    ASSERT_FALSE(header.ok()) << c.message;
    EXPECT_EQ(header.error().code, Code::kInvalidArgument);
    EXPECT_EQ(header.error().message, c.message);
  }
}

TEST(AgeHeaderTest, AHeaderWithMoreThan256StanzasIsRefused) {
  std::string file = "age-encryption.org/v1\n";
  for (int i = 0; i < 257; ++i) file += "-> x\n\n";
  file += "--- AYeVZK262kiO9KRKUZNEldKRzXDG1vPMXdWs2fF0iJY\n";
  auto header = ParseAgeHeader(file);
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.error().message, "age file: more than 256 recipient stanzas");
}

TEST(AgeIdentityTest, ABech32KeyRoundTripsAndMatchesAgeKeygen) {
  TempDir dir;
  auto keygen = AgeKeygen(dir, "key.txt");
  auto parsed = AgeIdentity::Parse(ReadAll(keygen.file));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->Recipient(), keygen.recipient);
  EXPECT_TRUE(CheckRecipient(keygen.recipient).ok());

  AgeIdentity mine = AgeIdentity::Generate();
  WriteAll(dir / "mine.txt", std::string(mine.Encode().view()) + "\n");
  ProgramExit pub = RunTool({"age-keygen", "-y", (dir / "mine.txt").string()}, 4096);
  ASSERT_TRUE(pub.ok()) << pub.stderr_text;
  EXPECT_EQ(pub.stdout_text, mine.Recipient());
  EXPECT_TRUE(mine.Encode().view().starts_with("AGE-SECRET-KEY-1"));
  auto again = AgeIdentity::Parse(mine.Encode().view());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->Encode() == mine.Encode());
}

TEST(AgeIdentityTest, BadIdentitiesAreRefusedWithoutQuotingTheKey) {
  AgeIdentity key = AgeIdentity::Generate();
  std::string text(key.Encode().view());
  std::string typo = text;
  typo[20] = typo[20] == 'Q' ? 'P' : 'Q';
  struct Case {
    std::string text, message;
  };
  const Case cases[] = {
      {"", "identity: no AGE-SECRET-KEY-1... line found"},
      {"# only a comment\n\n", "identity: no AGE-SECRET-KEY-1... line found"},
      {text + "\n" + text + "\n", "identity: more than one key line; give exactly one AGE-SECRET-KEY-1... line"},
      {typo, "identity: not a valid age secret key (bech32: checksum mismatch (a character was mistyped or lost))"},
      {key.Recipient(), "identity: this is a recipient (a public key, age1...); give the AGE-SECRET-KEY-1... line"},
  };
  for (const Case& c : cases) {
    auto parsed = AgeIdentity::Parse(c.text);
    ASSERT_FALSE(parsed.ok()) << c.message;
    EXPECT_EQ(parsed.error().code, Code::kInvalidArgument);
    EXPECT_EQ(parsed.error().message, c.message);
  }
  auto spaced = AgeIdentity::Parse("  # created: now\r\n\t" + text + "  \r\n\n");
  ASSERT_TRUE(spaced.ok()) << spaced.error().message;
  EXPECT_EQ(spaced->Recipient(), key.Recipient());
}

TEST(AgeIdentityTest, BadRecipientsAreRefusedByName) {
  AgeIdentity key = AgeIdentity::Generate();
  EXPECT_TRUE(CheckRecipient(key.Recipient()).ok());
  std::string upper = key.Recipient();
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(CheckRecipient(upper).ok());
  EXPECT_EQ(CheckRecipient("age1abc").error().message,
            "recipient 'age1abc': not an age recipient (bech32: too short for its checksum)");
  EXPECT_EQ(CheckRecipient(std::string(key.Encode().view())).error().message,
            "recipient: this is an identity (a private key); give its public key (age-keygen -y)");
  std::string other_hrp = Bech32Encode("agex", key.public_key().view());
  EXPECT_EQ(CheckRecipient(other_hrp).error().message,
            "recipient '" + other_hrp +
                "': not an X25519 age recipient (age1... as age-keygen prints); other kinds are not supported");
  auto file = AgeEncrypt("x", {key.Recipient(), "age1abc"});
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().message, "recipient 'age1abc': not an age recipient (bech32: too short for its checksum)");
  EXPECT_EQ(AgeEncrypt("x", {}).error().message, "recipients: give at least one age1... key");
}

TEST(AgeInteropTest, TheRealAgeDecryptsWhatIsbWroteForEachOfSeveralRecipients) {
  TempDir dir;
  auto a = AgeKeygen(dir, "a.txt"), b = AgeKeygen(dir, "b.txt");
  AgeIdentity mine = AgeIdentity::Generate();
  for (size_t size : {size_t{0}, size_t{13}, kChunk, size_t{1024 * 1024 + 1}}) {
    const std::string plain = Pattern(size);
    auto file = AgeEncrypt(plain, {a.recipient, mine.Recipient(), b.recipient});
    ASSERT_TRUE(file.ok()) << file.error().message;
    WriteAll(dir / "in.age", *file);
    for (const auto* key : {&a, &b}) {
      std::filesystem::remove(dir / "out");
      ProgramExit d =
          RunTool({"age", "-d", "-i", key->file.string(), "-o", (dir / "out").string(), (dir / "in.age").string()});
      ASSERT_TRUE(d.ok()) << "size " << size << ": " << d.stderr_text;
      EXPECT_TRUE(ReadAll(dir / "out") == plain) << "size " << size;
    }
  }
}

TEST(AgeInteropTest, IsbDecryptsWhatTheRealAgeWroteForSeveralRecipients) {
  TempDir dir;
  AgeIdentity a = AgeIdentity::Generate(), b = AgeIdentity::Generate();
  auto other = AgeKeygen(dir, "other.txt");
  for (size_t size : {size_t{0}, size_t{1}, kChunk, kChunk + 1, size_t{1024 * 1024}}) {
    const std::string plain = Pattern(size);
    WriteAll(dir / "plain", plain);
    ProgramExit e = RunTool({"age", "-r", other.recipient, "-r", a.Recipient(), "-r", b.Recipient(), "-o",
                             (dir / "out.age").string(), (dir / "plain").string()});
    ASSERT_TRUE(e.ok()) << e.stderr_text;
    const std::string file = ReadAll(dir / "out.age");
    for (const AgeIdentity* key : {&a, &b}) {
      auto value = AgeDecrypt(file, *key);
      ASSERT_TRUE(value.ok()) << "size " << size << ": " << value.error().message;
      EXPECT_TRUE(value->view() == plain) << "size " << size;
    }
  }
}

TEST(AgeInteropTest, AnArmoredFileFromTheRealAgeIsRefusedWithHowToGiveTheBinaryForm) {
  TempDir dir;
  AgeIdentity key = AgeIdentity::Generate();
  WriteAll(dir / "plain", "value");
  ProgramExit e =
      RunTool({"age", "-a", "-r", key.Recipient(), "-o", (dir / "out.age").string(), (dir / "plain").string()});
  ASSERT_TRUE(e.ok()) << e.stderr_text;
  Error err = DecryptError(ReadAll(dir / "out.age"), key);
  EXPECT_EQ(err.code, Code::kInvalidArgument);
  EXPECT_EQ(err.message,
            "age file: ASCII-armored (-----BEGIN AGE ENCRYPTED FILE-----) files are not read; give the binary form "
            "(encrypt without -a/--armor)");
}

TEST(AgeDecryptTest, AFileForAnotherKeyIsRefusedNamingOurRecipient) {
  AgeIdentity key = AgeIdentity::Generate(), other = AgeIdentity::Generate(), third = AgeIdentity::Generate();
  auto file = AgeEncrypt("value", {other.Recipient(), third.Recipient()});
  ASSERT_TRUE(file.ok());
  Error e = DecryptError(*file, key);
  EXPECT_EQ(e.code, Code::kForbidden);
  EXPECT_EQ(e.message, "age file: not encrypted to this key (" + key.Recipient() +
                           "): none of its 2 recipient stanzas opens with it");
}

TEST(AgeInteropTest, AFileTheRealAgeWroteForAnSshKeyIsRefusedNamingItsRecipientType) {
  TempDir dir;
  AgeIdentity key = AgeIdentity::Generate();
  ProgramExit made = RunTool({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", (dir / "id").string()});
  ASSERT_TRUE(made.ok()) << made.stderr_text;
  WriteAll(dir / "plain", "value");
  ProgramExit e =
      RunTool({"age", "-R", (dir / "id.pub").string(), "-o", (dir / "out.age").string(), (dir / "plain").string()});
  ASSERT_TRUE(e.ok()) << e.stderr_text;
  Error err = DecryptError(ReadAll(dir / "out.age"), key);
  EXPECT_EQ(err.code, Code::kForbidden);
  EXPECT_EQ(err.message,
            "age file: encrypted only to other kinds of recipient (ssh-ed25519); isb reads files "
            "encrypted to X25519 recipients (age -r " +
                key.Recipient() + ")");
}

TEST(AgeDecryptTest, AFlippedByteInTheHeaderMacOrPayloadGivesAnErrorAndNoValue) {
  AgeIdentity key = AgeIdentity::Generate();
  auto file = AgeEncrypt(Pattern(100), {key.Recipient()});
  ASSERT_TRUE(file.ok());
  auto header = ParseAgeHeader(*file);
  ASSERT_TRUE(header.ok());
  auto flipped = [&](size_t at) {
    std::string copy = *file;
    copy[at] = static_cast<char>(copy[at] ^ 0x01);
    return copy;
  };
  size_t body_line = file->find('\n', file->find("-> X25519")) + 1;
  // A body character whose flip is still a base64 letter or digit (the key is random: 'Z' or 'z' would flip to a
  // character base64 lacks, and the file would be malformed rather than for another key).
  while (!std::isalnum(static_cast<unsigned char>((*file)[body_line + 2] ^ 0x01))) ++body_line;
  size_t mac_at = header->mac_input_size + 1;
  while (!std::isalnum(static_cast<unsigned char>((*file)[mac_at + 5] ^ 0x01))) ++mac_at;
  struct Case {
    size_t at;
    Code code;
    std::string message;
  };
  const Case cases[] = {
      {3, Code::kInvalidArgument, "age file: not an age file (it does not start with 'age-encryption.org/v1')"},
      {body_line + 2, Code::kForbidden,
       "age file: not encrypted to this key (" + key.Recipient() + "): none of its 1 recipient stanzas opens with it"},
      {mac_at + 5, Code::kInvalidArgument,
       "age file: the header MAC does not verify (the header was changed or corrupted)"},
      {header->payload_offset + 3, Code::kInvalidArgument,
       "age file: chunk 0 does not authenticate as the final chunk (the file is corrupted, truncated, or has data "
       "appended)"},
      {header->payload_offset + 16 + 50, Code::kInvalidArgument,
       "age file: chunk 0 does not authenticate as the final chunk (the file is corrupted, truncated, or has data "
       "appended)"},
      {file->size() - 1, Code::kInvalidArgument,
       "age file: chunk 0 does not authenticate as the final chunk (the file is corrupted, truncated, or has data "
       "appended)"},
  };
  for (const Case& c : cases) {
    Error e = DecryptError(flipped(c.at), key);
    EXPECT_EQ(e.code, c.code) << "byte " << c.at;
    EXPECT_EQ(e.message, c.message) << "byte " << c.at;
  }
}

TEST(AgeDecryptTest, AFlippedByteInAMiddleChunkNamesThatChunk) {
  AgeIdentity key = AgeIdentity::Generate();
  auto file = AgeEncrypt(Pattern(3 * kChunk), {key.Recipient()});
  ASSERT_TRUE(file.ok());
  const size_t payload = ParseAgeHeader(*file)->payload_offset + 16;
  std::string copy = *file;
  copy[payload + kSealedChunk + 9] ^= 0x40;
  Error e = DecryptError(copy, key);
  EXPECT_EQ(e.message, "age file: chunk 1 does not authenticate (the file is corrupted)");
}

TEST(AgeDecryptTest, AFileCutAtEveryChunkBoundaryOrInsideItsHeaderGivesAnErrorAndNoValue) {
  AgeIdentity key = AgeIdentity::Generate();
  auto file = AgeEncrypt(Pattern(2 * kChunk + 10), {key.Recipient()});
  ASSERT_TRUE(file.ok());
  const size_t payload = ParseAgeHeader(*file)->payload_offset;
  const size_t in_body = file->find('\n', file->find("-> X25519")) + 5;
  struct Case {
    size_t size;
    std::string message;
  };
  const Case cases[] = {
      {payload, "age file: truncated: the payload nonce is missing"},
      {payload + 8, "age file: truncated: the payload nonce is missing"},
      {payload + 16, "age file: truncated: the payload has no chunk"},
      {payload + 16 + kSealedChunk, "age file: truncated: the file ends after chunk 0, before its final chunk"},
      {payload + 16 + 2 * kSealedChunk, "age file: truncated: the file ends after chunk 1, before its final chunk"},
      {payload + 16 + 2 * kSealedChunk + 8, "age file: truncated: chunk 2 is cut short"},
      {payload + 16 + 2 * kSealedChunk + 20,
       "age file: chunk 2 does not authenticate as the final chunk (the file is corrupted, truncated, or has data "
       "appended)"},
      {payload + 16 + 1000,
       "age file: chunk 0 does not authenticate as the final chunk (the file is corrupted, truncated, or has data "
       "appended)"},
      {payload - 1, "age file: header truncated before its MAC line"},
      {in_body, "age file: header truncated inside a stanza body"},
      {40, "age file: header truncated before its MAC line"},
      {10, "age file: not an age file (it does not start with 'age-encryption.org/v1')"},
  };
  for (const Case& c : cases) {
    Error e = DecryptError(std::string_view(*file).substr(0, c.size), key);
    EXPECT_EQ(e.code, Code::kInvalidArgument) << "cut at " << c.size;
    EXPECT_EQ(e.message, c.message) << "cut at " << c.size;
  }
}

TEST(AgeDecryptTest, BytesAfterTheFinalChunkAreRefused) {
  AgeIdentity key = AgeIdentity::Generate();
  auto full = AgeEncrypt(Pattern(kChunk), {key.Recipient()});
  ASSERT_TRUE(full.ok());
  Error e = DecryptError(*full + "garbage", key);
  EXPECT_EQ(e.message, "age file: data after the final chunk (chunk 0)");
  auto small = AgeEncrypt("abc", {key.Recipient()});
  ASSERT_TRUE(small.ok());
  e = DecryptError(*small + "x", key);
  EXPECT_EQ(e.message,
            "age file: chunk 0 does not authenticate as the final chunk (the file is corrupted, truncated, or has "
            "data appended)");
}

TEST(AgeDecryptTest, AnEmptyFinalChunkAfterAFullOneIsRefusedButAnEmptyFileReads) {
  AgeIdentity key = AgeIdentity::Generate();
  const std::string full = Pattern(kChunk);
  Error e = DecryptError(ForgeAgeFile(key, {{full, false}, {"", true}}), key);
  EXPECT_EQ(e.message, "age file: the final chunk is empty, which only an empty file may have");
  auto honest = AgeDecrypt(ForgeAgeFile(key, {{full, false}, {"x", true}}), key);
  ASSERT_TRUE(honest.ok()) << honest.error().message;
  EXPECT_TRUE(honest->view() == full + "x");
  auto empty = AgeDecrypt(ForgeAgeFile(key, {{"", true}}), key);
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_TRUE(empty->empty());
}

TEST(AgeDecryptTest, AShortChunkNotFlaggedLastOrAFullChunkFlaggedLastBeforeMoreIsRefused) {
  AgeIdentity key = AgeIdentity::Generate();
  Error e = DecryptError(ForgeAgeFile(key, {{"short", false}}), key);
  EXPECT_EQ(e.message,
            "age file: chunk 0 does not authenticate as the final chunk (the file is corrupted, truncated, or has "
            "data appended)");
  e = DecryptError(ForgeAgeFile(key, {{Pattern(kChunk), true}, {"more", true}}), key);
  EXPECT_EQ(e.message, "age file: data after the final chunk (chunk 0)");
}

TEST(SecretBytesTest, HoldsItsBytesAndIsEmptyAfterAMove) {
  std::string source = "short";
  SecretBytes a(std::move(source));
  EXPECT_TRUE(source.empty());
  EXPECT_TRUE(a.view() == "short");
  SecretBytes b(std::move(a));
  EXPECT_EQ(a.size(), 0u);
  EXPECT_TRUE(a.view().empty());
  EXPECT_TRUE(b.view() == "short");
  EXPECT_TRUE(b == SecretBytes(std::string_view("short")));
  EXPECT_FALSE(b == SecretBytes(std::string_view("shorT")));
  EXPECT_TRUE(b.Clone() == b);
}

TEST(SecretBytesTest, AnAllocatedBufferIsFilledInPlaceAndTruncatedToWhatWasWritten) {
  SecretBytes out = SecretBytes::Allocate(8);
  ASSERT_EQ(out.size(), 8u);
  std::memcpy(out.data(), "abcdefgh", 8);
  out.Truncate(3);
  EXPECT_EQ(out.size(), 3u);
  EXPECT_TRUE(out.view() == "abc");
  out.Truncate(5);  // never grows
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(SecretBytes::Allocate(0).size(), 0u);
}

}  // namespace
}  // namespace isb::secrets
