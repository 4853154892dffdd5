// What the preview proxy takes out of a request for the app, and how it edits the app's Set-Cookie fields.
#include "api/preview_filter.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

using Fields = std::vector<egress::HttpHeader>;

TEST(PreviewFilterTest, IsbsCredentialsAndMadeUpForwardingFieldsAreTakenOut) {
  Fields f = {{"Host", "80-sb-0123456789abcdef-acme.localhost"},
              {"Cookie", "isb_session=isb_sess_x; app=1; CF_Authorization=jwt; isb_preview=p; theme=dark"},
              {"Authorization", "Bearer isb_tok_secret"},
              {"Cf-Access-Jwt-Assertion", "jwt"},
              {"X-Forwarded-For", "6.6.6.6"},
              {"x-forwarded-host", "evil"},
              {"Forwarded", "for=6.6.6.6"},
              {"X-Real-IP", "6.6.6.6"},
              {"Accept", "*/*"}};
  StripRequestCredentials(f);
  EXPECT_EQ(
      f,
      (Fields{{"Host", "80-sb-0123456789abcdef-acme.localhost"}, {"Cookie", "app=1; theme=dark"}, {"Accept", "*/*"}}));
}

TEST(PreviewFilterTest, ClientAddressAndViaFieldsInAnyCaseAreTakenOut) {
  Fields f = {{"CF-Connecting-IP", "6.6.6.6"},
              {"true-client-ip", "6.6.6.6"},
              {"X-Client-IP", "6.6.6.6"},
              {"VIA", "1.1 evil"},
              {"X-Client-IPs", "kept"},
              {"Vias", "kept"},
              {"Accept", "*/*"}};
  StripRequestCredentials(f);
  EXPECT_EQ(f, (Fields{{"X-Client-IPs", "kept"}, {"Vias", "kept"}, {"Accept", "*/*"}}));
}

TEST(PreviewFilterTest, TheAppsOwnAuthorizationAndCookiesStay) {
  Fields f = {{"Authorization", "Basic dXNlcjpwYXNz"}, {"Cookie", "isb_session=x"}, {"Cookie", "sid=42"}};
  StripRequestCredentials(f);
  EXPECT_EQ(f, (Fields{{"Authorization", "Basic dXNlcjpwYXNz"}, {"Cookie", "sid=42"}}));
}

TEST(PreviewFilterTest, SetCookieLosesDomainAndIsbNamedCookiesAreDropped) {
  Fields f = {{"Set-Cookie", "sid=1; Domain=localhost; Path=/; HttpOnly"},
              {"Set-Cookie", "theme=dark;domain=.localhost"},
              {"Set-Cookie", "isb_session=stolen; Path=/"},
              {"Set-Cookie", "__Host-ISB_preview=x; Path=/; Secure"},
              {"Set-Cookie", "CF_Authorization=x"},
              {"Content-Type", "text/html"}};
  EditSetCookies(f);
  EXPECT_EQ(
      f,
      (Fields{{"Set-Cookie", "sid=1; Path=/; HttpOnly"}, {"Set-Cookie", "theme=dark"}, {"Content-Type", "text/html"}}));
}

TEST(PreviewFilterTest, CookieNamesLikeIsbsAreRecognisedInAnyCaseAndPrefix) {
  EXPECT_TRUE(IsIsbCookieName("isb_session"));
  EXPECT_TRUE(IsIsbCookieName("ISB_x"));
  EXPECT_TRUE(IsIsbCookieName("__Secure-isb_preview"));
  EXPECT_TRUE(IsIsbCookieName("cf_authorization"));
  EXPECT_FALSE(IsIsbCookieName("isbx"));
  EXPECT_FALSE(IsIsbCookieName("session"));
}

}  // namespace
}  // namespace isb::api
