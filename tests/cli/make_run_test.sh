#!/usr/bin/env bash
# `make run` as a newcomer meets it: in a fresh directory, scripts/serve-dev.sh (what `make run` starts once the build
# is done, with ARGS as its flags) makes the first admin and their token, and prints commands that work as printed:
# the REST call with the token, the CLI with ISB_URL and ISB_TOKEN, the web UI's password. ARGS reach isb serve.
# Usage: make_run_test.sh ISB SOURCE_DIR. Exits 77 (skipped) when not root, unless ISB_MUST_WORK=1.
set -euo pipefail
isb=$1
src=$2
if [ "$(id -u)" != 0 ]; then
  if [ "${ISB_MUST_WORK:-}" = 1 ]; then echo "FAIL: isb serve needs root (ISB_MUST_WORK=1)"; exit 1; fi
  echo "skipped: isb serve needs root"; exit 77
fi
# On failure, make run's output without the test daemon's token and password.
fail() {
  echo "FAIL: $*"
  echo "--- make run's output:"
  sed -E 's/isb_tok_[A-Za-z0-9_-]+/isb_tok_(hidden)/g; s/password [^)]+/password (hidden)/' "$work/out.log" || true
  exit 1
}

work=$(mktemp -d /tmp/isb-make-run-XXXXXX)
chmod 0755 "$work"  # as a checkout is: the sandboxes' unprivileged root traverses it
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
table=isbmkrun
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
# ARGS as `make run ARGS="..."` passes them: a port of the test's own, no pool, a table and subnet apart from others.
bash "$src/scripts/serve-dev.sh" "$isb" --listen "127.0.0.1:$port" --pool-size 0 --net-pool-size 0 \
  --egress-table "$table" --sandbox-subnet 198.18.128.0/17 > "$work/out.log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q "Stop with Ctrl-C" "$work/out.log" && break; sleep 0.1; done
grep -q "Stop with Ctrl-C" "$work/out.log" || fail "no connection help printed within 60 s"

token=$(cat "$work/.isb/dev-token")
case $token in isb_tok_*) ;; *) fail "the first start made no token: '$token'" ;; esac
url=http://127.0.0.1:$port
grep -qxF "  export ISB_URL=$url ISB_TOKEN=$token" "$work/out.log" || fail "the export line does not name $url and the token"
grep -qxF "  Web UI: $url/  (user admin, password $(cat "$work/.isb/dev-password"))" "$work/out.log" ||
  fail "the web UI line does not give the admin's password"
[ "$(stat -c %a "$work/.isb/dev-token")" = 600 ] || fail "the token file is not 0600"

# The REST line as printed, with the token exported.
rest=$(ISB_TOKEN=$token curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $token" \
  "$url/api/v1/tools/sandbox_list" -d '{}')
[ "$rest" = '{"result":{"sandboxes":[]}} 200' ] || fail "REST sandbox_list answered '$rest'"
# The CLI lines as printed, with ISB_URL and ISB_TOKEN as the export line sets them.
export ISB_URL=$url ISB_TOKEN=$token
"$isb" create --name demo > /dev/null || fail "isb create --name demo failed"
uname_out=$("$isb" exec demo -- uname -a) || fail "isb exec demo -- uname -a failed"
case $uname_out in "Linux "*) ;; *) fail "uname -a printed '$uname_out'" ;; esac
[ "$("$isb" rm demo)" = "demo" ] || fail "isb rm demo did not print demo"
[ "$("$isb" ls)" = "ID   NAME   STATE   CPU   MEMORY   AGE   EXPIRES" ] || fail "isb ls does not show an empty list"
unset ISB_URL ISB_TOKEN
# A wrong token is refused: the check above did use the token.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer isb_tok_wrong" \
  "$url/api/v1/tools/sandbox_list" -d '{}')
[ "$code" = 401 ] || fail "a wrong token got $code"

# A second start in the same directory keeps the admin and prints the same token.
kill -TERM "$pid"; wait "$pid" || fail "isb serve did not exit 0 on SIGTERM"
pid=
: > "$work/out.log"
bash "$src/scripts/serve-dev.sh" "$isb" --listen "127.0.0.1:$port" --pool-size 0 --net-pool-size 0 \
  --egress-table "$table" --sandbox-subnet 198.18.128.0/17 > "$work/out.log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q "Stop with Ctrl-C" "$work/out.log" && break; sleep 0.1; done
grep -qxF "  export ISB_URL=$url ISB_TOKEN=$token" "$work/out.log" || fail "the second start does not print the same token"
kill -TERM "$pid"; wait "$pid" || fail "isb serve did not exit 0 on SIGTERM"
pid=

# Nothing left behind: no daemon of this directory, and its nftables table gone.
if pgrep -f "$work" > /dev/null; then fail "a process of $work is still running"; fi
if nft list table inet "$table" > /dev/null 2>&1; then fail "nftables table inet $table is left behind"; fi
echo "ok: make run printed commands that work"
