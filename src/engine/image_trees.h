// The image's layer trees: made by the parent through the sandbox's id mapping, handed to the child with its go
// signal in one message, and put into place by the child's kImage steps.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "base/fd.h"
#include "engine/config.h"

namespace isb::engine {

// The image's layers, bottom first: config.image_layers, else config.image alone, else none (the default view).
std::vector<std::string> ImageLayers(const SandboxConfig& config);

// Whether overlayfs takes an idmapped lower layer: Linux 5.19 and later (mount_setattr may idmap from 5.12, but
// the overlay mount on such a layer fails before 5.19).
bool OverlayTakesIdmappedLayers();

// A detached copy of the mount tree at `path` (reached without following symlinks), read-only, nosuid, nodev and
// private (its unmount at the pivot must not reach the host's mounts it was copied from),
// whose files' owners are seen through the user namespace `userns_fd`: a file of host uid 0 belongs to that
// namespace's root, and so on through its mapping. An image's files are those of a host user (root, mostly):
// through it, the sandbox's root owns what the image's root owned, and its writes copy up as usual. Invalid when the
// kernel (before 5.19 under overlayfs) or the image's filesystem cannot idmap a mount: the image is then bound as
// it is (its root's files belong to no one in the sandbox).
Fd IdmappedTree(const std::string& path, int userns_fd);

// IdmappedTree of every layer, in the order given; none at all when one of them cannot be idmapped: every layer
// is then bound as it is, since a view in which some layers' files are the sandbox's and others no one's would be
// neither.
std::vector<Fd> IdmappedTrees(const std::vector<std::string>& layers, int userns_fd);

// The go signal (one byte) with `trees` (at most kMaxImageLayers; none is fine) in one message. Returns what
// sendmsg returned; -1 with EINVAL for too many trees.
ssize_t SendGo(int sock, const std::vector<Fd>& trees);

// In the child, without allocating: waits for the go signal and keeps the trees that came with it for
// TakeImageTree. Returns 1 for go, 0 when the parent closed the socket (it died), -1 with errno (EMSGSIZE: more
// descriptors came than a sandbox stacks).
ssize_t ReceiveGo(int sock);

// In the child: the tree of layer `index` (bottom first; the single image is layer 0), which the caller then owns;
// -1 when the parent sent none (the layer is bound as it is).
int TakeImageTree(size_t index);

}  // namespace isb::engine
