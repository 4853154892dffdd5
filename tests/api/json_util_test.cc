// Depth-limited parsing, UTF-8 handling and base64 round trips.
#include "api/json_util.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

TEST(JsonUtilTest, ParsesAndRejectsWithPosition) {
  ASSERT_TRUE(ParseJson(R"({"a":[1,2]})").ok());
  auto bad = ParseJson(R"({"a":)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("not valid JSON"), std::string::npos);
}

TEST(JsonUtilTest, RefusesDeepNestingBeforeParsing) {
  std::string deep(100000, '[');
  auto r = ParseJson(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper than 64"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParseJson("[\"" + std::string(1000, '[') + "\\\"\"]").ok());
  std::string ok_depth = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(ParseJson(ok_depth).ok());
  EXPECT_FALSE(ParseJson("[" + ok_depth + "]").ok());
}

// A body of 8 MiB of empty arrays would be millions of parsed values, hundreds of MiB: refused before parsing.
TEST(JsonUtilTest, RefusesTooManyValuesBeforeParsing) {
  std::string many = "[";
  for (size_t i = 0; i < kMaxJsonValues; ++i) many += "[],";
  many += "[]]";
  auto r = ParseJson(many);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message, "JSON has more than 262144 values (at byte 393216)");
  // Commas and brackets inside strings do not count; a list as long as any tool takes parses.
  EXPECT_TRUE(ParseJson("[\"" + std::string(1 << 20, ',') + "\"]").ok());
  std::string hosts = "[";
  for (int i = 0; i < 16384; ++i)
    hosts += std::string(i ? "," : "") + "{\"host\":\"h" + std::to_string(i) + ".example\",\"port\":443}";
  hosts += "]";
  EXPECT_TRUE(ParseJson(hosts).ok());
}

TEST(JsonUtilTest, Utf8) {
  EXPECT_TRUE(IsValidUtf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));  // surrogate
  EXPECT_EQ(SanitizeUtf8("a\xFF"
                         "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(Utf8Length("\xC3\xA9x"), 2u);
  EXPECT_EQ(Dump(json("\xFF")), "\"\xEF\xBF\xBD\"");  // never throws
}

TEST(JsonUtilTest, Base64) {
  for (const std::string& s :
       std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xFF\x10", 3)}) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(*Base64Decode("Zm8"), "fo");  // padding optional
  EXPECT_FALSE(Base64Decode("Zm9v!").ok());
  EXPECT_FALSE(Base64Decode("Z").ok());
}

}  // namespace
}  // namespace isb::api
