// LayerTest: a fresh temp dir per test holding the layer's directory and, beside it, an "outside" directory that
// escapes aim at; Unpack() of a tar built in the test, and Tree(), all that is on disk below a directory, one line
// per name, to assert exactly what an unpack left.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "image/byte_source.h"
#include "image/layer_unpack.h"
#include "image/tar_reader.h"
#include "must_work.h"

namespace isb::image::testing {

// "NAME TYPE..." for each name below `dir`, sorted: "a d0755 0:0", "a/f f0644 1:2 =hello", "l l0:0 ->/etc",
// "w c0000 0:0 0/0"; set-id, sticky and mode bits in octal; files show their contents when short.
inline std::vector<std::string> Tree(const std::string& dir) {
  std::vector<std::string> lines;
  for (auto it = std::filesystem::recursive_directory_iterator(dir); it != std::filesystem::end(it); ++it) {
    const std::string path = it->path().string();
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    std::string line = path.substr(dir.size() + 1) + " ";
    const std::string owner = " " + std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid);
    if (S_ISDIR(st.st_mode)) {
      line += std::string("d") + mode + owner;
    } else if (S_ISREG(st.st_mode)) {
      std::ifstream in(path, std::ios::binary);
      std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      line +=
          std::string("f") + mode + owner + (data.size() <= 40 ? " =" + data : " " + std::to_string(data.size()) + "B");
    } else if (S_ISLNK(st.st_mode)) {
      line += "l" + owner.substr(1) + " ->" + std::filesystem::read_symlink(path).string();
    } else if (S_ISCHR(st.st_mode)) {
      line += std::string("c") + mode + owner + " " + std::to_string(major(st.st_rdev)) + "/" +
              std::to_string(minor(st.st_rdev));
    } else {
      line += "?";
    }
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

inline std::string Xattr(const std::string& path, const char* name) {
  char buf[256];
  const ssize_t n = ::lgetxattr(path.c_str(), name, buf, sizeof buf);
  return n < 0 ? "<none>" : std::string(buf, static_cast<size_t>(n));
}

class LayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ISB_REQUIRE_ROOT();
    char tmpl[] = "/tmp/isb-layer-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    ASSERT_EQ(::mkdir(dir().c_str(), 0700), 0);
    ASSERT_EQ(::mkdir(outside().c_str(), 0755), 0);
    std::ofstream(outside() + "/secret") << "host";
    ASSERT_EQ(::chmod((outside() + "/secret").c_str(), 0644), 0);
  }
  void TearDown() override {
    if (base_.empty()) return;
    // Nothing an unpack did may be beside the layer's directory: the outside as the test made it.
    EXPECT_EQ(Tree(outside()), std::vector<std::string>{"secret f0644 0:0 =host"});
    std::filesystem::remove_all(base_);
  }

  std::string dir() const { return base_ + "/layer"; }
  std::string outside() const { return base_ + "/outside"; }

  Result<UnpackReport> Unpack(const std::string& tar, UnpackLimits limits = {1 << 30, 1 << 20}) {
    StringSource source(tar);
    TarReader reader(source);
    return UnpackLayer(reader, dir(), limits);
  }

  std::string base_;
};

}  // namespace isb::image::testing
