#!/usr/bin/env bash
# Writes src/cli/startup.order, the functions `isb run` runs in the order it first runs them (a plain run, then
# what a run with the flags users pass runs besides), which the isb link lays its text out by (CMakeLists.txt):
# bench/startup_order single-steps `isb run` (the launcher, the sandbox's init, the fork that execs the command) and
# names the function of every instruction in isb's text. Run again when the start-up path changes; a stale list
# still links, and the startup_order_current test says when too few of its names are left in the binary (not when
# new functions joined the path: it cannot see those). The list is traced on this machine's CPU; the other versions
# of the C library's CPU-chosen functions are added after it. Needs root (the sandbox's ids are changed under
# ptrace); takes about two minutes. Builds nothing: ninja -C BUILD isb startup_order first.
# Usage: scripts/startup_order.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: scripts/startup_order.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
for f in "$build/isb" "$build/startup_order"; do
  [ -x "$f" ] || { echo "startup_order.sh: $f is missing: ninja -C $build isb startup_order" >&2; exit 1; }
done
out=$root/src/cli/startup.order
trap 'rm -f "$out.new" "$out.plain" "$out.flags"' EXIT
# The plain run first, then what a run with the flags users pass (limits, a timeout, the environment, a working
# directory, a bind) runs besides.
"$build/startup_order" "$build/isb" -- "$build/isb" run -- /bin/true >"$out.plain"
"$build/startup_order" "$build/isb" -- "$build/isb" run --memory 256M --cpus 1 --pids 128 --timeout 30s \
  --env A=1 --workdir /tmp --bind /etc/hostname:/data/h:ro -- /bin/true >"$out.flags"
awk 'NR == FNR { seen[$0] = 1; print; next } !seen[$0]++' "$out.plain" "$out.flags" >"$out.new"
mv "$out.new" "$out"
echo "startup_order.sh: $(wc -l <"$out") functions written to $out; relink isb (ninja -C $build isb)" >&2
