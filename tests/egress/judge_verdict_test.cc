// The verdict in a chat-completions response, and the request the judge sends.
#include "egress/judge_verdict.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace isb::egress {
namespace {

using nlohmann::json;

std::string Completion(const json& content) {
  return json({{"choices", json::array({{{"message", {{"role", "assistant"}, {"content", content}}}}})}}).dump();
}

TEST(JudgeVerdict, ClearVerdicts) {
  auto allow = ParseChatVerdict(Completion(R"( {"verdict":"allow","reason":"docs site","extra":1} )"));
  ASSERT_TRUE(allow.ok()) << allow.error().message;
  EXPECT_TRUE(allow->allow);
  EXPECT_EQ(allow->reason, "docs site");
  auto deny = ParseChatVerdict(Completion(R"({"verdict":"deny"})"));
  ASSERT_TRUE(deny.ok());
  EXPECT_FALSE(deny->allow);
  EXPECT_EQ(deny->reason, "");
}

TEST(JudgeVerdict, ReasonIsOneBoundedLine) {
  auto v = ParseChatVerdict(Completion(json({{"verdict", "deny"}, {"reason", "two\nlines\r\tand\x7f"}}).dump()));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->reason, "two lines  and ");
  // Cut at a character boundary: 299 ASCII bytes, then a two-byte character that would end past 300.
  std::string long_reason = std::string(299, 'a') + "\xc3\xa9" + "tail";
  v = ParseChatVerdict(Completion(json({{"verdict", "deny"}, {"reason", long_reason}}).dump()));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->reason, std::string(299, 'a'));
}

TEST(JudgeVerdict, NoVerdict) {
  struct Case {
    std::string body;
    const char* error;
  };
  std::vector<Case> cases = {
      {"", "the response is not JSON"},
      {"[1]", "the response is not a JSON object"},
      {"{}", "the response has no choices"},
      {R"({"choices":{}})", "the response has no choices"},
      {R"({"choices":[1]})", "the first choice has no message"},
      {R"({"choices":[{"message":"x"}]})", "the first choice has no message"},
      {R"({"choices":[{"message":{"content":null}}]})", "the message has no text content"},
      {Completion("allow"), "the message content is not JSON"},
      {Completion("```json\n{\"verdict\":\"allow\"}\n```"), "the message content is not JSON"},
      {Completion("\"allow\""), "the message content is not a JSON object"},
      {Completion("{}"), "the answer has no verdict"},
      {Completion(R"({"Verdict":"allow"})"), "the answer has no verdict"},
      {Completion(R"({"verdict":["allow"]})"), "the answer has no verdict"},
      {Completion(R"({"verdict":"allow "})"), "the verdict is neither \"allow\" nor \"deny\""},
      {Completion(R"({"verdict":"yes"})"), "the verdict is neither \"allow\" nor \"deny\""},
      {Completion(R"({"verdict":"allow","verdict":"allow"})"), "the verdict is given more than once"},
      {Completion(R"({"verdict":"allow","reason":{"x":1}})"), "the reason is not a string"},
  };
  for (const Case& c : cases) {
    auto v = ParseChatVerdict(c.body);
    ASSERT_FALSE(v.ok()) << c.body;
    EXPECT_EQ(v.error().code, Code::kInvalidArgument);
    EXPECT_EQ(v.error().message, c.error) << c.body;
  }
}

TEST(JudgeVerdict, NestedVerdictKeysAreNotCountedTwice) {
  auto v = ParseChatVerdict(Completion(R"({"verdict":"deny","details":{"verdict":"allow"}})"));
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_FALSE(v->allow);
}

TEST(JudgeVerdict, RequestBody) {
  JudgeQuestion q{"acme", "p1", "sbx-9", "files.example.com", 443, "", ""};
  json body = json::parse(ChatRequestBody("m-1", q));
  EXPECT_EQ(body["model"], "m-1");
  EXPECT_EQ(body["response_format"]["type"], "json_object");
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(json::parse(body["messages"][1]["content"].get<std::string>()), json({{"org", "acme"},
                                                                                  {"sandbox", "sbx-9"},
                                                                                  {"host", "files.example.com"},
                                                                                  {"port", 443},
                                                                                  {"method", ""},
                                                                                  {"path", ""}}));
  // A path that is not UTF-8 still makes valid JSON.
  q.path = "/\xff\xfe";
  EXPECT_FALSE(json::parse(ChatRequestBody("m-1", q), nullptr, false).is_discarded());
}

}  // namespace
}  // namespace isb::egress
