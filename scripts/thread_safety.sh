#!/usr/bin/env bash
# `make thread-safety`: every src/ translation unit of BUILD's compile_commands.json checked by clang's
# -Wthread-safety as an error (the locks of base/mutex.h). Syntax only, nothing is generated: it costs a parse of each
# file, not a second build. Usage: thread_safety.sh BUILD_DIR [JOBS]
set -euo pipefail
build=${1:?usage: thread_safety.sh BUILD_DIR [JOBS]}
jobs=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
db="$build/compile_commands.json"
[ -f "$db" ] || { echo "thread-safety: no $db; build first (make build)" >&2; exit 1; }
command -v clang++ >/dev/null || { echo "thread-safety: clang++ is missing; run: make deps, or apt-get install clang" >&2; exit 1; }

# One shell line per src/ file (a file built into two targets is checked once): into its directory, then its
# command with the compiler swapped for clang++, the output dropped and the analysis added.
python3 - "$db" "$root/src/" >"$build/thread_safety.cmds" <<'EOF'
import json, shlex, sys
db, src = sys.argv[1], sys.argv[2]
seen = set()
for entry in json.load(open(db)):
    path = entry["file"]
    if not path.startswith(src) or path in seen:
        continue
    seen.add(path)
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c" and not a.endswith("ccache"):
            out.append(a)
    cmd = ["clang++", "-fsyntax-only", "-Wthread-safety", "-Werror"] + out
    print("cd " + shlex.quote(entry["directory"]) + " && " + shlex.join(cmd))
EOF

count=$(wc -l <"$build/thread_safety.cmds")
start=$(date +%s)
if ! xargs -P "$jobs" -d '\n' -n 1 bash -c <"$build/thread_safety.cmds"; then
  echo "thread-safety: clang -Wthread-safety refused the files above" >&2
  exit 1
fi
echo "thread-safety: $count files checked by clang -Wthread-safety in $(($(date +%s) - start)) s"
