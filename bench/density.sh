#!/usr/bin/env bash
# Host memory per idle sandbox and its breakdown (bench/density.py): a throwaway `isb serve` in a temp dir, N (60)
# named sandboxes created and removed ROUNDS (3) times, then the writable layers, network namespaces and cgroups
# alone. Drops the host's page cache between readings. Leaves nothing behind, and fails if it did.
# Usage: bench/density.sh BUILD_DIR   (BUILD_DIR holds isb and layer_hold)
set -euo pipefail
build=${1:?usage: bench/density.sh BUILD_DIR}
[ "$(id -u)" = 0 ] || { echo "density.sh: run as root" >&2; exit 1; }
for tool in ip fincore; do
  command -v $tool >/dev/null || { echo "density.sh: needs $tool (iproute2, util-linux)" >&2; exit 1; }
done
exec python3 "$(dirname "$0")/density.py" "$build"
