// UTF-8 sequence lengths: valid, invalid, cut short; and the start of a character that has not fully come.
#include "base/utf8.h"

#include <gtest/gtest.h>

namespace isb {
namespace {

TEST(Utf8SequenceLength, IsTheLengthOfAValidSequenceAndZeroForAnInvalidOne) {
  EXPECT_EQ(Utf8SequenceLength("a", 0), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xC3\xA9", 0), 2u);
  EXPECT_EQ(Utf8SequenceLength("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x98\x80", 0), 4u);
  EXPECT_EQ(Utf8SequenceLength("x\xC2\x9B", 1), 2u);  // U+009B, a C1 control: valid UTF-8
  EXPECT_EQ(Utf8SequenceLength("\x9B", 0), 0u);       // a stray continuation byte
  EXPECT_EQ(Utf8SequenceLength("\xC0\x9B", 0), 0u);   // overlong
  EXPECT_EQ(Utf8SequenceLength("\xE0\x80\x9B", 0), 0u);
  EXPECT_EQ(Utf8SequenceLength("\xED\xA0\x80", 0), 0u);      // a surrogate
  EXPECT_EQ(Utf8SequenceLength("\xF4\x90\x80\x80", 0), 0u);  // above U+10FFFF
  EXPECT_EQ(Utf8SequenceLength("\xE2\x82", 0), 0u);          // cut short
}

TEST(Utf8IncompleteTail, IsTheStartOfACharacterStillToCome) {
  EXPECT_EQ(Utf8IncompleteTail(""), 0u);
  EXPECT_EQ(Utf8IncompleteTail("ab"), 0u);
  EXPECT_EQ(Utf8IncompleteTail("a\xC3\xA9"), 0u);
  EXPECT_EQ(Utf8IncompleteTail("a\xC3"), 1u);
  EXPECT_EQ(Utf8IncompleteTail("a\xE2\x82"), 2u);
  EXPECT_EQ(Utf8IncompleteTail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(Utf8IncompleteTail("\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(Utf8IncompleteTail("\x80\x80\x80\x80"), 0u);  // no lead: nothing to wait for
  // Starts no character can come of: nothing to wait for.
  EXPECT_EQ(Utf8IncompleteTail("a\xFF"), 0u);
  EXPECT_EQ(Utf8IncompleteTail("a\xC0"), 0u);
  EXPECT_EQ(Utf8IncompleteTail("a\xF5\x80"), 0u);
  EXPECT_EQ(Utf8IncompleteTail("a\xE0\x80"), 0u);  // overlong
  EXPECT_EQ(Utf8IncompleteTail("a\xED\xA0"), 0u);  // a surrogate
  EXPECT_EQ(Utf8IncompleteTail("a\xF4\x90"), 0u);  // above U+10FFFF
  EXPECT_EQ(Utf8IncompleteTail("a\xF0\x80\x80"), 0u);
  EXPECT_EQ(Utf8IncompleteTail("a\xF4\x8F\xBF"), 3u);
}

}  // namespace
}  // namespace isb
