// A URL as an error message may quote it.
#pragma once

#include <string>
#include <string_view>

namespace isb {

// `url` with any user information (the "user:password" between "://" and "@") replaced by "[redacted]": errors
// that quote a URL never carry the credentials someone put in it.
inline std::string WithoutUserInfo(std::string_view url) {
  std::string shown(url);
  size_t scheme = shown.find("://");
  size_t at = shown.find('@');
  if (scheme != std::string::npos && at != std::string::npos && scheme + 3 <= at)
    shown.replace(scheme + 3, at - scheme - 3, "[redacted]");
  return shown;
}

}  // namespace isb
