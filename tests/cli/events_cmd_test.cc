#include "cli/events_cmd.h"

#include <gtest/gtest.h>

namespace isb::cli {
namespace {

TEST(EventLine, NamesTimeTypeOrgSandboxNameAndState) {
  auto e = nlohmann::json::parse(R"({"id":7,"type":"created","org":"acme","sandbox":"sb-0123456789abcdef",)"
                                 R"("name":"web","state":"running","at":"2026-12-05T16:52:54.123Z"})");
  EXPECT_EQ(EventLine(e), "2026-12-05T16:52:54.123Z created acme/sb-0123456789abcdef (web) running");
}

TEST(EventLine, LeavesOutTheParenthesesOfASandboxWithoutAName) {
  auto e = nlohmann::json::parse(R"({"id":8,"type":"removed","org":"acme","sandbox":"sb-0123456789abcdef",)"
                                 R"("name":"","state":"removed","at":"2026-12-05T16:52:55.000Z"})");
  EXPECT_EQ(EventLine(e), "2026-12-05T16:52:55.000Z removed acme/sb-0123456789abcdef removed");
}

}  // namespace
}  // namespace isb::cli
