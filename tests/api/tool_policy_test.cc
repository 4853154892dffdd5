// The tool policy: names and globs, deny wins, an empty allow list allows all, and each bad entry named.
#include "api/tool_policy.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

ToolPolicy MustParse(std::string_view allow, std::string_view deny) {
  auto p = ToolPolicy::Parse(allow, deny);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? *p : ToolPolicy();
}

TEST(ToolPolicyTest, DefaultAllowsEveryTool) {
  ToolPolicy all;
  EXPECT_TRUE(all.Allows("sandbox_exec"));
  EXPECT_TRUE(all.Allows("whoami"));
  EXPECT_TRUE(MustParse("", "").Allows("secret_get"));
}

TEST(ToolPolicyTest, AllowListNamesAndGlobs) {
  ToolPolicy p = MustParse("sandbox_*,whoami", "");
  EXPECT_TRUE(p.Allows("sandbox_exec"));
  EXPECT_TRUE(p.Allows("sandbox_list"));
  EXPECT_TRUE(p.Allows("whoami"));
  EXPECT_FALSE(p.Allows("secret_get"));
  EXPECT_FALSE(p.Allows("whoami2"));
  EXPECT_FALSE(p.Allows("my_sandbox_exec"));

  ToolPolicy q = MustParse("sandbox_???", "");
  EXPECT_TRUE(q.Allows("sandbox_get"));
  EXPECT_FALSE(q.Allows("sandbox_list"));
  EXPECT_FALSE(q.Allows("sandbox_ge"));
}

TEST(ToolPolicyTest, DenyWins) {
  ToolPolicy p = MustParse("sandbox_*", "sandbox_exec,sandbox_file_*");
  EXPECT_FALSE(p.Allows("sandbox_exec"));
  EXPECT_FALSE(p.Allows("sandbox_file_read"));
  EXPECT_TRUE(p.Allows("sandbox_list"));
  EXPECT_FALSE(p.Allows("whoami"));  // not in the allow list

  ToolPolicy only_deny = MustParse("", "secret_*");
  EXPECT_FALSE(only_deny.Allows("secret_get"));
  EXPECT_TRUE(only_deny.Allows("secretary"));
  EXPECT_TRUE(only_deny.Allows("sandbox_exec"));

  ToolPolicy both = MustParse("whoami", "whoami");
  EXPECT_FALSE(both.Allows("whoami"));
  EXPECT_FALSE(MustParse("", "*").Allows("whoami"));
}

TEST(ToolPolicyTest, BadEntriesNamed) {
  const std::string kRule = " is not a tool name or glob (1 to 64 characters of a-z, 0-9, _, * and ?)";
  struct Case {
    std::string allow, deny;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"a,,b", "", "--allow-tools: ''" + kRule},
           {"a,", "", "--allow-tools: ''" + kRule},
           {",a", "", "--allow-tools: ''" + kRule},
           {"Sandbox_exec", "", "--allow-tools: 'Sandbox_exec'" + kRule},
           {"sandbox exec", "", "--allow-tools: 'sandbox exec'" + kRule},
           {"whoami", "secret_*,x-y", "--deny-tools: 'x-y'" + kRule},
           {"", std::string(65, 'a'), "--deny-tools: '" + std::string(64, 'a') + "'" + kRule},
       }) {
    auto p = ToolPolicy::Parse(c.allow, c.deny);
    ASSERT_FALSE(p.ok()) << c.allow << " / " << c.deny;
    EXPECT_EQ(p.error().code, Code::kInvalidArgument);
    EXPECT_EQ(p.error().message, c.message);
  }
}

}  // namespace
}  // namespace isb::api
