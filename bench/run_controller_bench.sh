#!/usr/bin/env bash
# First figures for `gpufleet up` (issue 5), against Slurm 22.05's figures on the same kind of
# machine (2 cores, one node of 8 GPUs), written to bench/results/controller.md:
#  - sequential `gpufleet submit` from the CLI (Slurm sbatch: 66 jobs/s);
#  - end-to-end throughput of trivial 1-GPU jobs (`true`) on 8 simulated GPUs (Slurm: 8.3 jobs/s);
#  - submit -> running latency on an idle server, median (Slurm: 0.89 s);
#  - the server's RSS after those jobs.
# N (default 300) jobs per figure. Needs build/ (bash scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake --build build --target gpufleet submit_load -j2 >/dev/null
n=${N:-300}
bin=./build/gpufleet
out=bench/results/controller.md
export GPUFLEET_DATA_DIR
GPUFLEET_DATA_DIR=$(mktemp -d)
"$bin" up --listen 127.0.0.1:0 --simulated-gpus 8 >"$GPUFLEET_DATA_DIR/up.log" 2>&1 &
up=$!
trap 'kill $up 2>/dev/null; wait $up 2>/dev/null; rm -rf "$GPUFLEET_DATA_DIR"' EXIT
for _ in $(seq 100); do [ -s "$GPUFLEET_DATA_DIR/server" ] && break; sleep 0.1; done
now() { date +%s.%N; }
# Jobs that have ended, from the queue summary (listing 10,000 jobs would itself grow the server).
finished() {
  curl -sf -H "Authorization: Bearer $(cat "$GPUFLEET_DATA_DIR/token")" \
    "$(cat "$GPUFLEET_DATA_DIR/server")/v1/queue" | sed 's/.*"finished":\([0-9]*\).*/\1/'
}

# 1. Sequential CLI submits (each a new process, an HTTP request and a committed transaction).
t0=$(now)
for _ in $(seq "$n"); do "$bin" submit -- true >/dev/null; done
t1=$(now)
# 2. End to end: from the first submit above until all of them have run.
while [ "$(finished)" -lt "$n" ]; do sleep 0.05; done
t2=$(now)
# 3. Submit -> running on an idle server, one job at a time.
lat=()
for _ in $(seq 30); do
  id=$("$bin" submit --json -- true | sed 's/[^0-9]//g')
  while ! "$bin" show --json "$id" | grep -q '"state": "SUCCEEDED"'; do sleep 0.01; done
  lat+=("$("$bin" show --json "$id" | awk -F': ' '/"start_ms"/ {gsub(",","",$2); s=$2} /"submit_ms"/ {gsub(",","",$2); u=$2} END {print s-u}')")
done
# 4. Durable submits over HTTP from 8 concurrent clients (kept-alive connections), 5 s.
load=$(./build/bench/submit_load "$(cat "$GPUFLEET_DATA_DIR/server")" "$(cat "$GPUFLEET_DATA_DIR/token")" 8 5)
concurrent_rate=$(echo "$load" | sed 's/.*, \([0-9]*\) jobs\/s/\1/')
rss=$(awk '/^VmRSS/ {print $2}' /proc/$up/status)
hwm=$(awk '/^VmHWM/ {print $2}' /proc/$up/status)
median=$(printf '%s\n' "${lat[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
submit_rate=$(echo "$n / ($t1 - $t0)" | bc -l)
e2e_rate=$(echo "$n / ($t2 - $t0)" | bc -l)
{
  echo "# Controller (\`gpufleet up\`) first figures"
  echo
  echo "\`bash bench/run_controller_bench.sh\` (N=$n) on $(nproc) CPUs, $(date -u +%F); 8 simulated GPUs;"
  echo "the store commits with synchronous=FULL. Ratios are against Slurm 22.05 on the same kind of machine."
  echo
  echo "| figure | gpufleet | Slurm | ratio | target (10x Slurm) |"
  echo "|---|---|---|---|---|"
  printf "| sequential CLI submit | %.0f jobs/s | 66 jobs/s | %.2fx | 660 jobs/s |\n" "$submit_rate" "$(echo "$submit_rate / 66" | bc -l)"
  printf "| durable HTTP submits, 8 concurrent clients | %s jobs/s | | | 2,000 jobs/s |\n" "$concurrent_rate"
  printf "| end-to-end trivial 1-GPU jobs (from the first sequential submit; bounded by it) | %.1f jobs/s | 8.3 jobs/s | %.2fx | 83 jobs/s |\n" "$e2e_rate" "$(echo "$e2e_rate / 8.3" | bc -l)"
  printf "| submit -> running (server: commit to process start), median | %d ms | 890 ms | %.1fx faster | 90 ms |\n" "$median" "$(echo "890 / ($median + 0.001)" | bc -l)"
  printf "| server RSS (peak) with %d finished jobs in the store | %.1f MB (%.1f MB) | 230-260 MB (thousands of jobs) | | 50 MB at 10,000 |\n" "$(finished)" "$(echo "$rss / 1024" | bc -l)" "$(echo "$hwm / 1024" | bc -l)"
  echo
  echo "Concurrent submits are group-committed (one transaction per queue of waiting submits); each job"
  echo "then costs three more fsync'd commits (SCHEDULED, RUNNING, end), one at a time: batching a"
  echo "pass's transitions is the next step toward 2,000/s. The scheduling pass at 10,000 GPUs and"
  echo "100,000 pending jobs is in schedule.md."
} >"$out"
cat "$out"
