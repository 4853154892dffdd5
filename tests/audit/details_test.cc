#include "audit/details.h"

#include <gtest/gtest.h>

namespace isb::audit {
namespace {

using nlohmann::json;

TEST(DetailsTest, ExecKeepsArgvAndEnvNamesOnly) {
  json in = {{"sandbox", "sb1"},
             {"argv", {"sh", "-c", "echo hi", 7}},
             {"env", {{"TOKEN", "s3cr3t-value"}, {"A", "1"}}},
             {"stdin", "typed password"},
             {"timeout", 30},
             {"workdir", {{"nested", "object"}}}};
  json out = DefaultDetailsPolicy().Filter("sandbox_exec", in);
  EXPECT_EQ(out.dump(), R"({"argv":["sh","-c","echo hi"],"env":["A","TOKEN"],"timeout":30})");
}

// What a create publishes is on record: each port's scalar fields, nothing else of an element.
TEST(DetailsTest, ACreateKeepsThePortsItPublishes) {
  json in = {{"name", "web"},
             {"ports",
              {{{"sandbox_port", 8080}, {"host_port", 18080}, {"host_address", "127.0.0.1"}},
               {{"sandbox_port", 22}, {"host_port", 2222}, {"extra", {{"nested", 1}}}},
               "not a port"}}};
  EXPECT_EQ(DefaultDetailsPolicy().Filter("sandbox_create", in).dump(),
            R"({"name":"web","ports":[{"host_address":"127.0.0.1","host_port":18080,"sandbox_port":8080},)"
            R"({"host_port":2222,"sandbox_port":22}]})");
}

TEST(DetailsTest, KeyNamesFromNameEqualsValueStrings) {
  DetailsPolicy p;
  p.Allow("x", {{"env", Keep::kKeyNames}});
  EXPECT_EQ(p.Filter("x", {{"env", {"B=2", "A=secret=x", "C", 3}}}).dump(), R"({"env":["A","B","C"]})");
  EXPECT_EQ(p.Filter("x", {{"env", "A=1"}}).dump(), "{}");
}

TEST(DetailsTest, UnknownActionsAndNonObjectsKeepNothing) {
  EXPECT_EQ(DefaultDetailsPolicy().Filter("secret_read", {{"value", "v"}}).dump(), "{}");
  EXPECT_EQ(DefaultDetailsPolicy().Filter("sandbox_exec", json::array({"argv"})).dump(), "{}");
  EXPECT_EQ(DefaultDetailsPolicy().Filter("sandbox_file_write", {{"path", "/a"}, {"content", "x"}}).dump(),
            R"({"path":"/a"})");
}

TEST(DetailsTest, ScalarsOnly) {
  DetailsPolicy p;
  p.Allow("x", {{"s"}, {"n"}, {"b"}, {"f"}, {"z"}, {"a"}, {"o"}});
  json in = {{"s", "v"}, {"n", -3}, {"b", true}, {"f", 1.5}, {"z", nullptr}, {"a", {1}}, {"o", {{"k", 1}}}};
  EXPECT_EQ(p.Filter("x", in).dump(), R"({"b":true,"f":1.5,"n":-3,"s":"v"})");
}

TEST(DetailsTest, LongValuesAreCut) {
  DetailsPolicy p;
  p.Allow("x", {{"s"}, {"l", Keep::kStrings}});
  std::string s = std::string(kMaxDetailBytes - 1, 'a') + "\xC3\xA9";  // é straddles the limit
  json in = {{"s", s}, {"l", std::vector<std::string>(kMaxDetailItems + 3, "x")}};
  json out = p.Filter("x", in);
  EXPECT_EQ(out["s"].get<std::string>(), std::string(kMaxDetailBytes - 1, 'a') + "\xE2\x80\xA6");
  ASSERT_EQ(out["l"].size(), kMaxDetailItems + 1);
  EXPECT_EQ(out["l"].back().get<std::string>(), "\xE2\x80\xA6 3 more");
}

TEST(DetailsTest, CleanTextReplacesInvalidUtf8) {
  EXPECT_EQ(CleanText("ok"), "ok");
  EXPECT_EQ(CleanText("a\xFF"
                      "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(CleanText("caf\xC3\xA9"), "caf\xC3\xA9");
}

TEST(DetailsTest, OutcomesAreCodesNeverMessages) {
  EXPECT_EQ(OutcomeOf(Status()), "ok");
  EXPECT_EQ(OutcomeOf(Status(Error::Of(Code::kNotFound, "no sandbox named hunter2"))), "not_found");
  EXPECT_EQ(OutcomeOf(Result<int>(Error::Of(Code::kForbidden, "x"))), "forbidden");
  EXPECT_EQ(OutcomeOf(Result<int>(3)), "ok");
  EXPECT_TRUE(IsOutcome("unauthenticated"));
  EXPECT_TRUE(IsOutcome("rate_limited")) << "the last code, a refused sign-in's";
  EXPECT_TRUE(IsOutcome("ok"));
  EXPECT_FALSE(IsOutcome("no sandbox named hunter2"));
  EXPECT_FALSE(IsOutcome(""));
}

}  // namespace
}  // namespace isb::audit
