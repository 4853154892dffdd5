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
  EXPECT_EQ(CheckRedirectUri("https://a.example/cb#x").error().message,
            "redirect_uris: a redirect URI has no fragment");
  EXPECT_EQ(CheckRedirectUri("https://user@a.example/cb").error().message,
            "redirect_uris: userinfo ('@') is not allowed");
  EXPECT_EQ(CheckRedirectUri("https://a.example/c b").error().message,
            "redirect_uris: spaces, control and non-ASCII characters must be %-encoded");
  EXPECT_EQ(RedirectHost("https://app.example.com:8443/cb?x=1"), "app.example.com:8443");
  // A backslash is a '/' to a browser: the consent page would show one host and the browser go to another.
  constexpr char kHostChars[] =
      "redirect_uris: the host may hold only letters, digits, '-' and '.' (or be an IP literal)";
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
  EXPECT_EQ(
      ParseClientRegistration(R"({"redirect_uris":["https://a.example/cb"],"client_name":"a\nb"})").error().message,
      "client_name: control characters are not allowed");
  EXPECT_EQ(ParseClientRegistration("[]").error().message, "body: expected a JSON object (RFC 7591 client metadata)");
}

TEST(OAuthFormTest, AClientNameLosesInvisibleFormatCharacters) {
  // U+202E (right-to-left override), U+200B (zero-width space), U+2066 (left-to-right isolate), U+00AD (soft
  // hyphen), U+0085 (a C1 control), U+E0041 (a tag): gone; other non-ASCII stays.
  auto reg = ParseClientRegistration(
      R"({"client_name":"\u202eGood\u200b Cl\u00adient\u2066 \u0085caf\u00e9 \udb40\udc41","redirect_uris":["http://localhost/cb"]})");
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  EXPECT_EQ(reg->name, "Good Client caf\xc3\xa9");
  auto only_invisible =
      ParseClientRegistration(R"({"client_name":"\u202e\u200b","redirect_uris":["http://localhost/cb"]})");
  ASSERT_TRUE(only_invisible.ok());
  EXPECT_EQ(only_invisible->name, "unnamed client");
  // Blank-looking characters (Hangul fillers, the braille blank, variation selectors) go; other spaces are spaces,
  // and none pads a name.
  auto blank =
      ParseClientRegistration(R"({"client_name":"\u3164\u2800\ufe0f\u115f","redirect_uris":["http://localhost/cb"]})");
  ASSERT_TRUE(blank.ok());
  EXPECT_EQ(blank->name, "unnamed client");
  auto spaced = ParseClientRegistration(
      R"({"client_name":"\u00a0\u3000Good\u00a0Client\u2028","redirect_uris":["http://localhost/cb"]})");
  ASSERT_TRUE(spaced.ok());
  EXPECT_EQ(spaced->name, "Good Client");
}

TEST(OAuthFormTest, AClientIdUrlIsHttpsWithAPathAndNothingAmbiguous) {
  EXPECT_TRUE(IsClientIdUrl("https://app.example.com/oauth/client.json"));
  EXPECT_FALSE(IsClientIdUrl("isb_client_abc"));
  EXPECT_TRUE(CheckClientIdUrl("https://app.example.com/oauth/client.json").ok());
  EXPECT_TRUE(CheckClientIdUrl("https://app.example.com:8443/c?v=2").ok());
  EXPECT_TRUE(CheckClientIdUrl("https://[2001:db8::1]/c.json").ok());
  EXPECT_EQ(CheckClientIdUrl("http://app.example.com/c.json").error().message,
            "client_id: a metadata document's URL must be https://");
  EXPECT_EQ(CheckClientIdUrl("https://app.example.com").error().message,
            "client_id: the URL needs a path naming the document (https://HOST/PATH)");
  EXPECT_EQ(CheckClientIdUrl("https://app.example.com/").error().message,
            "client_id: the URL needs a path naming the document (https://HOST/PATH)");
  EXPECT_EQ(CheckClientIdUrl("https://app.example.com/?x=1").error().message,
            "client_id: the URL needs a path naming the document (https://HOST/PATH)");
  EXPECT_EQ(CheckClientIdUrl("https://app.example.com/c.json#top").error().message,
            "client_id: a fragment ('#') is not allowed");
  EXPECT_EQ(CheckClientIdUrl("https://user:pw@app.example.com/c.json").error().message,
            "client_id: userinfo ('@') is not allowed");
  EXPECT_EQ(CheckClientIdUrl("https://app.example.com/a/../c.json").error().message,
            "client_id: the URL's path may not hold '.' or '..' segments");
  EXPECT_EQ(CheckClientIdUrl("https://app.example.com/a/%2E%2e/c.json").error().message,
            "client_id: the URL's path may not hold '.' or '..' segments");
  EXPECT_EQ(CheckClientIdUrl("https://app.example.com/./c.json").error().message,
            "client_id: the URL's path may not hold '.' or '..' segments");
  EXPECT_TRUE(CheckClientIdUrl("https://app.example.com/a/.../c.json").ok());
  EXPECT_EQ(CheckClientIdUrl("https://app.example.com/c json").error().message,
            "client_id: spaces, control and non-ASCII characters must be %-encoded");
  EXPECT_EQ(CheckClientIdUrl("https://app\\evil.com/c.json").error().message,
            "client_id: the host may hold only letters, digits, '-' and '.' (or be an IP literal)");
  EXPECT_EQ(CheckClientIdUrl("https://app.example.com:0/c.json").error().message,
            "client_id: the port must be a number from 1 to 65535");
  EXPECT_EQ(CheckClientIdUrl("https://" + std::string(500, 'a') + ".com/c").error().message,
            "client_id: a URL longer than 512 bytes");
}

TEST(OAuthFormTest, AClientDocumentNamesItsOwnUrlAndIsAPublicClient) {
  constexpr char kUrl[] = "https://app.example.com/client.json";
  auto doc = ParseClientDocument(kUrl, R"({"client_id":"https://app.example.com/client.json","client_name":"App",
      "redirect_uris":["http://127.0.0.1:33418/callback"],"grant_types":["authorization_code","refresh_token"],
      "response_types":["code"],"token_endpoint_auth_method":"none","logo_uri":"https://app.example.com/l.png"})");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(doc->name, "App");
  EXPECT_EQ(doc->redirect_uris, std::vector<std::string>{"http://127.0.0.1:33418/callback"});
  EXPECT_EQ(ParseClientDocument(
                kUrl, R"({"client_id":"https://app.example.com/other.json","redirect_uris":["https://a.example/cb"]})")
                .error()
                .message,
            "client_id: the document names another client_id, not its own URL");
  EXPECT_EQ(ParseClientDocument(kUrl, R"({"redirect_uris":["https://a.example/cb"]})").error().message,
            "client_id: the document must name its own URL as client_id");
  EXPECT_EQ(ParseClientDocument(kUrl, R"({"client_id":"https://app.example.com/client.json","client_secret":"x",
      "redirect_uris":["https://a.example/cb"]})")
                .error()
                .message,
            "client_secret: a metadata document's client is public and has no secret");
  EXPECT_EQ(ParseClientDocument(kUrl, R"({"client_id":"https://app.example.com/client.json",
      "token_endpoint_auth_method":"client_secret_basic","redirect_uris":["https://a.example/cb"]})")
                .error()
                .message,
            "token_endpoint_auth_method: isb's clients are public: only \"none\"");
  EXPECT_EQ(ParseClientDocument(kUrl, R"j({"client_id":"https://app.example.com/client.json",
      "redirect_uris":["javascript:alert(1)"]})j")
                .error()
                .message,
            "redirect_uris: must be an https:// URI, or http:// to a loopback host");
  EXPECT_EQ(ParseClientDocument(kUrl, "[1]").error().message, "the document is not a JSON object (client metadata)");
  EXPECT_EQ(ParseClientDocument(kUrl, std::string(5121, ' ')).error().message,
            "the document is larger than 5120 bytes");
}

TEST(OAuthFormTest, AClientDocumentIsKeptAsLongAsItsCacheControlSaysWithinBounds) {
  EXPECT_EQ(ClientDocumentLifetime(""), 3600);
  EXPECT_EQ(ClientDocumentLifetime("public, max-age=600"), 600);
  EXPECT_EQ(ClientDocumentLifetime("Max-Age=\"900\""), 900);
  EXPECT_EQ(ClientDocumentLifetime("max-age=5"), 60);
  EXPECT_EQ(ClientDocumentLifetime("max-age=31536000"), 86400);
  EXPECT_EQ(ClientDocumentLifetime("max-age=99999999999999999999"), 3600);
  EXPECT_EQ(ClientDocumentLifetime("max-age=-1"), 3600);
  EXPECT_EQ(ClientDocumentLifetime("max-age=600, no-store"), 60);
  EXPECT_EQ(ClientDocumentLifetime("no-cache"), 60);
}

TEST(OAuthFormTest, HtmlEscapeLeavesNoMarkup) {
  EXPECT_EQ(HtmlEscape(R"(<a href="x">'&'</a>)"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

}  // namespace
}  // namespace isb::api
