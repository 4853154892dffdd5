// Loading the public suffix list and the lookup of one name in it.
#include "egress/public_suffix.h"

#include "base/file.h"
#include "egress/punycode.h"

namespace isb::egress {
namespace {

// A rule's labels in punycode, lower case.
Result<std::string> AsciiRule(std::string_view rule) {
  std::string out;
  size_t start = 0;
  while (true) {
    size_t dot = rule.find('.', start);
    std::string_view label = rule.substr(start, dot == std::string_view::npos ? dot : dot - start);
    ISB_ASSIGN_OR_RETURN(std::string ascii, ToPunycodeLabel(label));
    for (char& c : ascii) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    out += ascii;
    if (dot == std::string_view::npos) return out;
    out += '.';
    start = dot + 1;
  }
}

}  // namespace

Result<PublicSuffixList> PublicSuffixList::Parse(std::string_view text) {
  PublicSuffixList list;
  size_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    size_t stop = line.find_first_of(" \t\r");
    std::string_view rule = line.substr(0, stop);
    if (rule.empty() || rule.starts_with("//")) continue;
    auto* set = &list.rules_;
    if (rule.starts_with("!")) {
      set = &list.exceptions_;
      rule.remove_prefix(1);
    } else if (rule.starts_with("*.")) {
      set = &list.wildcards_;
      rule.remove_prefix(2);
    }
    auto ascii = AsciiRule(rule);
    if (!ascii.ok() || ascii->empty()) {
      return Error::Of(Code::kInvalidArgument, "public suffix list: line " + std::to_string(line_no) +
                                                   " is not a rule: " + (ascii.ok() ? "empty" : ascii.error().message));
    }
    set->insert(std::move(*ascii));
  }
  return list;
}

Result<PublicSuffixList> PublicSuffixList::Load(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) {
    return Error::Of(Code::kUnavailable, "cannot read the public suffix list " + path + " (" + text.error().message +
                                             "); install the Debian package publicsuffix");
  }
  auto list = Parse(*text);
  if (!list.ok()) return Error::Of(Code::kUnavailable, path + ": " + list.error().message);
  return list;
}

Result<const PublicSuffixList*> PublicSuffixList::System() {
  static const Result<PublicSuffixList> kList = Load(kPublicSuffixListPath);
  if (!kList.ok()) return kList.error();
  return &kList.value();
}

bool PublicSuffixList::IsPublicSuffix(std::string_view name) const {
  std::string key(name);
  if (exceptions_.contains(key)) return false;
  if (rules_.contains(key)) return true;
  size_t dot = key.find('.');
  if (dot == std::string::npos) return true;
  return wildcards_.contains(key.substr(dot + 1));
}

}  // namespace isb::egress
