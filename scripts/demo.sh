#!/usr/bin/env bash
# A short tour of `isb run`: each command runs in a fresh sandbox and the outcome is printed.
set -u
isb=${1:-build/isb}
step() { printf '\n$ %s\n' "$*"; "$@"; printf '(exit %d)\n' $?; }
echo "isb run: one command in a fresh sandbox (own user, pid, mount, uts, ipc, net and cgroup namespaces)"
step "$isb" run -- sh -c 'echo "I am $(id -un) (uid $(id -u)) on $(hostname), pid $$"; cat /proc/self/uid_map'
step "$isb" run -- sh -c 'ls /; ip link 2>/dev/null || cat /proc/net/dev'
step "$isb" run --memory 64M --json -- sh -c 'head -c 200M /dev/zero | tail -c 1 >/dev/null'
step "$isb" run --timeout 1s --json -- sh -c 'sleep 60'
step "$isb" run --pids 16 -- sh -c 'for i in $(seq 40); do sleep 1 & done; wait' 
step "$isb" run -- sh -c 'echo hi > /usr/bin/x'
echo
echo "Try: $isb run --help"
