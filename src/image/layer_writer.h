// A sandbox's writable layer (an overlay upper dir) written as an OCI layer: a gzip-compressed tar in which
// overlay whiteouts are `.wh.` files and opaque directories hold `.wh..wh..opq`, ids as the sandbox saw them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace isb::image {

struct WrittenLayer {
  std::string digest;   // the compressed blob's ("sha256:...")
  std::string diff_id;  // the tar's
  uint64_t size = 0;    // the blob's bytes
  uint64_t entries = 0;
};

// Writes `upper` as a layer blob to the new file `out` (0600). Files whose host ids lie in [uid_base,
// uid_base+65536) get those ids less uid_base (the ids the sandbox saw); others get 65534. `exclude` are relative
// paths whose contents are left out (the directory itself stays, empty): "run", "tmp", ...; `drop` are relative
// paths left out altogether.
Result<WrittenLayer> WriteUpperAsLayer(const std::string& upper, uint32_t uid_base,
                                       const std::vector<std::string>& exclude, const std::vector<std::string>& drop,
                                       const std::string& out);

}  // namespace isb::image
