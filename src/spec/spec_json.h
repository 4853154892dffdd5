// The sandbox spec's JSON forms: a caller's (parsed strictly, then validated), the one tools answer with, and the
// stored row's (written by isb, read back leniently).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "spec/sandbox_spec.h"

namespace isb::spec {

// A caller's spec: sizes as bytes or "512M", paths made lexically normal, then Validate. REQUIRES: `in` passed the
// create tool's JSON Schema (every field present has its type and range); what the schema cannot say (a name's
// characters, a path's form, a size's unit) is refused here, naming the field. kInvalidArgument.
Result<SandboxSpec> FromCallerJson(const nlohmann::json& in);

// The spec as tools answer with it (idmap "auto" when empty; mounts and ports always present).
nlohmann::json ToJson(const SandboxSpec& spec);

// The stored form, and back. Reading is lenient: a field missing from a row written by an older isb reads as
// its default; text that is not a JSON object reads as the default spec.
std::string ToStoredJson(const SandboxSpec& spec);
SandboxSpec FromStoredJson(std::string_view text);

// A path inside a sandbox, made lexically normal (".", ".." and repeated slashes removed) and checked as
// Validate checks one: absolute, no NUL, not under /proc, /sys or /dev. `field` names it in the refusal.
Result<std::string> NormalizeInsidePath(const std::string& field, const std::string& path);

// A size field: bytes (a JSON integer) or a size such as "512M" (base/units.h), between min and max.
Result<uint64_t> SizeFromJson(const std::string& field, const nlohmann::json& value, uint64_t min, uint64_t max);

// JSON codecs of the parts (the stored and answered forms; reading is lenient as FromStoredJson is).
void to_json(nlohmann::json& j, const SpecMount& m);
void from_json(const nlohmann::json& j, SpecMount& m);
void to_json(nlohmann::json& j, const SpecSecretFile& f);
void from_json(const nlohmann::json& j, SpecSecretFile& f);
void to_json(nlohmann::json& j, const SpecPort& p);
void from_json(const nlohmann::json& j, SpecPort& p);

}  // namespace isb::spec
