#include "audit/verify_report.h"

#include <gtest/gtest.h>

namespace isb::audit {
namespace {

const std::string kA(64, 'a'), kB(64, 'b'), kZ(64, '0');

TEST(VerifyReportTest, Ok) {
  VerifyResult r{.ok = true, .rows = 3, .head = {3, kA}, .pruned_through = {0, kZ}};
  EXPECT_EQ(VerifyReportJson(r).dump(),
            R"({"first_broken":null,"head":{"hash":")" + kA + R"(","id":3},"ok":true,"pruned_through":null,"rows":3})");
  EXPECT_EQ(VerifyReportLine("audit log", r), "audit log ok: 3 rows, head 3 " + kA);
}

TEST(VerifyReportTest, OkAfterPruning) {
  VerifyResult r{.ok = true, .rows = 1, .head = {12, kA}, .pruned_through = {11, kB}};
  EXPECT_EQ(VerifyReportJson(r)["pruned_through"].dump(), R"({"hash":")" + kB + R"(","id":11})");
  EXPECT_EQ(VerifyReportLine("history", r), "history ok: 1 row, head 12 " + kA + ", pruned through 11 " + kB);
}

TEST(VerifyReportTest, Broken) {
  VerifyResult r{
      .ok = false, .rows = 12, .head = {12, kA}, .pruned_through = {0, kZ}, .first_broken = Broken{7, kReasonHash}};
  EXPECT_EQ(VerifyReportJson(r)["first_broken"].dump(),
            R"({"id":7,"reason":"hash does not match the row's contents"})");
  EXPECT_EQ(VerifyReportJson(r)["ok"], false);
  EXPECT_EQ(VerifyReportLine("audit log", r),
            "audit log BROKEN at row 7: hash does not match the row's contents (12 rows, head 12 " + kA + ")");
}

}  // namespace
}  // namespace isb::audit
