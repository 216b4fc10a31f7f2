#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, see fuzz/README.md) in build-fuzz/ with clang++-14, ASan and
# UBSan, then runs each for SECONDS on its seed corpus. New inputs collect in
# build-fuzz/fuzz/corpus/TARGET (kept between runs), findings in build-fuzz/fuzz/artifacts/.
#
# Usage: bash scripts/fuzz.sh [SECONDS] [TARGET...]   (default: 20 seconds, every target)
# Environment: JOBS (parallel compile jobs, default: nproc); FUZZ_JOBS (targets fuzzed at once,
#   default: JOBS); BUILD_LOCK (a file: the build runs under `flock` on it, for machines shared by
#   several builders); NICE (the fuzzers' niceness, default 0).
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
# -O1 and line tables only, as LLVM's sanitizer docs and OSS-Fuzz build fuzzers: the reports keep
# file and line, and the build takes about a fifth less time than -O2 -g (measured on 2 cores:
# controller.cpp 21.3 s -> 17.9 s, schedule.cpp 8.5 s -> 6.9 s).
"${lock[@]}" cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  -DGPUFLEET_FUZZ=ON -DGPUFLEET_BUILD_TESTS=OFF -DGPUFLEET_BUILD_BENCH=OFF >/dev/null
echo "== Building the fuzz targets (-j$jobs)"
"${lock[@]}" cmake --build build-fuzz -j"$jobs" --target fuzz_targets

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for exe in build-fuzz/fuzz/*_fuzz; do targets+=("$(basename "$exe" _fuzz)"); done
fi

# One target's run; its outcome goes to build-fuzz/fuzz/TARGET.result ("ok STATS" or "found").
run_target() {
  local t=$1 exe=build-fuzz/fuzz/${1}_fuzz max_len scratch log result
  max_len=$(awk -v t="$t" '$1 == t { print $2 }' fuzz/max_len.txt)
  scratch=build-fuzz/fuzz/corpus/$t
  log=build-fuzz/fuzz/$t.log
  result=build-fuzz/fuzz/$t.result
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     nice -n "${NICE:-0}" "$exe" -max_total_time="$seconds" -max_len="${max_len:-4096}" \
       -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/fuzz/artifacts/$t-" "$scratch" "fuzz/corpus/$t" >"$log" 2>&1; then
    echo "ok $(grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "$log" | tr '\n' ' ')" \
      >"$result"
  else
    echo found >"$result"
  fi
}
# Each fuzzer is one busy process: as many run at once as there are cores (FUZZ_JOBS).
parallel=${FUZZ_JOBS:-$jobs}
if ! [[ "$parallel" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: FUZZ_JOBS must be a positive whole number, not '$parallel'" >&2
  exit 2
fi
# Stopped early (Ctrl-C, a CI timeout): no fuzzer is left running behind.
stop_fuzzers() {
  local pid
  for pid in $(jobs -rp); do
    pkill -P "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  done
}
trap stop_fuzzers EXIT
trap 'exit 130' INT TERM
failed=()
started=()
mkdir -p build-fuzz/fuzz/artifacts
for t in "${targets[@]}"; do
  if [ ! -x "build-fuzz/fuzz/${t}_fuzz" ]; then
    echo "fuzz.sh: no target '$t'" >&2
    failed+=("$t")
    continue
  fi
  if [[ " ${started[*]} " == *" $t "* ]]; then continue; fi  # named twice: fuzzed once
  mkdir -p "build-fuzz/fuzz/corpus/$t"
  rm -f "build-fuzz/fuzz/$t.result"
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  run_target "$t" &
  started+=("$t")
done
wait
for t in "${started[@]}"; do
  max_len=$(awk -v t="$t" '$1 == t { print $2 }' fuzz/max_len.txt)
  echo "== $t: ${seconds} s (max_len ${max_len:-4096}; log: build-fuzz/fuzz/$t.log)"
  result=$(cat "build-fuzz/fuzz/$t.result" 2>/dev/null || echo "found (no result written)")
  if [[ "$result" == ok* ]]; then
    echo "${result#ok }"
  else
    echo "!! $t found something:"
    grep -E 'ERROR|runtime error|SUMMARY|invariant|written to' "build-fuzz/fuzz/$t.log" 2>/dev/null |
      head -5 || true
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "== Findings in: ${failed[*]} (inputs in build-fuzz/fuzz/artifacts/)" >&2
  exit 1
fi
echo "== No findings in ${#targets[@]} targets"
