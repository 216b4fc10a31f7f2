#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, see fuzz/README.md) in build-fuzz/ with clang++-14, ASan and
# UBSan, then runs each for SECONDS on its seed corpus. New inputs collect in
# build-fuzz/fuzz/corpus/TARGET (kept between runs), findings in build-fuzz/fuzz/artifacts/.
#
# Usage: bash scripts/fuzz.sh [SECONDS] [TARGET...]   (default: 20 seconds, every target)
# Environment: JOBS (parallel compile jobs, default: nproc); BUILD_LOCK (a file: the build runs
#   under `flock` on it, for machines shared by several builders); NICE (the fuzzers' niceness,
#   default 0).
# Exit status: 0 when no target found anything, 1 otherwise (the targets are named).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=20
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
lock=()
if [ -n "${BUILD_LOCK:-}" ]; then lock=(flock "$BUILD_LOCK"); fi
if ! command -v clang++-14 >/dev/null 2>&1; then
  echo "fuzz.sh: clang++-14 is missing (apt-get install clang-14 libfuzzer-14-dev)" >&2
  exit 2
fi

echo "== Configuring build-fuzz/ (clang++-14, libFuzzer, ASan+UBSan)"
"${lock[@]}" cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFLEET_FUZZ=ON -DGPUFLEET_BUILD_TESTS=OFF \
  -DGPUFLEET_BUILD_BENCH=OFF >/dev/null
echo "== Building the fuzz targets (-j$jobs)"
"${lock[@]}" cmake --build build-fuzz -j"$jobs" --target fuzz_targets

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for exe in build-fuzz/fuzz/*_fuzz; do targets+=("$(basename "$exe" _fuzz)"); done
fi

failed=()
for t in "${targets[@]}"; do
  exe=build-fuzz/fuzz/${t}_fuzz
  if [ ! -x "$exe" ]; then echo "fuzz.sh: no target '$t'" >&2; failed+=("$t"); continue; fi
  max_len=$(awk -v t="$t" '$1 == t { print $2 }' fuzz/max_len.txt)
  scratch=build-fuzz/fuzz/corpus/$t
  mkdir -p "$scratch" build-fuzz/fuzz/artifacts
  log=build-fuzz/fuzz/$t.log
  echo "== $t: ${seconds} s (max_len ${max_len:-4096}; log: $log)"
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     nice -n "${NICE:-0}" "$exe" -max_total_time="$seconds" -max_len="${max_len:-4096}" \
       -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/fuzz/artifacts/$t-" "$scratch" "fuzz/corpus/$t" >"$log" 2>&1; then
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "$log" | tr '\n' ' '; echo
  else
    echo "!! $t found something:"; grep -E 'ERROR|runtime error|SUMMARY|invariant|written to' "$log" | head -5
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "== Findings in: ${failed[*]} (inputs in build-fuzz/fuzz/artifacts/)" >&2
  exit 1
fi
echo "== No findings in ${#targets[@]} targets"
