#!/usr/bin/env bash
# Every C++ file of the repository in the layout .clang-format states: names the lines clang-format would change in
# each file that is not, and fails. `make format` rewrites them. Run by `make test` (the source_format test).
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "check_format: no clang-format (Debian: apt-get install clang-format-14)" >&2
  exit 1
fi
mapfile -t files < <(find bench fuzz src tests \( -name '*.cc' -o -name '*.h' \) | sort)
[ ${#files[@]} -gt 100 ] || { echo "check_format: found only ${#files[@]} sources" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if printf '%s\0' "${files[@]}" | xargs -0 -n 100 -P 2 "$fmt" --style=file --dry-run --Werror 2>"$out"; then
  echo "check_format: ${#files[@]} files follow .clang-format"
  exit 0
fi
grep -E '^[^ ].*: error:' "$out" | head -40
n=$(grep -E '^[^ ].*: error:' "$out" | cut -d: -f1 | sort -u | wc -l)
echo "check_format: $n of ${#files[@]} files differ from .clang-format; run: make format" >&2
exit 1
