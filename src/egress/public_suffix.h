// The public suffix list (publicsuffix.org, Debian package publicsuffix): names under which unrelated owners
// register, so that a wildcard across one ("*.co.uk", "*.github.io") can be refused.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

#include "base/result.h"

namespace isb::egress {

inline constexpr const char* kPublicSuffixListPath = "/usr/share/publicsuffix/public_suffix_list.dat";

class PublicSuffixList {
 public:
  // The list's text format: one rule per line, "//" comments, "*.x" wildcard and "!x" exception rules; Unicode
  // rules are kept in their punycode form. Errors (kInvalidArgument) name the line.
  static Result<PublicSuffixList> Parse(std::string_view text);
  // Errors (kUnavailable) name the file and say to install the package publicsuffix.
  static Result<PublicSuffixList> Load(const std::string& path);
  // The system's list, read once at first use; a missing list fails every call the same way (fail closed).
  static Result<const PublicSuffixList*> System();

  // True when `name` (normalized, see NormalizeHostName) is a public suffix: "com", "co.uk", "github.io",
  // "anything.ck" (by "*.ck") but not "www.ck" (by "!www.ck"). Any single label is one (the list's default rule).
  bool IsPublicSuffix(std::string_view name) const;

  size_t size() const { return rules_.size() + wildcards_.size() + exceptions_.size(); }

 private:
  std::unordered_set<std::string> rules_, wildcards_, exceptions_;  // wildcards_ without "*.", exceptions_ without "!"
};

}  // namespace isb::egress
