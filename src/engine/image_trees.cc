// The image's layer trees, from the parent's idmapping to the child's kImage steps.
#include "engine/image_trees.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/file.h"

namespace isb::engine {
namespace {

// In the child: the trees that came with the go signal, until their kImage steps take them.
int g_trees[kMaxImageLayers];
size_t g_tree_count = 0;

// Room for the most descriptors one go signal carries.
constexpr size_t kControlBytes = CMSG_SPACE(sizeof(int) * kMaxImageLayers);

}  // namespace

std::vector<std::string> ImageLayers(const SandboxConfig& config) {
  if (!config.image_layers.empty()) return config.image_layers;
  if (!config.image.empty()) return {config.image};
  return {};
}

bool OverlayTakesIdmappedLayers() {
  static const bool takes = [] {
    utsname u{};
    unsigned major = 0, minor = 0;
    if (::uname(&u) != 0 || std::sscanf(u.release, "%u.%u", &major, &minor) != 2) return false;
    return major > 5 || (major == 5 && minor >= 19);
  }();
  return takes;
}

Fd IdmappedTree(const std::string& path, int userns_fd) {
  Fd src(OpenNoSymlinks(path.c_str(), O_PATH));
  struct stat st {};
  if (!src.valid() || ::fstat(src.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return Fd();
  Fd tree(::open_tree(src.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
  if (!tree.valid()) return Fd();
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  // A clone keeps its originals' peer groups: shared, the unmount of the old root at the pivot would propagate to
  // the host and unmount what is mounted below the image there.
  attr.propagation = MS_PRIVATE;
  if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0) return Fd();
  return tree;
}

std::vector<Fd> IdmappedTrees(const std::vector<std::string>& layers, int userns_fd) {
  std::vector<Fd> trees;
  trees.reserve(layers.size());
  for (const std::string& layer : layers) {
    Fd tree = IdmappedTree(layer, userns_fd);
    if (!tree.valid()) return {};
    trees.push_back(std::move(tree));
  }
  return trees;
}

ssize_t SendGo(int sock, const std::vector<Fd>& trees) {
  if (trees.size() > kMaxImageLayers) {
    errno = EINVAL;
    return -1;
  }
  char go = 'g';
  iovec iov{&go, 1};
  alignas(cmsghdr) char control[kControlBytes] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (!trees.empty()) {
    m.msg_control = control;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * trees.size());
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * trees.size());
    for (size_t i = 0; i < trees.size(); ++i) {
      const int fd = trees[i].get();
      std::memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof fd);
    }
  }
  return ::sendmsg(sock, &m, MSG_NOSIGNAL);
}

ssize_t ReceiveGo(int sock) {
  char go = 0;
  iovec iov{&go, 1};
  alignas(cmsghdr) char control[kControlBytes] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n < 0) return n;
  g_tree_count = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (g_tree_count < kMaxImageLayers)
        g_trees[g_tree_count++] = fd;
      else
        ::close(fd);
    }
  }
  // Cut short, the trees would not match the layers their steps expect: better no sandbox than a wrong root.
  if (m.msg_flags & MSG_CTRUNC) {
    for (size_t i = 0; i < g_tree_count; ++i) ::close(g_trees[i]);
    g_tree_count = 0;
    errno = EMSGSIZE;
    return -1;
  }
  return n;
}

int TakeImageTree(size_t index) {
  if (index >= g_tree_count) return -1;
  return std::exchange(g_trees[index], -1);
}

}  // namespace isb::engine
