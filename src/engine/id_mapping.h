// Raw id mappings: host uids/gids mapped into a sandbox's user namespace beside its own 65536-id range.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace isb::engine {

// Host ids [host, host+count) appear inside as [sandbox, sandbox+count); the rest of 0..65535 inside stays the
// sandbox's own range, split around the mapped ids.
struct IdMapping {
  enum class Kind { kUid, kGid, kBoth };
  Kind kind = Kind::kBoth;
  uint32_t host = 0;
  uint32_t sandbox = 0;
  uint32_t count = 1;
  bool operator==(const IdMapping&) const = default;
};

// Which of the two maps a text is for.
enum class IdMapKind { kUid, kGid };

// The kernel's limits on one uid_map or gid_map write: lines, and bytes (less than a page).
inline constexpr size_t kMaxIdMapLines = 340;
inline constexpr size_t kMaxIdMapBytes = 4095;

const char* IdMappingKindName(IdMapping::Kind kind);

// OK, or kInvalidArgument naming the entry's field: "idmap[1].sandbox: ids 0-9 overlap idmap[0]". Refused: a count
// of 0, ids outside 0..65535 inside or past 4294967294 on the host, host ids within isb's own sandbox ranges, two
// entries sharing an id on either side (a uid entry and a gid entry never share), a map beyond the kernel's limits,
// and any mapping at all when `privileged` (such a sandbox has no user namespace).
Status ValidateIdMappings(const std::vector<IdMapping>& mappings, bool privileged = false);

// The text written to uid_map or gid_map: the entries of that kind as they are, and the sandbox's own range
// (host ids from `base`) around them. Without entries: "0 <base> 65536\n". REQUIRES: ValidateIdMappings passed.
std::string IdMapText(uid_t base, const std::vector<IdMapping>& mappings, IdMapKind which);

// The host id that id `inside` of the sandbox is on the host.
uint32_t HostIdOf(uid_t base, const std::vector<IdMapping>& mappings, IdMapKind which, uint32_t inside);

// "KIND:HOST:SANDBOX[:COUNT]", KIND one of uid, gid, both (the CLI's --idmap); `flag` names the option in errors.
Result<IdMapping> ParseIdMapping(const std::string& flag, const std::string& text);

// JSON form {kind, host, sandbox, count}, as sandbox specs carry it. Reading is lenient (a missing field keeps
// its default, an unknown kind is "both"): callers' input is checked by the tools' schema first.
void to_json(nlohmann::json& j, const IdMapping& m);
void from_json(const nlohmann::json& j, IdMapping& m);

}  // namespace isb::engine
