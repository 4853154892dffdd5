// Base64: the round trip, padding optional or required, and the exact refusals.
#include "base/base64.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace isb {
namespace {

TEST(Base64Test, EveryLengthRoundTrips) {
  for (const std::string& s :
       std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff\x80", 3)}) {
    auto back = Base64Decode(Base64Encode(s), Base64Padding::kRequired);
    ASSERT_TRUE(back.ok()) << s;
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
}

TEST(Base64Test, PaddingIsOptionalUnlessRequired) {
  EXPECT_EQ(*Base64Decode("Zm8"), "fo");
  auto strict = Base64Decode("Zm8", Base64Padding::kRequired);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().code, Code::kInvalidArgument);
  EXPECT_EQ(strict.error().message, "invalid base64: the length is not a multiple of 4");
}

TEST(Base64Test, MalformedTextIsRefusedInBothModes) {
  for (Base64Padding mode : {Base64Padding::kOptional, Base64Padding::kRequired}) {
    for (const char* bad : {"Zm=v", "Z===", "Zm9v!A==", "=AAA"}) EXPECT_FALSE(Base64Decode(bad, mode).ok()) << bad;
  }
  // Padding beyond the last group's two places is refused when padding is required.
  for (const char* bad : {"====", "Zm9v====", "Zg======"})
    EXPECT_FALSE(Base64Decode(bad, Base64Padding::kRequired).ok()) << bad;
  EXPECT_EQ(Base64Decode("Zm9v!A==").error().message, "invalid base64: unexpected character at offset 4");
  EXPECT_EQ(Base64Decode("Z===").error().message, "invalid base64: bad length");
}

}  // namespace
}  // namespace isb
