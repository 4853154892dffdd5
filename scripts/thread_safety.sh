#!/usr/bin/env bash
# `make thread-safety`: the src/ translation units of BUILD's compile_commands.json that use the locks of base/mutex.h,
# checked by clang's -Wthread-safety as an error. Syntax only, nothing is generated: it costs a parse of each file,
# not a second build. Usage: thread_safety.sh BUILD_DIR [JOBS]
set -euo pipefail
build=${1:?usage: thread_safety.sh BUILD_DIR [JOBS]}
jobs=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
db="$build/compile_commands.json"
[ -f "$db" ] || { echo "thread-safety: no $db; build first (make build)" >&2; exit 1; }
command -v clang++ >/dev/null || { echo "thread-safety: clang++ is missing; run: make deps, or apt-get install clang" >&2; exit 1; }

# One shell line per src/ file (or a unity build's file of them) that includes base/mutex.h, directly or not, by the
# build's own record of what each object was built from (`ninja -t deps`; a file without a record is checked): one
# that does not can hold no annotation. A file built into two targets is checked once. The line: into its
# directory, then its command with the compiler swapped for clang++, the output dropped and the analysis added.
ninja -C "$build" -t deps >"$build/thread_safety.deps"
python3 - "$db" "$root/src/" "$build/thread_safety.deps" >"$build/thread_safety.cmds" <<'EOF'
import json, shlex, sys
db, src, deps_file = sys.argv[1], sys.argv[2], sys.argv[3]
# object (relative to the build dir) -> whether it was built from base/mutex.h
annotated, target = {}, None
for line in open(deps_file):
    if line.strip() and not line[0].isspace():
        target = line.split(":", 1)[0]
        annotated[target] = False
    elif target and line.strip().endswith("src/base/mutex.h"):
        annotated[target] = True
seen = set()
for entry in json.load(open(db)):
    path = entry["file"]
    args = entry.get("arguments") or shlex.split(entry["command"])
    obj = args[args.index("-o") + 1] if "-o" in args else None
    # A unity build's file (CMake's Unity/unity_*.cxx, the CLI's commands) is src/ files included whole.
    unity = "/Unity/unity_" in path
    if not (path.startswith(src) or unity) or path in seen or annotated.get(obj) is False:
        continue
    seen.add(path)
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c":
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
