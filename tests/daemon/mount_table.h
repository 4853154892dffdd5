// What the host's kernel says is mounted and attached: for tests that assert a layer left nothing behind.
// Header-only and standard C++ only, so the end-to-end suite (which links no isb library) uses it too.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace isb::testing {

inline std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// The lines of /proc/self/mountinfo whose mount point is `dir` (a path without spaces).
inline std::vector<std::string> MountsOn(const std::string& dir) {
  std::vector<std::string> out;
  std::istringstream in(ReadWhole("/proc/self/mountinfo"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    fields >> id >> parent >> devno >> root >> point;
    if (point == dir) out.push_back(line);
  }
  return out;
}

// The loop devices whose backing file is `image`, deleted or not (/sys/block/loop*/loop/backing_file).
inline std::vector<std::string> LoopsOf(const std::string& image) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/block", ec)) {
    std::string name = e.path().filename().string();
    if (!name.starts_with("loop")) continue;
    std::string backing = ReadWhole(e.path().string() + "/loop/backing_file");
    if (backing == image + "\n" || backing == image + " (deleted)\n") out.push_back(name);
  }
  return out;
}

}  // namespace isb::testing
