// The judge's URL as `isb serve --judge-url` takes it.
#include "egress/http_client.h"

#include <gtest/gtest.h>

namespace isb::egress {
namespace {

TEST(HttpUrl, Parsed) {
  struct Case {
    const char* url;
    HttpUrl want;
  };
  std::vector<Case> cases = {
      {"https://API.OpenAI.com/v1/chat/completions", {true, "api.openai.com", 443, "/v1/chat/completions"}},
      {"http://judge.test", {false, "judge.test", 80, "/"}},
      {"http://judge.test:8080?model=x", {false, "judge.test", 8080, "/?model=x"}},
      {"https://[2001:db8::1]:8443/v1", {true, "2001:db8::1", 8443, "/v1"}},
      {"http://192.0.2.7/", {false, "192.0.2.7", 80, "/"}},
  };
  for (const Case& c : cases) {
    Result<HttpUrl> got = ParseHttpUrl(c.url);
    ASSERT_TRUE(got.ok()) << c.url << ": " << got.error().message;
    EXPECT_EQ(*got, c.want) << c.url;
  }
}

TEST(HttpUrl, Refused) {
  struct Case {
    const char* url;
    const char* error;
  };
  std::vector<Case> cases = {
      {"judge.test/v1", "URL 'judge.test/v1' must start with http:// or https://"},
      {"http://", "URL 'http://' has no valid host"},
      {"http://judge.test:0/", "URL 'http://judge.test:0/' has an invalid port"},
      {"http://judge.test:99999/", "URL 'http://judge.test:99999/' has an invalid port"},
      {"http://a@judge.test/", "URL 'http://[redacted]@judge.test/' must not carry user information"},
      {"http://judge.test/v1#frag",
       "URL 'http://judge.test/v1#frag' has a space, a control character or a fragment in its path"},
      {"http://judge.test/a b",
       "URL 'http://judge.test/a b' has a space, a control character or a fragment in its path"},
      {"http://judge test/", "URL 'http://judge test/' has an invalid host: it contains ' '"},
  };
  for (const Case& c : cases) {
    Result<HttpUrl> got = ParseHttpUrl(c.url);
    ASSERT_FALSE(got.ok()) << c.url;
    EXPECT_EQ(got.error().code, Code::kInvalidArgument);
    EXPECT_EQ(got.error().message, c.error);
  }
}

}  // namespace
}  // namespace isb::egress
