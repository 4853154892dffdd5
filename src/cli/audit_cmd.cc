#include "cli/audit_cmd.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "audit/history.h"
#include "audit/log.h"
#include "audit/verify_report.h"
#include "store/db.h"
#include "store/migrations.h"

namespace isb::cli {
namespace {

struct VerifyFlags {
  std::string state_dir = "/var/lib/isb";
  bool json = false;
};

// Exit status: 0 both chains verify, 1 one is broken, 125 isb could not check.
int RunVerify(const VerifyFlags& f) {
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
  auto log_result = (*log)->Verify();
  auto history_result = (*history)->Verify();
  for (const auto* r : {&log_result, &history_result}) {
    if (!r->ok()) {
      std::fprintf(stderr, "isb audit verify: %s\n", r->error().message.c_str());
      return 125;
    }
  }
  if (f.json) {
    nlohmann::json out = {{"audit_log", audit::VerifyReportJson(*log_result)},
                          {"history", audit::VerifyReportJson(*history_result)}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%s\n%s\n", audit::VerifyReportLine("audit log", *log_result).c_str(),
                audit::VerifyReportLine("history", *history_result).c_str());
  }
  return log_result->ok && history_result->ok ? 0 : 1;
}

}  // namespace

void AddAuditCommand(CLI::App& app, int* exit_code) {
  auto* audit = app.add_subcommand("audit", "The audit log and the sandbox history (on this host)");
  audit->require_subcommand(1);
  auto flags = std::make_shared<VerifyFlags>();
  auto* verify = audit->add_subcommand("verify", "Walk both hash chains; exit 1 and name the first broken row");
  verify->add_option("--state-dir", flags->state_dir, "The daemon's state directory")->capture_default_str();
  verify->add_flag("--json", flags->json, "One JSON object with both reports");
  verify->callback([flags, exit_code] { *exit_code = RunVerify(*flags); });
}

}  // namespace isb::cli
