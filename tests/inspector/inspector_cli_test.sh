#!/usr/bin/env bash
# isb's MCP server driven by the MCP Inspector's CLI (@modelcontextprotocol/inspector, pinned by package-lock.json
# here) against a real `isb serve` on a temp state dir: the tools it lists, calls with and without arguments, a tool
# error, and the refusal it gets without a token or with a wrong one.
#   inspector_cli_test.sh ISB NPM_DIR    NPM_DIR: where tests/inspector/package.json was installed by npm ci
# Exit 0: passed; 77: skipped (not root, no node or jq, no Inspector installed), or 1 instead when ISB_MUST_WORK=1.
# The token reaches the Inspector in a 0600 config file, never on a command line.
set -euo pipefail
isb=$1
npm_dir=$2
unset ISB_URL ISB_TOKEN ISB_SOCKET ISB_ORG

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
unavailable() {
  [ "${ISB_MUST_WORK:-}" = 1 ] && fail "$1 and ISB_MUST_WORK=1"
  echo "SKIP: $1 (set ISB_MUST_WORK=1 to make this a failure)"
  exit 77
}
[ -x "$isb" ] || fail "no isb binary at $isb"
[ "$(id -u)" = 0 ] || unavailable "this test needs root"
command -v node >/dev/null || unavailable "no node in PATH"
command -v jq >/dev/null || unavailable "no jq in PATH"
command -v curl >/dev/null || unavailable "no curl in PATH"
cli=$npm_dir/node_modules/.bin/mcp-inspector
[ -e "$cli" ] || unavailable "no MCP Inspector at $cli (npm ci of tests/inspector/package.json)"

# A table, veth prefix and subnet of the test's own, apart from a daemon a developer may be running.
table=isbinsp
tmp=$(mktemp -d /tmp/isb-inspector.XXXXXX)
chmod 0711 "$tmp"
state=$tmp/state
log=$tmp/daemon.log
daemon=

# The daemon gets SIGTERM and 15 s to exit (then SIGKILL); its exit status goes to $daemon_status.
stop_daemon() {
  local pid=$daemon proc_state=
  daemon=
  daemon_status=0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 150); do
    proc_state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || break
    [ -z "$proc_state" ] || [ "$proc_state" = Z ] && break
    sleep 0.1
  done
  [ "${proc_state:-}" = Z ] || [ -z "${proc_state:-}" ] || kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" || daemon_status=$?
}
cleanup() {
  local rc=$?
  [ -z "$daemon" ] || stop_daemon
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT

redact() { sed -e 's/isb_tok_[A-Za-z0-9_-]*/isb_tok_<redacted>/g'; }
daemon_log() {
  echo "--- isb serve's log:" >&2
  redact < "$log" >&2
}

# --listen port 0: the daemon binds a free loopback port and says which.
"$isb" serve --state-dir "$state" --listen 127.0.0.1:0 --egress-table "$table" --sandbox-subnet 198.19.0.0/16 \
  --pool-size 0 --net-pool-size 0 > "$log" 2>&1 &
daemon=$!
listening='listening on http://127\.0\.0\.1:[0-9]+ \(MCP at /mcp, REST at /api/v1\) and unix:'
for _ in $(seq 200); do
  grep -Eq "$listening" "$log" && break
  kill -0 "$daemon" 2>/dev/null || { daemon_log; fail "isb serve exited during start-up"; }
  sleep 0.1
done
grep -Eq "$listening" "$log" || { daemon_log; fail "isb serve did not say where it listens within 20 s"; }
port=$(sed -En 's|.*listening on http://127\.0\.0\.1:([0-9]+) .*|\1|p' "$log")
sock=$(sed -En 's|.*\) and unix:([^ ]+).*|\1|p' "$log")
[ "$sock" = "$state/api/isb.sock" ] || fail "the daemon's socket is $sock, not $state/api/isb.sock"
[ -S "$sock" ] || fail "no socket at $sock"
url=http://127.0.0.1:$port/mcp

# The first admin and their token, as on a new host.
"$isb" setup --socket "$sock" > "$tmp/token" 2> "$tmp/setup.log" || { redact < "$tmp/setup.log" >&2; fail "isb setup failed"; }
grep -Eq '^isb_tok_[A-Za-z0-9_-]+$' "$tmp/token" || fail "isb setup printed no token line: $(redact < "$tmp/token")"

# The Inspector's servers: isb with the admin's token, and isb with a well-formed token isb never minted.
(umask 077 && jq -n --rawfile token "$tmp/token" --arg url "$url" '{mcpServers: {
  isb: {type: "streamable-http", url: $url, headers: {Authorization: ("Bearer " + ($token | rtrimstr("\n")))}},
  stranger: {type: "streamable-http", url: $url,
             headers: {Authorization: "Bearer isb_tok_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}}}' \
  > "$tmp/servers.json")

# inspector NAME ARGS...: the CLI with a home of its own (what it stores stays in the temp dir) and its secrets in
# memory; stdout to $tmp/NAME.out, stderr to $tmp/NAME.err, its exit code in $rc.
mkdir "$tmp/home"
inspector() {
  local name=$1
  shift
  rc=0
  HOME=$tmp/home MCP_INSPECTOR_SECRET_STORE=memory timeout 60 node "$cli" --cli --format json "$@" \
    > "$tmp/$name.out" 2> "$tmp/$name.err" < /dev/null || rc=$?
}
# expect NAME RC JQ_FILTER [err]: the call's exit code was RC and the filter holds for its result on stdout, or with
# err for the error envelope (stderr's last line, after the Inspector's notices).
expect() {
  local name=$1 want_rc=$2 filter=$3 json
  if [ "${4:-}" = err ]; then json=$(tail -n 1 "$tmp/$name.err"); else json=$(cat "$tmp/$name.out"); fi
  if [ "$rc" != "$want_rc" ] || ! jq -e "$filter" <<< "$json" > /dev/null 2>&1; then
    echo "--- $name: exit $rc (expected $want_rc), or not $filter" >&2
    echo "--- stdout:" >&2
    head -c 4000 "$tmp/$name.out" | redact >&2
    echo "--- stderr:" >&2
    head -c 4000 "$tmp/$name.err" | redact >&2
    fail "$name"
  fi
  echo "ok: $name"
}
as_isb=(--config "$tmp/servers.json" --server isb)

# (a) tools/list: the sandbox tools are there, each with an object input schema; --strict makes a tool schema the
#     Inspector finds unportable at error severity fail the call (exit 6).
inspector tools_list "${as_isb[@]}" --method tools/list --strict
expect tools_list 0 '(["sandbox_create", "sandbox_exec", "sandbox_list"] - [.result.tools[].name]) == []
                     and all(.result.tools[]; .inputSchema.type == "object")'

# (b) tools/call without arguments: no sandboxes yet, as structured content and as the text block.
inspector sandbox_list "${as_isb[@]}" --method tools/call --tool-name sandbox_list
expect sandbox_list 0 '.result.isError == false and .result.structuredContent == {sandboxes: []}
                       and (.result.content[0].text | fromjson) == {sandboxes: []}'

# tools/call with arguments (--tool-arg key=value): a user made through the Inspector is then listed by isb.
inspector user_create "${as_isb[@]}" --method tools/call --tool-name user_create --tool-arg name=inspector-probe
expect user_create 0 '.result.isError == false and .result.structuredContent.name == "inspector-probe"'
inspector user_list "${as_isb[@]}" --method tools/call --tool-name user_list
expect user_list 0 '[.result.structuredContent.users[].name] | sort == ["admin", "inspector-probe"]'

# A tool's own error (no such sandbox) is a tool error to the Inspector (exit 5), not a failed connection.
inspector exec_missing "${as_isb[@]}" --method tools/call --tool-name sandbox_exec \
  --tool-args-json '{"sandbox": "no-such-sandbox", "argv": ["true"]}'
expect exec_missing 5 '.result.isError == true
                      and .result.content == [{type: "text", text: "not_found: no sandbox \u0027no-such-sandbox\u0027"}]'
expect exec_missing 5 '.error.code == "tool_is_error"' err

# (c) No token, then a token isb never minted: isb answers 401 and the Inspector, told not to start OAuth, exits 3
#     (auth_required) with isb's reason.
inspector no_token "$url" --transport http --method tools/list --stored-auth-only
expect no_token 3 '.error.code == "auth_required" and (.error.message | test("unauthenticated"))
                   and (.error.message | test("missing bearer token"))' err
inspector wrong_token --config "$tmp/servers.json" --server stranger --method tools/list --stored-auth-only
expect wrong_token 3 '.error.code == "auth_required" and (.error.message | test("unauthenticated"))' err
status=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' --data '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' "$url")
[ "$status" = 401 ] || fail "POST /mcp without a token: HTTP $status, expected 401"
echo "ok: POST /mcp without a token is 401"

# SIGTERM: the daemon exits 0, and nothing of this test is left: no process naming its temp dir, no mount under it,
# no nftables table, no temp dir.
stop_daemon
[ "$daemon_status" = 0 ] || { daemon_log; fail "isb serve exited $daemon_status on SIGTERM"; }
rm -rf "$tmp"
ours() {
  local f cmd
  for f in /proc/[0-9]*/cmdline; do
    cmd=$(tr '\0' ' ' < "$f" 2> /dev/null) || continue
    case $cmd in *"$tmp"*) f=${f#/proc/}; echo "${f%/cmdline}: $cmd" ;; esac
  done
}
for _ in $(seq 30); do [ -z "$(ours)" ] && break; sleep 0.1; done
left=$(ours)
[ -z "$left" ] || fail "processes outlived the daemon: $left"
! grep -qF "$tmp" /proc/self/mountinfo || fail "mounts left under $tmp"
! nft list table inet "$table" > /dev/null 2>&1 || fail "nftables table inet $table left behind"
[ ! -e "$tmp" ] || fail "$tmp left behind"
echo "PASS: the MCP Inspector's CLI against isb serve"
