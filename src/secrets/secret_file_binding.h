// Which secret a value file of the store belongs to: a stanza "-> isb-binding ORG NAME" in its age header, under the
// header's MAC, so a file copied (or imported) into another org's or name's place is refused rather than read as
// that secret's value. The real age skips the stanza (a type it does not know) and still decrypts the file.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "secrets/age_header.h"

namespace isb::secrets {

inline constexpr std::string_view kBindingStanzaType = "isb-binding";

struct FileBinding {
  std::string org, name;
  bool operator==(const FileBinding&) const = default;
};

AgeStanza BindingStanza(const FileBinding& binding);

// The binding in the header of `file`: nullopt when it has none (a file `age` wrote, or isb before bindings).
// kInvalidArgument for a header that does not parse or a binding stanza without exactly an org and a name.
// Meaningful only once the file decrypted: the MAC is what makes the stanza the writer's.
Result<std::optional<FileBinding>> BindingOf(std::string_view file);

}  // namespace isb::secrets
