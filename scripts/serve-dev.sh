#!/usr/bin/env bash
# `make run`: the daemon in the foreground with its state in ./.isb. On the first start it makes the first admin and
# their API token (isb setup) and keeps both in ./.isb; every start prints the commands that work with that token.
# Usage: serve-dev.sh ISB [isb serve flags...] (`make run ARGS="--bind-root DIR ..."` passes ARGS here).
set -eu
isb=${1:-build/isb}
[ $# -gt 0 ] && shift
state=$(pwd)/.isb
mkdir -p "$state"
chmod 0711 "$state"
sock=$state/api/isb.sock
token_file=$state/dev-token
password_file=$state/dev-password

# The address the commands name follows a --listen among the flags; without one, the default is given.
listen=127.0.0.1:8092
listen_given=no
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --listen) listen=${args[i + 1]:-$listen}; listen_given=yes ;;
    --listen=*) listen=${args[i]#--listen=}; listen_given=yes ;;
  esac
done
url=http://$listen
[ $listen_given = yes ] || set -- --listen "$listen" "$@"

say_how() {
  local token=${1:-'<a token: '"$isb"' --socket '"$sock"' token create --for-user NAME laptop>'}
  cat <<MSG

isb serve: state in $state, HTTP on $url, unix socket $sock
  export ISB_URL=$url ISB_TOKEN=$token
  CLI:    $isb create --name demo
          $isb exec demo -- uname -a
          $isb rm demo
  REST:   curl -s -X POST -H "Authorization: Bearer \$ISB_TOKEN" $url/api/v1/tools/sandbox_list -d '{}'
  MCP:    $url/mcp with "Authorization: Bearer \$ISB_TOKEN", or a local client's config:
          {"command": "$isb", "args": ["mcp", "--url", "$url"], "env": {"ISB_TOKEN": "$token"}}
          (not --socket: over the socket isb mcp acts as the host, beyond every role, approval and tool policy)
  unix:   curl -s --unix-socket $sock -X POST http://isb/api/v1/tools/sandbox_list -d '{}'
MSG
  if [ -s "$password_file" ]; then
    echo "  Web UI: $url/  (user admin, password $(cat "$password_file"))"
  else
    echo "  Web UI: $url/"
  fi
  echo "Stop with Ctrl-C: sandboxes keep running, and the next start adopts them."
}

# Once the socket is up: on the first start (the daemon wrote a setup token: no admin yet) make the admin and their
# token; then say how to reach isb.
rm -f "$sock"
( for _ in $(seq 600); do [ -S "$sock" ] && break; sleep 0.1; done
  if [ ! -S "$sock" ]; then
    echo "isb serve did not open $sock within 60 s; see its log above" >&2
    exit 0
  fi
  if [ -s "$state/setup-token" ] && [ ! -s "$token_file" ]; then
    umask 077
    head -c 12 /dev/urandom | base64 | tr '+/' '-_' > "$password_file"
    if ! "$isb" setup --socket "$sock" --public-url "$url" --password-stdin admin < "$password_file" \
         > "$token_file" 2> "$state/setup.log"; then
      echo "isb setup failed:" >&2
      cat "$state/setup.log" >&2
      rm -f "$token_file" "$password_file"
    fi
  fi
  say_how "$(cat "$token_file" 2>/dev/null || true)" ) &
exec "$isb" serve --state-dir "$state" "$@"
