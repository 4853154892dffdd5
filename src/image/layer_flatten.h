// FlattenLayers: stored layers (directories in overlay format, as UnpackLayer makes them) merged into one directory
// that shows what overlayfs would show of them stacked, for an image deeper than a sandbox stacks.
//
// The layers are applied bottom first onto the result, each as overlayfs lays a layer over those below it:
// - A whiteout (a character device 0/0) removes the name below it, and leaves nothing: the result is the bottom of
//   whatever is stacked on it, so nothing is left to hide.
// - A directory marked opaque (trusted.overlay.opaque=y or user.overlay.opaque=y, which only the unpacker's
//   `.wh..wh..opq` sets) replaces the directory below it wholly; the marker itself is not copied. A layer's root
//   is never opaque here, as overlayfs always merges the root.
// - A directory over a directory merges: what is below stays unless this layer replaces or whites it out, and the
//   directory takes this layer's owner, mode, mtime and extended attributes (overlayfs shows the topmost one's).
// - Anything else replaces what is below it (a directory with all below it included).
// - Files within one layer that are hardlinked stay hardlinked in the result; file data is copied
//   (copy_file_range). Owners, modes (S_ISUID and S_ISGID stripped, as the unpacker strips them), mtimes (atime
//   set to it, as the unpacker sets it) and the user.* extended attributes the unpacker keeps (never user.overlay.*)
//   are carried over; a symlink keeps its target, owner and mtime and is never followed.
// - A layer is treated as untrusted as a tar is: every name is opened beneath its directory with openat2 and
//   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS and O_NOFOLLOW, nothing is written outside
//   `out`, and a node the unpacker never makes (a device other than a whiteout, a fifo, a socket) is an error.
// - Limits, each kTooLarge naming the limit: max_bytes bounds the file data written, max_entries the names made
//   in the result (files, directories, symlinks, hardlinks), max_name_bytes the names kept until the end (the
//   directories, whose modes and times are applied last, deepest first, and one layer's hardlinked files).
//
// Errors name the layer and the entry. On an error `out` is left partly written: the caller removes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace isb::image {

struct FlattenLimits {
  uint64_t max_bytes = 0;                        // file data written
  uint64_t max_entries = 0;                      // names made in the result
  uint64_t max_name_bytes = uint64_t{64} << 20;  // names kept until the end
};

struct FlattenReport {
  uint64_t files = 0, dirs = 0, symlinks = 0, hardlinks = 0, removed = 0, bytes = 0;
};

// Applies `layers` (their root directories, bottom first; the caller's paths, trusted) onto `out` (an existing
// empty directory, the caller's). Needs root (CAP_CHOWN, CAP_FOWNER).
Result<FlattenReport> FlattenLayers(const std::vector<std::string>& layers, const std::string& out,
                                    const FlattenLimits& limits);

}  // namespace isb::image
