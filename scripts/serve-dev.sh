#!/usr/bin/env bash
# `make run`: the daemon in the foreground with its state in ./.isb, and how to reach it.
set -eu
isb=${1:-build/isb}
state=$(pwd)/.isb
mkdir -p "$state"
cat <<MSG
isb serve, state in $state

  REST:   curl -s -X POST -H "Authorization: Bearer \$(cat $state/dev-token)" \\
               http://127.0.0.1:8092/api/v1/tools/sandbox_list -d '{}'
  MCP:    http://127.0.0.1:8092/mcp   (bearer token: the contents of $state/dev-token)
  CLI:    $isb --socket $state/api/isb.sock create --name demo
          $isb --socket $state/api/isb.sock exec demo -- uname -a
  unix:   curl -s --unix-socket $state/api/isb.sock -X POST http://isb/api/v1/tools/sandbox_list -d '{}'

Stop with Ctrl-C: sandboxes keep running, and the next start adopts them.
MSG
exec "$isb" serve --state-dir "$state" --listen 127.0.0.1:8092
