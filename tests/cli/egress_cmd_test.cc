// `isb egress`: what show prints of each egress form, what set sends for hosts and --add/--rm, and the log's table.
#include "cli/egress_cmd.h"

#include <gtest/gtest.h>

namespace isb::cli {
namespace {

TEST(EgressTextTest, ModesAloneListsOneHostALineAndTheObjectFormKeyed) {
  EXPECT_EQ(EgressText("none"), "none\n");
  EXPECT_EQ(EgressText("open"), "open\n");
  EXPECT_EQ(EgressText(json::array({"pypi.org", "*.github.com:443"})), "pypi.org\n*.github.com:443\n");
  EXPECT_EQ(EgressText(json{{"allow", {"api.example.com"}}, {"secrets", {"KEY", {{"name", "K2"}, {"env", "X"}}}}}),
            "allow api.example.com\nsecret KEY\nsecret K2\n");
  EXPECT_EQ(EgressText(json{{"block", {"evil.example"}}}), "block evil.example\n");
}

TEST(NextEgressTest, HostsReplaceTheListAndNoneOrOpenAreSentAsModes) {
  EXPECT_EQ(*NextEgress("box", json::array({"a.example"}), {.replace = {"b.example", "c.example"}}),
            json::array({"b.example", "c.example"}));
  EXPECT_EQ(*NextEgress("box", "none", {.replace = {"b.example"}}), json::array({"b.example"}));
  EXPECT_EQ(*NextEgress("box", json::array({"a.example"}), {.replace = {"open"}}), json("open"));
}

TEST(NextEgressTest, TheObjectFormKeepsItsSecretsWhenItsAllowListChanges) {
  const json now = {{"allow", {"a.example"}}, {"secrets", {"KEY"}}, {"on_leak", "block"}};
  EXPECT_EQ(*NextEgress("box", now, {.replace = {"b.example"}}),
            (json{{"allow", {"b.example"}}, {"secrets", {"KEY"}}, {"on_leak", "block"}}));
  EXPECT_EQ(*NextEgress("box", now, {.add = {"c.example"}, .remove = {"a.example"}}),
            (json{{"allow", {"c.example"}}, {"secrets", {"KEY"}}, {"on_leak", "block"}}));
}

TEST(NextEgressTest, AddAppendsOnceAndRmTakesOut) {
  const json now = json::array({"a.example", "b.example"});
  EXPECT_EQ(*NextEgress("box", now, {.add = {"c.example", "a.example"}}),
            json::array({"a.example", "b.example", "c.example"}));
  EXPECT_EQ(*NextEgress("box", now, {.remove = {"a.example"}}), json::array({"b.example"}));
}

TEST(NextEgressTest, AddAndRmCompareRulesNotSpellings) {
  const json now = json::array({"a.example", "b.example:8443"});
  // The same rule spelt otherwise: case, a trailing dot, the default port.
  EXPECT_EQ(*NextEgress("box", now, {.add = {"A.Example.", "a.example:443"}}), now);
  EXPECT_EQ(*NextEgress("box", now, {.remove = {"A.EXAMPLE:443"}}), json::array({"b.example:8443"}));
  // Another port is another rule.
  EXPECT_EQ(*NextEgress("box", now, {.add = {"b.example"}}), json::array({"a.example", "b.example:8443", "b.example"}));
  EXPECT_EQ(NextEgress("box", now, {.remove = {"b.example"}}).error().message,
            "--rm 'b.example': not in box's egress (isb egress show box)");
}

TEST(NextEgressTest, AnRmNotInTheListAndAddOnAModeAreRefusedSayingWhatToDo) {
  Result<json> missing = NextEgress("box", json::array({"a.example"}), {.remove = {"z.example"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Code::kInvalidArgument);
  EXPECT_EQ(missing.error().message, "--rm 'z.example': not in box's egress (isb egress show box)");
  Result<json> mode = NextEgress("box", "none", {.add = {"a.example"}});
  ASSERT_FALSE(mode.ok());
  EXPECT_EQ(mode.error().message,
            "--add/--rm change a list of hosts, and box's egress is none; give the whole list instead: isb egress "
            "set box HOST...");
  // An object without an allow list keeps what it has: neither --rm nor a whole new list would.
  const std::string no_allow =
      "box's egress is an object without an allow list (a block list, a judge or secrets alone): setting hosts here "
      "would drop those; change it with the sandbox_egress_set tool (isb egress show box)";
  EXPECT_EQ(NextEgress("box", json{{"block", {"x.example"}}}, {.remove = {"x.example"}}).error().message, no_allow);
  EXPECT_EQ(NextEgress("box", json{{"secrets", {"K"}}}, {.replace = {"a.example"}}).error().message, no_allow);
}

TEST(EgressLogTableTest, TimeTargetAndTheProxysReason) {
  const json rows = json::array({{{"id", 3},
                                  {"time", 1'700'000'000'123},
                                  {"target", "evil.example:443"},
                                  {"details", {{"reason", "not in the sandbox's egress list"}}}}});
  EXPECT_EQ(EgressLogTable(rows),
            "TIME                 TARGET                         REASON\n"
            "2023-11-14T22:13:20Z evil.example:443               not in the sandbox's egress list\n");
  EXPECT_EQ(EgressLogTable(json::array()), "TIME                 TARGET                         REASON\n");
}

}  // namespace
}  // namespace isb::cli
