#!/usr/bin/env bash
# Runs libFuzzer targets of a fuzz build from their seed corpora, JOBS at a time, each for SECONDS; a crash fails.
# A failed target's log tail is printed as it fails and again, with every other failure, after the last target, so
# the end of the output (all that a CI report may keep) names what failed and how.
# usage: fuzz.sh BUILD_DIR SECONDS SEED JOBS TARGET...   (SEED 0: a new seed each run)
set -euo pipefail
build=$1 seconds=$2 seed=$3 jobs=$4
shift 4
cd "$(dirname "$0")/.."
failed="$build/fuzz-failed"
: >"$failed"
run_one() {
  local build=$1 seconds=$2 seed=$3 t=$4
  mkdir -p "$build/corpus-$t"
  if "$build/${t}_fuzz" -max_total_time="$seconds" -seed="$seed" -print_final_stats=1 \
       -timeout=25 -artifact_prefix="$build/fuzz-$t-" "$build/corpus-$t" "fuzz/corpus/$t" \
       >"$build/fuzz-$t.log" 2>&1; then
    echo "fuzz $t: clean for ${seconds} s ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$build/fuzz-$t.log" | grep -o '[0-9]*$' || echo '?') runs)"
  else
    echo "fuzz $t: FAILED; its log ($build/fuzz-$t.log):"
    tail -n 60 "$build/fuzz-$t.log"
    echo "$t" >>"$build/fuzz-failed"
    return 1
  fi
}
export -f run_one
status=0
printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ "$build" "$seconds" "$seed" {} || status=$?
if [[ -s $failed ]]; then
  while read -r t; do
    echo "=== fuzz $t FAILED (seed $seed); the crash, from $build/fuzz-$t.log:"
    grep -m1 -A 30 -E '^==[0-9]+==|^INFO: a leak|ERROR: libFuzzer|SUMMARY:|deadly signal|runtime error:|terminate called' "$build/fuzz-$t.log" || tail -n 30 "$build/fuzz-$t.log"
    grep -E '^(Test unit written|Base64:)' "$build/fuzz-$t.log" | tail -n 4 || true
  done <"$failed"
  echo "fuzz: $(wc -l <"$failed") of $# targets FAILED: $(tr '\n' ' ' <"$failed")"
fi
exit "$status"
