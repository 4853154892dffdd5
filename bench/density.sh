#!/usr/bin/env bash
# Host memory per idle sandbox and its breakdown (bench/density.py): a throwaway `isb serve` in a temp dir, N (60)
# named sandboxes created and removed ROUNDS (3) times, then the writable layers, network namespaces and cgroups
# alone. Drops the host's page cache between readings. Leaves nothing behind, and fails if it did.
# Usage: bench/density.sh BUILD_DIR   (BUILD_DIR holds isb and layer_hold)
set -euo pipefail
build=${1:?usage: bench/density.sh BUILD_DIR}
[ "$(id -u)" = 0 ] || { echo "density.sh: run as root" >&2; exit 1; }
command -v ip >/dev/null || { echo "density.sh: needs ip (iproute2)" >&2; exit 1; }
exec python3 "$(dirname "$0")/density.py" "$build"
