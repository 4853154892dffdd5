#!/usr/bin/env bash
# Images benchmark: a cold pull of a multi-layer image of about 100 MiB from a local registry (Debian's
# docker-registry on loopback, plain http) by `isb image pull` (layers fetched in parallel, each verified and
# unpacked as it streams), side by side in each round with its peer doing the same work, `skopeo copy` into
# containers-storage with the overlay driver (what `podman pull` does: fetch, verify, unpack into a layer directory
# per layer), and with `skopeo copy` to an OCI directory (fetch and verify only, no unpack); GNU tar extracting the
# same layers gives the floor of any unpacking pull. Then a create and first exec from that cached image against the
# same from the default view of the host, every create cold (the daemon keeps no pool).
# The same two fetches are then timed from a registry behind a link of RATE (200mbit), as a registry across a
# network is: the fetch is the bottleneck there, and a pull that unpacks while it streams can end as the fetch does.
# Everything written (isb's state, the peers' stores, tar's tree) is on one journaled ext4 made for the run on a loop
# device, as a host's /var/lib is: ext4 without a journal (as some VM images' root is) refuses, for 60 s, to reuse
# an inode freed by the previous round's removal and scans past each such one, which made most of a pull's CPU.
# Usage: bench/images.sh BUILD_DIR   (BUILD_DIR holds isb; docker-registry, umoci and skopeo installed)
# RUNS (5) pulls of each, CREATES (10) creates of each, RATE (200mbit, tc's units) the shaped link; prints medians
# and ratios with the issue's targets.
set -euo pipefail

build=${1:?usage: bench/images.sh BUILD_DIR}
runs=${RUNS:-5}
creates=${CREATES:-10}
isb=$(cd "$build" && pwd)/isb
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "images.sh: $*" >&2; exit 1; }
rate=${RATE:-200mbit}
for t in docker-registry umoci skopeo curl python3 mkfs.ext4 ip tc; do
  command -v "$t" >/dev/null || die "$t is not installed"
done
[ -x "$isb" ] || die "$isb is missing: build it first"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tmp=$(mktemp -d /tmp/isb-images-bench-XXXXXX)
chmod 755 "$tmp"  # the sandboxes' layers live below it: their unprivileged roots must reach them
pids=()
fs=$tmp/fs
loopdev=
ns=isb-images-bench-$$
# The daemon's sandboxes are removed (a run cut short between a create and its removal leaves one, and a stopped
# daemon keeps its sandboxes running), then the daemon and the registry stop, then the peers' overlay mounts and the
# run's filesystem go, then the temp dir (bench_cleanup).
images_cleanup() {
  if [ -n "${sock:-}" ] && [ -S "$sock" ]; then
    local id
    for id in $("$isb" ls --socket "$sock" --json 2>/dev/null |
      python3 -c 'import json, sys; print(" ".join(s["id"] for s in json.load(sys.stdin).get("sandboxes", [])))' \
        2>/dev/null); do
      "$isb" rm --socket "$sock" "$id" >/dev/null 2>&1 || true
    done
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  if mountpoint -q "$fs"; then
    { findmnt -rn -o TARGET | grep "^$fs/" | sort -r | while read -r m; do umount -l "$m" || true; done; } || true
    # The daemon's last processes may hold it for a moment after the daemon is gone.
    for _ in $(seq 100); do umount "$fs" 2>/dev/null && break; sleep 0.1; done
    ! mountpoint -q "$fs" || umount -l "$fs" || true
  fi
  [ -z "$loopdev" ] || losetup -d "$loopdev" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true  # its end of the veth, and with it the host's, go with it
  bench_cleanup
}
trap images_cleanup EXIT
trap 'exit 130' INT TERM

# One journaled ext4 for everything the run writes (see the top).
truncate -s 6G "$tmp/fs.img"
mkfs.ext4 -q -F "$tmp/fs.img"
mkdir -p "$fs"
loopdev=$(losetup --find --show --direct-io=on "$tmp/fs.img")
mount "$loopdev" "$fs"
chmod 755 "$fs"

now_ms() { date +%s%3N; }

# The registry, plain http on a free loopback port.
port=$(free_port)
cat >"$tmp/registry.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $tmp/registry
http:
  addr: 127.0.0.1:$port
log:
  level: error
EOF
docker-registry serve "$tmp/registry.yml" >"$tmp/registry.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.1; done
ref=127.0.0.1:$port/bench/libs:1

# The image: four layers of real files (a busybox; python's library; translations; shared libraries), about 100 MiB
# unpacked.
oci=$tmp/oci
umoci init --layout "$oci"
umoci new --image "$oci:1"
umoci unpack --image "$oci:1" "$tmp/bundle" >/dev/null
root=$tmp/bundle/rootfs
mkdir -p "$root/bin" && cp /bin/busybox "$root/bin/busybox" && ln -s busybox "$root/bin/sh"
umoci repack --refresh-bundle --image "$oci:1" "$tmp/bundle"
add_layer() {  # add_layer SRC...: the sources copied under the root, as one layer
  for src in "$@"; do mkdir -p "$root$(dirname "$src")" && cp -a "$src" "$root$src"; done
  umoci repack --refresh-bundle --image "$oci:1" "$tmp/bundle"
}
add_layer /usr/lib/python3
add_layer /usr/share/locale/de /usr/share/locale/fr /usr/share/locale/es
add_layer /usr/lib/x86_64-linux-gnu/libcrypto.so.3 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30 \
  /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libssl.so.3
umoci config --image "$oci:1" --config.cmd /bin/sh --config.env PATH=/bin
skopeo copy --quiet --dest-tls-verify=false "oci:$oci:1" "docker://$ref"
unpacked=$(du -sm "$root" | cut -f1)
blobs=$(du -sm "$tmp/registry" | cut -f1)
echo "image: $ref, 4 layers, ${unpacked} MiB unpacked, ${blobs} MiB compressed in the registry"

# The same registry's storage served again from a network namespace of the run's own, behind a veth whose
# registry-side egress is shaped to $rate (tbf): 10.231.7.2:5000, reached from the host at 10.231.7.1.
veth=ib$$
ip netns add "$ns"
ip link add "${veth}h" type veth peer name "${veth}n"
ip link set "${veth}n" netns "$ns"
ip addr add 10.231.7.1/30 dev "${veth}h"
ip link set "${veth}h" up
ip -n "$ns" addr add 10.231.7.2/30 dev "${veth}n"
ip -n "$ns" link set "${veth}n" up
ip -n "$ns" link set lo up
ip netns exec "$ns" tc qdisc add dev "${veth}n" root tbf rate "$rate" burst 256kb latency 200ms
sed -e "s|addr: 127.0.0.1:$port|addr: 10.231.7.2:5000|" "$tmp/registry.yml" >"$tmp/registry-far.yml"
ip netns exec "$ns" docker-registry serve "$tmp/registry-far.yml" >"$tmp/registry-far.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://10.231.7.2:5000/v2/" >/dev/null && break; sleep 0.1; done
curl -sf "http://10.231.7.2:5000/v2/" >/dev/null || die "the shaped registry did not start: $(cat "$tmp/registry-far.log")"
far=10.231.7.2:5000/bench/libs:1

# The daemon: its own state dir, no pools (every create cold), the registries allowed.
state=$fs/state
"$isb" serve --listen 127.0.0.1:0 --state-dir "$state" --pool-size 0 --net-pool-size 0 \
  --egress-table isbimg --sandbox-subnet 198.19.0.0/17 \
  --registry-allow "127.0.0.1:$port" --registry-insecure "127.0.0.1:$port" \
  --registry-allow 10.231.7.2:5000 --registry-insecure 10.231.7.2:5000 >"$tmp/daemon.log" 2>&1 &
daemon=$!
pids+=($daemon)
sock=$state/api/isb.sock
for _ in $(seq 400); do [ -S "$sock" ] && "$isb" ls --socket "$sock" >/dev/null 2>&1 && break; sleep 0.05; done
[ -S "$sock" ] || die "the daemon did not start: $(cat "$tmp/daemon.log")"
# The socket goes after the command's words (two for image commands), before any "--".
cli() {
  if [ "$1" = image ]; then "$isb" image "$2" --socket "$sock" "${@:3}"; else "$isb" "$1" --socket "$sock" "${@:2}"; fi
}

# From the shaped registry first (each pull removed after, so the rounds below start cold too).
: >"$tmp/far-skopeo.ms"
: >"$tmp/far-isb.ms"
for r in $(seq "$runs"); do
  rm -rf "$fs/far-copy"
  t0=$(now_ms); skopeo copy --quiet --src-tls-verify=false "docker://$far" "oci:$fs/far-copy:1"; t1=$(now_ms)
  echo $((t1 - t0)) >>"$tmp/far-skopeo.ms"
  t0=$(now_ms); cli image pull -q "$far" >/dev/null; t1=$(now_ms)
  echo $((t1 - t0)) >>"$tmp/far-isb.ms"
  cli image rm "$far" >/dev/null
done
rm -rf "$fs/far-copy"

: >"$tmp/skopeo.ms"
: >"$tmp/storage.ms"
: >"$tmp/isb.ms"
for r in $(seq "$runs"); do
  rm -rf "$fs/copy"
  t0=$(now_ms); skopeo copy --quiet --src-tls-verify=false "docker://$ref" "oci:$fs/copy:1"; t1=$(now_ms)
  echo $((t1 - t0)) >>"$tmp/skopeo.ms"
  # A fresh store each round, as isb's pull is cold: its mounts and layers removed before the next.
  cs=$fs/storage
  t0=$(now_ms)
  skopeo copy --quiet --src-tls-verify=false "docker://$ref" "containers-storage:[overlay@$cs/root+$cs/run]$ref"
  t1=$(now_ms)
  echo $((t1 - t0)) >>"$tmp/storage.ms"
  [ "$(find "$cs/root/overlay" -maxdepth 2 -name diff | wc -l)" = 4 ] || die "containers-storage holds no 4 layers"
  { findmnt -rn -o TARGET | grep "^$cs/" | sort -r | while read -r m; do umount "$m"; done; } || true
  rm -rf "$cs"
  t0=$(now_ms); cli image pull -q "$ref" >/dev/null; t1=$(now_ms)
  echo $((t1 - t0)) >>"$tmp/isb.ms"
  [ "$r" = "$runs" ] || cli image rm "$ref" >/dev/null  # cold again: its layers and blobs deleted
done
# The floor of an unpacking pull on this filesystem: GNU tar extracting the same layers (from skopeo's copy) into the
# state dir's filesystem, one after another, nothing fetched or verified.
: >"$tmp/tar.ms"
for _ in $(seq "$runs"); do
  rm -rf "$fs/tar-floor" && mkdir -p "$fs/tar-floor"
  t0=$(now_ms)
  for blob in "$fs"/copy/blobs/sha256/*; do
    [ "$(stat -c %s "$blob")" -gt 100000 ] && tar -xzf "$blob" -C "$fs/tar-floor" 2>/dev/null || true
  done
  t1=$(now_ms)
  echo $((t1 - t0)) >>"$tmp/tar.ms"
done
rm -rf "$fs/tar-floor"
pull_isb=$(median "$tmp/isb.ms")
pull_storage=$(median "$tmp/storage.ms")
pull_skopeo=$(median "$tmp/skopeo.ms")
tar_floor=$(median "$tmp/tar.ms")
echo "pull, cold, median of $runs, on a journaled ext4 (loop device):"
echo "  isb image pull (fetch + verify + unpack)                                  ${pull_isb} ms"
echo "  skopeo copy to containers-storage, overlay (fetch + verify + unpack)      ${pull_storage} ms" \
  "  peer/isb $(ratio "$pull_storage" "$pull_isb")x (target >= 1: $(verdict "$(ratio "$pull_storage" "$pull_isb")" 1))"
echo "  skopeo copy to an OCI dir (fetch + verify, no unpack)                     ${pull_skopeo} ms" \
  "  skopeo/isb $(ratio "$pull_skopeo" "$pull_isb")x (the issue's literal target >= 1:" \
  "$(verdict "$(ratio "$pull_skopeo" "$pull_isb")" 1); that copy unpacks nothing)"
echo "  floor: tar -xzf of the same layers, one after another (no fetch, no digest) ${tar_floor} ms" \
  "  isb/floor $(ratio "$pull_isb" "$tar_floor")x"
far_isb=$(median "$tmp/far-isb.ms")
far_skopeo=$(median "$tmp/far-skopeo.ms")
echo "pull, cold, median of $runs, from the registry behind a $rate link:"
echo "  isb image pull (fetch + verify + unpack)                                  ${far_isb} ms"
echo "  skopeo copy to an OCI dir (fetch + verify, no unpack)                     ${far_skopeo} ms" \
  "  skopeo/isb $(ratio "$far_skopeo" "$far_isb")x (the issue's target >= 1:" \
  "$(verdict "$(ratio "$far_skopeo" "$far_isb")" 1))"

# Create + first exec: cold (no pool) from the cached image, and from the default view.
create_exec() {  # create_exec [--image REF]: ms for a create and a first exec, the sandbox removed after
  local t0 t1 id
  t0=$(now_ms)
  id=$(cli create "$@" | tail -1)
  cli exec "$id" -- /bin/sh -c true || { cli rm "$id" >/dev/null; die "exec in $id failed"; }
  t1=$(now_ms)
  cli rm "$id" >/dev/null
  echo $((t1 - t0))
}
: >"$tmp/image.ms"
: >"$tmp/view.ms"
for _ in $(seq "$creates"); do
  create_exec --image "$ref" >>"$tmp/image.ms"
  create_exec >>"$tmp/view.ms"
done
from_image=$(median "$tmp/image.ms")
from_view=$(median "$tmp/view.ms")
echo "create + first exec, cold, median of $creates: from the image ${from_image} ms; from the default view" \
  "${from_view} ms; image/view $(ratio "$from_image" "$from_view")x (target <= 1.2:" \
  "$(awk -v r="$(ratio "$from_image" "$from_view")" 'BEGIN { print (r <= 1.2) ? "met" : "MISSED" }'))"
