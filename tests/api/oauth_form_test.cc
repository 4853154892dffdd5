#include "api/oauth_form.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

TEST(OAuthFormTest, AFormDecodesPlusAndPercentEscapes) {
  auto form = ParseForm("grant_type=authorization_code&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&name=a+b&empty");
  ASSERT_TRUE(form.ok()) << form.error().message;
  EXPECT_EQ(FormValue(*form, "grant_type"), "authorization_code");
  EXPECT_EQ(FormValue(*form, "redirect_uri"), "http://127.0.0.1:9/cb");
  EXPECT_EQ(FormValue(*form, "name"), "a b");
  EXPECT_EQ(form->count("empty"), 1u);
  EXPECT_EQ(FormValue(*form, "absent"), "");
}

TEST(OAuthFormTest, ARepeatedFieldOrABadEscapeIsRefusedByName) {
  EXPECT_EQ(ParseForm("code=a&code=b").error().message, "code: given more than once");
  EXPECT_EQ(ParseForm("code=%4").error().message,
            "code: a '%' must be followed by two hex digits (URL-encode the value)");
  std::string many;
  for (size_t i = 0; i <= kMaxFormFields; ++i) many += "f" + std::to_string(i) + "=1&";
  EXPECT_EQ(ParseForm(many).error().message, "form: more than 32 fields");
}

TEST(OAuthFormTest, RedirectUrisAreHttpsOrLoopbackHttp) {
  EXPECT_TRUE(CheckRedirectUri("https://claude.ai/api/mcp/auth_callback").ok());
  EXPECT_TRUE(CheckRedirectUri("http://127.0.0.1:33418/callback").ok());
  EXPECT_TRUE(CheckRedirectUri("http://localhost/cb").ok());
  EXPECT_TRUE(CheckRedirectUri("http://[::1]:8/cb").ok());
  EXPECT_EQ(CheckRedirectUri("http://evil.example/cb").error().message,
            "redirect_uris: http:// is allowed only to localhost, 127.0.0.1 or [::1]; use https://");
  EXPECT_EQ(CheckRedirectUri("http://localhost.evil.example/cb").error().message,
            "redirect_uris: http:// is allowed only to localhost, 127.0.0.1 or [::1]; use https://");
  EXPECT_EQ(CheckRedirectUri("javascript:alert(1)").error().message,
            "redirect_uris: must be an https:// URI, or http:// to a loopback host");
  EXPECT_EQ(CheckRedirectUri("https://a.example/cb#x").error().message, "redirect_uris: a redirect URI has no fragment");
  EXPECT_EQ(CheckRedirectUri("https://user@a.example/cb").error().message,
            "redirect_uris: userinfo ('@') is not allowed");
  EXPECT_EQ(CheckRedirectUri("https://a.example/c b").error().message,
            "redirect_uris: spaces, control and non-ASCII characters must be %-encoded");
  EXPECT_EQ(RedirectHost("https://app.example.com:8443/cb?x=1"), "app.example.com:8443");
  // A backslash is a '/' to a browser: the consent page would show one host and the browser go to another.
  constexpr char kHostChars[] = "redirect_uris: the host may hold only letters, digits, '-' and '.' (or be an IP literal)";
  EXPECT_EQ(CheckRedirectUri("https://a.example\\.evil.example/cb").error().message, kHostChars);
  EXPECT_EQ(CheckRedirectUri("https://a_b.example/cb").error().message, kHostChars);
  EXPECT_EQ(CheckRedirectUri("http://[::1%25lo]/cb").error().message, kHostChars);
  constexpr char kPort[] = "redirect_uris: the port must be a number from 1 to 65535";
  EXPECT_EQ(CheckRedirectUri("http://localhost:99999/cb").error().message, kPort);
  EXPECT_EQ(CheckRedirectUri("http://localhost:8o/cb").error().message, kPort);
  EXPECT_EQ(CheckRedirectUri("http://localhost:/cb").error().message, kPort);
  EXPECT_EQ(CheckRedirectUri("http://localhost:0/cb").error().message, kPort);
  EXPECT_EQ(CheckRedirectUri("http://[::1]x/cb").error().message, kPort);
  EXPECT_TRUE(CheckRedirectUri("http://localhost:65535/cb").ok());
  EXPECT_TRUE(CheckRedirectUri("https://App-1.example.com/cb").ok());
}

TEST(OAuthFormTest, ARegistrationNamesItsClientAndRedirectUris) {
  auto reg = ParseClientRegistration(
      R"({"client_name":"Claude","redirect_uris":["https://claude.ai/cb"],"grant_types":["authorization_code",
      "refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"client_secret_basic"})");
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  EXPECT_EQ(reg->name, "Claude");
  EXPECT_EQ(reg->redirect_uris, std::vector<std::string>{"https://claude.ai/cb"});
  EXPECT_EQ(ParseClientRegistration(R"({"redirect_uris":["https://a.example/cb"]})")->name, "unnamed client");
}

TEST(OAuthFormTest, ARegistrationOutsideTheCodeGrantIsRefusedByField) {
  EXPECT_EQ(ParseClientRegistration(R"({"client_name":"x"})").error().message,
            "redirect_uris: expected an array of 1 to 8 URIs");
  EXPECT_EQ(ParseClientRegistration(R"({"redirect_uris":["https://a.example/cb"],"grant_types":["implicit"]})")
                .error()
                .message,
            "grant_types: isb registers only authorization_code, refresh_token");
  EXPECT_EQ(ParseClientRegistration(R"({"redirect_uris":["https://a.example/cb"],"response_types":["token"]})")
                .error()
                .message,
            "response_types: isb registers only code");
  EXPECT_EQ(ParseClientRegistration(R"({"redirect_uris":["https://a.example/cb"],"client_name":"a\nb"})")
                .error()
                .message,
            "client_name: control characters are not allowed");
  EXPECT_EQ(ParseClientRegistration("[]").error().message,
            "body: expected a JSON object (RFC 7591 client metadata)");
}

TEST(OAuthFormTest, AClientNameLosesInvisibleFormatCharacters) {
  // U+202E (right-to-left override), U+200B (zero-width space), U+2066 (left-to-right isolate), U+00AD (soft
  // hyphen), U+0085 (a C1 control), U+E0041 (a tag): gone; other non-ASCII stays.
  auto reg = ParseClientRegistration(
      R"({"client_name":"\u202eGood\u200b Cl\u00adient\u2066 \u0085caf\u00e9 \udb40\udc41","redirect_uris":["http://localhost/cb"]})");
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  EXPECT_EQ(reg->name, "Good Client caf\xc3\xa9");
  auto only_invisible = ParseClientRegistration(R"({"client_name":"\u202e\u200b","redirect_uris":["http://localhost/cb"]})");
  ASSERT_TRUE(only_invisible.ok());
  EXPECT_EQ(only_invisible->name, "unnamed client");
  // Blank-looking characters (Hangul fillers, the braille blank, variation selectors) go; other spaces are spaces,
  // and none pads a name.
  auto blank = ParseClientRegistration(
      R"({"client_name":"\u3164\u2800\ufe0f\u115f","redirect_uris":["http://localhost/cb"]})");
  ASSERT_TRUE(blank.ok());
  EXPECT_EQ(blank->name, "unnamed client");
  auto spaced = ParseClientRegistration(
      R"({"client_name":"\u00a0\u3000Good\u00a0Client\u2028","redirect_uris":["http://localhost/cb"]})");
  ASSERT_TRUE(spaced.ok());
  EXPECT_EQ(spaced->name, "Good Client");
}

TEST(OAuthFormTest, HtmlEscapeLeavesNoMarkup) {
  EXPECT_EQ(HtmlEscape(R"(<a href="x">'&'</a>)"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

}  // namespace
}  // namespace isb::api
