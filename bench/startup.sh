#!/usr/bin/env bash
# Startup benchmark: how long `/bin/true` takes from spawn to exit, plain and in three kinds of sandbox (unshare,
# bwrap, isb run), measured side by side in this run with bench/spawn_timer. Builds nothing.
# Usage: bench/startup.sh BUILD_DIR   (BUILD_DIR holds isb and spawn_timer)
# RUNS (200), WARMUP (20) and ROUNDS (10) override the defaults: each command gets WARMUP untimed runs, then RUNS
# timed ones split over ROUNDS rounds, and every round runs the commands in turn, so a change in the machine's load
# while the benchmark runs falls on all of them alike. BASE_ISB=PATH adds another isb binary (an older commit's
# build) as one more command, `isb base`, in the same rounds: a change's effect beside the code before it.
# shellcheck disable=SC2034
set -euo pipefail

build=${1:?usage: bench/startup.sh BUILD_DIR}
runs=${RUNS:-200}
warmup=${WARMUP:-20}
rounds=${ROUNDS:-10}
timer=$build/spawn_timer
isb=$build/isb

die() { echo "startup.sh: $*" >&2; exit 1; }

for f in "$timer" "$isb"; do
  [ -x "$f" ] || die "$f is missing: build it first (ninja -C $build isb spawn_timer)"
done
for t in unshare bwrap; do
  command -v "$t" >/dev/null || die "$t is not installed: run bash scripts/install-deps.sh --bench"
done
for v in runs warmup rounds; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "${v^^} must be a whole number, not '${!v}'"
done
if [ "$runs" -lt 1 ] || [ "$rounds" -lt 1 ]; then die "RUNS and ROUNDS must be at least 1"; fi
[ "$rounds" -le "$runs" ] || rounds=$runs

# Each entry: the prefix that runs a command (in a sandbox), and the namespaces it must give that command; both are
# read through namerefs (declare -n), hence the SC2034 exemption at the top.
names=(true unshare bwrap isb)
base_isb=${BASE_ISB:-}
if [ -n "$base_isb" ]; then
  [ -x "$base_isb" ] || die "BASE_ISB=$base_isb is not an executable"
  names+=(base)
fi
pre_true=()
pre_unshare=(unshare --user --map-root-user --pid --net --uts --ipc --mount --fork --mount-proc)
# Debian 12 is merged-/usr: /bin, /sbin and /lib* are symlinks into /usr, recreated here as symlinks.
pre_bwrap=(bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/lib /lib
           --symlink usr/lib64 /lib64 --symlink usr/bin /bin --symlink usr/sbin /sbin
           --proc /proc --dev /dev --tmpfs /tmp)
pre_isb=("$isb" run --)
pre_base=("$base_isb" run --)
ns_true=""
ns_unshare="user pid net mnt uts ipc"
ns_bwrap="user pid net mnt uts ipc cgroup"
ns_isb="user pid net mnt uts ipc cgroup"
ns_base=$ns_isb
declare -A label=([true]="/bin/true" [unshare]="unshare" [bwrap]="bwrap" [isb]="isb run" [base]="isb base")

# Before timing anything: each command must really run in its namespaces and pass the command's status back, or
# the numbers would time something else (a setup that fails, a command that never runs).
# shellcheck disable=SC2016  # expanded by the probe's own shell
ns_probe='for n in user pid net mnt uts ipc cgroup; do printf "%s=%s\n" $n "$(readlink /proc/self/ns/$n)"; done'
host_ns=$(/bin/sh -c "$ns_probe")
for name in "${names[@]}"; do
  declare -n pre=pre_$name want=ns_$name
  got=$("${pre[@]}" /bin/sh -c "$ns_probe" 2>&1) || die "$name: the namespace probe failed: $got"
  for n in $want; do
    mine=$(grep "^$n=" <<<"$got") || die "$name: the probe printed no $n namespace: $got"
    ! grep -qxF "$mine" <<<"$host_ns" || die "$name: the command ran in the host's $n namespace"
  done
  ! "${pre[@]}" /bin/false >/dev/null 2>&1 || die "$name: /bin/false exited 0: the command's status is lost"
  unset -n pre want
done

samples=$(mktemp -d)
trap 'rm -rf "$samples"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for ((r = 0; r < rounds; r++)); do
  n=$((runs / rounds + (r < runs % rounds ? 1 : 0)))
  echo "round $((r + 1))/$rounds: $n runs of each command" >&2
  for name in "${names[@]}"; do
    declare -n pre=pre_$name
    w=$((r == 0 ? warmup : 0))
    "$timer" --runs "$n" --warmup "$w" --samples "$samples/$name" -- "${pre[@]}" /bin/true >/dev/null ||
      die "$name: the measurement failed (round $((r + 1)))"
    unset -n pre
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# median, p10 and p90 of one command's pooled runs, interpolated between ranks as spawn_timer does
declare -A median p10 p90
for name in "${names[@]}"; do
  read -r "median[$name]" "p10[$name]" "p90[$name]" count < <(sort -g "$samples/$name" | awk '
    function pct(p,  pos, lo) {
      pos = p * (NR - 1); lo = int(pos)
      return v[lo] + (v[lo + (lo < NR - 1)] - v[lo]) * (pos - lo)
    }
    { v[NR - 1] = $1 }
    END { printf "%.3f %.3f %.3f %d\n", pct(0.5), pct(0.1), pct(0.9), NR }')
  [ "$count" -eq "$runs" ] || die "$name: $count timed runs recorded, expected $runs"
done

cgroup_fs=$(stat -fc %T /sys/fs/cgroup 2>/dev/null || echo unknown)
case $cgroup_fs in cgroup2fs) cgroups=v2 ;; tmpfs) cgroups=v1 ;; *) cgroups=$cgroup_fs ;; esac

echo
echo "Startup: spawn to exit of /bin/true; $runs timed runs per command after $warmup warm-up runs," \
     "in $rounds interleaved rounds; stdio on /dev/null"
echo "machine: nproc=$(nproc) kernel=$(uname -r) cgroups=$cgroups date=$started"
echo "load average: $load_before before, $load_after after; $(bwrap --version);" \
     "unshare $(unshare --version | awk '{print $NF}')"
awk -v a="${load_before%% *}" -v b="${load_after%% *}" -v n="$(nproc)" 'BEGIN {
  if (a > n || b > n) print "warning: load average above nproc: other work competed for the CPUs; times are noisy" }'
echo
printf '%-10s %10s %10s %10s %9s %9s\n' name median_ms p10_ms p90_ms x_bwrap x_true
for name in "${names[@]}"; do
  awk -v l="${label[$name]}" -v m="${median[$name]}" -v a="${p10[$name]}" -v b="${p90[$name]}" \
      -v bw="${median[bwrap]}" -v t="${median[true]}" \
      'BEGIN { printf "%-10s %10.3f %10.3f %10.3f %8.2fx %8.2fx\n", l, m, a, b, m / bw, m / t }'
done
echo
awk -v i="${median[isb]}" -v b="${median[bwrap]}" 'BEGIN {
  printf "%s: isb run median %.3f ms, bwrap median %.3f ms (target: isb at or below bwrap)\n",
         (i <= b ? "target met" : "target missed"), i, b }'
if [ -n "$base_isb" ]; then
  awk -v i="${median[isb]}" -v b="${median[base]}" -v p="$base_isb" \
    'BEGIN { printf "isb run against isb base (%s): %.3f against %.3f ms, %.2fx\n", p, i, b, i / b }'
fi

# Where isb run's time goes: its own account of each step (`isb run --json`'s steps_ms), medians of BREAKDOWN runs.
# What is left of the median above is the isb process's own exec, command-line parsing and exit.
breakdown=${BREAKDOWN:-50}
for ((i = 0; i < breakdown; i++)); do "$isb" run --json -- /bin/true; done >"$samples/steps.json" ||
  die "isb run --json failed"
echo
echo "isb run, step by step (median of $breakdown runs of isb run --json -- /bin/true, ms):"
python3 - "$samples/steps.json" "${median[isb]}" <<'PY'
import json, statistics, sys
runs = [json.loads(line)["steps_ms"] for line in open(sys.argv[1])]
names = [name for name, _ in runs[0]]
medians = {n: statistics.median(dict(r)[n] for r in runs) for n in names}
what = {"plan": "the launch's plan: the rootfs's mounts, the seccomp program, checks",
        "lease": "a uid range leased", "cgroup": "the cgroup made, limits written",
        "clone": "clone into seven new namespaces (net, pid, user, mnt, uts, ipc; cgroup later)",
        "id_maps": "uid_map and gid_map written",
        "go": "the image's idmapped trees made (none here), the child released",
        "cgroup_join": "the child moved into its cgroup (while it builds its root)",
        "setup": "the rest of the child's setup: mounts, pivot_root, hostname, loopback, cgroup namespace, "
                 "limits, seccomp, exec",
        "command": "the command, from its exec to init's exit", "cleanup": "the cgroup read and removed"}
for n in names:
    print("  %-12s %7.3f   %s" % (n, medians[n], what.get(n, "")))
total = sum(medians.values())
print("  %-12s %7.3f   of isb run's median %s; the rest, %.3f, is the isb process's exec, parsing and exit"
      % ("sum", total, sys.argv[2], float(sys.argv[2]) - total))
PY
