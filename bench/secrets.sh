#!/usr/bin/env bash
# Secrets benchmark: HTTPS through isb's proxy intercepting a secret's host (TLS terminated with the sandbox's CA,
# the placeholder in an X-Key header swapped for the value, the origin's echo of the value scrubbed back into the
# placeholder) against mitmproxy doing the same in streaming mode (bench/secrets_mitm_addon.py) and against isb
# passing the same TLS through untouched, with one origin (bench/egress_bench origin, which echoes X-Key) and the
# same clients (wrk, curl), side by side in one run on loopback.
# Usage: bench/secrets.sh BUILD_DIR   (BUILD_DIR holds egress_bench; wrk and mitmdump must be installed:
# bash scripts/install-deps.sh --bench)
# ROUNDS (3) rounds, each taking every path in turn; DURATION (10) seconds per wrk run; BULK_RUNS (3) downloads of
# each path per round. Prints medians, isb's ratios to mitmproxy and to its own pass-through, with the issue's
# targets.
set -euo pipefail

build=${1:?usage: bench/secrets.sh BUILD_DIR}
rounds=${ROUNDS:-3}
duration=${DURATION:-10}
bulk_runs=${BULK_RUNS:-3}
bench=$build/egress_bench
here=$(cd "$(dirname "$0")" && pwd)
name=localhost  # the origin's name: every client connects to it at the port of the path it measures

die() { echo "secrets.sh: $*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_preflight wrk mitmdump curl openssl python3
tmp=$(mktemp -d /tmp/isb-secrets-bench-XXXXXX)
pids=()
bench_cleanup_on_exit

random_chars() { tr -dc 'A-Za-z0-9' </dev/urandom | head -c "$1" || true; }

# A placeholder as a sandbox holds one, and a value of the same length (so every path's responses have one size).
placeholder=isb_placeholder_$(random_chars 24)
value=sk-bench-$(random_chars 31)

# The origin: plain HTTP and TLS with a throwaway certificate for the name.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=$name" \
  -addext "subjectAltName=DNS:$name" -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
"$bench" origin "$tmp/cert.pem" "$tmp/key.pem" >"$tmp/origin.out" 2>"$tmp/origin.err" &
pids+=($!)
declare -A pid=([direct]=$!)
wait_line "$tmp/origin.out" "$tmp/origin.err"
read -r _ _ _ tls_port <"$tmp/origin.out"

# isb intercepting the name (its transparent listener, where a sandbox's redirected connection arrives), and isb
# passing it through (the same listener without a secret: the TLS is spliced, never read).
"$bench" proxy "$name" --sni-port "$tls_port" --secret "$placeholder=$value" --origin-ca "$tmp/cert.pem" \
  --sandbox-ca "$tmp/sandbox-ca.pem" >"$tmp/isb.out" 2>"$tmp/isb.err" &
pids+=($!)
pid[isb]=$!
wait_line "$tmp/isb.out" "$tmp/isb.err"
read -r _ _ _ isb_port <"$tmp/isb.out"
"$bench" proxy "$name" --sni-port "$tls_port" >"$tmp/pass.out" 2>"$tmp/pass.err" &
pids+=($!)
pid[pass]=$!
wait_line "$tmp/pass.out" "$tmp/pass.err"
read -r _ _ _ pass_port <"$tmp/pass.out"

# mitmproxy as a reverse proxy to the origin (the client speaks TLS to it, as to isb's transparent listener),
# streaming every body, the origin verified against its certificate; its CA and state in the temp dir.
mitm_port=$(free_port)
ISB_BENCH_PLACEHOLDER=$placeholder ISB_BENCH_VALUE=$value \
  mitmdump -q --mode "reverse:https://$name:$tls_port" --listen-host 127.0.0.1 -p "$mitm_port" \
  --set confdir="$tmp/mitm" --set stream_large_bodies=1 --set ssl_verify_upstream_trusted_ca="$tmp/cert.pem" \
  --set connection_strategy=lazy -s "$here/secrets_mitm_addon.py" >"$tmp/mitm.err" 2>&1 &
pids+=($!)
pid[mitmproxy]=$!

paths=(direct isb mitmproxy pass)
declare -A port=([direct]=$tls_port [isb]=$isb_port [mitmproxy]=$mitm_port [pass]=$pass_port)
declare -A ca=([direct]=$tmp/cert.pem [isb]=$tmp/sandbox-ca.pem [mitmproxy]=$tmp/mitm/mitmproxy-ca-cert.pem
  [pass]=$tmp/cert.pem)
# get PATH TARGET [curl args]: "code size bytes_per_s", the body in $tmp/body
get() {
  local p=$1 target=$2
  shift 2
  curl -s --http1.1 -o "$tmp/body" --max-time 120 --cacert "${ca[$p]}" -H "X-Key: $placeholder" \
    -w '%{http_code} %{size_download} %{speed_download}' "$@" "https://$name:${port[$p]}$target" || true
}
# ok PATH TARGET ECHO: the 1 KiB answer, beginning with ECHO
ok() { [ "$(get "$1" "$2" | cut -d' ' -f1-2)" = "200 1024" ] && [ "$(head -c ${#3} "$tmp/body")" = "$3" ]; }

# Before timing anything: every path answers 1 KiB that echoes the placeholder (isb and mitmproxy: the value came
# back and was scrubbed); mitmproxy's unscrubbed /check echoes the value (it was swapped in); isb presents the
# sandbox CA's certificate (it intercepts) and the pass-through the origin's own (it splices).
for p in "${paths[@]}"; do
  for _ in $(seq 200); do ok "$p" / "$placeholder" && continue 2; sleep 0.05; done
  die "$p does not answer with 1 KiB echoing the placeholder: $(get "$p" /); $(head -c 60 "$tmp/body"); $(tail -5 "$tmp"/*.err)"
done
ok mitmproxy /check "$value" || die "mitmproxy did not swap the placeholder in: $(head -c 60 "$tmp/body")"
ca[isb]=$tmp/cert.pem
[ "$(get isb / | cut -d' ' -f1)" = 000 ] || die "isb answered with the origin's certificate: it did not intercept"
ca[isb]=$tmp/sandbox-ca.pem
ca[pass]=$tmp/sandbox-ca.pem
[ "$(get pass / | cut -d' ' -f1)" = 000 ] || die "isb's pass-through answered with a minted certificate"
ca[pass]=$tmp/cert.pem

# wrk_run PATH CONNECTIONS THREADS: "requests_per_s p50_us cpu_us_per_request requests", the CPU being the
# proxy's (for direct: the origin's); fails on a response that is not 2xx or a socket error.
wrk_run() {
  local p=$1 c=$2 t=$3 out before
  before=$(cpu_ns "${pid[$p]}")
  out=$(wrk -t"$t" -c"$c" -d"${duration}s" --latency -H "X-Key: $placeholder" "https://$name:${port[$p]}/")
  ! grep -q "Non-2xx\|Socket errors" <<<"$out" || die "$p: wrk got errors or responses that are not 2xx: $out"
  wrk_figures $(($(cpu_ns "${pid[$p]}") - before)) <<<"$out" ||
    die "$p: cannot read wrk's output: $out"
}
# bulk PATH: "MiB/s cpu_ms" of one 100 MiB download, the CPU being the proxy's (for direct: the origin's); the
# body must begin with the placeholder.
bulk() {
  local p=$1 r before
  before=$(cpu_ns "${pid[$p]}")
  r=$(get "$p" /bulk)
  [ "${r% *}" = "200 $((100 << 20))" ] || die "bulk through $p: $r"
  [ "$(head -c ${#placeholder} "$tmp/body")" = "$placeholder" ] || die "bulk through $p: the echo is not scrubbed"
  bulk_figures "${r##* }" $(($(cpu_ns "${pid[$p]}") - before))
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds" >&2
  wrk_rounds "${paths[@]}"
  for ((b = 0; b < bulk_runs; b++)); do
    for p in "${paths[@]}"; do bulk "$p" >>"$tmp/bulk.$p"; done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
wrk_all_ran "${paths[@]}"

# isb's own count: every request it answered had the placeholder swapped and the echo scrubbed.
kill "${pid[isb]}"
wait "${pid[isb]}" || true
answered=$(($(cat "$tmp/wrk50.isb" "$tmp/wrk1.isb" | awk '{ s += $4 } END { print s }') + rounds * bulk_runs))
read -r swapped scrubbed < <(awk '/secret BENCH_KEY:/ { print $4, $6 }' "$tmp/isb.err")
[ "${swapped:-0}" -ge "$answered" ] && [ "${scrubbed:-0}" -ge "$answered" ] ||
  die "isb swapped ${swapped:-0} and scrubbed ${scrubbed:-0} of at least $answered requests: $(cat "$tmp/isb.err")"

echo "== secrets on the wire, HTTPS on loopback ($(nproc) cores shared with other work, $(uname -r), $(date -u +%F)), load before $load_before, after $load_after"
echo "   command: bench/secrets.sh $build  (ROUNDS=$rounds DURATION=$duration BULK_RUNS=$bulk_runs; medians)"
echo "   isb: intercepted, X-Key placeholder swapped, the echoed value scrubbed ($swapped swapped, $scrubbed scrubbed);"
echo "   mitmproxy $(mitmdump --version 2>/dev/null | awk '/^Mitmproxy/ { print $2 }'): reverse mode, stream_large_bodies=1, the same swap and scrub in an addon;"
echo "   pass: isb not intercepting (TLS spliced); direct: no proxy"
print_wrk_table path "${paths[@]}"
isb_rps=$(median "$tmp/wrk50.isb")
vs_mitm=$(ratio "$isb_rps" "$(median "$tmp/wrk50.mitmproxy")")
vs_pass=$(ratio "$isb_rps" "$(median "$tmp/wrk50.pass")")
echo "   isb/mitmproxy ${vs_mitm}x (target >= 20: $(verdict "$vs_mitm" 20)); isb/pass $vs_pass (target >= 0.50:" \
  "$(verdict "$vs_pass" 0.5)); proxy CPU per request: mitmproxy/isb" \
  "$(ratio "$(median "$tmp/wrk50.mitmproxy" 3)" "$(median "$tmp/wrk50.isb" 3)")x"
echo "   100 MiB, one curl download at a time, median of $((rounds * bulk_runs)) (MiB/s; CPU: the proxy's CPU time per"
echo "   download, the origin's for direct)"
printf '   %-10s %8s %10s\n' path "MiB/s" CPU
for p in "${paths[@]}"; do printf '   %-10s %8s %8sms\n' "$p" "$(median "$tmp/bulk.$p")" "$(median "$tmp/bulk.$p" 2)"; done
bulk_vs_mitm=$(ratio "$(median "$tmp/bulk.isb")" "$(median "$tmp/bulk.mitmproxy")")
echo "   isb/mitmproxy ${bulk_vs_mitm}x (target >= 4: $(verdict "$bulk_vs_mitm" 4)); isb/pass" \
  "$(ratio "$(median "$tmp/bulk.isb")" "$(median "$tmp/bulk.pass")"); isb/direct" \
  "$(ratio "$(median "$tmp/bulk.isb")" "$(median "$tmp/bulk.direct")")"
# The floor of the bulk target: curl and the origin alone (direct) on the same cores; no proxy can pass it.
echo "   the floor: direct/mitmproxy $(ratio "$(median "$tmp/bulk.direct")" "$(median "$tmp/bulk.mitmproxy")")x" \
  "(curl and the origin alone, no proxy, on the same cores: the most any proxy could reach here); proxy CPU per" \
  "download: mitmproxy/isb $(ratio "$(median "$tmp/bulk.mitmproxy" 2)" "$(median "$tmp/bulk.isb" 2)")x"
