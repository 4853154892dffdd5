// The daemon's schema, as numbered migrations: append only, never edit one that has shipped.
#pragma once

#include <string>
#include <vector>

namespace isb::store {

const std::vector<std::string>& Migrations();

}  // namespace isb::store
