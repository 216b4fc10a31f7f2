#!/usr/bin/env bash
# Builds the in-process threaded tests with ThreadSanitizer in build-tsan/ and runs them; any
# data race fails the run. The store's tests come first: its group commit hands results between
# threads (a race there once returned job id 0 to a submitter).
#
# Usage: bash scripts/tsan.sh [TEST_TARGET...]   (default: store_test)
# Environment: JOBS (parallel compile jobs, default: nproc); BUILD_LOCK (a file: the build runs
#   under `flock` on it).
# Exit status: 0 when every test passed with no race reported, 1 otherwise.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
lock=()
if [ -n "${BUILD_LOCK:-}" ]; then lock=(flock "$BUILD_LOCK"); fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(store_test)

echo "== Configuring build-tsan/ (RelWithDebInfo, ThreadSanitizer)"
"${lock[@]}" cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFLEET_TSAN=ON \
  -DGPUFLEET_BUILD_TESTS=ON -DGPUFLEET_BUILD_BENCH=OFF >/dev/null
echo "== Building ${targets[*]} (-j$jobs)"
"${lock[@]}" cmake --build build-tsan -j"$jobs" --target "${targets[@]}"

status=0
for t in "${targets[@]}"; do
  exe=$(find build-tsan/src -type f -name "$t" -perm -u+x | head -n 1)
  if [ -z "$exe" ]; then echo "tsan.sh: no test program '$t'" >&2; status=1; continue; fi
  echo "== $exe"
  # halt_on_error: the first race fails the program, with its report.
  if TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$exe" --gtest_brief=1; then
    echo "== $t: no data race"
  else
    echo "!! $t failed under ThreadSanitizer"
    status=1
  fi
done
exit "$status"
