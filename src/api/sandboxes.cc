// What every Sandboxes implementation shares: the terminal-session refusal and defaults for implementations
// without terminals.
#include "api/sandboxes.h"

namespace isb::api {

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

}  // namespace isb::api
