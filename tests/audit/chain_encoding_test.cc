#include "audit/chain_encoding.h"

#include <gtest/gtest.h>

namespace isb::audit {
namespace {

using namespace std::string_literals;

TEST(ChainEncodingTest, Sha256MatchesTheStandardVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ChainEncodingTest, FieldsAreLengthPrefixedAfterFixedWidthIdAndTime) {
  std::string want =
      "\0\0\0\0\0\0\0\1d"s + "\0\0\0\0\0\0\0\1"s + "\0\0\0\0\0\0\1\2"s + "\0\0\0\0\0\0\0\2ab"s + "\0\0\0\0\0\0\0\0"s;
  EXPECT_EQ(CanonicalEncoding("d", 1, 258, {"ab", ""}), want);
}

TEST(ChainEncodingTest, DifferentSplitsOrDomainsNeverEncodeAlike) {
  EXPECT_NE(CanonicalEncoding("d", 1, 1, {"ab", "c"}), CanonicalEncoding("d", 1, 1, {"a", "bc"}));
  EXPECT_NE(CanonicalEncoding("d", 1, 1, {"", "x"}), CanonicalEncoding("d", 1, 1, {"x", ""}));
  EXPECT_NE(CanonicalEncoding("isb.audit.v1", 1, 1, {"x"}), CanonicalEncoding("isb.history.v1", 1, 1, {"x"}));
  EXPECT_NE(CanonicalEncoding("d", 1, 2, {}), CanonicalEncoding("d", 2, 1, {}));
}

TEST(ChainEncodingTest, LinkHashCoversThePreviousHashBytes) {
  EXPECT_EQ(LinkHash(kGenesisHash, "abc"), "365aa7d8f7f9402c4b9434502b4cc89ddb09fe50d7cd95b493b834c62d5a5370");
  EXPECT_EQ(LinkHash("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc"),
            "3043d048d0d28ecf94e6eb021f76e69b76a1ead7d7a0d1392696bb2c09c261f1");
}

TEST(ChainEncodingTest, LinkHashOfAMalformedPrevIsEmpty) {
  EXPECT_EQ(LinkHash("00", "abc"), "");
  EXPECT_EQ(LinkHash(std::string(64, 'g'), "abc"), "");
  EXPECT_EQ(LinkHash(std::string(64, 'A'), "abc"), "");
}

}  // namespace
}  // namespace isb::audit
