// Small conversions between SQLite values and the identity layer's optional fields.
#pragma once

#include <cstdint>
#include <optional>

#include "store/db.h"

namespace isb::identity {

inline std::optional<int64_t> OptInt(const store::Value& v) {
  if (std::holds_alternative<std::nullptr_t>(v)) return std::nullopt;
  return store::AsInt(v);
}

inline store::Value OrNull(std::optional<int64_t> v) {
  if (!v) return nullptr;
  return *v;
}

// NULL for 0, the identity layer's "none" for ids.
inline store::Value NullIfZero(int64_t id) {
  if (id == 0) return nullptr;
  return id;
}

}  // namespace isb::identity
