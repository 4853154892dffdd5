// Forms of placeholders and values: percent-encoded, JSON-escaped and base64 spellings, and the swaps in request
// targets and header values.
#include "secrets/secret_forms.h"

#include <gtest/gtest.h>

#include "base/base64.h"

namespace isb::secrets {
namespace {

TEST(SecretForms, PercentEncodingKeepsUnreservedBytesInEitherHexCase) {
  EXPECT_EQ(PercentEncode("a b/c~d.e_f-g\xff"), "a%20b%2Fc~d.e_f-g%FF");
  EXPECT_EQ(PercentEncode("a b/c", HexCase::kLower), "a%20b%2fc");
  EXPECT_EQ(PercentEncodeAll("a/", HexCase::kUpper), "%61%2F");
  EXPECT_EQ(PercentEncodeAll("a/", HexCase::kLower), "%61%2f");
}

TEST(SecretForms, JsonEscapeWritesWhatAServersEncoderWrites) {
  EXPECT_EQ(JsonEscape("q\"b\\s/\n\t\x01"), "q\\\"b\\\\s/\\n\\t\\u0001");
}

TEST(SecretForms, JsonFormsCoverEscapedSlashesUpperHexUnicodeAndHtmlSafeEscapes) {
  const std::vector<std::string> forms = JsonForms("a/\x1f<\xc3\xa9\xf0\x9f\x98\x80");
  auto has = [&](const std::string& form) { return std::find(forms.begin(), forms.end(), form) != forms.end(); };
  EXPECT_TRUE(has("a/\\u001f<\xc3\xa9\xf0\x9f\x98\x80"));
  EXPECT_TRUE(has("a\\/\\u001f<\xc3\xa9\xf0\x9f\x98\x80"));
  EXPECT_TRUE(has("a/\\u001F<\xc3\xa9\xf0\x9f\x98\x80"));
  EXPECT_TRUE(has("a/\\u001f<\\u00e9\\ud83d\\ude00"));
  EXPECT_TRUE(has("a/\\u001f\\u003c\xc3\xa9\xf0\x9f\x98\x80"));
  EXPECT_EQ(forms.size(), 16u);
  EXPECT_EQ(JsonForms("plain").size(), 1u) << "a value with nothing to escape has one form";
}

TEST(SecretForms, Base64RunsAreFoundInsideLongerBase64AtEveryOffset) {
  const std::string placeholder = "isb_placeholder_abcdefgh";
  const std::vector<std::string> runs = Base64Runs(placeholder);
  for (const std::string prefix : {"", "x", "xy", "xyz", "user:"}) {
    const std::string encoded = Base64Encode(prefix + placeholder + "tail");
    EXPECT_TRUE(std::any_of(runs.begin(), runs.end(),
                            [&](const std::string& run) { return encoded.find(run) != std::string::npos; }))
        << "after " << prefix;
  }
  EXPECT_TRUE(Base64Runs("short").empty()) << "runs under 8 characters would match by chance";
}

TEST(SecretForms, FindFlexibleTakesAnyByteOfThePlaceholderPercentEncodedInAnyCase) {
  FlexibleHit hit = FindFlexible("/v1?k=%69sb_P%48", "isb_PH");
  EXPECT_EQ(hit.start, 6u);
  EXPECT_EQ(hit.length, 10u);
  EXPECT_TRUE(hit.encoded);
  EXPECT_FALSE(FindFlexible("isb_P", "isb_PH").start != std::string_view::npos);
  EXPECT_FALSE(FindFlexible("isb_PH", "isb_PH").encoded);
}

TEST(SecretForms, ATargetGetsTheValuePercentEncodedInPathAndQuery) {
  std::string target = "/keys/isb_PH/x?key=isb%5FPH&b=1";
  EXPECT_EQ(SwapInTarget(target, "isb_PH", "s3 cr&t"), 2u);
  EXPECT_EQ(target, "/keys/s3%20cr%26t/x?key=s3%20cr%26t&b=1");
}

TEST(SecretForms, AHeaderGetsTheValueRawWhereThePlaceholderCameRaw) {
  std::string value = "Bearer isb_PH";
  EXPECT_EQ(SwapInHeader("Authorization", value, "isb_PH", "sk-123/abc"), 1u);
  EXPECT_EQ(value, "Bearer sk-123/abc");
  std::string cookie = "k=isb%5fPH; other=1";
  EXPECT_EQ(SwapInHeader("Cookie", cookie, "isb_PH", "sk-123/abc"), 1u);
  EXPECT_EQ(cookie, "k=sk-123%2Fabc; other=1");
}

TEST(SecretForms, BasicCredentialsAreDecodedSwappedInUserAndPasswordAndEncodedAgain) {
  std::string value = "Basic " + Base64Encode("isb_USER:isb_PASS");
  EXPECT_EQ(SwapInHeader("authorization", value, "isb_PASS", "hunter2"), 1u);
  EXPECT_EQ(SwapInHeader("authorization", value, "isb_USER", "alice"), 1u);
  EXPECT_EQ(value, "Basic " + Base64Encode("alice:hunter2"));
  std::string other = "Basic " + Base64Encode("a:b");
  EXPECT_EQ(SwapInHeader("Authorization", other, "isb_PASS", "hunter2"), 0u);
  EXPECT_EQ(other, "Basic " + Base64Encode("a:b"));
}

TEST(SecretForms, HeaderCarriesFindsThePlaceholderRawEncodedInBasicAndInBase64) {
  EXPECT_TRUE(HeaderCarries("X-Key", "isb_placeholder_abcdefgh", "isb_placeholder_abcdefgh"));
  EXPECT_TRUE(HeaderCarries("X-Key", "%69sb_placeholder_abcdefgh", "isb_placeholder_abcdefgh"));
  EXPECT_TRUE(HeaderCarries("Authorization", "Basic " + Base64Encode("u:isb_placeholder_abcdefgh"),
                            "isb_placeholder_abcdefgh"));
  EXPECT_TRUE(
      HeaderCarries("X-Token", Base64Encode("{\"k\":\"isb_placeholder_abcdefgh\"}"), "isb_placeholder_abcdefgh"));
  EXPECT_FALSE(HeaderCarries("X-Key", "isb_placeholder_abcdefgX", "isb_placeholder_abcdefgh"));
}

TEST(SecretForms, SwapPairsWriteTheValueInTheBodysOwnSyntax) {
  EXPECT_EQ(BodyKindOf(nullptr), BodyKind::kRaw);
  const std::string json = "Application/JSON; charset=utf-8", form = "application/x-www-form-urlencoded",
                    problem = "application/problem+json";
  EXPECT_EQ(BodyKindOf(&json), BodyKind::kJson);
  EXPECT_EQ(BodyKindOf(&problem), BodyKind::kJson);
  EXPECT_EQ(BodyKindOf(&form), BodyKind::kForm);
  auto set = std::make_shared<ReplaceSet>(SwapPairs("PH", "a\"b c", BodyKind::kJson));
  EXPECT_EQ(set->ReplaceAll("{\"k\":\"PH\"} %50%48 %50%48"), "{\"k\":\"a\\\"b c\"} a%22b%20c a%22b%20c");
  set = std::make_shared<ReplaceSet>(SwapPairs("PH", "a\"b c", BodyKind::kForm));
  EXPECT_EQ(set->ReplaceAll("k=PH&j=1"), "k=a%22b%20c&j=1");
}

TEST(SecretForms, ScrubPairsTurnEveryFormOfTheValueBackIntoThePlaceholder) {
  ReplaceSet set(ScrubPairs("isb_PH", "s3/cr\"et x"));
  EXPECT_EQ(set.ReplaceAll("raw s3/cr\"et x, upper s3%2Fcr%22et%20x, lower s3%2fcr%22et%20x, form s3%2Fcr%22et+x, "
                           "json s3/cr\\\"et x, php s3\\/cr\\\"et x"),
            "raw isb_PH, upper isb_PH, lower isb_PH, form isb_PH, json isb_PH, php isb_PH");
}

}  // namespace
}  // namespace isb::secrets
