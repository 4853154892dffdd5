// Durable file operations for the secret store: a crash leaves the old state or the new, never a part.
#pragma once

#include <filesystem>
#include <string_view>

#include "base/result.h"

namespace isb::secrets {

// Names starting with this are work in progress (a file being written, a directory being removed); it is no
// character a secret or org name may hold, so they never collide, and RemoveStrays clears what a crash left.
inline constexpr char kStrayPrefix = '~';

// Writes `data` to a new 0600 file beside `path`, fsyncs it, renames it over `path`, and fsyncs the directory.
Status WriteFileDurably(const std::filesystem::path& path, std::string_view data);
// mkdir 0700 (an existing directory is fine) and fsync of its parent.
Status MakeDirDurably(const std::filesystem::path& path);
// Renames `path` out of the way in one step (durably), then removes it and everything in it.
Status RemoveDirDurably(const std::filesystem::path& path);
// Removes every entry of `dir` whose name starts with kStrayPrefix.
void RemoveStrays(const std::filesystem::path& dir);

}  // namespace isb::secrets
