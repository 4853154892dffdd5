// Building blocks for the tools' JSON Schemas, so every tool spells a string, an integer or an object alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace isb::api {

// {"type": "string", "maxLength": max_len[, "minLength": min_len]} with a description.
inline nlohmann::json Str(std::string desc, size_t max_len, size_t min_len = 0) {
  nlohmann::json s = {{"type", "string"}, {"description", std::move(desc)}, {"maxLength", max_len}};
  if (min_len > 0) s["minLength"] = min_len;
  return s;
}

inline nlohmann::json Int(std::string desc, int64_t min, int64_t max) {
  return {{"type", "integer"}, {"description", std::move(desc)}, {"minimum", min}, {"maximum", max}};
}

inline nlohmann::json Bool(std::string desc) { return {{"type", "boolean"}, {"description", std::move(desc)}}; }

// An object of string values (environment, labels).
inline nlohmann::json StringMap(std::string desc, size_t max_entries) {
  return {{"type", "object"},
          {"description", std::move(desc)},
          {"maxProperties", max_entries},
          {"additionalProperties", {{"type", "string"}, {"maxLength", 32768}}}};
}

// A closed object: only `properties`, `required` of them.
inline nlohmann::json Object(nlohmann::json properties, std::vector<std::string> required) {
  if (properties.is_null()) properties = nlohmann::json::object();
  nlohmann::json s = {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) s["required"] = required;
  return s;
}

// An output schema: an object with `properties`, `required` of them, others allowed.
inline nlohmann::json Output(nlohmann::json properties, std::vector<std::string> required) {
  if (properties.is_null()) properties = nlohmann::json::object();
  nlohmann::json s = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) s["required"] = required;
  return s;
}

}  // namespace isb::api
