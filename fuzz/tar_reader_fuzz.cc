// Fuzzes the tar reader on arbitrary bytes: every entry and all its data read (in pieces of a size the input
// chooses), then the rest drained; never a crash, and the offset never passes the input's size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "image/tar_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = data[0] % 97 + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  isb::image::StringSource in(bytes);
  isb::image::TarReader reader(in);
  std::vector<uint8_t> buf(piece);
  for (;;) {
    isb::Result<std::optional<isb::image::TarEntry>> e = reader.Next();
    if (!e.ok()) return 0;
    if (!e->has_value()) break;
    if ((*e)->path.empty()) std::abort();
    uint64_t got = 0;
    for (;;) {
      isb::Result<size_t> n = reader.ReadData(buf);
      if (!n.ok()) return 0;
      if (*n == 0) break;
      got += *n;
    }
    if (got != (*e)->size) std::abort();
  }
  if (!reader.Drain().ok()) std::abort();
  if (reader.offset() != bytes.size()) std::abort();
  return 0;
}
