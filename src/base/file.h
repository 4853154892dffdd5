// Small whole-file helpers for the kernel's text interfaces (procfs, cgroupfs).
#pragma once

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

}  // namespace isb
