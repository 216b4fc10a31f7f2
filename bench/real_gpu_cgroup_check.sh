#!/bin/bash
# On a machine whose cgroup v2 delegation offers the memory controller only (the device VM of
# bench/results/real-gpu/): what `up` enforces and measures there. A job asking 64 MiB that grows
# past it, and a job spinning two threads under --cpus 1. Usage: bash bench/real_gpu_cgroup_check.sh OUT
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
out=$1; mkdir -p "$out"
echo "== own cgroup: $(cat /proc/self/cgroup); controllers: $(cat /sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)/cgroup.controllers 2>&1)"
. bench/real_gpu_up.sh
start_up "$out" 19403
g nodes --json | tr ',' '\n' | grep -E '"limits|"gpus"'
m=$(g submit --json --gpu-share 0.1 --memory 64M --name grow -- sh -c 'tail /dev/zero' | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
c=$(g submit --json --gpu-share 0.1 --cpus 1 --name spin -- sh -c 'for i in 1 2; do (while :; do :; done) & done; sleep 25; kill 0' | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
sleep 35
g jobs
for id in $m $c; do g show "$id" | grep -E "^state|^reason|^oom_killed|host_usage|  cpu|  memory"; done
stop_up
echo "== up's log"; cat "$out/up.log" | head -20
