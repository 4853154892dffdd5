// The isb-binding stanza of a store's age files.
#include "secrets/secret_file_binding.h"

namespace isb::secrets {

AgeStanza BindingStanza(const FileBinding& binding) {
  return AgeStanza{{std::string(kBindingStanzaType), binding.org, binding.name}, ""};
}

Result<std::optional<FileBinding>> BindingOf(std::string_view file) {
  ISB_ASSIGN_OR_RETURN(AgeHeader header, ParseAgeHeader(file));
  std::optional<FileBinding> found;
  for (const AgeStanza& stanza : header.stanzas) {
    if (stanza.args[0] != kBindingStanzaType) continue;
    if (stanza.args.size() != 3 || !stanza.body.empty() || found)
      return Error::Of(Code::kInvalidArgument,
                       "age file: its isb-binding stanza is not one stanza of an org and a name with an empty body");
    found = FileBinding{stanza.args[1], stanza.args[2]};
  }
  return found;
}

}  // namespace isb::secrets
