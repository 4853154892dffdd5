// `isb audit ls`'s table and `isb audit export`'s paging, against a scripted daemon.
#include "cli/audit_rows.h"

#include <gtest/gtest.h>

#include <atomic>

#include "cli/test_server.h"

namespace isb::cli {
namespace {

using testing::JsonAnswer;
using testing::SeenRequest;
using testing::SendAll;
using testing::TestServer;

json Row(int64_t id) {
  return {{"id", id},
          {"time", 1'700'000'000'000 + id},
          {"org", "acme"},
          {"actor", "user:alice"},
          {"action", "sandbox_create"},
          {"outcome", "ok"},
          {"prev_hash", "p" + std::to_string(id)},
          {"hash", "h" + std::to_string(id)}};
}

ToolClient ClientOf(const TestServer& server) {
  return ToolClient(HttpClient(Endpoint{server.socket_path(), "", 0}), "");
}

TEST(AuditTableTest, Columns) {
  json result = {{"records",
                  {{{"id", 7},
                    {"time", 1'700'000'000'123},
                    {"actor", "token:2"},
                    {"action", "member_add"},
                    {"target", "bob"},
                    {"outcome", "forbidden"},
                    {"surface", "rest"}}}},
                 {"next_after", nullptr}};
  EXPECT_EQ(AuditTable(result),
            "ID       TIME                 ACTOR                    ACTION               TARGET                 "
            "OUTCOME            SURFACE\n"
            "7        2023-11-14T22:13:20Z token:2                  member_add           bob                    "
            "forbidden          rest\n");
}

TEST(HistoryTableTest, ColumnsWithTheReasonLast) {
  json result = {{"events",
                  {{{"id", 4},
                    {"time", 1'700'000'000'123},
                    {"sandbox", "sb-0123456789abcdef"},
                    {"event", "reaped"},
                    {"actor", "daemon"},
                    {"reason", "idle for 2h"}},
                   {{"id", 5},
                    {"time", 1'700'000'001'000},
                    {"sandbox", "sb-0123456789abcdef"},
                    {"event", "removed"},
                    {"actor", "user:alice"}}}},
                 {"next_after", nullptr}};
  EXPECT_EQ(HistoryTable(result),
            "ID       TIME                 SANDBOX              EVENT          ACTOR                    REASON\n"
            "4        2023-11-14T22:13:20Z sb-0123456789abcdef  reaped         daemon                   idle for 2h\n"
            "5        2023-11-14T22:13:21Z sb-0123456789abcdef  removed        user:alice               \n");
}

TEST(ExportAuditTest, PagesUntilNextAfterIsNull) {
  std::atomic<int> calls{0};
  TestServer server([&](int fd, const SeenRequest&) {
    int n = calls++;
    json page = n == 0 ? json{{"records", {Row(1), Row(2)}}, {"next_after", 2}}
                       : json{{"records", {Row(3)}}, {"next_after", nullptr}};
    SendAll(fd, JsonAnswer(200, json{{"result", page}}.dump()));
  });
  std::vector<std::string> lines;
  Status st = ExportAudit(ClientOf(server), [&](const std::string& line) { lines.push_back(line); });
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(lines, (std::vector<std::string>{Row(1).dump(), Row(2).dump(), Row(3).dump()}));
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0].head.find("POST /api/v1/tools/audit_list "), std::string::npos) << seen[0].head;
  EXPECT_EQ(json::parse(seen[0].body), (json{{"limit", 1000}}));
  EXPECT_EQ(json::parse(seen[1].body), (json{{"limit", 1000}, {"after", 2}}));
}

TEST(ExportAuditTest, ARefusalEndsItWithTheDaemonsError) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(
        fd,
        JsonAnswer(403, R"({"error":"forbidden","message":"role viewer may not call audit_list, which needs admin"})"));
  });
  int lines = 0;
  Status st = ExportAudit(ClientOf(server), [&](const std::string&) { ++lines; });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Code::kForbidden);
  EXPECT_EQ(st.error().message, "role viewer may not call audit_list, which needs admin");
  EXPECT_EQ(ExitCodeFor(st.error()), kExitRefused);
  EXPECT_EQ(lines, 0);
}

TEST(ExportAuditTest, ANextAfterThatDoesNotAdvanceStopsIt) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(200, json{{"result", {{"records", {Row(5)}}, {"next_after", 0}}}}.dump()));
  });
  std::vector<std::string> lines;
  Status st = ExportAudit(ClientOf(server), [&](const std::string& line) { lines.push_back(line); });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "audit_list: next_after does not advance");
  EXPECT_EQ(ExitCodeFor(st.error()), kExitIsbFailed);
  EXPECT_EQ(lines.size(), 1u);
}

}  // namespace
}  // namespace isb::cli
