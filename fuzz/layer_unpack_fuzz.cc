// Fuzzes the layer unpacker on arbitrary tars: each input unpacked into a fresh directory with a sibling holding a
// sentinel file; whatever the outcome, nothing may appear beside the layer's directory nor change in the sibling.
// Everything is removed after each input.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "image/layer_unpack.h"

namespace {

namespace fs = std::filesystem;

std::vector<std::string> Listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) names.push_back(e.path().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string Contents(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Makes every directory below `dir` writable and searchable again (a layer may leave 0000 ones), then removes it.
void RemoveAll(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
  }
  fs::remove_all(dir, ec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char tmpl[] = "/tmp/isb-layer-fuzz-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) std::abort();
  const fs::path base(tmpl);
  fs::create_directory(base / "layer");
  fs::create_directory(base / "outside");
  std::ofstream(base / "outside" / "sentinel") << "untouched";
  const std::vector<std::string> before = Listing(base / "outside");

  isb::image::StringSource in(std::string_view(reinterpret_cast<const char*>(data), size));
  isb::image::TarReader reader(in);
  isb::Result<isb::image::UnpackReport> r = isb::image::UnpackLayer(reader, (base / "layer").string(), {1 << 20, 1000});
  (void)r;

  std::vector<std::string> top;
  for (const auto& e : fs::directory_iterator(base)) top.push_back(e.path().filename().string());
  std::sort(top.begin(), top.end());
  if (top != std::vector<std::string>{"layer", "outside"}) std::abort();
  if (Listing(base / "outside") != before || Contents(base / "outside" / "sentinel") != "untouched") std::abort();
  RemoveAll(base);
  return 0;
}
