#!/usr/bin/env bash
# A real distribution image for the tests: a minimal Debian 12 (apt and python3-minimal) made with mmdebstrap from
# the host's apt sources, as the OCI layout OUT/oci with tag bookworm (umoci). Made once and kept: OUT/done marks a
# complete one (the build dir holds it, so a second run costs nothing).
#   make_debian_image.sh OUT
set -euo pipefail
out=${1:?usage: make_debian_image.sh OUT}
[ -f "$out/done" ] && exit 0
rm -rf "$out"
mkdir -p "$out"
mmdebstrap --quiet --variant=apt --include=python3-minimal --mode=root bookworm "$out/rootfs.tar"
umoci init --layout "$out/oci"
umoci new --image "$out/oci:bookworm"
umoci unpack --image "$out/oci:bookworm" "$out/bundle" >/dev/null
tar -xf "$out/rootfs.tar" -C "$out/bundle/rootfs"
umoci repack --image "$out/oci:bookworm" "$out/bundle"
umoci config --image "$out/oci:bookworm" --config.cmd /bin/bash \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
rm -rf "$out/bundle" "$out/rootfs.tar"
touch "$out/done"
