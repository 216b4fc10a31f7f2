#!/bin/bash
# Why the H200 run's starved job read 127% of its CPU per minute against 383% over its life
# (bench/results/real-gpu/README.md): its CPU use measured by the kernel alone (`time`), the
# node's CPU limits, and the same load through `up` with the per-minute series beside the
# cumulative figure. Usage: bash bench/real_gpu_cpu_check.sh OUT (about 2 minutes).
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
out=$1; mkdir -p "$out"
nvcc -O2 -o /tmp/advise_load bench/advise_load.cu || exit 1
echo "== nproc $(nproc); own cgroup: $(cat /proc/self/cgroup)"
cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
for f in cpu.max cpu.weight cpuset.cpus.effective cgroup.controllers; do
  for d in "$cg" "$(dirname "$cg")" /sys/fs/cgroup; do
    [ -r "$d/$f" ] && echo "$d/$f: $(cat "$d/$f")"
  done
done
echo "== the starved load alone for 20 s (user+sys over wall = cores used)"
/usr/bin/time -f "wall %e s, user %U s, sys %S s" /tmp/advise_load starved 20 2>&1 | tail -2
echo "== the same through up, 70 s"
. bench/real_gpu_up.sh
start_up "$out" 19402
s=$(g submit --json --cpus 1 --name starved -- /tmp/advise_load starved 70 | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
sleep 80
g show "$s" | grep -A2 host_usage
curl -s -H "Authorization: Bearer $(cat "$u/token")" "$(cat "$u/server")/v1/jobs/$s/usage" >"$out/usage.json"
python3 - "$out/usage.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("source", d.get("host_source"), "cpu_alloc_milli", d.get("cpu_alloc_milli"))
for b in d.get("buckets", []):
    print({k: b.get(k) for k in ("start_s", "cpu_used_pct", "cpu_throttled_pct", "cpu_pressure_pct", "sm_mean")})
PY
stop_up
