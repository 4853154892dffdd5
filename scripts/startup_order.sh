#!/usr/bin/env bash
# Writes src/cli/startup.order, the functions `isb run` runs in the order it first runs them, which the isb link
# lays its text out by (CMakeLists.txt): bench/startup_order single-steps `isb run -- /bin/true` (the launcher, the
# sandbox's init, the fork that execs the command) and names the function of every instruction in isb's text.
# Run again when the start-up path changes; a stale list still links, and the startup_order_current test says when
# too few of its names are left in the binary (not when new functions joined the path: it cannot see those). The list
# is traced on this machine's CPU; the other versions of the C library's CPU-chosen functions are added after it. Needs root (the sandbox's ids are changed under ptrace); takes about
# a minute. Builds nothing: ninja -C BUILD isb startup_order first.
# Usage: scripts/startup_order.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: scripts/startup_order.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
for f in "$build/isb" "$build/startup_order"; do
  [ -x "$f" ] || { echo "startup_order.sh: $f is missing: ninja -C $build isb startup_order" >&2; exit 1; }
done
out=$root/src/cli/startup.order
trap 'rm -f "$out.new"' EXIT
"$build/startup_order" "$build/isb" -- "$build/isb" run -- /bin/true >"$out.new"
mv "$out.new" "$out"
echo "startup_order.sh: $(wc -l <"$out") functions written to $out; relink isb (ninja -C $build isb)" >&2
