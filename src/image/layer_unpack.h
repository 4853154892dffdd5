// UnpackLayer: one image layer (a tar written by anyone) unpacked below a directory and never outside it, OCI
// whiteouts turned into overlay whiteouts.
//
// What the unpacker decides, entry by entry (tests/image/layer_unpack_test.cc shows each):
// - Names: a leading '/' is stripped (an absolute name lands below `dir`, as GNU tar and Docker unpack it); empty
//   and "." components are dropped ("a/./b" and "a//b" are both "a/b"); a ".." component anywhere is refused, as is
//   a name longer than 4096 bytes. "." alone is the layer's root: only a directory entry may name it.
// - Nothing is ever followed: every parent directory is opened a component at a time with openat2 and
//   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS and O_NOFOLLOW, and a parent that is a symlink is
//   an error. A symlink in the layer may point anywhere; it is created as it is and never followed. Missing parents
//   are created (0755, root) and count as entries (Limits below).
// - An entry whose name exists already replaces it (a directory and everything below it included), except that a
//   directory entry over a directory merges into it: later entries win, as tar's order says.
// - Hardlinks: only to a name this layer already extracted and that is not a directory (never to lower layers, to
//   names outside, or forward). A hardlink to a symlink links the symlink itself, which stays unfollowed.
// - Character and block devices and FIFOs are skipped and listed in UnpackReport::skipped; the only character
//   devices in a layer are the whiteouts the unpacker makes from `.wh.` names.
// - Whiteouts: `.wh.NAME` removes NAME if this layer made it, then becomes a character device 0/0 named NAME;
//   `.wh..wh..opq` sets trusted.overlay.opaque=y and user.overlay.opaque=y on its directory; any other
//   `.wh..wh.` name (aufs metadata) is skipped and listed.
// - Ownership as the tar says (uid and gid within the image ids 0..65535, else an error); modes exactly (umask has
//   no effect) with S_ISUID and S_ISGID stripped and counted; mtimes set with the tar's nanoseconds, symlinks'
//   own; directories' modes and mtimes applied after everything, deepest first, so a 0555 directory gets its files.
// - Extended attributes (pax SCHILY.xattr) on files and directories: user.* is kept, except user.overlay.*; every
//   other name is dropped and listed in skipped. trusted.overlay.* and user.overlay.* would let a layer forge what
//   overlayfs acts on (opaque, redirect, metacopy): only a `.wh..wh..opq` makes a directory opaque. security.capability
//   would grant a file capabilities (on the host as much as in the sandbox, where no_new_privs makes them inert
//   anyway), security.selinux and system.posix_acl_* speak to the host's policy: none of them lands on the host.
// - Limits, each kTooLarge naming the limit when passed, so that a small layer cannot make an unpack use much more
//   memory, inodes or disk than the limits say (a gzip of a million 4 KiB names is tens of MB):
//   - max_entries counts every tar entry, whatever its type (skipped ones included), and every directory made for a
//     missing parent: "u/a/a/.../a/f" is one entry plus one per directory it makes.
//   - max_bytes charges file data, 512 bytes for every entry counted above (an inode and its name; the size of the
//     tar header it came in) and 4096 more for every directory made, implicit or not (its first block), so that
//     empty files and directories cannot fill the disk's inodes and blocks within the limit.
//   - max_name_bytes bounds the bytes of the names kept until the end of the layer (the files, symlinks and
//     hardlinks it made, which later hardlinks may name, and the directories it declared, whose modes and times are
//     applied last); a name removed by a later entry stops counting. It also bounds FinishDirs' work: reopening
//     each declared directory walks its components, at most max_name_bytes / 2 opens in all.
//
// Errors are values naming the entry: "layer entry \"a/../../etc/passwd\": ...". On an error the directory is left
// partly unpacked: the caller removes it (and unpacks into a fresh one to retry).
#pragma once

#include <sys/types.h>

#include <ctime>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/result.h"
#include "image/tar_reader.h"

namespace isb::image {

struct UnpackLimits {
  uint64_t max_bytes = 0;                        // file data and a fixed cost per entry and directory made
  uint64_t max_entries = 0;                      // tar entries, whatever their type, and parent directories made
  uint64_t max_name_bytes = uint64_t{64} << 20;  // names kept until the end of the layer
};

struct UnpackReport {
  uint64_t files = 0, dirs = 0, symlinks = 0, hardlinks = 0, whiteouts = 0, opaque_dirs = 0, bytes = 0,
           setid_stripped = 0;
  // "dev/null: device node skipped", "a: xattr security.capability dropped"; the first 1000, then one line
  // "and N more skipped".
  std::vector<std::string> skipped;
};

// The largest uid and gid a layer's files may have: the image ids a sandbox's id mapping covers.
inline constexpr uint32_t kMaxImageId = 65535;

// openat2 of `name` (one name, or a relative path) in `dirfd`, beneath it and following no symlink, the last name
// included: how the unpacker and the flattener open everything.
int OpenBeneath(int dirfd, const std::string& name, uint64_t flags, mode_t mode = 0);

// Whether an extended attribute of a layer lands on the host (above says why only these).
bool LayerXattrKept(const std::string& name);

// A directory's final mode and mtime, set once nothing more is written below it.
struct DirTimes {
  uint32_t mode = 0;
  timespec mtime{};
};
// `dirs` (paths below a layer's root, "" for the root) deepest first: the order their modes and times are set in.
std::vector<std::pair<std::string, DirTimes>> DeepestFirst(const std::map<std::string, DirTimes>& dirs);

// Erases `path` and every path below it from a sorted container of paths (a map's keys or a set); the bytes of the
// names erased. Only `path` and the keys in [path + "/", path + "0") are looked at ('0' follows '/'): siblings that
// share its first bytes ("ab" beside "a") are never walked.
template <typename Sorted>
uint64_t EraseTree(Sorted& sorted, const std::string& path) {
  const auto key_of = [](const typename Sorted::value_type& v) -> const std::string& {
    if constexpr (std::is_same_v<typename Sorted::value_type, std::string>) {
      return v;
    } else {
      return v.first;
    }
  };
  uint64_t erased = 0;
  if (auto it = sorted.find(path); it != sorted.end()) {
    erased += path.size();
    sorted.erase(it);
  }
  const auto first = sorted.lower_bound(path + "/");
  const auto last = sorted.lower_bound(path + "0");
  for (auto it = first; it != last; ++it) erased += key_of(*it).size();
  sorted.erase(first, last);
  return erased;
}

// Unpacks every entry of `tar` below `dir` (an existing empty directory; the caller's path, trusted) and never
// outside it, then drains the stream to its end (so that a digest observed below `tar` covers all of it). Needs
// root (CAP_CHOWN, CAP_MKNOD, CAP_SYS_ADMIN for trusted.* xattrs).
Result<UnpackReport> UnpackLayer(TarReader& tar, const std::string& dir, const UnpackLimits& limits);

}  // namespace isb::image
