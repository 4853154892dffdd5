#include "identity/tokens.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace isb::identity {
namespace {

constexpr SecretKind kAll[] = {SecretKind::kToken,      SecretKind::kSuperadmin, SecretKind::kSession,
                               SecretKind::kInvitation, SecretKind::kReset,      SecretKind::kSetup};

TEST(TokensTest, PrefixesAreTheSpecs) {
  EXPECT_EQ(SecretPrefix(SecretKind::kToken), "isb_tok_");
  EXPECT_EQ(SecretPrefix(SecretKind::kSuperadmin), "isb_sa_");
  EXPECT_EQ(SecretPrefix(SecretKind::kSession), "isb_sess_");
  EXPECT_EQ(SecretPrefix(SecretKind::kInvitation), "isb_inv_");
  EXPECT_EQ(SecretPrefix(SecretKind::kReset), "isb_rst_");
  EXPECT_EQ(SecretPrefix(SecretKind::kSetup), "isb_setup_");
}

TEST(TokensTest, NewSecretsParseBackToTheirKindAndDiffer) {
  std::set<std::string> seen;
  for (SecretKind kind : kAll) {
    for (int i = 0; i < 50; ++i) {
      auto s = NewSecret(kind);
      ASSERT_TRUE(s.ok());
      ASSERT_EQ(s->size(), SecretPrefix(kind).size() + 43);
      ASSERT_TRUE(s->starts_with(SecretPrefix(kind)));
      auto k = ParseSecret(*s);
      ASSERT_TRUE(k.ok()) << "a fresh secret of kind " << static_cast<int>(kind) << " did not parse";
      EXPECT_EQ(*k, kind);
      EXPECT_TRUE(seen.insert(s->substr(SecretPrefix(kind).size())).second);
    }
  }
}

TEST(TokensTest, MalformedSecretsAreRefusedWithoutEcho) {
  const std::string body(43, 'A');
  for (const std::string& bad :
       std::vector<std::string>{"", "isb_tok_", "isb_tok_" + body.substr(1), "isb_tok_" + body + "A",
                                "isb_tok_" + body.substr(1) + "=", "isb_tok_" + body.substr(1) + "+",
                                "isb_tok_" + body.substr(1) + "B",  // a non-canonical last character
                                "isb_ws_" + body, "ISB_TOK_" + body, "Bearer isb_tok_" + body, "isb_tok_" + body + "\n",
                                "isb_tok_" + body.substr(1) + std::string(1, '\0')}) {
    auto k = ParseSecret(bad);
    ASSERT_FALSE(k.ok()) << "accepted a malformed secret of " << bad.size() << " bytes";
    EXPECT_EQ(k.error().code, Code::kUnauthenticated);
    EXPECT_EQ(k.error().message, "malformed token");
  }
  EXPECT_TRUE(ParseSecret("isb_tok_" + body).ok());
  EXPECT_TRUE(ParseSecret("isb_tok_" + body.substr(1) + "w").ok());  // w = 110000: low bits zero
  EXPECT_FALSE(ParseSecret("isb_tok_" + body.substr(1) + "_").ok());
}

TEST(TokensTest, HashIsSha256HexOfTheWholeSecret) {
  // SHA-256("abc")
  EXPECT_EQ(SecretHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto s = NewSecret(SecretKind::kToken);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(SecretHash(*s).size(), 64u);
  EXPECT_NE(SecretHash(*s), SecretHash(s->substr(8)));  // the prefix is part of what is hashed
}

TEST(TokensTest, HashesEqualIsExact) {
  std::string a = SecretHash("x"), b = SecretHash("y");
  EXPECT_TRUE(HashesEqual(a, a));
  EXPECT_FALSE(HashesEqual(a, b));
  EXPECT_FALSE(HashesEqual(a, a.substr(1)));
  EXPECT_TRUE(HashesEqual("", ""));
}

}  // namespace
}  // namespace isb::identity
