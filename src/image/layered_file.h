// A file of an image as a sandbox's overlay shows it, read from the layers' directories without mounting them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace isb::image {

// The text of `path` (relative, as "etc/passwd") in the stack `layers` (unpacked layer roots, bottom first): the
// top-most layer's regular file of at most `max_bytes`. nullopt when a layer above hides it as the overlay would (a
// whiteout of it or of a directory on its way, a file where a directory would be, an opaque directory on its way in
// a layer without it), when it is not a regular file, or is larger. A link as the last part of the path is followed
// through the whole stack (as the overlay would, 8 links at most, never above the image's root); links on the way to
// it only within their own layer.
std::optional<std::string> ReadLayeredFile(const std::vector<std::string>& layers, const std::string& path,
                                           size_t max_bytes);

}  // namespace isb::image
