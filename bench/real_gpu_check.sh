#!/usr/bin/env bash
# The agent against a real NVIDIA driver, as one prepared script for a machine with a GPU:
#  1. build (unless build/gpufleet is already there) and compile bench/gpu_load.cu with nvcc;
#  2. run the agent on the real driver for about 60 s while gpu_load runs (100% for 30 s, then
#     about 50%), with GPUFLEET_JOB_ID set so its job attribution can be checked;
#  3. every 10 s, put the agent's view next to `nvidia-smi --query-gpu` and
#     `--query-compute-apps`; print which NVML symbols resolved.
# Usage: bash bench/real_gpu_check.sh [OUT_DIR]   (default: $OUT, else bench/results/real-gpu)
# Everything printed also goes to OUT_DIR/real_gpu_check.txt; commit that file.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-${OUT:-bench/results/real-gpu}}
mkdir -p "$out"
exec > >(tee "$out/real_gpu_check.txt") 2>&1
port=${PORT:-19400}
echo "== $(date -u +%FT%TZ) $(uname -srm)"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv || {
  echo "no nvidia-smi: not a GPU machine"
  exit 1
}
if [ ! -x build/gpufleet ]; then bash scripts/setup.sh || exit 1; fi
nvcc -O2 -o "$out/gpu_load" bench/gpu_load.cu || exit 1

GPUFLEET_JOB_ID=real-gpu-check "$out/gpu_load" 65 2048 &
load=$!
./build/gpufleet agent --listen "127.0.0.1:$port" --print-symbols >"$out/agent.log" 2>&1 &
agent=$!
trap 'kill $agent $load 2>/dev/null' EXIT
sleep 3
echo "== agent start-up and resolved symbols"
cat "$out/agent.log"

metric() {  # metric NAME GPU -> value from the last scrape
  sed -n "s/^$1{gpu=\"$2\",.*} \(.*\)$/\1/p" "$out/metrics.txt" | head -1
}
for round in 1 2 3 4 5 6; do
  sleep 10
  curl -sf "127.0.0.1:$port/metrics" -o "$out/metrics.txt"
  cp "$out/metrics.txt" "$out/metrics-$round.txt"
  curl -sf "127.0.0.1:$port/v1/gpus" -o "$out/gpus-$round.json"
  echo "== round $round ($((round * 10)) s)"
  echo "nvidia-smi: index, util.gpu %, util.mem %, memory.used MiB, power W, temp C, SM MHz"
  nvidia-smi --query-gpu=index,utilization.gpu,utilization.memory,memory.used,power.draw,temperature.gpu,clocks.sm \
    --format=csv,noheader,nounits
  for gpu in $(nvidia-smi --query-gpu=index --format=csv,noheader); do
    echo "agent:      $gpu, $(metric DCGM_FI_DEV_GPU_UTIL "$gpu"), $(metric DCGM_FI_DEV_MEM_COPY_UTIL "$gpu"), $(metric DCGM_FI_DEV_FB_USED "$gpu"), $(metric DCGM_FI_DEV_POWER_USAGE "$gpu"), $(metric DCGM_FI_DEV_GPU_TEMP "$gpu"), $(metric DCGM_FI_DEV_SM_CLOCK "$gpu"); SM active $(metric DCGM_FI_PROF_SM_ACTIVE "$gpu")"
  done
  echo "nvidia-smi compute apps: pid, used_memory MiB, gpu_uuid"
  nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits
  echo "agent processes (gpufleet_process_*):"
  grep -E '^gpufleet_(process_gpu_memory_bytes|process_sm_util_percent|job_)' "$out/metrics.txt"
done
echo "== gpu_load was pid $load; health:"
grep -E '^gpufleet_gpu_(healthy|health_reason)' "$out/metrics.txt"
echo "== top --once"
./build/gpufleet top --once
