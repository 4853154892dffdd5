// layer_hold: attaches N writable layers as the daemon does (daemon::DiskLayer), holds them until stdin closes,
// then removes them; bench/density.sh measures the host memory they cost with no sandbox around them.
// Usage: layer_hold DIR N [BYTES]   (prints "attached N" once all are mounted; exit 1 on any failure)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "daemon/disk_layer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: layer_hold DIR N [BYTES]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int n = std::atoi(argv[2]);
  const uint64_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : isb::spec::kDefaultDisk;
  std::vector<isb::daemon::DiskLayer> layers;
  int status = 0;
  for (int i = 0; i < n; ++i) {
    const std::string name = dir + "/l" + std::to_string(i);
    layers.emplace_back(name + ".img", name, dir + "/templates");
    if (isb::Status st = layers.back().Attach(bytes); !st.ok()) {
      std::fprintf(stderr, "layer_hold: %s\n", st.error().message.c_str());
      status = 1;
      break;
    }
  }
  if (status == 0) {
    std::printf("attached %d\n", n);
    std::fflush(stdout);
    char c;
    while (::read(0, &c, 1) > 0) {
    }
  }
  for (auto& layer : layers)
    if (isb::Status st = layer.Remove(); !st.ok()) {
      std::fprintf(stderr, "layer_hold: %s\n", st.error().message.c_str());
      status = 1;
    }
  return status;
}
