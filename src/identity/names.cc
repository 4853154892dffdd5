// Name rules.
#include "identity/names.h"

#include <algorithm>
#include <string>

namespace isb::identity {
namespace {

bool LowerOrDigit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

Status Check(std::string_view what, std::string_view name, size_t max, std::string_view extra) {
  bool ok = !name.empty() && name.size() <= max && LowerOrDigit(name[0]) &&
            std::all_of(name.begin(), name.end(),
                        [&](char c) { return LowerOrDigit(c) || extra.find(c) != std::string_view::npos; });
  if (ok) return {};
  return Error::Of(Code::kInvalidArgument, std::string(what) + ": 1 to " + std::to_string(max) +
                                               " characters of a-z, 0-9 and '" + std::string(extra) +
                                               "', starting with a letter or digit");
}

}  // namespace

Status CheckUserName(std::string_view name) { return Check("user name", name, 64, "._@-"); }

Status CheckOrgName(std::string_view name) { return Check("org name", name, 63, "-"); }

Status CheckTokenName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64 &&
            std::all_of(name.begin(), name.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  if (ok) return {};
  return Error::Of(Code::kInvalidArgument, "token name: 1 to 64 printable ASCII characters");
}

Status CheckDisplayText(std::string_view field, std::string_view text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f)
      return Error::Of(Code::kInvalidArgument, std::string(field) + ": control characters are not allowed");
  }
  return {};
}

}  // namespace isb::identity
