#!/usr/bin/env bash
# The fuzzing bar: runs each libFuzzer target (fuzz/) for RUNS executions (default 10 million)
# under ASan+UBSan with leak checking, and records per target the executions, wall time, exec/s,
# the corpus it grew and what it found in bench/results/fuzz.md (a target's row is replaced when
# it runs again; rows of targets not run are kept).
#
# Usage: bash bench/fuzz_long.sh [TARGET...]   (default: every target built in build-fuzz/)
# Environment: RUNS (default 10000000); MAX_TIME (seconds a target may run, default 0: no limit;
#   a target stopped by it is recorded as not having reached RUNS); NICE (default 19); TIMEOUT
#   (seconds one input may take before libFuzzer calls it a hang, default 60: at nice 19 beside a
#   build, 10 s was hit by starvation alone).
# Build first with scripts/fuzz.sh (e.g. `bash scripts/fuzz.sh 1`).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=${RUNS:-10000000}
max_time=${MAX_TIME:-0}
results=bench/results/fuzz.md
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for exe in build-fuzz/fuzz/*_fuzz; do
    [ -x "$exe" ] && targets+=("$(basename "$exe" _fuzz)")
  done
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz_long.sh: no targets in build-fuzz/fuzz/; run scripts/fuzz.sh first" >&2
  exit 2
fi

# Replaces target $1's row of the results table with $2 (under a lock: runs may go in parallel).
write_row() {
  (
    flock 9
    local rows
    rows=$(mktemp)
    if [ -f "$results" ]; then
      grep -E '^\| [a-z0-9_]+ \|' "$results" | grep -v '^| target |' | grep -v "^| $1 |" >"$rows" || true
    fi
    echo "$2" >>"$rows"
    {
      echo "# Fuzzing: executions per target"
      echo
      echo "Written by \`bench/fuzz_long.sh\` (libFuzzer, clang 14, ASan+UBSan with leak checking,"
      echo "\`-rss_limit_mb=2048 -timeout=${TIMEOUT:-60}\`); the bar is 10,000,000 executions per target with no"
      echo "crash, leak or UB report. Each run starts from the seed corpus in \`fuzz/corpus/TARGET\`."
      echo "Machine: $(nproc) cores shared with other work, fuzzers at nice ${NICE:-19}, so exec/s is a"
      echo "lower bound. Wall time is in seconds; the new corpus is what the run added and kept."
      echo "A target without a row here has not been run to the bar yet."
      echo
      echo "| target | executions | wall s | exec/s | new corpus | max_len | findings | date |"
      echo "|---|---|---|---|---|---|---|---|"
      sort "$rows"
    } >"$results.new"
    mv "$results.new" "$results"
    rm -f "$rows"
  ) 9>build-fuzz/fuzz/long/results.lock
}

status=0
for t in "${targets[@]}"; do
  exe=build-fuzz/fuzz/${t}_fuzz
  max_len=$(awk -v t="$t" '$1 == t { print $2 }' fuzz/max_len.txt)
  max_len=${max_len:-4096}
  corpus=build-fuzz/fuzz/long/$t
  artifacts=build-fuzz/fuzz/long/artifacts
  rm -rf "$corpus"
  mkdir -p "$corpus" "$artifacts"
  log=build-fuzz/fuzz/long/$t.log
  echo "== $t: $runs runs (max_len $max_len, log: $log)"
  start=$(date +%s)
  rc=0
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    nice -n "${NICE:-19}" "$exe" -runs="$runs" -max_total_time="$max_time" -max_len="$max_len" \
    -rss_limit_mb=2048 -timeout="${TIMEOUT:-60}" -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
    "$corpus" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  wall=$(($(date +%s) - start))
  execs=$(awk '/^stat::number_of_executed_units:/ { print $2 }' "$log" | tail -1)
  execs=${execs:-0}
  per_s=$((wall > 0 ? execs / wall : execs))
  files=$(find "$corpus" -type f | wc -l)
  kib=$(du -sk "$corpus" | cut -f1)
  if [ "$rc" -eq 72 ]; then  # libFuzzer's exit status when interrupted (SIGINT)
    findings="0 (interrupted: NOT run to $runs)"
  elif [ "$rc" -eq 0 ]; then
    findings=0
    if [ "$execs" -lt "$runs" ]; then
      findings="0 (stopped by MAX_TIME=${max_time}s or an interrupt: NOT run to $runs)"
    fi
  else
    what=$(grep -m1 -oE 'ERROR: [A-Za-z]+Sanitizer: [a-z-]+|runtime error: .{0,60}|invariant violated: .{0,60}|ERROR: libFuzzer: [a-z-]+' "$log" || echo "exit $rc")
    findings="1: ${what//|/\\|} (exit $rc; see $artifacts)"
    status=1
  fi
  write_row "$t" "| $t | $execs | $wall | $per_s | $files files, $kib KiB | $max_len | $findings | $(date -u +%Y-%m-%d) |"
  echo "   $execs executions in $wall s ($per_s/s); findings: $findings"
done
echo "== Wrote $results"
exit "$status"
