// The tools' JSON Schema subset: one recursive walk over schema and value together, bounded in depth.
#include "api/json_schema.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "api/json_util.h"

namespace isb::api {
namespace {

constexpr int kMaxSchemaDepth = 64;

Error Bad(const std::string& path, const std::string& what) {
  return Error::Of(Code::kInvalidArgument, path.empty() ? what : path + ": " + what);
}

// An integer a handler can read as int64_t: 2^63 and beyond (9223372036854775808, or 9223372036854775807.0, which
// is 2^63 as a double) are no integer here, or reading them would wrap.
bool IsIntegral(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX);
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d && d >= -0x1p63 && d < 0x1p63;
}

bool HasType(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer") return IsIntegral(v);
  return false;
}

std::string FormatNumber(const json& n) {
  if (n.is_number_float()) {
    std::string s = std::to_string(n.get<double>());
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  return Dump(n);
}

std::string Join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

Status Walk(const json& schema, const json& v, const std::string& path, int depth);

// A non-negative integer keyword ("maxItems": 3), or nullopt when absent or malformed.
std::optional<uint64_t> Limit(const json& schema, const char* key) {
  auto it = schema.find(key);
  if (it == schema.end()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0) return static_cast<uint64_t>(it->get<int64_t>());
  return std::nullopt;
}

Status CheckType(const json& schema, const json& v, const std::string& path) {
  auto it = schema.find("type");
  if (it == schema.end()) return {};
  std::string expected;
  if (it->is_string()) {
    if (HasType(v, it->get<std::string>())) return {};
    expected = it->get<std::string>();
  } else if (it->is_array()) {
    for (const json& t : *it) {
      if (t.is_string() && HasType(v, t.get<std::string>())) return {};
      if (t.is_string()) expected += (expected.empty() ? "" : " or ") + t.get<std::string>();
    }
  } else {
    return {};
  }
  // A whole number out of int64_t's range: say so, rather than "expected integer, got integer".
  if (expected.find("integer") != std::string::npos && v.is_number() &&
      (v.is_number_integer() || std::floor(v.get<double>()) == v.get<double>()))
    return Bad(path, "must be an integer between -9223372036854775808 and 9223372036854775807");
  return Bad(path, "expected " + expected + ", got " + JsonTypeName(v));
}

Status CheckNumber(const json& schema, const json& v, const std::string& path) {
  if (!v.is_number()) return {};
  double d = v.get<double>();
  if (auto it = schema.find("minimum"); it != schema.end() && it->is_number() && d < it->get<double>()) {
    return Bad(path, "must be >= " + FormatNumber(*it));
  }
  if (auto it = schema.find("maximum"); it != schema.end() && it->is_number() && d > it->get<double>()) {
    return Bad(path, "must be <= " + FormatNumber(*it));
  }
  return {};
}

Status CheckString(const json& schema, const json& v, const std::string& path) {
  if (!v.is_string()) return {};
  const auto& s = v.get_ref<const std::string&>();
  size_t len = Utf8Length(s);
  if (auto lim = Limit(schema, "minLength"); lim && len < *lim) {
    return Bad(path, "must be at least " + std::to_string(*lim) + " characters long");
  }
  if (auto lim = Limit(schema, "maxLength"); lim && len > *lim) {
    return Bad(path, "must be at most " + std::to_string(*lim) + " characters long, got " + std::to_string(len));
  }
  return {};
}

Status CheckArray(const json& schema, const json& v, const std::string& path, int depth) {
  if (!v.is_array()) return {};
  if (auto lim = Limit(schema, "minItems"); lim && v.size() < *lim) {
    return Bad(path, "must have at least " + std::to_string(*lim) + " items");
  }
  if (auto lim = Limit(schema, "maxItems"); lim && v.size() > *lim) {
    return Bad(path, "must have at most " + std::to_string(*lim) + " items, got " + std::to_string(v.size()));
  }
  auto items = schema.find("items");
  if (items == schema.end() || !items->is_object()) return {};
  for (size_t i = 0; i < v.size(); ++i) {
    ISB_TRY(Walk(*items, v[i], path + "[" + std::to_string(i) + "]", depth + 1));
  }
  return {};
}

Status CheckObject(const json& schema, const json& v, const std::string& path, int depth) {
  if (!v.is_object()) return {};
  if (auto lim = Limit(schema, "maxProperties"); lim && v.size() > *lim) {
    return Bad(path, "must have at most " + std::to_string(*lim) + " entries, got " + std::to_string(v.size()));
  }
  if (auto it = schema.find("required"); it != schema.end() && it->is_array()) {
    for (const json& name : *it) {
      if (name.is_string() && !v.contains(name.get<std::string>())) {
        return Bad(path, "missing required field '" + name.get<std::string>() + "'");
      }
    }
  }
  static const json kEmpty = json::object();
  auto props_it = schema.find("properties");
  const json& props = props_it != schema.end() && props_it->is_object() ? *props_it : kEmpty;
  auto extra = schema.find("additionalProperties");
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::string child = Join(path, it.key());
    if (auto p = props.find(it.key()); p != props.end()) {
      ISB_TRY(Walk(*p, it.value(), child, depth + 1));
    } else if (extra != schema.end()) {
      if (extra->is_boolean() && !extra->get<bool>()) {
        return Bad(path, "unknown field '" + SanitizeUtf8(it.key().substr(0, 128)) + "'");
      }
      if (extra->is_object()) ISB_TRY(Walk(*extra, it.value(), child, depth + 1));
    }
  }
  return {};
}

Status Walk(const json& schema, const json& v, const std::string& path, int depth) {
  if (depth > kMaxSchemaDepth) return Bad(path, "nested too deeply");
  if (schema.is_boolean()) return schema.get<bool>() ? Status{} : Bad(path, "not allowed");
  if (!schema.is_object()) return {};
  ISB_TRY(CheckType(schema, v, path));
  if (auto it = schema.find("enum"); it != schema.end() && it->is_array()) {
    bool found = false;
    for (const json& e : *it) found = found || e == v;
    if (!found) return Bad(path, "must be one of " + Dump(*it));
  }
  if (auto it = schema.find("const"); it != schema.end() && *it != v) {
    return Bad(path, "must be " + Dump(*it));
  }
  ISB_TRY(CheckNumber(schema, v, path));
  ISB_TRY(CheckString(schema, v, path));
  ISB_TRY(CheckArray(schema, v, path, depth));
  return CheckObject(schema, v, path, depth);
}

}  // namespace

const char* JsonTypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return IsIntegral(v) ? "integer" : "number";
    default:
      return "unknown";
  }
}

Status Validate(const json& schema, const json& value) {
  try {
    return Walk(schema, value, "", 0);
  } catch (const std::exception& e) {
    // Should be unreachable: every accessor above is guarded by a type check.
    return Error::Of(Code::kInternal, std::string("schema validation failed: ") + e.what());
  }
}

}  // namespace isb::api
