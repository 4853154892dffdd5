// The ledger's check on rows made up here: each way the audit log can differ from the calls is named.
#include "e2e/audit_ledger.h"

#include <gtest/gtest.h>

namespace isb::e2e {
namespace {

ExpectedRow Call(const std::string& action, const std::string& outcome, const std::string& request_id = "",
                 ExpectedRow::Rows rows = ExpectedRow::Rows::kOne) {
  ExpectedRow c;
  c.action = action;
  c.surface = "unix";
  c.outcome = outcome;
  c.actor_kind = "superadmin";
  c.request_id = request_id;
  c.rows = rows;
  c.where = "call " + action + (request_id.empty() ? "" : " " + request_id);
  return c;
}

AuditRow Row(int64_t id, const std::string& action, const std::string& outcome, const std::string& request_id) {
  return AuditRow{id, action, "unix", outcome, "superadmin", "default", request_id};
}

// Logs `c` as a call that started and ended before the next one.
void Sequential(AuditLedger& ledger, ExpectedRow c) {
  uint64_t started = ledger.Tick();
  ledger.Add(std::move(c), started, ledger.Tick());
}

TEST(AuditLedgerTest, RowsThatAreExactlyTheCallsPass) {
  AuditLedger ledger;
  Sequential(ledger, Call("sandbox_create", "ok", "e2e-1"));
  Sequential(ledger, Call("sandbox_get", "ok", "e2e-2", ExpectedRow::Rows::kNone));
  ledger.AddGroup({Call("sandbox_exec", "ok"), Call("sandbox_exec_input", "ok")});
  Sequential(ledger, Call("sandbox_remove", "not_found", "e2e-3"));
  EXPECT_EQ(ledger.Check({Row(1, "sandbox_create", "ok", "e2e-1"), Row(2, "sandbox_exec_input", "ok", "req-1"),
                          Row(3, "sandbox_exec", "ok", "req-2"), Row(4, "sandbox_remove", "not_found", "e2e-3")}),
            std::vector<std::string>{});
}

TEST(AuditLedgerTest, AMissingRowNamesItsCall) {
  AuditLedger ledger;
  Sequential(ledger, Call("sandbox_create", "ok", "e2e-1"));
  ledger.AddGroup({Call("sandbox_stop", "ok")});
  EXPECT_EQ(ledger.Check({}), (std::vector<std::string>{
                                  "no audit row for call sandbox_create e2e-1 (sandbox_create on unix, outcome ok, "
                                  "actor_kind superadmin, request e2e-1)",
                                  "no audit row for call sandbox_stop (sandbox_stop on unix, outcome ok, actor_kind "
                                  "superadmin); the next unexplained row: none"}));
}

TEST(AuditLedgerTest, AWrongOutcomeAnExtraRowAndARowOfAReadAreNamed) {
  AuditLedger ledger;
  Sequential(ledger, Call("sandbox_create", "ok", "e2e-1"));
  Sequential(ledger, Call("sandbox_list", "ok", "e2e-2", ExpectedRow::Rows::kNone));
  EXPECT_EQ(ledger.Check({Row(1, "sandbox_create", "internal", "e2e-1"), Row(2, "sandbox_list", "ok", "e2e-2"),
                          Row(3, "sandbox_remove", "ok", "req-9")}),
            (std::vector<std::string>{
                "the audit row of call sandbox_create e2e-1 (sandbox_create on unix, outcome ok, actor_kind "
                "superadmin, request e2e-1) is row 1 [sandbox_create on unix, outcome internal, actor_kind "
                "superadmin, org default, request e2e-1]",
                "call sandbox_list e2e-2 (sandbox_list on unix, outcome ok, actor_kind superadmin, request e2e-2) must "
                "leave no audit row, yet row 2 [sandbox_list on unix, outcome ok, actor_kind superadmin, org default, "
                "request e2e-2]",
                "an audit row no call of the test explains: row 3 [sandbox_remove on unix, outcome ok, actor_kind "
                "superadmin, org default, request req-9]"}));
}

TEST(AuditLedgerTest, RowsOutOfTheOrderOfCallsThatDidNotOverlapAreNamed) {
  AuditLedger ledger;
  Sequential(ledger, Call("sandbox_stop", "ok", "e2e-1"));
  Sequential(ledger, Call("sandbox_start", "ok", "e2e-2"));
  std::vector<std::string> out =
      ledger.Check({Row(1, "sandbox_start", "ok", "e2e-2"), Row(2, "sandbox_stop", "ok", "e2e-1")});
  ASSERT_EQ(out.size(), 1u) << ::testing::PrintToString(out);
  EXPECT_EQ(out[0].rfind("out of order: call sandbox_start e2e-2 ", 0), 0u) << out[0];

  // Calls that overlapped may be recorded in either order.
  AuditLedger overlapping;
  uint64_t a = overlapping.Tick(), b = overlapping.Tick();
  overlapping.Add(Call("sandbox_stop", "ok", "e2e-1"), a, overlapping.Tick());
  overlapping.Add(Call("sandbox_start", "ok", "e2e-2"), b, overlapping.Tick());
  EXPECT_EQ(overlapping.Check({Row(1, "sandbox_start", "ok", "e2e-2"), Row(2, "sandbox_stop", "ok", "e2e-1")}),
            std::vector<std::string>{});
}

TEST(AuditLedgerTest, MaybeAndAnyCallsTakeWhatComes) {
  AuditLedger ledger;
  ledger.AddGroup({Call("sandbox_exec", "ok"), Call("sandbox_exec_input", "ok", "", ExpectedRow::Rows::kAny),
                   Call("sandbox_exec_resize", "ok", "", ExpectedRow::Rows::kMaybe)});
  ledger.AddGroup({Call("sandbox_create", "", "", ExpectedRow::Rows::kMaybe)});
  EXPECT_EQ(ledger.Check({Row(1, "sandbox_exec_input", "ok", "req-1"), Row(2, "sandbox_exec_input", "ok", "req-2"),
                          Row(3, "sandbox_exec", "ok", "req-3"), Row(4, "sandbox_create", "timeout", "req-4")}),
            std::vector<std::string>{});
  // A second resize is one too many.
  std::vector<std::string> out =
      ledger.Check({Row(1, "sandbox_exec", "ok", "req-1"), Row(2, "sandbox_exec_resize", "ok", "req-2"),
                    Row(3, "sandbox_exec_resize", "ok", "req-3")});
  ASSERT_EQ(out.size(), 1u) << ::testing::PrintToString(out);
  EXPECT_EQ(out[0].rfind("an audit row no call of the test explains: row 3 ", 0), 0u) << out[0];
}

}  // namespace
}  // namespace isb::e2e
