#include "cli/bind_spec.h"

namespace isb::cli {

Result<BindSpec> ParseBindSpec(const std::string& flag, const std::string& spec) {
  BindSpec b;
  std::string rest = spec;
  if (rest.ends_with(":ro")) {
    rest.resize(rest.size() - 3);
  } else if (rest.ends_with(":rw")) {
    b.read_only = false;
    rest.resize(rest.size() - 3);
  }
  size_t colon = rest.find(':');
  b.source = rest.substr(0, colon);
  b.target = colon == std::string::npos ? b.source : rest.substr(colon + 1);
  if (b.source.empty() || b.target.empty())
    return Error::Msg("invalid " + flag + " '" + spec + "': use SRC[:DST][:ro|:rw]");
  return b;
}

}  // namespace isb::cli
