#!/usr/bin/env bash
# The daemon over REST: starts a throwaway `isb serve`, runs api_bench against it, removes everything.
set -euo pipefail
build=${1:-build}
state=$(mktemp -d /tmp/isb-bench-XXXXXX)
chmod 0711 "$state"
log=$state.log
"$build/isb" serve --state-dir "$state" --listen 127.0.0.1:0 2>"$log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$state" "$log"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$log" 2>/dev/null && break; sleep 0.05; done
url=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -1)
# A superadmin token minted on the host, so the figures measure the tools, not an org's quota.
token=$("$build/isb" token create --superadmin bench --socket "$state/api/isb.sock")
echo "== isb serve over REST ($(nproc) cores, $(uname -r), $(date -u +%F))"
echo "   command: bench/api.sh $build  (api_bench $url <token> --runs ${RUNS:-200} --clients 8)"
"$build/api_bench" "$url" "$token" --runs "${RUNS:-200}" --clients 8
# Call by call, with the pool refill beside the next create and without it; then at a fixed arrival rate (one
# cycle every 30 ms), where a daemon whose calls return sooner is not handed more work for it.
echo "   command: python3 bench/api_phases.py $url <token> 100 0.3, then 100 0, then 150 0 0.03"
python3 "$(dirname "$0")/api_phases.py" "$url" "$token" 100 0.3
python3 "$(dirname "$0")/api_phases.py" "$url" "$token" 100 0
python3 "$(dirname "$0")/api_phases.py" "$url" "$token" 150 0 0.03
