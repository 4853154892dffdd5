#include "image/registry_auth.h"

#include <gtest/gtest.h>

namespace isb::image {
namespace {

TEST(ParseAuthChallenge, ReadsDockerHubsBearerChallenge) {
  Result<AuthChallenge> c = ParseAuthChallenge(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/python:pull")");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->scheme, AuthChallenge::Scheme::kBearer);
  EXPECT_EQ(c->realm, "https://auth.docker.io/token");
  EXPECT_EQ(c->service, "registry.docker.io");
  EXPECT_EQ(c->scope, "repository:library/python:pull");
}

TEST(ParseAuthChallenge, TakesAnyCaseSpacesTokensAndEscapes) {
  Result<AuthChallenge> c = ParseAuthChallenge(R"(bearer  Realm = "https://a.test/t?x=\"1\"" , service=reg.test)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->realm, R"(https://a.test/t?x="1")");
  EXPECT_EQ(c->service, "reg.test");
  EXPECT_EQ(c->scope, "");
  EXPECT_EQ(ParseAuthChallenge(R"(Basic realm="isb-test")")->scheme, AuthChallenge::Scheme::kBasic);
}

TEST(ParseAuthChallenge, RefusesMalformedChallengesWithoutQuotingThem) {
  auto refusal = [](std::string_view h) { return ParseAuthChallenge(h).error().message; };
  const std::string prefix = "registry sent a malformed WWW-Authenticate challenge: ";
  EXPECT_EQ(refusal("Digest realm=x"), prefix + "the scheme is neither Basic nor Bearer");
  EXPECT_EQ(refusal("Bearer service=x"), prefix + "a Bearer challenge has no realm");
  EXPECT_EQ(refusal(R"(Bearer realm="https://a)"), prefix + "parameter 'realm' has an unterminated quoted value");
  EXPECT_EQ(refusal("Bearer realm=a realm2=b"), prefix + "parameters must be separated by commas");
  EXPECT_EQ(refusal("Bearer realm=a,realm=b"), prefix + "parameter 'realm' appears twice");
  EXPECT_EQ(refusal("Bearer realm"), prefix + "parameter 'realm' has no value");
  EXPECT_EQ(refusal("Bearer realm=a,=b"), prefix + "a parameter has no name");
  EXPECT_EQ(ParseAuthChallenge("Negotiate abc").error().code, Code::kUnavailable);
}

TEST(ParseTokenResponse, ReadsTokenOrAccessTokenAndExpiry) {
  Result<BearerToken> t =
      ParseTokenResponse(R"({"token":"abc.def","expires_in":300,"issued_at":"2024-01-01T00:00:00Z"})");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->token, "abc.def");
  EXPECT_EQ(t->expires_in, std::chrono::seconds(300));
  Result<BearerToken> oauth = ParseTokenResponse(R"({"access_token":"xyz","expires_in":5})");
  EXPECT_EQ(oauth->token, "xyz");
  EXPECT_EQ(oauth->expires_in, std::chrono::seconds(60));
}

TEST(ParseTokenResponse, RefusesAnswersWithoutAUsableTokenAndNeverQuotesThem) {
  EXPECT_EQ(ParseTokenResponse("secret-ish").error().message,
            "the registry's token endpoint did not answer with a JSON object");
  EXPECT_EQ(ParseTokenResponse(R"({"token":""})").error().message,
            "the registry's token endpoint answered without a token");
  EXPECT_EQ(ParseTokenResponse(R"({"token":"a\r\nX-Injected: 1"})").error().message,
            "the registry's token endpoint answered with a token that has spaces or control bytes");
}

TEST(BasicAuthorization, IsBase64OfUserColonPassword) {
  EXPECT_EQ(BasicAuthorization({"alice", "s3cret"}), "Basic YWxpY2U6czNjcmV0");
}

TEST(TokenQuery, PercentEncodesServiceAndScope) {
  AuthChallenge c{AuthChallenge::Scheme::kBearer, "https://a.test/token", "reg test", "repository:a/b:pull"};
  EXPECT_EQ(TokenQuery(c, false), "?service=reg%20test&scope=repository%3Aa%2Fb%3Apull");
  EXPECT_EQ(TokenQuery(c, true), "&service=reg%20test&scope=repository%3Aa%2Fb%3Apull");
}

TEST(TokenCache, KeepsATokenPerScope) {
  TokenCache cache;
  AuthChallenge a{AuthChallenge::Scheme::kBearer, "https://a.test/token", "reg", "repository:a:pull"};
  AuthChallenge b = a;
  b.scope = "repository:b:pull";
  cache.Put(a, BearerToken{"token-a", std::chrono::seconds(300)});
  EXPECT_EQ(cache.Get(a), "token-a");
  EXPECT_EQ(cache.Get(b), std::nullopt);
}

}  // namespace
}  // namespace isb::image
