#!/usr/bin/env bash
# Sets up gpufleet on Debian 12: installs the Debian packages it needs (only when one is missing,
# so a re-run is fast and works offline), then configures and builds the Release tree in build/.
#
# Usage: bash scripts/setup.sh [--tests] [--asan] [--werror]
#   (no option)  build/gpufleet and build/bench/placement_bench (enough for the main job)
#   --tests      also build the test binaries in build/
#   --asan       also build an ASan+UBSan Debug tree in build-asan/ (tests, no benchmarks)
#   --werror     treat compiler warnings as errors; on by default when CI is set
# Environment: JOBS (parallel compile jobs, default: nproc).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

tests=OFF
asan=0
werror=OFF
if [ -n "${CI:-}" ] && [ "${CI:-}" != "false" ]; then werror=ON; fi
for arg in "$@"; do
  case "$arg" in
    --tests) tests=ON ;;
    --asan) asan=1 ;;
    --werror) werror=ON ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# --- Debian packages -----------------------------------------------------------------------------
# libgtest-dev pulls in googletest; libsqlite3-dev is the embedded store, libpq-dev the client of
# PostgreSQL (a fleet's store); libssl-dev is TLS (its static
# libraries go into the `gpufleet` client). The test suite
# also drives a real Prometheus (prometheus, promtool), `top` in tmux, and curl, and runs a real
# two-node PyTorch DDP job across network namespaces (python3-torch, iproute2).
packages=(build-essential cmake pkg-config libcli11-dev nlohmann-json3-dev libgtest-dev
          libbenchmark-dev libsqlite3-dev libpq-dev libcpp-httplib-dev libtomlplusplus-dev libssl-dev)
# clang-14 and libFuzzer build the fuzz targets (scripts/fuzz.sh, fuzz/README.md). The web
# dashboard's tests drive Debian's chromium headless (tests/ui/). The store's tests and the
# fail-over test start their own PostgreSQL 15 (initdb, pg_ctl) in a temporary directory. The
# container tests run rootful podman with runc and an image imported from busybox-static. GLPK
# solves the placement bound's linear program (bench/placement_bound, docs/sim/placement-bound.md).
if [ "$tests" = ON ]; then
  packages+=(prometheus tmux curl clang-14 libfuzzer-14-dev python3-torch iproute2 chromium
             postgresql podman runc catatonit conmon busybox-static libglpk-dev)
fi
# npm fetches uPlot (compiled into the binary for the dashboard) and puppeteer-core (its tests).
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
if command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "== Debian packages: all ${#packages[@]} already installed"
  else
    echo "== Debian packages: installing ${missing[*]}"
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
        echo "setup.sh: need root (or sudo) to install: ${missing[*]}" >&2
        exit 1
      fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
  fi
else
  echo "== No dpkg-query: not a Debian system; assuming these are installed: ${packages[*]}"
fi

# --- npm packages: web/node_modules ---------------------------------------------------------------
# Exactly what web/package-lock.json pins; skipped when already installed from this lock file.
if [ ! -f web/node_modules/.package-lock.json ] ||
   [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  echo "== npm packages: installing web/package-lock.json"
  npm ci --prefix web --no-audit --no-fund --loglevel=error
else
  echo "== npm packages: already installed"
fi

# --- Release tree: build/ ------------------------------------------------------------------------
# Tests are always configured, so --tests later needs no reconfigure; without --tests only the
# binary and the benchmark are built, which roughly halves the build time.
echo "== Configuring build/ (Release, warnings as errors: $werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPUFLEET_BUILD_TESTS=ON \
  -DGPUFLEET_BUILD_BENCH=ON -DGPUFLEET_SANITIZE=OFF -DGPUFLEET_WERROR="$werror" >/dev/null
if [ "$tests" = ON ]; then
  echo "== Building build/ (everything, -j$jobs)"
  cmake --build build -j"$jobs"
else
  echo "== Building build/gpufleet, build/bench/placement_bench and the fake NVML (-j$jobs)"
  cmake --build build -j"$jobs" --target gpufleet placement_bench fake_nvml_full
fi

# --- ASan+UBSan tree: build-asan/ ----------------------------------------------------------------
if [ "$asan" = 1 ]; then
  echo "== Configuring build-asan/ (Debug, ASan+UBSan, warnings as errors: $werror)"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPUFLEET_BUILD_TESTS=ON \
    -DGPUFLEET_BUILD_BENCH=OFF -DGPUFLEET_SANITIZE=ON -DGPUFLEET_WERROR="$werror" >/dev/null
  echo "== Building build-asan/ (-j$jobs)"
  cmake --build build-asan -j"$jobs"
fi

echo "== Done: build/gpufleet is ready (try: bash scripts/demo.sh, or ./build/gpufleet --help)"
