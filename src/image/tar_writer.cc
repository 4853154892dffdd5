// TarWriter: ustar blocks, with a pax extended header ahead of an entry whose name, link, ids, size or xattrs the
// ustar fields cannot hold.
#include "image/tar_writer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

namespace isb::image {
namespace {

constexpr size_t kBlock = 512;

// An octal field of `width` bytes (NUL-terminated), or false when `value` does not fit.
bool PutOctal(char* field, size_t width, uint64_t value) {
  char text[32];
  const int n =
      std::snprintf(text, sizeof text, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(value));
  if (n < 0 || static_cast<size_t>(n) > width - 1) return false;
  std::memcpy(field, text, static_cast<size_t>(n));
  field[n] = '\0';
  return true;
}

// One pax record: "LEN KEY=VALUE\n", LEN counting itself.
std::string PaxRecord(const std::string& key, const std::string& value) {
  const size_t body = 1 + key.size() + 1 + value.size() + 1;
  size_t len = body + 1;
  while (std::to_string(len).size() + body != len) ++len;
  return std::to_string(len) + " " + key + "=" + value + "\n";
}

struct Ustar {
  std::array<char, kBlock> b{};
  char* name() { return b.data(); }
  char* mode() { return b.data() + 100; }
  char* uid() { return b.data() + 108; }
  char* gid() { return b.data() + 116; }
  char* size() { return b.data() + 124; }
  char* mtime() { return b.data() + 136; }
  char* checksum() { return b.data() + 148; }
  char& type() { return b[156]; }
  char* linkname() { return b.data() + 157; }
  char* magic() { return b.data() + 257; }
  char* devmajor() { return b.data() + 329; }
  char* devminor() { return b.data() + 337; }
  char* prefix() { return b.data() + 345; }

  void Seal() {
    std::memset(checksum(), ' ', 8);
    unsigned sum = 0;
    for (char c : b) sum += static_cast<unsigned char>(c);
    std::snprintf(checksum(), 8, "%06o", sum);
    checksum()[7] = ' ';
  }
};

// Fills name/prefix when `path` fits the ustar split (prefix up to 155, name up to 100), else false.
bool PutName(Ustar& h, const std::string& path) {
  if (path.size() <= 100) {
    std::memcpy(h.name(), path.data(), path.size());
    return true;
  }
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    if (slash <= 155 && path.size() - slash - 1 <= 100 && path.size() - slash - 1 > 0) {
      std::memcpy(h.prefix(), path.data(), slash);
      std::memcpy(h.name(), path.data() + slash + 1, path.size() - slash - 1);
      return true;
    }
  }
  return false;
}

}  // namespace

Status TarWriter::Write(std::span<const uint8_t> bytes) {
  written_ += bytes.size();
  return sink_(bytes);
}

Status TarWriter::Pad() {
  static constexpr std::array<uint8_t, kBlock> kZeros{};
  const size_t rem = data_size_ % kBlock;
  if (rem == 0) return {};
  return Write(std::span(kZeros.data(), kBlock - rem));
}

Status TarWriter::Add(const TarHeader& header) {
  if (data_left_ != 0) return Error::Of(Code::kInternal, "tar: the previous entry's data is incomplete");
  if (header.path.empty() || header.path.find('\0') != std::string::npos)
    return Error::Of(Code::kInvalidArgument, "tar: an entry needs a name without NUL");
  const bool dir = header.type == TarHeader::Type::kDir;
  const std::string path = dir ? header.path + "/" : header.path;
  Ustar h;
  std::string pax;
  if (!PutName(h, path)) pax += PaxRecord("path", path);
  if (header.link.size() <= 100) {
    std::memcpy(h.linkname(), header.link.data(), header.link.size());
  } else {
    pax += PaxRecord("linkpath", header.link);
  }
  const uint64_t size = header.type == TarHeader::Type::kFile ? header.size : 0;
  if (!PutOctal(h.size(), 12, size)) pax += PaxRecord("size", std::to_string(size));
  if (!PutOctal(h.uid(), 8, header.uid)) pax += PaxRecord("uid", std::to_string(header.uid));
  if (!PutOctal(h.gid(), 8, header.gid)) pax += PaxRecord("gid", std::to_string(header.gid));
  const uint64_t mtime = header.mtime < 0 ? 0 : static_cast<uint64_t>(header.mtime);
  if (!PutOctal(h.mtime(), 12, mtime)) pax += PaxRecord("mtime", std::to_string(mtime));
  for (const auto& [name, value] : header.xattrs) pax += PaxRecord("SCHILY.xattr." + name, value);
  PutOctal(h.mode(), 8, header.mode & 07777);
  PutOctal(h.devmajor(), 8, header.dev_major);
  PutOctal(h.devminor(), 8, header.dev_minor);
  h.type() = static_cast<char>(header.type);
  std::memcpy(h.magic(),
              "ustar\0"
              "00",
              8);
  if (!pax.empty()) {
    Ustar x;
    const std::string xname = "PaxHeaders/" + header.path.substr(0, std::min<size_t>(header.path.size(), 80));
    PutName(x, xname);
    PutOctal(x.mode(), 8, 0644);
    PutOctal(x.uid(), 8, 0);
    PutOctal(x.gid(), 8, 0);
    PutOctal(x.size(), 12, pax.size());
    PutOctal(x.mtime(), 12, 0);
    PutOctal(x.devmajor(), 8, 0);
    PutOctal(x.devminor(), 8, 0);
    x.type() = 'x';
    std::memcpy(x.magic(),
                "ustar\0"
                "00",
                8);
    x.Seal();
    ISB_TRY(Write(std::span(reinterpret_cast<const uint8_t*>(x.b.data()), kBlock)));
    data_size_ = pax.size();
    ISB_TRY(Write(std::span(reinterpret_cast<const uint8_t*>(pax.data()), pax.size())));
    ISB_TRY(Pad());
  }
  h.Seal();
  ISB_TRY(Write(std::span(reinterpret_cast<const uint8_t*>(h.b.data()), kBlock)));
  data_left_ = size;
  data_size_ = size;
  return {};
}

Status TarWriter::Data(std::span<const uint8_t> bytes) {
  if (bytes.size() > data_left_) return Error::Of(Code::kInternal, "tar: more data than the entry's size");
  data_left_ -= bytes.size();
  ISB_TRY(Write(bytes));
  if (data_left_ == 0) return Pad();
  return {};
}

Status TarWriter::AddFile(TarHeader header, std::string_view contents) {
  header.type = TarHeader::Type::kFile;
  header.size = contents.size();
  ISB_TRY(Add(header));
  if (contents.empty()) return {};
  return Data(std::span(reinterpret_cast<const uint8_t*>(contents.data()), contents.size()));
}

Status TarWriter::Finish() {
  if (data_left_ != 0) return Error::Of(Code::kInternal, "tar: the last entry's data is incomplete");
  static constexpr std::array<uint8_t, 2 * kBlock> kEnd{};
  return Write(kEnd);
}

}  // namespace isb::image
