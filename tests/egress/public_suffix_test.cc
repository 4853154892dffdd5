// Punycode and the public suffix list: the rule kinds, Unicode rules, and failing closed without the list.
#include "egress/public_suffix.h"

#include <gtest/gtest.h>

#include <vector>

#include "egress/punycode.h"

namespace isb::egress {
namespace {

TEST(PunycodeTest, EncodesLabels) {
  EXPECT_EQ(*ToPunycodeLabel("bücher"), "xn--bcher-kva");
  EXPECT_EQ(*ToPunycodeLabel("münchen"), "xn--mnchen-3ya");
  EXPECT_EQ(*ToPunycodeLabel("公司"), "xn--55qx5d");
  EXPECT_EQ(*ToPunycodeLabel("中国"), "xn--fiqs8s");
  EXPECT_EQ(*ToPunycodeLabel("рф"), "xn--p1ai");
  EXPECT_EQ(*ToPunycodeLabel("香港"), "xn--j6w193g");
  EXPECT_EQ(*ToPunycodeLabel("example"), "example");
  for (const std::string& bad :
       std::vector<std::string>{"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", std::string(256, 'a') + "\xc3\xa9"}) {
    EXPECT_FALSE(ToPunycodeLabel(bad).ok());
  }
}

TEST(PublicSuffixTest, AppliesEachKindOfRule) {
  auto list = PublicSuffixList::Parse(
      "// comment\n\ncom\nco.uk\n*.ck\n!www.ck\ngithub.io  trailing words\n公司.cn\r\n*.kawasaki.jp\n");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list->size(), 7u);
  for (const char* yes :
       {"com", "co.uk", "github.io", "anything.ck", "xn--55qx5d.cn", "a.kawasaki.jp", "uk", "localhost", "unlisted"}) {
    EXPECT_TRUE(list->IsPublicSuffix(yes)) << yes;
  }
  for (const char* no : {"example.com", "example.co.uk", "user.github.io", "www.ck", "a.b.ck", "example.cn",
                         "city.kawasaki.jp.example", "kawasaki.jp.co"}) {
    EXPECT_FALSE(list->IsPublicSuffix(no)) << no;
  }
}

TEST(PublicSuffixTest, RefusesABrokenList) {
  auto list = PublicSuffixList::Parse("com\n\xff.bad\n");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().message, "public suffix list: line 2 is not a rule: invalid UTF-8");
}

TEST(PublicSuffixTest, AMissingListFailsClosed) {
  auto list = PublicSuffixList::Load("/nonexistent/public_suffix_list.dat");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().code, Code::kUnavailable);
  EXPECT_EQ(list.error().message,
            "cannot read the public suffix list /nonexistent/public_suffix_list.dat (open /nonexistent/"
            "public_suffix_list.dat: No such file or directory); install the Debian package publicsuffix");
}

// The system's list (package publicsuffix, installed by scripts/install-deps.sh).
TEST(PublicSuffixTest, SystemListKnowsTheUsualSuffixes) {
  auto list = PublicSuffixList::System();
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_GT((*list)->size(), 5000u);
  for (const char* yes : {"com", "co.uk", "github.io", "xn--55qx5d.cn", "herokuapp.com", "s3.amazonaws.com"}) {
    EXPECT_TRUE((*list)->IsPublicSuffix(yes)) << yes;
  }
  for (const char* no : {"example.com", "bbc.co.uk", "isb.github.io", "amazonaws.com"}) {
    EXPECT_FALSE((*list)->IsPublicSuffix(no)) << no;
  }
  EXPECT_EQ(*PublicSuffixList::System(), *list);  // loaded once
}

}  // namespace
}  // namespace isb::egress
