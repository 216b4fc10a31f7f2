#!/usr/bin/env bash
# The agent against a real NVIDIA driver, as one prepared script for a machine with a GPU:
#  1. build (unless build/gpufleet is already there) and compile bench/gpu_load.cu with nvcc;
#  2. run the agent on the real driver for about 60 s while gpu_load runs (100% for 30 s, then
#     about 50%), with GPUFLEET_JOB_ID set so its job attribution can be checked;
#  3. every 10 s, put the agent's view next to `nvidia-smi --query-gpu` and
#     `--query-compute-apps`; print which NVML symbols resolved;
#  4. the advisor: an input-starved and a well-fed CUDA load (bench/advise_load.cu) through `up`,
#     and what `gpufleet advise` says of each (about 4 minutes);
#  5. dcgm-exporter parity (issue 21): the new counters next to `nvidia-smi dmon -s pucvmet` and
#     `nvidia-smi nvlink -gt d` (about 30 s).
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

# 4. The advisor on the real GPU (issue 13): `up` on the real driver runs an input-starved load
#    (4 host threads preparing each batch, under --cpus 1) and a well-fed one side by side on GPU
#    shares for about 200 s (three whole one-minute buckets), then says what holds each back.
#    Expected: the starved one's top finding is input_bound_cpu, the fed one's efficient.
echo "== advisor: an input-starved and a well-fed CUDA load through up (about 4 min)"
kill $agent $load 2>/dev/null
nvcc -O2 -o "$out/advise_load" bench/advise_load.cu || exit 1
load_bin=$(cd "$out" && pwd)/advise_load
up_dir=$(mktemp -d)
./build/gpufleet up --data-dir "$up_dir" --listen "127.0.0.1:$((port + 1))" --allow-root-jobs \
  >"$out/up.log" 2>&1 &
up=$!
trap 'kill $up 2>/dev/null; kill $agent $load 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s "$up_dir/server" ] && break; sleep 0.2; done
# The data directory goes right after the command: after `--` it would be the job's argument.
g() { local command=$1; shift; ./build/gpufleet "$command" --data-dir "$up_dir" "$@"; }
starved=$(g submit --json --gpu-share 0.5 --cpus 1 --name starved -- "$load_bin" starved 200 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
fed=$(g submit --json --gpu-share 0.5 --cpus 2 --name fed -- "$load_bin" fed 200 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
echo "jobs: starved=$starved fed=$fed"
sleep 215
for id in $starved $fed; do
  g show "$id"
  g advise "$id" --json >"$out/advice-$id.json"
  echo "top finding of job $id: $(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["findings"]; print(f[0]["kind"] if f else "none")' "$out/advice-$id.json")"
  g advise "$id" --sizing --deadline 2h || true
done
curl -s "127.0.0.1:$((port + 1))/v1/jobs/$starved/usage" -H "Authorization: Bearer $(cat "$up_dir/token")" \
  >"$out/usage-starved.json"
echo "expected: job $starved input_bound_cpu, job $fed efficient"
kill $up 2>/dev/null
wait $up 2>/dev/null
rm -rf "$up_dir"

# 5. dcgm-exporter parity (issue 21): encoder/decoder, GPM ratios, PCIe bytes and the NVLink data
#    counter as the agent exports them, next to what nvidia-smi reads from the same driver.
echo "== dcgm-exporter parity: the new counters against nvidia-smi dmon and nvlink (about 30 s)"
GPUFLEET_JOB_ID=dcgm-parity "$out/gpu_load" 25 2048 &
load5=$!
./build/gpufleet agent --listen "127.0.0.1:$((port + 2))" --interval 1 >"$out/agent5.log" 2>&1 &
agent5=$!
trap 'kill $agent5 $load5 2>/dev/null' EXIT
sleep 4
nvidia-smi dmon -s pucvmet -c 5 | tee "$out/dmon.txt"
curl -sf "127.0.0.1:$((port + 2))/metrics" -o "$out/metrics-dcgm.txt"
nvidia-smi nvlink -gt d >"$out/nvlink.txt" 2>&1
curl -sf "127.0.0.1:$((port + 2))/metrics" -o "$out/metrics-dcgm-after.txt"
for gpu in $(nvidia-smi --query-gpu=index --format=csv,noheader); do
  m() { sed -n "s/^$1{gpu=\"$gpu\",.*} \(.*\)$/\1/p" "$out/metrics-dcgm.txt" | head -1; }
  echo "agent gpu $gpu: enc % $(m DCGM_FI_DEV_ENC_UTIL), dec % $(m DCGM_FI_DEV_DEC_UTIL)" \
    "(dmon enc/dec); PCIe tx/rx bytes/s $(m DCGM_FI_PROF_PCIE_TX_BYTES)/$(m DCGM_FI_PROF_PCIE_RX_BYTES)" \
    "(dmon txpci/rxpci are MB/s); GR engine $(m DCGM_FI_PROF_GR_ENGINE_ACTIVE), SM active" \
    "$(m DCGM_FI_PROF_SM_ACTIVE), tensor $(m DCGM_FI_PROF_PIPE_TENSOR_ACTIVE), DRAM" \
    "$(m DCGM_FI_PROF_DRAM_ACTIVE) (dmon sm/mem are %); vGPU license $(m DCGM_FI_DEV_VGPU_LICENSE_STATUS)"
  smi_kib=$(awk -v g="$gpu" '/^GPU /{cur=($2==g":")} cur && /Data (Tx|Rx):/{s+=$(NF-1)} END{print s+0}' "$out/nvlink.txt")
  echo "NVLink data KiB: nvidia-smi nvlink -gt d sums to $smi_kib; agent DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" \
    "$(m DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL) before,"\
    "$(sed -n "s/^DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu=\"$gpu\",.*} \(.*\)$/\1/p" "$out/metrics-dcgm-after.txt") after"
done
echo "fields this GPU and driver do not support (gpufleet_gpu_field_supported 0):"
grep '^gpufleet_gpu_field_supported{.*} 0$' "$out/metrics-dcgm.txt" | sed 's/.*field="\([^"]*\)".*/  \1/'
kill $agent5 $load5 2>/dev/null
