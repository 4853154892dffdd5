#!/usr/bin/env bash
# Images benchmark: a cold pull of a multi-layer image of about 100 MiB from a local registry (Debian's
# docker-registry on loopback, plain http) by `isb image pull` (layers fetched in parallel, each unpacked as it
# streams) against `skopeo copy` of the same image to a local OCI directory (fetch only, no unpack), same run; then
# a create and first exec from that cached image against the same from the default view of the host, every create
# cold (the daemon keeps no pool).
# Usage: bench/images.sh BUILD_DIR   (BUILD_DIR holds isb; docker-registry, umoci and skopeo installed)
# RUNS (5) pulls of each, CREATES (10) creates of each; prints medians and ratios with the issue's targets.
set -euo pipefail

build=${1:?usage: bench/images.sh BUILD_DIR}
runs=${RUNS:-5}
creates=${CREATES:-10}
isb=$(cd "$build" && pwd)/isb
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "images.sh: $*" >&2; exit 1; }
for t in docker-registry umoci skopeo curl python3; do command -v "$t" >/dev/null || die "$t is not installed"; done
[ -x "$isb" ] || die "$isb is missing: build it first"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tmp=$(mktemp -d /tmp/isb-images-bench-XXXXXX)
chmod 755 "$tmp"  # the sandboxes' layers live below it: their unprivileged roots must reach them
pids=()
bench_cleanup_on_exit

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

# The daemon: its own state dir, no pools (every create cold), the registry allowed.
state=$tmp/state
"$isb" serve --listen 127.0.0.1:0 --state-dir "$state" --pool-size 0 --net-pool-size 0 \
  --registry-allow "127.0.0.1:$port" --registry-insecure "127.0.0.1:$port" >"$tmp/daemon.log" 2>&1 &
daemon=$!
pids+=($daemon)
sock=$state/api/isb.sock
for _ in $(seq 400); do [ -S "$sock" ] && "$isb" ls --socket "$sock" >/dev/null 2>&1 && break; sleep 0.05; done
[ -S "$sock" ] || die "the daemon did not start: $(cat "$tmp/daemon.log")"
# The socket goes after the command's words (two for image commands), before any "--".
cli() {
  if [ "$1" = image ]; then "$isb" image "$2" --socket "$sock" "${@:3}"; else "$isb" "$1" --socket "$sock" "${@:2}"; fi
}

: >"$tmp/skopeo.ms"
: >"$tmp/isb.ms"
for r in $(seq "$runs"); do
  rm -rf "$tmp/copy"
  t0=$(now_ms); skopeo copy --quiet --src-tls-verify=false "docker://$ref" "oci:$tmp/copy:1"; t1=$(now_ms)
  echo $((t1 - t0)) >>"$tmp/skopeo.ms"
  t0=$(now_ms); cli image pull -q "$ref" >/dev/null; t1=$(now_ms)
  echo $((t1 - t0)) >>"$tmp/isb.ms"
  [ "$r" = "$runs" ] || cli image rm "$ref" >/dev/null  # cold again: its layers and blobs deleted
done
# The floor of an unpacking pull on this filesystem: GNU tar extracting the same layers (from skopeo's copy) into the
# state dir's filesystem, one after another, nothing fetched or verified.
: >"$tmp/tar.ms"
for _ in $(seq "$runs"); do
  rm -rf "$state/tar-floor" && mkdir -p "$state/tar-floor"
  t0=$(now_ms)
  for blob in "$tmp"/copy/blobs/sha256/*; do
    [ "$(stat -c %s "$blob")" -gt 100000 ] && tar -xzf "$blob" -C "$state/tar-floor" 2>/dev/null || true
  done
  t1=$(now_ms)
  echo $((t1 - t0)) >>"$tmp/tar.ms"
done
rm -rf "$state/tar-floor"
pull_isb=$(median "$tmp/isb.ms")
tar_floor=$(median "$tmp/tar.ms")
echo "floor, median of $runs: tar -xzf of the same layers into the same filesystem ${tar_floor} ms (no fetch, no" \
  "digest); isb's pull / that floor $(ratio "$pull_isb" "$tar_floor")x"
pull_skopeo=$(median "$tmp/skopeo.ms")
echo "pull, cold, median of $runs: isb image pull ${pull_isb} ms (fetch + verify + unpack); skopeo copy to an OCI" \
  "dir ${pull_skopeo} ms (fetch + verify); skopeo/isb $(ratio "$pull_skopeo" "$pull_isb")x (target >= 1:" \
  "$(verdict "$(ratio "$pull_skopeo" "$pull_isb")" 1))"

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
