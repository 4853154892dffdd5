// Terminal sessions: at most api::kMaxTerminalSessions per sandbox, each driven only by the caller that started it.
#include "daemon/sandbox_manager.h"

#include "api/org_sandboxes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>
#include <nlohmann/json.hpp>

#include "base/fd.h"
#include "base/file.h"
#include "base/random.h"
#include "base/units.h"
#include "engine/cgroup.h"
#include "engine/contain.h"
#include "engine/exec_client.h"
#include "engine/idmap.h"
#include "engine/launch.h"
#include "engine/namespaces.h"
#include "daemon/sandbox_record.h"

namespace isb::daemon {
namespace {

// How long one input call waits for a command that does not read its terminal.
constexpr std::chrono::milliseconds kTerminalInputWait{5000};

}  // namespace

Result<std::string> SandboxManager::ReserveTerminal(const std::string& sandbox, const std::string& caller,
                                                    std::shared_ptr<IdleWatch> idle) {
  ISB_ASSIGN_OR_RETURN(std::string hex, RandomHex(16));
  std::string session = "ts-" + hex;
  MutexLock lock(terminals_mu_);
  size_t live = 0;
  for (const auto& [id, t] : terminals_) live += t.sandbox == sandbox ? 1 : 0;
  if (live >= api::kMaxTerminalSessions) {
    return Error::Of(Code::kConflict, "sandbox '" + sandbox + "' has " + std::to_string(live) +
                                          " live terminal sessions, the most it may have; end one first");
  }
  terminals_[session] = Terminal{sandbox, caller, nullptr, std::move(idle)};
  return session;
}

Result<std::shared_ptr<engine::ExecInput>> SandboxManager::FindTerminal(const std::string& id_or_name,
                                                                        const std::string& session,
                                                                        const std::string& caller) {
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id_or_name));
  MutexLock lock(terminals_mu_);
  auto it = terminals_.find(session);
  if (it == terminals_.end() || it->second.sandbox != rec.id || it->second.caller != caller || !it->second.terminal)
    return api::NoTerminalSession(session, id_or_name);
  if (it->second.idle) it->second.idle->Touch();  // found for input or a resize: a person is there
  return it->second.terminal;
}

Status SandboxManager::ExecInput(const std::string& id_or_name, const std::string& session, const std::string& caller,
                                 const std::string& data, bool eof) {
  if (data.size() > api::kMaxTerminalInputBytes) {
    return Error::Of(Code::kTooLarge, "data: at most " + std::to_string(api::kMaxTerminalInputBytes) +
                                          " bytes per call, got " + std::to_string(data.size()));
  }
  ISB_ASSIGN_OR_RETURN(auto terminal, FindTerminal(id_or_name, session, caller));
  ISB_TRY(terminal->Type(data, kTerminalInputWait));
  if (eof) ISB_TRY(terminal->EndInput(kTerminalInputWait));
  return {};
}

Status SandboxManager::ExecResize(const std::string& id_or_name, const std::string& session, const std::string& caller,
                                  uint16_t rows, uint16_t cols) {
  ISB_TRY(spec::ValidateTerminalSize(rows, cols));
  ISB_ASSIGN_OR_RETURN(auto terminal, FindTerminal(id_or_name, session, caller));
  return terminal->Resize(rows, cols);
}

}  // namespace isb::daemon
