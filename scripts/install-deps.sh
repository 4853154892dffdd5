#!/usr/bin/env bash
# Installs the Debian 12 packages isb builds, tests and benchmarks with; a no-op when all are present.
set -euo pipefail
build=(cmake ninja-build g++ make pkg-config ccache libseccomp-dev nlohmann-json3-dev libcli11-dev
       libfmt-dev libgtest-dev libgmock-dev busybox-static docker-registry umoci skopeo apache2-utils jq mmdebstrap
       libboost1.81-dev libsqlite3-dev libssl-dev libsodium-dev curl openssl dnsutils nftables publicsuffix
       python3 zlib1g-dev libbrotli-dev libzstd-dev age python3-websockets
       python3-brotli python3-zstandard chromium prometheus clang-format-14 podman lld)
# The egress benchmark's clients and peers. Where services start on install, squid's package starts its own service
# on port 3128; the benchmark runs a squid of its own on a free loopback port and leaves that one alone.
bench=(bubblewrap util-linux wrk squid mitmproxy)
# `make fuzz`: clang with libFuzzer and the sanitizers' runtimes.
fuzz=(clang libclang-rt-14-dev)
# `make thread-safety` (part of `make test`): clang, for its -Wthread-safety.
clang=(clang)
want=("${build[@]}")
[ "${1:-}" = "--bench" ] && want+=("${bench[@]}")
[ "${1:-}" = "--fuzz" ] && want+=("${fuzz[@]}")
[ "${1:-}" = "--clang" ] && want+=("${clang[@]}")
# Node runs the official MCP SDK client in the end-to-end tests; a machine that has it from elsewhere keeps it.
command -v node >/dev/null && command -v npm >/dev/null || want+=(nodejs npm)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "isb: missing packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# podman is here for one test (loading an export); Debian enables its socket, restart service and update timer on
# a systemd host: the tests want none of them running.
if [[ " ${missing[*]} " == *" podman "* ]] && command -v systemctl >/dev/null; then
  systemctl disable --now podman.socket podman-restart.service podman-auto-update.timer >/dev/null 2>&1 || true
fi
