// Small whole-file helpers for the kernel's text interfaces (procfs, cgroupfs).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace isb {

Result<std::string> ReadFile(const std::string& path);
// Writes `data` with one write(2), as cgroupfs and procfs require; no O_CREAT, no O_TRUNC.
Status WriteKernelFile(const std::string& path, std::string_view data);
// Creates or replaces a regular file with `data` and `mode`, in place (a bind mount of it sees the new contents).
Status WriteFile(const std::string& path, std::string_view data, int mode = 0644);
// The same through a new file renamed over `path`: a crash leaves the old contents or the new, never an empty or
// partial file. For small state files that are read back after a crash.
Status WriteFileAtomically(const std::string& path, std::string_view data, int mode = 0644);
// mkdir -p; existing directories are fine.
Status MakeDirs(const std::string& path, int mode = 0755);

// openat2 of `path` with `flags` (O_CLOEXEC and O_NOFOLLOW added) following no symlink on the way, magic links
// included: an fd, or -1 with errno set (ELOOP for a symlink on the path). Makes no allocation, so a child between
// clone and exec may call it. With O_PATH a final component that is a symlink is opened as one: check for it.
int OpenNoSymlinks(const char* path, uint64_t flags);

}  // namespace isb
