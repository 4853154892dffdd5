#include "cli/audit_cmd.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <tuple>

#include "api/json_util.h"
#include "audit/history.h"
#include "audit/log.h"
#include "audit/verify_report.h"
#include "cli/audit_rows.h"
#include "store/db.h"
#include "store/migrations.h"

namespace isb::cli {
namespace {

struct VerifyFlags {
  std::string state_dir = "/var/lib/isb";
  bool json = false;
  std::string audit_head, history_head;  // "ID:HASH" as an earlier verify printed it, kept somewhere else
};

// "ID:HASH" (or "ID HASH", as verify prints a head) as a pinned head.
Result<audit::Head> ParseHead(const std::string& flag, const std::string& text) {
  size_t sep = text.find_first_of(": ");
  audit::Head h;
  char* end = nullptr;
  if (sep != std::string::npos) h.id = std::strtoll(text.c_str(), &end, 10);
  if (sep == std::string::npos || end != text.c_str() + sep || h.id < 1)
    return Error::Of(Code::kInvalidArgument, flag + ": expected ID:HASH as an earlier verify printed the head");
  h.hash = text.substr(sep + 1);
  if (h.hash.size() != 64 || h.hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    return Error::Of(Code::kInvalidArgument, flag + ": the hash must be 64 lowercase hex digits");
  return h;
}

// Exit status: 0 both chains verify, 1 one is broken, 125 isb could not check.
int RunVerify(const VerifyFlags& f) {
  std::optional<audit::Head> audit_head, history_head;
  for (auto [flag, text, out] : {std::tuple("--audit-head", &f.audit_head, &audit_head),
                                 std::tuple("--history-head", &f.history_head, &history_head)}) {
    if (text->empty()) continue;
    Result<audit::Head> h = ParseHead(flag, *text);
    if (!h.ok()) {
      std::fprintf(stderr, "isb audit verify: %s\n", h.error().message.c_str());
      return 2;
    }
    *out = *h;
  }
  const std::string path = f.state_dir + "/isb.db";
  if (::access(path.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "isb audit verify: no isb state at %s (see --state-dir)\n", f.state_dir.c_str());
    return 125;
  }
  auto db = store::Db::Open(path, store::Migrations());
  if (!db.ok()) {
    std::fprintf(stderr, "isb audit verify: %s\n", db.error().message.c_str());
    return 125;
  }
  auto log = audit::AuditLog::Open(**db);
  auto history = log.ok() ? audit::History::Open(**db) : Result<std::unique_ptr<audit::History>>(log.error());
  if (!history.ok()) {
    std::fprintf(stderr, "isb audit verify: %s\n", history.error().message.c_str());
    return 125;
  }
  // Both chains as of one moment: the daemon may prune beside this process, and a walk that saw the rows of
  // after a prune but the anchor of before it would report a false break.
  Result<audit::VerifyResult> log_result = Error::Msg("not verified"), history_result = Error::Msg("not verified");
  Status read = (*db)->Snapshot([&]() -> Status {
    log_result = (*log)->Verify(audit_head);
    history_result = (*history)->Verify(history_head);
    return {};
  });
  if (!read.ok()) {
    std::fprintf(stderr, "isb audit verify: %s\n", read.error().message.c_str());
    return 125;
  }
  for (const auto* r : {&log_result, &history_result}) {
    if (!r->ok()) {
      std::fprintf(stderr, "isb audit verify: %s\n", r->error().message.c_str());
      return 125;
    }
  }
  if (f.json) {
    nlohmann::json out = {{"audit_log", audit::VerifyReportJson(*log_result)},
                          {"history", audit::VerifyReportJson(*history_result)}};
    // A tampered row may hold bytes that are not UTF-8: shown replaced (api::Dump), never a failure to report.
    std::printf("%s\n", api::Dump(out).c_str());
  } else {
    std::printf("%s\n%s\n", audit::VerifyReportLine("audit log", *log_result).c_str(),
                audit::VerifyReportLine("history", *history_result).c_str());
  }
  return log_result->ok && history_result->ok ? 0 : 1;
}

struct ListFlags {
  std::shared_ptr<ConnectFlags> connect = SharedConnectFlags();
  int64_t limit = 100;
  int64_t after = 0;
  bool json = false;
  bool platform = false;
};

// Exit status: 0, 1 when the daemon refused (not an admin of the org), 125 when isb failed.
int RunList(const ListFlags& f) {
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  json in = {{"limit", f.limit}};
  if (f.after > 0) in["after"] = f.after;
  if (f.platform) in["platform"] = true;
  auto r = client->Call("audit_list", in);
  if (!r.ok()) return Report(r.error());
  if (f.json)
    Print(*r);
  else
    std::fputs(AuditTable(*r).c_str(), stdout);
  return kExitOk;
}

int RunExport(const ConnectFlags& connect, bool platform) {
  auto client = Connect(connect);
  if (!client.ok()) return ReportUsage(client.error());
  Status st = ExportAudit(
      *client, [](const std::string& line) { std::printf("%s\n", line.c_str()); }, platform);
  std::fflush(stdout);
  return st.ok() ? kExitOk : Report(st.error());
}

struct HistoryFlags {
  std::shared_ptr<ConnectFlags> connect = SharedConnectFlags();
  std::string sandbox;
  int64_t limit = 100;
  int64_t after = 0;
  bool json = false;
};

// Exit status: 0, 1 when the daemon refused (an unknown sandbox), 125 when isb failed.
int RunHistory(const HistoryFlags& f) {
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  json in = {{"limit", f.limit}};
  if (!f.sandbox.empty()) in["sandbox"] = f.sandbox;
  if (f.after > 0) in["after"] = f.after;
  auto r = client->Call("history_query", in);
  if (!r.ok()) return Report(r.error());
  if (f.json)
    Print(*r);
  else
    std::fputs(HistoryTable(*r).c_str(), stdout);
  return kExitOk;
}

void AddHistoryCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<HistoryFlags>();
  auto* cmd = app.add_subcommand(
      "history", "The org's sandbox lifecycle events (removed sandboxes' too, when no sandbox is named)");
  AddConnectOptions(cmd, f->connect);
  cmd->add_option("sandbox", f->sandbox, "Only this sandbox's events (its id or name; it must still exist)");
  cmd->add_option("--limit", f->limit, "At most N events")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--after", f->after, "Only events with a larger id (the previous page's next_after)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", f->json, "Print history_query's result (events, next_after) as JSON");
  cmd->callback([f, exit_code] { *exit_code = RunHistory(*f); });
}

}  // namespace

void AddAuditCommand(CLI::App& app, int* exit_code) {
  auto* audit = app.add_subcommand("audit", "The audit log and the sandbox history");
  audit->require_subcommand(1);
  auto flags = std::make_shared<VerifyFlags>();
  auto* verify = audit->add_subcommand("verify", "Walk both hash chains; exit 1 and name the first broken row");
  verify->add_option("--state-dir", flags->state_dir, "The daemon's state directory")->capture_default_str();
  verify->add_flag("--json", flags->json, "One JSON object with both reports");
  verify->add_option("--audit-head", flags->audit_head,
                     "ID:HASH: the audit log's head as an earlier verify printed it (kept elsewhere); that row must "
                     "still be there with that hash, so rows deleted from the end are found");
  verify->add_option("--history-head", flags->history_head, "ID:HASH: the same for the sandbox history");
  verify->callback([flags, exit_code] { *exit_code = RunVerify(*flags); });

  auto list = std::make_shared<ListFlags>();
  auto* ls = audit->add_subcommand("ls", "The org's audit rows in id order (org admins), from the daemon");
  AddConnectOptions(ls, list->connect);
  ls->add_option("--limit", list->limit, "At most N rows")->capture_default_str()->check(CLI::Range(1, 1000));
  ls->add_option("--after", list->after, "Only rows with a larger id (the previous page's next_after)")
      ->check(CLI::NonNegativeNumber);
  ls->add_flag("--json", list->json, "Print audit_list's result (records, next_after) as JSON");
  ls->add_flag("--platform", list->platform,
               "Platform admins: the rows of no org (sign-ins, sign-outs, setup, refused credentials)");
  ls->callback([list, exit_code] { *exit_code = RunList(*list); });

  auto connect = SharedConnectFlags();
  auto platform = std::make_shared<bool>(false);
  auto* exp = audit->add_subcommand("export", "Every audit row of the org as JSON lines, hashes included (org admins)");
  AddConnectOptions(exp, connect);
  exp->add_flag("--platform", *platform, "Platform admins: the rows of no org instead");
  exp->callback([connect, platform, exit_code] { *exit_code = RunExport(*connect, *platform); });
  AddHistoryCommand(app, exit_code);
}

}  // namespace isb::cli
