# Helpers shared by bench/egress.sh and bench/secrets.sh (sourced). The caller defines die, and sets tmp (its temp
# dir) and pids (the processes it started) before calling bench_cleanup_on_exit.

# bench_preflight TOOL...: fails unless $bench is built, every TOOL is installed and ROUNDS, DURATION and BULK_RUNS
# (rounds, duration, bulk_runs) are positive whole numbers.
bench_preflight() {
  local t v
  [ -x "$bench" ] || die "$bench is missing: build it first (ninja -C $build egress_bench)"
  for t in "$@"; do
    command -v "$t" >/dev/null || die "$t is not installed: run bash scripts/install-deps.sh --bench"
  done
  for v in rounds duration bulk_runs; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "${v^^} must be a positive whole number, not '${!v}'"
  done
}

# Kills every process in pids, waits for them and removes tmp when the script exits, however it exits.
bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
bench_cleanup_on_exit() {
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_line FILE ERRFILE: waits until FILE has a line (a server's ports), at most 10 s.
wait_line() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; die "no ports in $1: $(cat "$2")"; }

# CPU time (ns) the threads of a process have used so far: a proxy's cost, which the machine's load does not change
# as it changes throughput.
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# wrk_figures CPU_NS <<<WRK_OUTPUT (run with --latency): "requests_per_s p50_us cpu_us_per_request requests", CPU_NS
# being the CPU time the measured process used during the run; fails when the output lacks a figure.
wrk_figures() {
  awk -v ns="$1" '
       / requests in / { n = $1 }
       /Requests\/sec/ { rps = $2 }
       $1 == "50%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
                     p50 = v * (u == "us" ? 1 : u == "ms" ? 1000 : 1000000) }
       END { if (rps == "" || p50 == "" || n == 0) exit 1; printf "%s %.0f %.2f %d\n", rps, p50, ns / 1000 / n, n }'
}

# median FILE [COLUMN]
median() { cut -d' ' -f"${2:-1}" "$1" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v >= t) ? "met" : "MISSED" }'; }

# print_wrk_table COLUMN_LABEL NAME...: the wrk figures of each NAME ($tmp/wrk50.NAME, $tmp/wrk1.NAME; "direct"
# among them), medians, with each one's p50 at one connection less direct's.
print_wrk_table() {
  local label=$1 d1 p
  shift
  echo "   1 KiB responses, keep-alive: wrk -t2 -c50 -d${duration}s (req/s, p50) and wrk -t1 -c1 (p50 of one connection)"
  echo "   (CPU/req: the proxy's CPU time per request at 50 connections; for direct, the origin's)"
  printf '   %-10s %10s %10s %10s %12s %10s\n' "$label" "req/s" "p50 c50" "p50 c1" "added p50 c1" "CPU/req"
  d1=$(median "$tmp/wrk1.direct" 2)
  for p in "$@"; do
    printf '   %-10s %10.0f %8.0fus %8.0fus %10.0fus %8.1fus\n' "$p" "$(median "$tmp/wrk50.$p")" \
      "$(median "$tmp/wrk50.$p" 2)" "$(median "$tmp/wrk1.$p" 2)" \
      "$(awk -v a="$(median "$tmp/wrk1.$p" 2)" -v b="$d1" 'BEGIN { print a - b }')" "$(median "$tmp/wrk50.$p" 3)"
  done
}

# bulk_figures CURL_SPEED CPU_NS: "MiB/s cpu_ms" of one download.
bulk_figures() { awk -v b="$1" -v ns="$2" 'BEGIN { printf "%.1f %.0f\n", b / 1048576, ns / 1e6 }'; }

# wrk_rounds NAME...: one round's wrk runs of each NAME (the caller's wrk_run), 50 connections then one.
wrk_rounds() {
  local p
  for p in "$@"; do
    wrk_run "$p" 50 2 >>"$tmp/wrk50.$p"
    wrk_run "$p" 1 1 >>"$tmp/wrk1.$p"
  done
}
# wrk_all_ran NAME...: fails unless every NAME has $rounds wrk runs of each kind.
wrk_all_ran() {
  local f p
  for f in wrk50 wrk1; do
    for p in "$@"; do [ "$(wc -l <"$tmp/$f.$p")" -eq "$rounds" ] || die "$f.$p: the runs did not all finish"; done
  done
}
