// The SRC[:DST][:ro|:rw] form that `isb run --bind` and `isb create --mount` take.
#pragma once

#include <string>

#include "base/result.h"

namespace isb::cli {

struct BindSpec {
  std::string source, target;
  bool read_only = true;
};

// DST defaults to SRC; read-only unless ":rw". `flag` names the option in the error.
Result<BindSpec> ParseBindSpec(const std::string& flag, const std::string& spec);

}  // namespace isb::cli
