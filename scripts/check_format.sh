#!/usr/bin/env bash
# Every C++ file of the repository in the layout .clang-format states: names the lines clang-format would change in
# each file that is not, and fails. `make format` rewrites them. Run by `make test` (the source_format test).
set -euo pipefail
cd "$(dirname "$0")/.."
# The version `make format` uses: another clang-format lays some lines out differently.
fmt=$(command -v clang-format-14 || true)
if [ -z "$fmt" ]; then
  echo "check_format: no clang-format-14 (Debian: apt-get install clang-format-14)" >&2
  exit 1
fi
# The repository's own sources (an editor's lock file or an untracked scratch file is not one); outside a git
# checkout, every .cc and .h under the source directories.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -d '' -t files < <(git ls-files -z -- '*.cc' '*.h')
else
  mapfile -d '' -t files < <(find bench fuzz src tests \( -name '*.cc' -o -name '*.h' \) -print0 | sort -z)
fi
[ ${#files[@]} -gt 100 ] || { echo "check_format: found only ${#files[@]} sources" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if printf '%s\0' "${files[@]}" | xargs -0 -n 100 -P 2 "$fmt" --style=file --dry-run --Werror 2>"$out"; then
  echo "check_format: ${#files[@]} files follow .clang-format"
  exit 0
fi
if grep -qE '^[^ ].*: error:' "$out"; then
  grep -E '^[^ ].*: error:' "$out" | head -40
  n=$(grep -E '^[^ ].*: error:' "$out" | cut -d: -f1 | sort -u | wc -l)
  echo "check_format: $n of ${#files[@]} files differ from .clang-format; run: make format" >&2
else
  cat "$out" >&2
  echo "check_format: clang-format failed" >&2
fi
exit 1
