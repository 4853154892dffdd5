// Small whole-file helpers for the kernel's text interfaces (procfs, cgroupfs).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace isb {

Result<std::string> ReadFile(const std::string& path);
// Writes `data` with one write(2), as cgroupfs and procfs require; no O_CREAT, no O_TRUNC.
Status WriteKernelFile(const std::string& path, std::string_view data);
// Creates or replaces a regular file with `data` and `mode`.
Status WriteFile(const std::string& path, std::string_view data, int mode = 0644);
// mkdir -p; existing directories are fine.
Status MakeDirs(const std::string& path, int mode = 0755);

}  // namespace isb
