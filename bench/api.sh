#!/usr/bin/env bash
# The daemon over REST: starts two throwaway `isb serve`s (one with its pools, one with --pool-size 0
# --net-pool-size 0, on tables and subnets of their own), runs api_bench against them, removes everything.
set -euo pipefail
build=${1:-build}
pids=()
cleanup=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "${cleanup[@]}"' EXIT
# start_daemon VAR ARGS...: a daemon on a fresh state dir; VAR_url and VAR_token are set.
start_daemon() {
  local var=$1
  shift
  local state
  state=$(mktemp -d /tmp/isb-bench-XXXXXX)
  chmod 0711 "$state"
  cleanup+=("$state" "$state.log")
  "$build/isb" serve --state-dir "$state" --listen 127.0.0.1:0 "$@" 2>"$state.log" &
  pids+=($!)
  for _ in $(seq 600); do grep -q "listening on" "$state.log" 2>/dev/null && break; sleep 0.05; done
  if ! grep -q "listening on" "$state.log"; then
    echo "api.sh: isb serve $* did not start:" >&2
    cat "$state.log" >&2
    exit 1
  fi
  printf -v "${var}_url" '%s' "$(grep -o 'http://127.0.0.1:[0-9]*' "$state.log" | head -1)"
  # A superadmin token minted on the host, so the figures measure the tools, not an org's quota.
  printf -v "${var}_token" '%s' "$("$build/isb" token create --superadmin bench --socket "$state/api/isb.sock")"
}
start_daemon pooled --egress-table isbpool --sandbox-subnet 198.18.0.0/17
start_daemon cold --egress-table isbcold --sandbox-subnet 198.18.128.0/17 --pool-size 0 --net-pool-size 0
url=$pooled_url
token=$pooled_token
echo "== isb serve over REST ($(nproc) cores, $(uname -r), $(date -u +%F))"
echo "   command: bench/api.sh $build  (api_bench $url <token> --runs ${RUNS:-200} --clients 8 --cold-url $cold_url <token>)"
"$build/api_bench" "$url" "$token" --runs "${RUNS:-200}" --clients 8 --cold-url "$cold_url" --cold-token "$cold_token"
# Call by call, with the pool refill beside the next create and without it; then at a fixed arrival rate (one
# cycle every 30 ms), where a daemon whose calls return sooner is not handed more work for it.
echo "   command: python3 bench/api_phases.py $url <token> 100 0.3, then 100 0, then 150 0 0.03"
python3 "$(dirname "$0")/api_phases.py" "$url" "$token" 100 0.3
python3 "$(dirname "$0")/api_phases.py" "$url" "$token" 100 0
python3 "$(dirname "$0")/api_phases.py" "$url" "$token" 150 0 0.03
