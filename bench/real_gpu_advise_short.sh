#!/bin/bash
# The advisor part of bench/real_gpu_check.sh, shortened to 150 s loads (two whole minutes).
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
out=$1; mkdir -p "$out"
nvcc -O2 -o /tmp/advise_load bench/advise_load.cu || exit 1
. bench/real_gpu_up.sh
start_up "$out" 19401
s=$(g submit --json --gpu-share 0.5 --cpus 1 --name starved -- /tmp/advise_load starved 150 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
f=$(g submit --json --gpu-share 0.5 --cpus 2 --name fed -- /tmp/advise_load fed 150 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
echo "jobs: starved=$s fed=$f"
g nodes --json | tr ',' '\n' | grep -E '"limits"|"gpu_model"|"gpus"'
echo "cgroups here:"; grep -E 'cgroup' /proc/mounts | awk '{print $2, $3}' | head; cat /proc/self/cgroup
sleep 30; g jobs; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
sleep 130
for id in $s $f; do g show "$id"; g advise "$id"; g advise "$id" --json >"$out/advice-$id.json"; done
echo "expected: job $s input_bound_cpu, job $f efficient"
stop_up
