// What every Sandboxes implementation shares: the org of a sandbox, the terminal-session refusal, and defaults
// for implementations without terminals or an index of names per org.
#include "api/sandboxes.h"

namespace isb::api {

std::string OrgOf(const SandboxSpec& spec) {
  auto it = spec.labels.find(kOrgLabel);
  return it == spec.labels.end() ? "default" : it->second;
}

Result<std::string> Sandboxes::Resolve(const std::string& org, const std::string& id_or_name) {
  ISB_ASSIGN_OR_RETURN(std::vector<SandboxInfo> all, List());
  for (const SandboxInfo& info : all) {
    if (OrgOf(info) == org && (info.id == id_or_name || (!info.name.empty() && info.name == id_or_name))) {
      return info.id;
    }
  }
  return Error::Of(Code::kNotFound, "no sandbox '" + id_or_name + "'");
}

Error NoTerminalSession(const std::string& session, const std::string& sandbox) {
  return Error::Of(Code::kNotFound, "no running terminal session '" + session + "' in sandbox '" + sandbox +
                                        "' (a session ends with its command and serves only the caller that "
                                        "started it)");
}

Status Sandboxes::ExecInput(const std::string& id_or_name, const std::string& session, const std::string&,
                            const std::string&, bool) {
  return NoTerminalSession(session, id_or_name);
}

Status Sandboxes::ExecResize(const std::string& id_or_name, const std::string& session, const std::string&, uint16_t,
                             uint16_t) {
  return NoTerminalSession(session, id_or_name);
}

Result<DetachedExec> Sandboxes::ExecDetached(const std::string&, const ExecRequest&) {
  return Error::Of(Code::kUnavailable, "detached commands are not supported here");
}

Result<LogRead> Sandboxes::Logs(const std::string& id_or_name, uint64_t after, size_t) {
  ISB_TRY(Get(id_or_name));
  if (after > 0) return Error::Of(Code::kInvalidArgument, "after: the log ends at 0");
  return LogRead{};
}

}  // namespace isb::api
