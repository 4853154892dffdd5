// The streaming UTF-8 check: valid text in any split, and each ill-formed sequence Unicode's Table 3-7 rules out.
#include "net/utf8_stream.h"

#include <gtest/gtest.h>

namespace isb::net {
namespace {

TEST(Utf8StreamTest, ValidTextPassesInEverySplit) {
  const std::string text = "Hello-\xCE\xBA\xE1\xBD\xB9\xCF\x83\xCE\xBC\xCE\xB5-\xF0\x9F\x98\x80-\xEF\xBF\xBF";
  ASSERT_TRUE(IsUtf8(text));
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Utf8Stream check;
    EXPECT_TRUE(check.Take(text.substr(0, cut)));
    EXPECT_TRUE(check.Take(text.substr(cut)));
    EXPECT_TRUE(check.Finish()) << cut;
  }
}

TEST(Utf8StreamTest, IllFormedSequencesAreRefused) {
  EXPECT_FALSE(IsUtf8("\xC0\x80"));          // overlong NUL
  EXPECT_FALSE(IsUtf8("\xE0\x80\xAF"));      // overlong '/'
  EXPECT_FALSE(IsUtf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(IsUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsUtf8("\xF5\x80\x80\x80"));
  EXPECT_FALSE(IsUtf8("\x80"));  // a lone continuation byte
  EXPECT_FALSE(IsUtf8("\xFF"));
  EXPECT_TRUE(IsUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF itself
  EXPECT_TRUE(IsUtf8(std::string("a\0b", 3)));
}

TEST(Utf8StreamTest, ABadByteIsFoundAsSoonAsItArrivesAndACutSequenceOnlyAtTheEnd) {
  Utf8Stream check;
  EXPECT_TRUE(check.Take("ok \xCE"));
  EXPECT_FALSE(check.Finish());
  EXPECT_FALSE(check.Take("x"));
  EXPECT_FALSE(check.Take("valid again"));
  EXPECT_FALSE(check.Finish());
}

}  // namespace
}  // namespace isb::net
