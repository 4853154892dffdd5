#!/usr/bin/env bash
# `make run`: the daemon in the foreground with its state in ./.isb, and how to reach it.
set -eu
isb=${1:-build/isb}
state=$(pwd)/.isb
mkdir -p "$state"
sock=$state/api/isb.sock
cat <<MSG
isb serve, state in $state

  First admin: open a second shell and either
          $isb --socket $sock user create --admin --password-stdin alice <<< 'a long password'
          $isb --socket $sock token create --for-user alice laptop     # prints an isb_tok_ token once
  or, from anywhere that reaches the port, use the one-time setup token printed below:
          curl -s -X POST http://127.0.0.1:8092/api/v1/auth/setup -H 'Content-Type: application/json' \\
               -d '{"setup_token":"<below>","user":"alice","password":"a long password"}'
  REST:   curl -s -X POST -H "Authorization: Bearer \$TOKEN" http://127.0.0.1:8092/api/v1/tools/sandbox_list -d '{}'
  MCP:    http://127.0.0.1:8092/mcp   (Authorization: Bearer \$TOKEN)
  CLI:    $isb --socket $sock create --name demo
          $isb --socket $sock exec demo -- uname -a
  unix:   curl -s --unix-socket $sock -X POST http://isb/api/v1/tools/sandbox_list -d '{}'

Stop with Ctrl-C: sandboxes keep running, and the next start adopts them.
MSG
# The setup token exists until the first platform admin does; the daemon writes it at start-up.
rm -f "$sock"
( for _ in $(seq 300); do
    if [ -S "$sock" ]; then
      [ -s "$state/setup-token" ] && echo "  setup token: $(cat "$state/setup-token")"
      break
    fi
    sleep 0.1
  done ) &
exec "$isb" serve --state-dir "$state" --listen 127.0.0.1:8092
