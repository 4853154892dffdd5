#include "identity/passwords.h"

#include <gtest/gtest.h>

namespace isb::identity {
namespace {

TEST(PasswordsTest, PolicyOnLength) {
  EXPECT_TRUE(CheckPasswordPolicy(std::string(12, 'x')).ok());
  auto short_pw = CheckPasswordPolicy(std::string(11, 'x'));
  ASSERT_FALSE(short_pw.ok());
  EXPECT_EQ(short_pw.error().code, Code::kInvalidArgument);
  EXPECT_EQ(short_pw.error().message, "password: at least 12 characters are needed");
  EXPECT_EQ(CheckPasswordPolicy(std::string(1025, 'x')).error().message, "password: at most 1024 bytes are allowed");
  EXPECT_TRUE(CheckPasswordPolicy(std::string(1024, 'x')).ok());
  EXPECT_EQ(CheckPasswordPolicy(std::string("abcdefghijkl\0m", 14)).error().message,
            "password: NUL bytes are not allowed");
  EXPECT_EQ(HashPassword("short").error().message, "password: at least 12 characters are needed");
}

TEST(PasswordsTest, HashIsArgon2idAndVerifies) {
  auto h = HashPassword("correct horse battery");
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_TRUE(h->starts_with("$argon2id$v=19$m=65536,t=3,p=1$")) << *h;
  EXPECT_EQ(h->find("correct"), std::string::npos);
  EXPECT_TRUE(VerifyPassword(*h, "correct horse battery"));
  EXPECT_FALSE(VerifyPassword(*h, "correct horse batterY"));
  EXPECT_FALSE(VerifyPassword(*h, ""));
  EXPECT_FALSE(NeedsRehash(*h));
  auto again = HashPassword("correct horse battery");
  ASSERT_TRUE(again.ok());
  EXPECT_NE(*again, *h);  // salted
}

TEST(PasswordsTest, BrokenOrEmptyHashesNeverVerify) {
  EXPECT_FALSE(VerifyPassword("", "correct horse battery"));
  EXPECT_FALSE(VerifyPassword("$argon2id$garbage", "correct horse battery"));
  EXPECT_FALSE(VerifyPassword(std::string("$argon2id\0x", 11), "correct horse battery"));
  EXPECT_FALSE(VerifyDummy("correct horse battery"));
  EXPECT_TRUE(NeedsRehash("$argon2id$garbage"));
}

}  // namespace
}  // namespace isb::identity
