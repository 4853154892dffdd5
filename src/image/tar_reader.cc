// The tar reader: header blocks checked and decoded, pax records and GNU long names folded into the entry they
// precede.
#include "image/tar_reader.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <string_view>

namespace isb::image {
namespace {

constexpr size_t kBlock = 512;

// What pax records ('x') and GNU long name/link entries ('L', 'K') say of the entry after them.
struct Pending {
  std::optional<std::string> path, link;
  std::optional<uint64_t> size;
  std::optional<uint32_t> uid, gid;
  std::optional<std::pair<int64_t, uint32_t>> mtime;
  std::vector<std::pair<std::string, std::string>> xattrs;
};

std::string At(uint64_t header_at) { return "tar header at byte " + std::to_string(header_at) + ": "; }

Error Malformed(uint64_t header_at, const std::string& why) {
  return Error::Of(Code::kInvalidArgument, At(header_at) + why);
}

// A NUL-terminated text field (or the whole field when it has no NUL).
std::string_view Text(const uint8_t* h, size_t off, size_t len) {
  std::string_view f(reinterpret_cast<const char*>(h) + off, len);
  return f.substr(0, f.find('\0'));
}

bool AllZero(const uint8_t* h) {
  return std::all_of(h, h + kBlock, [](uint8_t b) { return b == 0; });
}

// A numeric field: octal padded with spaces or NULs, or GNU base-256 (high bit set; 0xff first: negative).
Result<int64_t> Number(const uint8_t* h, size_t off, size_t len, const char* field, uint64_t header_at) {
  const uint8_t* f = h + off;
  if (f[0] & 0x80) {
    const bool negative = f[0] == 0xff;
    uint64_t v = negative ? ~uint64_t{0} : 0;
    for (size_t i = 0; i < len; ++i) {
      const uint8_t b = i == 0 && !negative ? (f[0] & 0x7f) : f[i];
      if ((v >> 56) != (negative ? 0xff : 0)) return Malformed(header_at, std::string(field) + ": base-256 overflow");
      v = (v << 8) | b;
    }
    const auto s = static_cast<int64_t>(v);
    if ((s < 0) != negative) return Malformed(header_at, std::string(field) + ": base-256 overflow");
    return s;
  }
  size_t i = 0;
  while (i < len && (f[i] == ' ' || f[i] == 0)) ++i;
  uint64_t v = 0;
  for (; i < len && f[i] >= '0' && f[i] <= '7'; ++i) {
    if (v > (std::numeric_limits<uint64_t>::max() >> 4)) return Malformed(header_at, std::string(field) + ": overflow");
    v = v * 8 + (f[i] - '0');
  }
  for (; i < len; ++i) {
    if (f[i] != ' ' && f[i] != 0) {
      return Malformed(header_at, std::string(field) + ": not an octal number (byte " + std::to_string(f[i]) + ")");
    }
  }
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Malformed(header_at, std::string(field) + ": overflow");
  }
  return static_cast<int64_t>(v);
}

Result<uint64_t> Unsigned(const uint8_t* h, size_t off, size_t len, const char* field, uint64_t header_at,
                          uint64_t max) {
  ISB_ASSIGN_OR_RETURN(int64_t v, Number(h, off, len, field, header_at));
  if (v < 0 || static_cast<uint64_t>(v) > max) {
    return Malformed(header_at, std::string(field) + " " + std::to_string(v) + " is out of range");
  }
  return static_cast<uint64_t>(v);
}

Status CheckSum(const uint8_t* h, uint64_t header_at) {
  ISB_ASSIGN_OR_RETURN(uint64_t stored, Unsigned(h, 148, 8, "checksum", header_at, 1 << 20));
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const uint8_t b = i >= 148 && i < 156 ? ' ' : h[i];
    unsigned_sum += b;
    signed_sum += static_cast<int8_t>(b);
  }
  if (stored != unsigned_sum && static_cast<int64_t>(stored) != signed_sum) {
    return Malformed(header_at, "checksum mismatch (stored " + std::to_string(stored) + ", computed " +
                                    std::to_string(unsigned_sum) + "): not a tar header, or a corrupt one");
  }
  return {};
}

Result<uint64_t> PaxDecimal(std::string_view v, std::string_view key, uint64_t max, uint64_t header_at) {
  uint64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || out > max) {
    return Malformed(header_at, "pax " + std::string(key) + " \"" + std::string(v) + "\" is not a number in range");
  }
  return out;
}

// "[-]SECONDS[.FRACTION]", the fraction's first nine digits kept as nanoseconds; negative times round down.
Result<std::pair<int64_t, uint32_t>> PaxTime(std::string_view v, uint64_t header_at) {
  const bool negative = !v.empty() && v[0] == '-';
  std::string_view whole = negative ? v.substr(1) : v;
  std::string_view frac;
  if (size_t dot = whole.find('.'); dot != std::string_view::npos) {
    frac = whole.substr(dot + 1);
    whole = whole.substr(0, dot);
  }
  ISB_ASSIGN_OR_RETURN(uint64_t secs, PaxDecimal(whole, "mtime", std::numeric_limits<int64_t>::max() - 1, header_at));
  uint32_t nsec = 0;
  for (size_t i = 0; i < frac.size(); ++i) {
    if (frac[i] < '0' || frac[i] > '9')
      return Malformed(header_at, "pax mtime \"" + std::string(v) + "\" is malformed");
    if (i < 9) nsec = nsec * 10 + (frac[i] - '0');
  }
  for (size_t i = frac.size(); i < 9; ++i) nsec *= 10;
  auto s = static_cast<int64_t>(secs);
  if (negative && nsec > 0) return std::pair<int64_t, uint32_t>{-s - 1, 1000000000u - nsec};
  return std::pair<int64_t, uint32_t>{negative ? -s : s, nsec};
}

Status NoNul(std::string_view v, const char* what, uint64_t header_at) {
  if (v.find('\0') != std::string_view::npos) return Malformed(header_at, std::string(what) + " holds a NUL byte");
  return {};
}

// One pax record's key and value applied to `p`; keys isb has no use for are ignored.
Status ApplyPax(std::string_view key, std::string_view value, Pending& p, uint64_t header_at) {
  constexpr std::string_view kXattr = "SCHILY.xattr.";
  if (key == "path") {
    ISB_TRY(NoNul(value, "pax path", header_at));
    p.path = std::string(value);
  } else if (key == "linkpath") {
    ISB_TRY(NoNul(value, "pax linkpath", header_at));
    p.link = std::string(value);
  } else if (key == "size") {
    ISB_ASSIGN_OR_RETURN(p.size, PaxDecimal(value, key, std::numeric_limits<int64_t>::max(), header_at));
  } else if (key == "uid" || key == "gid") {
    ISB_ASSIGN_OR_RETURN(uint64_t id, PaxDecimal(value, key, std::numeric_limits<uint32_t>::max(), header_at));
    (key == "uid" ? p.uid : p.gid) = static_cast<uint32_t>(id);
  } else if (key == "mtime") {
    ISB_ASSIGN_OR_RETURN(p.mtime, PaxTime(value, header_at));
  } else if (key.substr(0, kXattr.size()) == kXattr && key.size() > kXattr.size()) {
    p.xattrs.emplace_back(std::string(key.substr(kXattr.size())), std::string(value));
  } else if (key.substr(0, 11) == "GNU.sparse.") {
    return Malformed(header_at, "GNU sparse files are not supported (pax " + std::string(key) + ")");
  }
  return {};
}

// Records "LENGTH KEY=VALUE\n", LENGTH counting the whole record.
Status ParsePax(std::string_view data, Pending& p, uint64_t header_at) {
  while (!data.empty()) {
    const size_t space = data.find(' ');
    uint64_t len = 0;
    auto [end, ec] = std::from_chars(data.data(), data.data() + std::min(space, data.size()), len);
    if (space == std::string_view::npos || ec != std::errc() || end != data.data() + space || len <= space + 1 ||
        len > data.size() || data[len - 1] != '\n') {
      return Malformed(header_at, "malformed pax record");
    }
    std::string_view record = data.substr(space + 1, len - space - 2);
    const size_t eq = record.find('=');
    if (eq == std::string_view::npos || eq == 0) return Malformed(header_at, "malformed pax record (no key=value)");
    ISB_TRY(ApplyPax(record.substr(0, eq), record.substr(eq + 1), p, header_at));
    data.remove_prefix(len);
  }
  return {};
}

std::optional<TarEntry::Type> TypeOf(char flag, std::string_view name) {
  switch (flag) {
    case '\0':
      return name.ends_with('/') ? TarEntry::Type::kDir : TarEntry::Type::kFile;
    case '0':
    case '7':
      return TarEntry::Type::kFile;
    case '1':
      return TarEntry::Type::kHardlink;
    case '2':
      return TarEntry::Type::kSymlink;
    case '3':
      return TarEntry::Type::kChar;
    case '4':
      return TarEntry::Type::kBlock;
    case '5':
    case 'D':
      return TarEntry::Type::kDir;  // 'D': a GNU dump directory, its data (a name list) skipped
    case '6':
      return TarEntry::Type::kFifo;
    default:
      return std::nullopt;
  }
}

}  // namespace

Result<size_t> TarReader::ReadRaw(std::span<uint8_t> out) {
  ISB_ASSIGN_OR_RETURN(size_t n, ReadFull(in_, out));
  offset_ += n;
  return n;
}

Status TarReader::Skip(uint64_t n) {
  std::array<uint8_t, 8192> scratch;
  while (n > 0) {
    ISB_ASSIGN_OR_RETURN(size_t got, ReadRaw(std::span(scratch).first(std::min<uint64_t>(n, scratch.size()))));
    if (got == 0) {
      return Error::Of(Code::kInvalidArgument, "tar entry \"" + current_ + "\": truncated (the archive ended " +
                                                   std::to_string(n) + " bytes before the end of this entry)");
    }
    n -= got;
  }
  return {};
}

Result<std::string> TarReader::ReadMeta(uint64_t size, uint64_t header_at, const char* what) {
  if (size > kMaxTarMetaBytes) {
    return Error::Of(Code::kTooLarge, At(header_at) + what + " of " + std::to_string(size) + " bytes (at most " +
                                          std::to_string(kMaxTarMetaBytes) + ")");
  }
  std::string data(size, '\0');
  ISB_ASSIGN_OR_RETURN(size_t got, ReadRaw(std::span(reinterpret_cast<uint8_t*>(data.data()), data.size())));
  if (got < size) return Malformed(header_at, std::string(what) + " truncated");
  current_ = what;
  ISB_TRY(Skip((kBlock - size % kBlock) % kBlock));
  return data;
}

Result<std::optional<TarEntry>> TarReader::Next() {
  if (ended_) return std::optional<TarEntry>();
  ISB_TRY(Skip(remaining_ + padding_));
  remaining_ = padding_ = 0;
  Pending pending;
  uint64_t pending_bytes = 0;  // pax records and long names kept for the coming entry: bounded as one of them is
  for (;;) {
    const uint64_t at = offset_;
    std::array<uint8_t, kBlock> block;
    const uint8_t* h = block.data();
    ISB_ASSIGN_OR_RETURN(size_t got, ReadRaw(block));
    if (got == 0 || (got == kBlock && AllZero(h))) {
      ended_ = true;
      return std::optional<TarEntry>();
    }
    if (got < kBlock) return Malformed(at, "truncated (" + std::to_string(got) + " of 512 bytes)");
    ISB_TRY(CheckSum(h, at));
    const char flag = static_cast<char>(h[156]);
    ISB_ASSIGN_OR_RETURN(uint64_t size, Unsigned(h, 124, 12, "size", at, std::numeric_limits<int64_t>::max()));
    if (flag == 'x' || flag == 'g' || flag == 'L' || flag == 'K') {
      const char* what = flag == 'x'   ? "pax header"
                         : flag == 'g' ? "pax global header"
                         : flag == 'L' ? "GNU long name"
                                       : "GNU long link";
      ISB_ASSIGN_OR_RETURN(std::string meta, ReadMeta(size, at, what));
      if (flag != 'g' && (pending_bytes += size) > kMaxTarMetaBytes) {
        return Error::Of(Code::kTooLarge,
                         At(at) + "metadata for one entry past " + std::to_string(kMaxTarMetaBytes) + " bytes");
      }
      if (flag == 'x') ISB_TRY(ParsePax(meta, pending, at));
      if (flag == 'L') pending.path = meta.substr(0, meta.find('\0'));
      if (flag == 'K') pending.link = meta.substr(0, meta.find('\0'));
      continue;
    }
    const bool posix = std::memcmp(h + 257, "ustar\0", 6) == 0;
    std::string name(Text(h, 0, 100));
    if (posix && h[345] != 0) name = std::string(Text(h, 345, 155)) + "/" + name;
    TarEntry e;
    e.path = pending.path.value_or(name);
    e.link = pending.link.value_or(std::string(Text(h, 157, 100)));
    if (e.path.empty()) return Malformed(at, "an entry with an empty name");
    const std::optional<TarEntry::Type> type = TypeOf(flag, e.path);
    if (!type) {
      return Malformed(at, "entry \"" + e.path + "\" has the unsupported type '" + std::string(1, flag) +
                               "' (GNU sparse and multi-volume archives are not supported)");
    }
    e.type = *type;
    ISB_ASSIGN_OR_RETURN(uint64_t mode, Unsigned(h, 100, 8, "mode", at, std::numeric_limits<uint32_t>::max()));
    ISB_ASSIGN_OR_RETURN(uint64_t uid, Unsigned(h, 108, 8, "uid", at, std::numeric_limits<uint32_t>::max()));
    ISB_ASSIGN_OR_RETURN(uint64_t gid, Unsigned(h, 116, 8, "gid", at, std::numeric_limits<uint32_t>::max()));
    ISB_ASSIGN_OR_RETURN(int64_t mtime, Number(h, 136, 12, "mtime", at));
    e.mode = static_cast<uint32_t>(mode & 07777);
    e.uid = pending.uid.value_or(static_cast<uint32_t>(uid));
    e.gid = pending.gid.value_or(static_cast<uint32_t>(gid));
    e.mtime = pending.mtime ? pending.mtime->first : mtime;
    e.mtime_nsec = pending.mtime ? pending.mtime->second : 0;
    e.xattrs = std::move(pending.xattrs);
    if (e.type == TarEntry::Type::kChar || e.type == TarEntry::Type::kBlock) {
      ISB_ASSIGN_OR_RETURN(uint64_t major, Unsigned(h, 329, 8, "devmajor", at, std::numeric_limits<uint32_t>::max()));
      ISB_ASSIGN_OR_RETURN(uint64_t minor, Unsigned(h, 337, 8, "devminor", at, std::numeric_limits<uint32_t>::max()));
      e.dev_major = static_cast<uint32_t>(major);
      e.dev_minor = static_cast<uint32_t>(minor);
    }
    // Links, directories, devices and FIFOs carry no data of their own, whatever their size field says; a GNU
    // dump directory's name list is skipped.
    const uint64_t data = pending.size.value_or(size);
    const bool has_data = e.type == TarEntry::Type::kFile || flag == 'D';
    remaining_ = has_data ? data : 0;
    padding_ = (kBlock - remaining_ % kBlock) % kBlock;
    e.size = e.type == TarEntry::Type::kFile ? data : 0;
    declared_ = remaining_;
    current_ = e.path;
    return std::optional<TarEntry>(std::move(e));
  }
}

Result<size_t> TarReader::ReadData(std::span<uint8_t> out) {
  const size_t want = static_cast<size_t>(std::min<uint64_t>(out.size(), remaining_));
  if (want == 0) return size_t{0};
  ISB_ASSIGN_OR_RETURN(size_t n, in_.Read(out.first(want)));
  if (n == 0) {
    return Error::Of(Code::kInvalidArgument, "tar entry \"" + current_ + "\": truncated (the archive ended after " +
                                                 std::to_string(declared_ - remaining_) + " of its " +
                                                 std::to_string(declared_) + " data bytes)");
  }
  offset_ += n;
  remaining_ -= n;
  return n;
}

Result<uint64_t> TarReader::Drain() {
  std::array<uint8_t, 8192> scratch;
  uint64_t total = 0;
  for (;;) {
    ISB_ASSIGN_OR_RETURN(size_t n, ReadRaw(scratch));
    if (n == 0) return total;
    total += n;
  }
}

}  // namespace isb::image
