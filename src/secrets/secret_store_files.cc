// Temp file, fsync, rename, directory fsync.
#include "secrets/secret_store_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <system_error>
#include <vector>

#include "base/fd.h"
#include "base/random.h"

namespace isb::secrets {
namespace {

Status SyncDir(const std::filesystem::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Error::Sys("open " + dir.string());
  if (::fsync(fd.get()) != 0) return Error::Sys("fsync " + dir.string());
  return {};
}

Result<std::filesystem::path> StrayBeside(const std::filesystem::path& path) {
  ISB_ASSIGN_OR_RETURN(std::string tag, RandomHex(6));
  return path.parent_path() / (std::string(1, kStrayPrefix) + path.filename().string() + "." + tag);
}

Status WriteAndSync(const std::filesystem::path& path, std::string_view data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::Sys("create " + path.string());
  for (size_t off = 0; off < data.size();) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("write " + path.string());
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return Error::Sys("fsync " + path.string());
  return {};
}

}  // namespace

Status WriteFileDurably(const std::filesystem::path& path, std::string_view data) {
  ISB_ASSIGN_OR_RETURN(std::filesystem::path part, StrayBeside(path));
  Status written = WriteAndSync(part, data);
  if (written.ok() && ::rename(part.c_str(), path.c_str()) != 0) {
    written = Error::Sys("rename " + part.string() + " to " + path.string());
  }
  if (!written.ok()) {
    ::unlink(part.c_str());
    return written;
  }
  return SyncDir(path.parent_path());
}

Status MakeDirDurably(const std::filesystem::path& path) {
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno != EEXIST) return Error::Sys("mkdir " + path.string());
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Error::Msg(path.string() + " exists and is not a directory");
    }
    return {};
  }
  return SyncDir(path.parent_path());
}

Status RemoveDirDurably(const std::filesystem::path& path) {
  ISB_ASSIGN_OR_RETURN(std::filesystem::path gone, StrayBeside(path));
  if (::rename(path.c_str(), gone.c_str()) != 0) return Error::Sys("rename " + path.string());
  ISB_TRY(SyncDir(path.parent_path()));
  std::error_code ec;
  std::filesystem::remove_all(gone, ec);
  if (ec) return Error::Msg("remove " + gone.string() + ": " + ec.message());
  return {};
}

void RemoveStrays(const std::filesystem::path& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> strays;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().starts_with(kStrayPrefix)) strays.push_back(entry.path());
  }
  for (const auto& stray : strays) std::filesystem::remove_all(stray, ec);
}

}  // namespace isb::secrets
