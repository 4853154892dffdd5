// A real registry for the tests: Debian's docker-registry on a free loopback port with a test CA and certificate
// made here, anonymous or behind htpasswd basic auth, and the test images pushed to it (make_test_image.sh).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "image/digest.h"

namespace isb::image::testing {

inline constexpr const char* kTestUser = "alice";
inline constexpr const char* kTestPassword = "correct-horse-42";

// Whether docker-registry, umoci, skopeo, htpasswd, openssl, curl, jq and /bin/busybox are all here; else names the
// first one missing.
std::string MissingTool();

// A temp dir removed with everything in it when this goes away.
class TempDir {
 public:
  static Result<TempDir> Make(const std::string& prefix);
  TempDir(TempDir&& o) noexcept : path_(std::exchange(o.path_, "")) {}
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The test images, built once: an OCI layout with tags "amd64" and "arm64" (see make_test_image.sh build).
class TestImages {
 public:
  static Result<std::unique_ptr<TestImages>> Build();
  const std::string& work() const { return dir_.path(); }

 private:
  explicit TestImages(TempDir dir) : dir_(std::move(dir)) {}
  TempDir dir_;
};

enum class PushFormat { kOci, kDocker, kOciZstd };  // gzip layers, schema 2, zstd layers

class TestRegistry {
 public:
  // Starts a registry in a temp dir of its own and waits until it answers. With basic_auth, kTestUser and
  // kTestPassword are its only account.
  static Result<std::unique_ptr<TestRegistry>> Start(bool basic_auth);
  // Stops the registry (SIGTERM, then SIGKILL) and removes its dir.
  ~TestRegistry();

  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }  // as in image references
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_.path(); }
  std::string ca_file() const { return dir_.path() + "/certs/ca.crt"; }
  // Where the registry keeps a blob's bytes.
  std::string BlobDataPath(const Digest& digest) const;

  // Pushes the test image's `tag` ("amd64" or "arm64") as REPO:TO_TAG; the manifest's digest.
  Result<std::string> Push(const TestImages& images, const std::string& tag, const std::string& repo_tag,
                           PushFormat format = PushFormat::kOci) const;
  // Puts an OCI index of the two manifests as REPO:TAG; its digest.
  Result<std::string> PushIndex(const std::string& repo, const std::string& amd64, const std::string& arm64,
                                const std::string& tag) const;
  // An index whose one entry is the index `inner` (an index of indexes), as REPO:TAG; its digest.
  Result<std::string> PushOuterIndex(const std::string& repo, const std::string& inner, const std::string& tag) const;

 private:
  TestRegistry(TempDir dir, bool basic_auth) : dir_(std::move(dir)), basic_auth_(basic_auth) {}
  Status Launch();

  TempDir dir_;
  bool basic_auth_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace isb::image::testing
