// Raw id mappings: validation, the uid_map/gid_map text around the sandbox's own range, the CLI and JSON forms.
#include "engine/id_mapping.h"

#include <algorithm>
#include <charconv>

#include "engine/idmap.h"

namespace isb::engine {
namespace {

Error Invalid(const std::string& msg) { return Error::Of(Code::kInvalidArgument, msg); }

bool Covers(IdMapping::Kind kind, IdMapKind which) {
  return kind == IdMapping::Kind::kBoth || (kind == IdMapping::Kind::kUid) == (which == IdMapKind::kUid);
}

bool SharesAMap(IdMapping::Kind a, IdMapping::Kind b) {
  return (Covers(a, IdMapKind::kUid) && Covers(b, IdMapKind::kUid)) ||
         (Covers(a, IdMapKind::kGid) && Covers(b, IdMapKind::kGid));
}

// [first, first+count) as "first-last", computed in 64 bits so that no sum wraps.
std::string Span(uint64_t first, uint64_t count) {
  return "ids " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

bool Overlap(uint64_t a, uint64_t a_count, uint64_t b, uint64_t b_count) { return a < b + b_count && b < a + a_count; }

// The entries of one map, ordered by their first id inside.
std::vector<IdMapping> OfKind(const std::vector<IdMapping>& mappings, IdMapKind which) {
  std::vector<IdMapping> out;
  for (const IdMapping& m : mappings)
    if (Covers(m.kind, which)) out.push_back(m);
  std::sort(out.begin(), out.end(), [](const IdMapping& a, const IdMapping& b) { return a.sandbox < b.sandbox; });
  return out;
}

Status CheckOne(const IdMapping& m, const std::string& field) {
  if (m.count < 1) return Invalid(field + ".count: must be at least 1");
  if (uint64_t{m.sandbox} + m.count > kRangeSize)
    return Invalid(field + ".sandbox: " + Span(m.sandbox, m.count) + " must lie within 0-65535");
  // 4294967295 is (uid_t)-1, never an id.
  if (uint64_t{m.host} + m.count > 4294967295ull)
    return Invalid(field + ".host: " + Span(m.host, m.count) + " must lie within 0-4294967294");
  const uint64_t isb_first = kHostFirstBase, isb_count = uint64_t{kHostRanges} * kRangeSize;
  if (Overlap(m.host, m.count, isb_first, isb_count))
    return Invalid(field + ".host: " + Span(m.host, m.count) + " overlap isb's own sandbox ranges (" +
                   Span(isb_first, isb_count) + ")");
  return {};
}

}  // namespace

const char* IdMappingKindName(IdMapping::Kind kind) {
  switch (kind) {
    case IdMapping::Kind::kUid:
      return "uid";
    case IdMapping::Kind::kGid:
      return "gid";
    case IdMapping::Kind::kBoth:
      return "both";
  }
  return "both";
}

Status ValidateIdMappings(const std::vector<IdMapping>& mappings, bool privileged) {
  if (privileged && !mappings.empty())
    return Invalid("idmap: a privileged sandbox has no user namespace to map ids into (use one or the other)");
  for (size_t i = 0; i < mappings.size(); ++i) {
    const std::string field = "idmap[" + std::to_string(i) + "]";
    const IdMapping& m = mappings[i];
    ISB_TRY(CheckOne(m, field));
    for (size_t j = 0; j < i; ++j) {
      const IdMapping& o = mappings[j];
      if (!SharesAMap(m.kind, o.kind)) continue;
      const std::string other = "idmap[" + std::to_string(j) + "]";
      if (Overlap(m.sandbox, m.count, o.sandbox, o.count))
        return Invalid(field + ".sandbox: " + Span(m.sandbox, m.count) + " overlap " + other);
      if (Overlap(m.host, m.count, o.host, o.count))
        return Invalid(field + ".host: " + Span(m.host, m.count) + " overlap " + other);
    }
  }
  // Judged with the longest base a lease can have, so that a map valid here is valid for every sandbox.
  const uid_t widest = kHostFirstBase + (kHostRanges - 1) * kRangeSize;
  for (IdMapKind which : {IdMapKind::kUid, IdMapKind::kGid}) {
    std::string text = IdMapText(widest, mappings, which);
    size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    const char* name = which == IdMapKind::kUid ? "uid_map" : "gid_map";
    if (lines > kMaxIdMapLines || text.size() > kMaxIdMapBytes)
      return Invalid("idmap: too many entries: the sandbox's " + std::string(name) + " would need " +
                     std::to_string(lines) + " lines (" + std::to_string(text.size()) + " bytes); the kernel takes " +
                     std::to_string(kMaxIdMapLines) + " lines in at most " + std::to_string(kMaxIdMapBytes) + " bytes");
  }
  return {};
}

std::string IdMapText(uid_t base, const std::vector<IdMapping>& mappings, IdMapKind which) {
  std::string out;
  auto line = [&out](uint64_t inside, uint64_t host, uint64_t count) {
    out += std::to_string(inside) + " " + std::to_string(host) + " " + std::to_string(count) + "\n";
  };
  uint64_t next = 0;  // the first id inside not yet mapped
  for (const IdMapping& m : OfKind(mappings, which)) {
    if (m.sandbox > next) line(next, uint64_t{base} + next, m.sandbox - next);
    line(m.sandbox, m.host, m.count);
    next = uint64_t{m.sandbox} + m.count;
  }
  if (next < kRangeSize) line(next, uint64_t{base} + next, kRangeSize - next);
  return out;
}

uint32_t HostIdOf(uid_t base, const std::vector<IdMapping>& mappings, IdMapKind which, uint32_t inside) {
  for (const IdMapping& m : mappings)
    if (Covers(m.kind, which) && inside >= m.sandbox && inside - m.sandbox < m.count)
      return m.host + (inside - m.sandbox);
  return base + inside;
}

Result<IdMapping> ParseIdMapping(const std::string& flag, const std::string& text) {
  auto bad = [&] { return Invalid("invalid " + flag + " '" + text + "': use uid|gid|both:HOST:SANDBOX[:COUNT]"); };
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() != 3 && parts.size() != 4) return bad();
  IdMapping m;
  if (parts[0] == "uid")
    m.kind = IdMapping::Kind::kUid;
  else if (parts[0] == "gid")
    m.kind = IdMapping::Kind::kGid;
  else if (parts[0] == "both")
    m.kind = IdMapping::Kind::kBoth;
  else
    return bad();
  uint32_t* fields[] = {&m.host, &m.sandbox, &m.count};
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), *fields[i - 1]);
    if (p.empty() || ec != std::errc() || end != p.data() + p.size()) return bad();
  }
  return m;
}

void to_json(nlohmann::json& j, const IdMapping& m) {
  j = {{"kind", IdMappingKindName(m.kind)}, {"host", m.host}, {"sandbox", m.sandbox}, {"count", m.count}};
}

void from_json(const nlohmann::json& j, IdMapping& m) {
  const std::string kind = j.value("kind", "both");
  m.kind = kind == "uid" ? IdMapping::Kind::kUid : kind == "gid" ? IdMapping::Kind::kGid : IdMapping::Kind::kBoth;
  m.host = j.value("host", 0u);
  m.sandbox = j.value("sandbox", 0u);
  m.count = j.value("count", 1u);
}

}  // namespace isb::engine
