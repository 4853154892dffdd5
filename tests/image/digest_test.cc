#include "image/digest.h"

#include <gtest/gtest.h>

namespace isb::image {
namespace {

constexpr const char* kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr const char* kAbc512 =
    "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a"
    "9ac94fa54ca49f";

TEST(Digest, Sha256OfNothingIsTheKnownValue) { EXPECT_EQ(DigestOf("").str(), std::string("sha256:") + kEmpty); }

TEST(Digest, Sha512OfAbcIsTheKnownValue) { EXPECT_EQ(DigestOf("abc", "sha512").hex, kAbc512); }

TEST(Digest, HashingInPiecesEqualsHashingAtOnceAndTheHasherStartsOverAfterFinish) {
  DigestHasher h;
  h.Update(std::string_view("hello "));
  h.Update(std::string_view("world"));
  EXPECT_EQ(h.Finish(), DigestOf("hello world"));
  EXPECT_EQ(h.Finish().hex, kEmpty);
}

TEST(Digest, ParsesSha256AndSha512) {
  Result<Digest> d = ParseDigest(std::string("sha256:") + kEmpty);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->algorithm, "sha256");
  EXPECT_EQ(d->hex, kEmpty);
  EXPECT_EQ(d->Short(), "sha256:e3b0c44298fc");
  ASSERT_TRUE(ParseDigest(std::string("sha512:") + kAbc512).ok());
}

TEST(Digest, RefusesMalformedDigestsSayingWhatIsWrong) {
  auto message = [](std::string_view text) { return ParseDigest(text).error().message; };
  EXPECT_EQ(message("e3b0"), "digest 'e3b0' has no algorithm (expected sha256:<64 hex digits>)");
  EXPECT_EQ(message("md5:abc"), "digest 'md5:abc' has an unsupported algorithm (sha256 and sha512 are supported)");
  EXPECT_EQ(message("sha256:abc"), "digest 'sha256:abc' must have 64 hex digits after 'sha256:'");
  std::string upper = std::string("sha256:") + kEmpty;
  upper[10] = 'C';
  EXPECT_EQ(message(upper), "digest '" + upper.substr(0, 80) + "' must be lower-case hexadecimal after 'sha256:'");
  EXPECT_EQ(ParseDigest("x").error().code, Code::kInvalidArgument);
}

TEST(DigestVerifier, AcceptsTheRightBytesInPieces) {
  DigestVerifier v(DigestOf("hello world"), 11, "layer");
  ASSERT_TRUE(v.Update("hello").ok());
  ASSERT_TRUE(v.Update(" world").ok());
  EXPECT_TRUE(v.Finish().ok());
  EXPECT_EQ(v.received(), 11u);
}

TEST(DigestVerifier, NamesTheBlobWhenTheDigestDiffers) {
  Digest want = DigestOf("hello world");
  DigestVerifier v(want, 11, "layer");
  ASSERT_TRUE(v.Update("hello WORLD").ok());
  Status s = v.Finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::kInvalidArgument);
  EXPECT_EQ(s.error().message,
            "layer " + want.Short() + "\u2026: digest mismatch (got " + DigestOf("hello WORLD").str() + ")");
}

TEST(DigestVerifier, RefusesMoreBytesThanDeclaredAtOnceAndFewerAtTheEnd) {
  Digest want = DigestOf("abc");
  DigestVerifier longer(want, 3, "config");
  EXPECT_EQ(longer.Update("abcd").error().message,
            "config " + want.Short() + "\u2026: more bytes than its declared size of 3");
  DigestVerifier shorter(want, 3, "config");
  ASSERT_TRUE(shorter.Update("ab").ok());
  EXPECT_EQ(shorter.Finish().error().message, "config " + want.Short() + "\u2026: ended after 2 of its 3 bytes");
}

}  // namespace
}  // namespace isb::image
