#!/usr/bin/env bash
# Egress benchmark: isb's egress proxy against squid, mitmproxy and no proxy at all, side by side in one run on
# loopback, with one origin (bench/egress_bench origin) and the same clients (wrk, curl). A relay that only copies
# bytes (bench/egress_bench relay: no parsing, no policy, no dialer) runs beside them as the floor of what any proxy
# can reach on the machine.
# Usage: bench/egress.sh BUILD_DIR   (BUILD_DIR holds egress_bench; wrk, squid and mitmdump must be installed:
# bash scripts/install-deps.sh --bench)
# ROUNDS (3) rounds, each taking every proxy in turn; DURATION (10) seconds per wrk run; BULK_RUNS (3) downloads of
# each kind per round. Prints medians and isb's ratios to squid and to direct, with the issue's targets.
set -euo pipefail

build=${1:?usage: bench/egress.sh BUILD_DIR}
rounds=${ROUNDS:-3}
duration=${DURATION:-10}
bulk_runs=${BULK_RUNS:-3}
bench=$build/egress_bench
here=$(cd "$(dirname "$0")" && pwd)
name=localhost  # the origin's name: pinned to 127.0.0.1 in isb, from /etc/hosts for squid and mitmproxy

die() { echo "egress.sh: $*" >&2; exit 1; }
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_preflight wrk squid mitmdump curl openssl python3
tmp=$(mktemp -d /tmp/isb-egress-bench-XXXXXX)
chmod 0711 "$tmp"  # squid drops to its own user and writes in $tmp/squid
pids=()
bench_cleanup_on_exit

# The origin: plain HTTP and TLS with a throwaway certificate for the name.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=$name" \
  -addext "subjectAltName=DNS:$name" -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
"$bench" origin "$tmp/cert.pem" "$tmp/key.pem" >"$tmp/origin.out" 2>"$tmp/origin.err" &
pids+=($!)
declare -A pid=([direct]=$!)
wait_line "$tmp/origin.out" "$tmp/origin.err"
read -r _ http_port _ tls_port <"$tmp/origin.out"

# isb: the explicit proxy and the transparent (SNI) listener, the name allowed, everything else refused.
"$bench" proxy "$name" --sni-port "$tls_port" >"$tmp/isb.out" 2>"$tmp/isb.err" &
pids+=($!)
pid[isb]=$!
wait_line "$tmp/isb.out" "$tmp/isb.err"
read -r _ isb_port _ sni_port <"$tmp/isb.out"

# The floor: a bare relay joined to the origin's ports (absolute-form requests pass through to the origin, which
# serves them; the TLS listener is what pass-through costs once a connection is admitted).
"$bench" relay "$http_port" "$tls_port" >"$tmp/floor.out" 2>"$tmp/floor.err" &
pids+=($!)
pid[floor]=$!
wait_line "$tmp/floor.out" "$tmp/floor.err"
read -r _ floor_port _ floor_tls_port <"$tmp/floor.out"

# squid: no cache, no access log, loopback clients only, no DNS server (the name is in /etc/hosts).
squid_port=$(free_port)
mkdir "$tmp/squid"
chown proxy: "$tmp/squid" 2>/dev/null || chmod 0777 "$tmp/squid"
cat >"$tmp/squid.conf" <<EOF
http_port 127.0.0.1:$squid_port
acl bench_clients src 127.0.0.1/32
http_access allow bench_clients
http_access deny all
cache deny all
cache_mem 0 MB
access_log none
cache_log $tmp/squid/cache.log
pid_filename $tmp/squid/squid.pid
coredump_dir $tmp/squid
dns_nameservers 127.0.0.1
shutdown_lifetime 0 seconds
visible_hostname isb-bench
EOF
squid -N -f "$tmp/squid.conf" >"$tmp/squid.err" 2>&1 &
pids+=($!)
pid[squid]=$!

# mitmproxy in its regular (explicit proxy) mode; its CA and state in the temp dir.
mitm_port=$(free_port)
mitmdump -q --listen-host 127.0.0.1 -p "$mitm_port" --set confdir="$tmp/mitm" >"$tmp/mitm.err" 2>&1 &
pids+=($!)
pid[mitmproxy]=$!

# Before timing anything: every path answers with the body (so the figures count real responses), and isb refuses
# a name it does not allow (so it is isb's checking proxy that is measured, not a bare relay).
declare -A proxy=([direct]="" [isb]=$isb_port [floor]=$floor_port [squid]=$squid_port [mitmproxy]=$mitm_port)
proxies=(direct isb floor squid mitmproxy)
url=http://$name:$http_port/
get() {  # get PROXY URL [curl args]: "code size bytes_per_s"
  local p=$1 u=$2
  shift 2
  curl -s -o /dev/null --max-time 60 ${proxy[$p]:+-x http://127.0.0.1:${proxy[$p]}} -w '%{http_code} %{size_download} %{speed_download}' "$@" "$u" || true
}
for p in "${proxies[@]}"; do
  for _ in $(seq 200); do [ "$(get "$p" "$url" | cut -d' ' -f1-2)" = "200 1024" ] && continue 2; sleep 0.05; done
  die "$p does not answer $url with 1 KiB: $(get "$p" "$url"); $(cat "$tmp"/*.err "$tmp"/squid/cache.log 2>/dev/null | tail -5)"
done
[ "$(get isb "http://denied.test:$http_port/" | cut -d' ' -f1)" = 403 ] || die "isb did not refuse a name it does not allow"

# wrk_run PROXY CONNECTIONS THREADS: "requests_per_s p50_us cpu_us_per_request", the CPU being the proxy's (for
# direct: the origin's); fails on a response that is not 2xx.
wrk_run() {
  local p=$1 c=$2 t=$3 out before
  before=$(cpu_ns "${pid[$p]}")
  if [ -z "${proxy[$p]}" ]; then
    out=$(wrk -t"$t" -c"$c" -d"${duration}s" --latency "$url")
  else
    out=$(TARGET=$url wrk -t"$t" -c"$c" -d"${duration}s" --latency -s "$here/egress_wrk.lua" "http://127.0.0.1:${proxy[$p]}/")
  fi
  ! grep -q "Non-2xx" <<<"$out" || die "$p: wrk got responses that are not 2xx: $out"
  wrk_figures $(($(cpu_ns "${pid[$p]}") - before)) <<<"$out" ||
    die "$p: cannot read wrk's output: $out"
}
# bulk KIND PROXY: "MiB/s cpu_ms" of one 100 MiB download, the CPU being the proxy's (for direct: the origin's); KIND http (absolute-form through the proxy), connect (https, CONNECT
# through the proxy) or sni (https straight to isb's transparent listener, as a sandbox's redirected connection;
# for the floor, to its TLS relay).
bulk() {
  local kind=$1 p=$2 r before
  before=$(cpu_ns "${pid[$p]}")
  case $kind in
    http) r=$(get "$p" "${url}bulk") ;;
    connect) r=$(get "$p" "https://$name:$tls_port/bulk" --cacert "$tmp/cert.pem") ;;
    sni) r=$(get direct "https://$name:$tls_port/bulk" --cacert "$tmp/cert.pem" \
           --connect-to "$name:$tls_port:127.0.0.1:$([ "$p" = floor ] && echo "$floor_tls_port" || echo "$sni_port")") ;;
  esac
  [ "${r% *}" = "200 $((100 << 20))" ] || die "$kind bulk through $p: $r"
  bulk_figures "${r##* }" $(($(cpu_ns "${pid[$p]}") - before))
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds" >&2
  wrk_rounds "${proxies[@]}"
  for ((b = 0; b < bulk_runs; b++)); do
    for p in direct isb squid; do
      bulk http "$p" >>"$tmp/http.$p"
      bulk connect "$p" >>"$tmp/connect.$p"
    done
    bulk sni isb >>"$tmp/sni.isb"
    bulk http floor >>"$tmp/http.floor"
    bulk sni floor >>"$tmp/sni.floor"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
wrk_all_ran "${proxies[@]}"

echo "== egress proxies on loopback ($(nproc) cores shared with other work, $(uname -r), $(date -u +%F)), load before $load_before, after $load_after"
echo "   command: bench/egress.sh $build  (ROUNDS=$rounds DURATION=$duration BULK_RUNS=$bulk_runs; medians)"
print_wrk_table proxy "${proxies[@]}"
isb_rps=$(median "$tmp/wrk50.isb")
vs_squid=$(ratio "$isb_rps" "$(median "$tmp/wrk50.squid")")
vs_direct=$(ratio "$isb_rps" "$(median "$tmp/wrk50.direct")")
echo "   isb/squid ${vs_squid}x (target >= 3: $(verdict "$vs_squid" 3)); isb/mitmproxy $(ratio "$isb_rps" "$(median "$tmp/wrk50.mitmproxy")")x;" \
  "isb/direct $vs_direct (target >= 0.60: $(verdict "$vs_direct" 0.6))"
floor_rps=$(median "$tmp/wrk50.floor")
echo "   the floor (a relay in user space that only copies, as a proxy doing nothing else would): floor/direct" \
  "$(ratio "$floor_rps" "$(median "$tmp/wrk50.direct")"), isb/floor $(ratio "$isb_rps" "$floor_rps")"
echo "   proxy CPU per request: squid/isb $(ratio "$(median "$tmp/wrk50.squid" 3)" "$(median "$tmp/wrk50.isb" 3)")x," \
  "mitmproxy/isb $(ratio "$(median "$tmp/wrk50.mitmproxy" 3)" "$(median "$tmp/wrk50.isb" 3)")x"
echo "   100 MiB, one curl download at a time, median of $((rounds * bulk_runs)) (MiB/s; CPU: the proxy's CPU time per"
echo "   download, the origin's for direct)"
printf '   %-23s %8s %8s %8s %8s %10s %10s %12s %9s %9s\n' path direct isb floor squid isb/direct isb/squid \
  floor/direct "isb CPU" "squid CPU"
for kind in http connect sni; do
  fm=$(median "$tmp/${kind/connect/sni}.floor")  # the floor's pass-through is its TLS relay, for CONNECT as for SNI
  dm=$(median "$tmp/${kind/sni/connect}.direct")  # the direct path of SNI pass-through is the direct https one
  im=$(median "$tmp/$kind.isb")
  ic=$(median "$tmp/$kind.isb" 2)ms
  sm=-
  sr=-
  sc=-
  if [ -f "$tmp/$kind.squid" ]; then
    sm=$(median "$tmp/$kind.squid")
    sr=$(ratio "$im" "$sm")
    sc=$(median "$tmp/$kind.squid" 2)ms
  fi
  case $kind in
    http) label="HTTP (absolute-form)" ;;
    connect) label="HTTPS via CONNECT" ;;
    sni) label="HTTPS via SNI (transp.)" ;;
  esac
  printf '   %-23s %8s %8s %8s %8s %10s %10s %12s %9s %9s\n' "$label" "$dm" "$im" "$fm" "$sm" "$(ratio "$im" "$dm")" "$sr" \
    "$(ratio "$fm" "$dm")" "$ic" "$sc"
  [ "$kind" = http ] || echo "     pass-through $kind: isb/direct target >= 0.90: $(verdict "$(ratio "$im" "$dm")" 0.9)"
done
