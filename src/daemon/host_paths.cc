// Host paths a spec names: mount sources and the image resolved to real paths, and isb's own state kept out of reach.
#include "daemon/sandbox_manager.h"

#include "api/org_sandboxes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>
#include <nlohmann/json.hpp>

#include "base/fd.h"
#include "base/file.h"
#include "base/random.h"
#include "base/units.h"
#include "engine/cgroup.h"
#include "engine/contain.h"
#include "engine/exec_client.h"
#include "engine/idmap.h"
#include "engine/launch.h"
#include "engine/namespaces.h"
#include "daemon/sandbox_record.h"

namespace isb::daemon {

using nlohmann::json;
using store::AsInt;
using store::AsText;

namespace {

// A file or directory as the kernel knows it: the same (device, inode) is the same one by whatever path, a bind
// mount's included.
using FileId = std::pair<dev_t, ino_t>;

// The real path of `path` (absolute, symlinks resolved) and each directory above it, up to /. A path that does not
// exist yet (the runtime dir before the first launch) starts at its nearest existing ancestor. Empty only when
// nothing can be looked at.
std::vector<FileId> Chain(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) return {};
  std::vector<FileId> out;
  for (;;) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) out.emplace_back(st.st_dev, st.st_ino);
    if (p == p.root_path() || !p.has_relative_path()) return out;
    p = p.parent_path();
  }
}

// `path` opened (O_PATH) as the engine reaches a source: with no symlink on the way, nor as its last component.
// Invalid, with errno set (ELOOP for a symlink), otherwise.
Fd OpenAsBound(const std::string& path) {
  Fd fd(OpenNoSymlinks(path.c_str(), O_PATH));
  struct stat st {};
  if (fd.valid() && (::fstat(fd.get(), &st) != 0 || S_ISLNK(st.st_mode))) {
    const int err = S_ISLNK(st.st_mode) ? ELOOP : errno;
    fd.Reset();
    errno = err;
  }
  return fd;
}

bool Holds(const std::vector<FileId>& chain, const FileId& id) {
  return std::find(chain.begin(), chain.end(), id) != chain.end();
}

}  // namespace

Status SandboxManager::KeepIsbOut(const api::SandboxSpec& spec) const {
  // The state and runtime dirs: not the source, not above it, not below it. The API socket (which may live
  // elsewhere, beside other files): not the source, not below it.
  // One that does not exist yet (the runtime dir before the first launch) has nothing below it to keep out.
  std::vector<std::vector<FileId>> dirs, files;
  for (const std::string& dir : {options_.state_dir, options_.runtime_dir}) {
    std::error_code ec;
    if (dir.empty()) continue;
    (std::filesystem::exists(dir, ec) ? dirs : files).push_back(Chain(dir));
  }
  if (!options_.serve_socket.empty()) files.push_back(Chain(options_.serve_socket));
  auto check = [&](const std::string& field, const std::string& path) -> Status {
    // Judged as the engine reaches it: a path that is gone, or has a symlink on it now, binds nothing (the launch
    // fails on it), so it is not this check's to refuse; nor is a running sandbox stopped for what the path would
    // lead to today rather than what it bound.
    if (!OpenAsBound(path).valid()) return Status();
    const std::vector<FileId> source = Chain(path);
    bool overlap = source.empty();
    for (const auto& own : dirs)
      overlap = overlap || own.empty() || Holds(own, source.front()) || Holds(source, own.front());
    for (const auto& own : files) overlap = overlap || own.empty() || Holds(own, source.front());
    if (overlap)
      return Error::Of(Code::kForbidden,
                       field + ": '" + path + "' is or holds a directory of isb's own, which no sandbox may see");
    return {};
  };
  if (!spec.image.empty() && !spec::IsImageReference(spec.image)) ISB_TRY(check("image", spec.image));
  for (size_t i = 0; i < spec.mounts.size(); ++i)
    ISB_TRY(check("mounts[" + std::to_string(i) + "].source", spec.mounts[i].source));
  return {};
}

Result<api::SandboxSpec> SandboxManager::ResolveMounts(api::SandboxSpec spec) const {
  // Each path becomes its real path, what every start then reaches without following a symlink. Paths the API
  // already resolved and checked against the bind roots are kept as they are, only if no symlink has come onto
  // them since: resolving them again would follow one swapped in meanwhile, past the check.
  auto resolve = [&](const std::string& field, std::string& path) -> Status {
    if (spec.paths_checked) {
      if (OpenAsBound(path).valid()) return {};
      if (errno == ENOENT) return Invalid(field + ": '" + path + "' does not exist");
      if (errno != ELOOP) return Error::Sys(field + ": " + path);
      return Error::Of(Code::kForbidden, field + ": '" + path +
                                             "' changed since it was checked (a symlink is on "
                                             "its path now)");
    }
    std::error_code ec;
    auto real = std::filesystem::canonical(path, ec);
    if (ec) return Invalid(field + ": '" + path + "' does not exist");
    path = real.string();
    return {};
  };
  if (!spec.image.empty() && !spec::IsImageReference(spec.image)) ISB_TRY(resolve("image", spec.image));
  for (size_t i = 0; i < spec.mounts.size(); ++i)
    ISB_TRY(resolve("mounts[" + std::to_string(i) + "].source", spec.mounts[i].source));
  ISB_TRY(KeepIsbOut(spec));
  return spec;
}

}  // namespace isb::daemon
