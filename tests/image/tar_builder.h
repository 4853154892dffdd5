// TarBuilder: tar archives written byte for byte by the tests (ustar, GNU long names and links, pax records), so a
// test can hand the reader and the unpacker exactly the malformed or malicious archive it means.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace isb::image::testing {

struct TarHeader {
  std::string name = {};
  char type = '0';
  uint32_t mode = 0644;
  uint32_t uid = 0, gid = 0;
  int64_t mtime = 1700000000;
  std::string link = {};
  uint32_t major = 0, minor = 0;
  std::string prefix = {};    // ustar prefix (POSIX magic only)
  bool gnu = false;           // GNU magic "ustar  \0" instead of POSIX "ustar\0" "00"
  bool base256_size = false;  // the size field in GNU base-256
  int64_t size = -1;          // the size field; -1: the data's length
};

// One pax record, "LENGTH KEY=VALUE\n", LENGTH counting itself.
inline std::string PaxRecord(std::string_view key, std::string_view value) {
  const size_t rest = 1 + key.size() + 1 + value.size() + 1;
  size_t len = rest + 1;
  while (std::to_string(len).size() + rest != len) ++len;
  return std::to_string(len) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

// `width` - 1 octal digits, zero-padded, then a NUL (the high digits of a value too large are lost).
inline void Octal(char* field, size_t width, uint64_t v) {
  for (size_t i = width - 1; i-- > 0; v >>= 3) field[i] = static_cast<char>('0' + (v & 7));
  field[width - 1] = '\0';
}

// The 512-byte header block of `h`, its checksum computed.
inline std::string HeaderBlock(const TarHeader& h, uint64_t data_size) {
  std::string b(512, '\0');
  char* p = b.data();
  std::memcpy(p, h.name.data(), std::min<size_t>(h.name.size(), 100));
  Octal(p + 100, 8, h.mode);
  Octal(p + 108, 8, h.uid);
  Octal(p + 116, 8, h.gid);
  const uint64_t size = h.size >= 0 ? static_cast<uint64_t>(h.size) : data_size;
  if (h.base256_size) {
    p[124] = static_cast<char>(0x80);
    for (int i = 0; i < 8; ++i) p[135 - i] = static_cast<char>((size >> (8 * i)) & 0xff);
  } else {
    Octal(p + 124, 12, size);
  }
  Octal(p + 136, 12, static_cast<uint64_t>(h.mtime));
  p[156] = h.type;
  std::memcpy(p + 157, h.link.data(), std::min<size_t>(h.link.size(), 100));
  if (h.gnu) {
    std::memcpy(p + 257, "ustar  ", 8);
  } else {
    std::memcpy(p + 257, "ustar", 6);
    std::memcpy(p + 263, "00", 2);
    std::memcpy(p + 345, h.prefix.data(), std::min<size_t>(h.prefix.size(), 155));
  }
  Octal(p + 329, 8, h.major);
  Octal(p + 337, 8, h.minor);
  std::memset(p + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : b) sum += c;
  std::snprintf(p + 148, 7, "%06o", sum);
  p[154] = '\0';
  p[155] = ' ';
  return b;
}

class TarBuilder {
 public:
  // A header, then `data` padded to the next block.
  TarBuilder& Entry(const TarHeader& h, std::string_view data = "") {
    out_ += HeaderBlock(h, data.size());
    out_ += data;
    out_.append((512 - data.size() % 512) % 512, '\0');
    return *this;
  }
  TarBuilder& File(const std::string& name, std::string_view data, uint32_t mode = 0644) {
    return Entry({.name = name, .type = '0', .mode = mode}, data);
  }
  TarBuilder& Dir(const std::string& name, uint32_t mode = 0755) {
    return Entry({.name = name, .type = '5', .mode = mode});
  }
  TarBuilder& Symlink(const std::string& name, const std::string& target) {
    return Entry({.name = name, .type = '2', .mode = 0777, .link = target});
  }
  TarBuilder& Hardlink(const std::string& name, const std::string& target) {
    return Entry({.name = name, .type = '1', .link = target});
  }
  TarBuilder& Device(const std::string& name, char type, uint32_t major, uint32_t minor) {
    return Entry({.name = name, .type = type, .mode = 0600, .major = major, .minor = minor});
  }
  // A pax extended header ('x') applying `records` to the next entry.
  TarBuilder& Pax(const std::vector<std::pair<std::string, std::string>>& records) {
    std::string data;
    for (const auto& [k, v] : records) data += PaxRecord(k, v);
    return Entry({.name = "PaxHeaders.0/x", .type = 'x'}, data);
  }
  TarBuilder& GnuLongName(const std::string& name) {
    return Entry({.name = "././@LongLink", .type = 'L', .gnu = true}, name + std::string(1, '\0'));
  }
  TarBuilder& GnuLongLink(const std::string& target) {
    return Entry({.name = "././@LongLink", .type = 'K', .gnu = true}, target + std::string(1, '\0'));
  }
  TarBuilder& Raw(std::string_view bytes) {
    out_ += bytes;
    return *this;
  }
  // The archive with its two end blocks.
  std::string End() const { return out_ + std::string(1024, '\0'); }
  // The archive so far, without end blocks.
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

}  // namespace isb::image::testing
