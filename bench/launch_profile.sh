#!/usr/bin/env bash
# Where a busy launch phase spends the server's CPU (issue 19): `gpufleet up` with 8 simulated
# GPUs takes 3 s of durable HTTP submits of `true` from 8 clients (bench/submit_load) while it
# launches and reaps them; `perf record -e cpu-clock -g` samples the server's process from the
# first submit until the queue has drained. Prints the server's CPU per job, and the shares of
# the kernel work a fork brings (copying page tables, copy-on-write faults, the fork itself) and
# of exec, then the top symbols.
#
# Usage: bash bench/launch_profile.sh [BUILD_DIR=build] [LABEL]
# Needs perf (apt-get install linux-perf) and bench/submit_load in build/ (the load generator
# always comes from build/, so that two server builds see the same load).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
label=${2:-$build}
case $build in /*) bin=$build/gpufleet ;; *) bin=$PWD/$build/gpufleet ;; esac
data=$(mktemp -d /tmp/gpufleet-launch-profile.XXXX)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT
GPUFLEET_DATA_DIR=$data/d "$bin" up --simulated-gpus 8 --listen 127.0.0.1:0 --allow-root-jobs \
  --log-limit 0 >"$data/up.log" 2>&1 &
server_pid=$!  # gpufleet execs gpufleet-full: the same process
for _ in $(seq 100); do [ -s "$data/d/server" ] && break; sleep 0.1; done
url=$(cat "$data/d/server")
token=$(cat "$data/d/token")
queue() { curl -sf -H "Authorization: Bearer $token" "$url/v1/queue"; }
perf record -e cpu-clock -g -p "$server_pid" -o "$data/perf.data" >/dev/null 2>&1 &
perf_pid=$!
sleep 0.5
start=$(date +%s.%N)
load=$(./build/bench/submit_load "$url" "$token" 8 3)
# Until every submitted job has ended.
for _ in $(seq 600); do
  q=$(queue)
  waiting=$(echo "$q" | sed 's/.*"waiting":\([0-9]*\).*/\1/')
  running=$(echo "$q" | sed 's/.*"running":\([0-9]*\).*/\1/')
  [ "$waiting" = 0 ] && [ "$running" = 0 ] && break
  sleep 0.1
done
end=$(date +%s.%N)
finished=$(queue | sed 's/.*"finished":\([0-9]*\).*/\1/')
kill -INT "$perf_pid"
wait "$perf_pid" 2>/dev/null || true
cpu_ticks=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
hz=$(getconf CLK_TCK)
report=$(perf report -i "$data/perf.data" --stdio --no-children --sort sym 2>/dev/null |
  grep -E '^ +[0-9.]+%' || true)
share() {  # summed self share (%) of the symbols matching $1
  echo "$report" | grep -E "$1" | awk '{gsub("%","",$1); s += $1} END {printf "%.1f", s}'
}
echo "== $label: $load"
echo "   $finished jobs ended in $(echo "$end - $start" | bc) s; server CPU $(echo "scale=2; $cpu_ticks * 1000 / $hz / $finished" | bc) ms per job (whole run)"
echo "   fork work (fork and its malloc hooks, page-table copies, copy-on-write faults): $(share '[Ff]ork|copy_page_range|dup_mm|copy_pte|wp_page|copy_process|kernel_clone|copy_mm|ptep_clear_flush')%"
echo "   top symbols (self):"
echo "$report" | head -12 | sed 's/^/     /'
