// What names of users, orgs and tokens may look like. Names appear in URLs, logs and audit records.
#pragma once

#include <string_view>

#include "base/result.h"

namespace isb::identity {

// [a-z0-9][a-z0-9._@-]{0,63}
Status CheckUserName(std::string_view name);
// [a-z0-9][a-z0-9-]{0,62}
Status CheckOrgName(std::string_view name);
// 1 to 64 printable ASCII characters.
Status CheckTokenName(std::string_view name);
// Free text shown to people (an org's display name, its description): any bytes but control characters, so no line
// breaks and no terminal escapes. `field` names it in the error.
Status CheckDisplayText(std::string_view field, std::string_view text);

}  // namespace isb::identity
