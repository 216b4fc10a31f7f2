#!/usr/bin/env bash
# Runs the whole gpufleet test suite: every test of the Release tree (build/), then every test of
# the ASan+UBSan tree (build-asan/). Both run even when the first fails; the exit status is
# non-zero when either fails; then the threaded store tests under ThreadSanitizer (build-tsan/,
# built here; TSAN=0 skips them); then every fuzz target for FUZZ_SECONDS (default 10) each. Build
# both trees first: bash scripts/setup.sh --tests --asan
# Environment: JOBS (parallel tests of the ASan tree, default: nproc); RELEASE_JOBS (of the Release
# tree, default: twice JOBS: its tests mostly wait on sleeps and child processes, while the ASan
# tree's keep the cores busy and their timing bounds fail when more run at once).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
release_jobs=${RELEASE_JOBS:-$((2 * jobs))}

status=0
summaries=()
for tree in build build-asan; do
  log="$tree/ctest-output.log"
  echo "== ctest --test-dir $tree"
  if [ ! -f "$tree/CTestTestfile.cmake" ] || [ ! -x "$tree/tests/cli_test" ]; then
    echo "$tree: tests not built; run: bash scripts/setup.sh --tests --asan" | tee "$log"
    status=1
  else
    tree_jobs=$jobs
    [ "$tree" = build ] && tree_jobs=$release_jobs
    ctest --test-dir "$tree" --output-on-failure --no-tests=error -j"$tree_jobs" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || status=1
  fi
  summaries+=("$tree" "$log")
done

# Data races in the store's threaded code (scripts/tsan.sh builds build-tsan/ itself).
tsan_log=build-tsan-output.log
if [ "${TSAN:-1}" != 0 ]; then
  echo "== ThreadSanitizer"
  bash scripts/tsan.sh 2>&1 | tee "$tsan_log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

# Every libFuzzer target for a short, bounded time (scripts/fuzz.sh builds build-fuzz/ with
# clang++-14, which setup.sh --tests installs); FUZZ_SECONDS=0 skips them.
fuzz_seconds=${FUZZ_SECONDS:-10}
fuzz_log=build-fuzz-ctest.log
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzz targets, ${fuzz_seconds} s each"
  bash scripts/fuzz.sh "$fuzz_seconds" 2>&1 | tee "$fuzz_log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

# ctest's own summary of each tree once more, so both stay visible at the end.
echo
echo "== Summary"
for ((i = 0; i < ${#summaries[@]}; i += 2)); do
  echo "-- ${summaries[i]}:"
  sed -n '/tests passed, /,$p; /tests not built/p' "${summaries[i + 1]}"
done
if [ "${TSAN:-1}" != 0 ]; then
  echo "-- tsan:"
  grep -E '^== .*: no data race|^!!|^tsan.sh:' "$tsan_log" || echo "tsan.sh did not finish"
fi
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "-- fuzz:"
  grep -E '^== (No findings|Findings)|^!!|^fuzz.sh:' "$fuzz_log" || echo "fuzz.sh did not finish"
fi
exit "$status"
