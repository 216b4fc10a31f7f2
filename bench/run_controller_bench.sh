#!/usr/bin/env bash
# Controller figures (issue 5), against Slurm 22.05's figures on the same kind of machine
# (2 cores, one node of 8 GPUs), written to bench/results/controller.md:
#  1. sequential `gpufleet submit` from the CLI (Slurm sbatch: 66 jobs/s), beside what bounds it
#     on this machine: the rate at which a shell starts /bin/true and `gpufleet --version`, and
#     one client's kept-alive HTTP submits (the server's own latency, fsync included);
#  2. durable HTTP submits from 8 concurrent clients (kept-alive connections), 3 s;
#     (1) and (2) twice: into a busy cluster (an 8-GPU job holds every GPU, so the submitted jobs
#     queue: the submit path alone), and into an idle one (each job starts at once, so the
#     server also launches and reaps them while it takes submits);
#  3. end-to-end throughput of trivial 1-GPU jobs (`true`) on 8 simulated GPUs (Slurm: 8.3/s):
#     the idle cluster's jobs of (2), from the first submit until the last has ended;
#  4. submit -> running on an idle server, median of 30 (Slurm: 0.89 s), on `gpufleet up` and
#     through a remote agent (`gpufleet controller` + `gpufleet agent --controller`);
#  5. the server's RSS with N finished jobs in the store (N=10000 for the issue's figure).
# Needs build/ (bash scripts/setup.sh). DATA_BASE picks the file system (default: /tmp).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake --build build --target gpufleet submit_load -j2 2>&1 | grep -v getaddrinfo >/dev/null || true
n=${N:-300}
bin=$PWD/build/gpufleet
out=bench/results/controller.md
base=${DATA_BASE:-/tmp}
export GPUFLEET_DATA_DIR
GPUFLEET_DATA_DIR=$(mktemp -d "$base/gpufleet-bench.XXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$GPUFLEET_DATA_DIR"
}
trap cleanup EXIT
# shellcheck source=bench/bench_lib.sh
source bench/bench_lib.sh
now() { date +%s.%N; }
queue() {  # the queue summary of the server whose data directory is $1
  curl -sf -H "Authorization: Bearer $(cat "$1/token")" "$(cat "$1/server")/v1/queue"
}
field() { sed "s/.*\"$1\":\([0-9]*\).*/\1/"; }

"$bin" up --allow-root-jobs --listen 127.0.0.1:0 --simulated-gpus 8 >"$GPUFLEET_DATA_DIR/up.log" 2>&1 &
up=$!
pids+=("$up")
wait_file "$GPUFLEET_DATA_DIR/server"

# Sequential CLI submits to the server of data directory $1: each a new process, an HTTP request
# and a committed transaction. Prints jobs/s.
sequential() {
  local t0 t1
  t0=$(now)
  for _ in $(seq "$n"); do GPUFLEET_DATA_DIR=$1 "$bin" submit -- true >/dev/null; done
  t1=$(now)
  echo "$n / ($t1 - $t0)" | bc -l
}

# 1a and 2a. A busy cluster: a job holds all 8 GPUs, so submitted jobs wait in the queue.
busy=$GPUFLEET_DATA_DIR/busy
"$bin" up --allow-root-jobs --data-dir "$busy" --listen 127.0.0.1:0 --simulated-gpus 8 >"$busy.log" 2>&1 &
pids+=("$!")
wait_file "$busy/server"
blocker=$(GPUFLEET_DATA_DIR=$busy "$bin" submit --json --gpus 8 -- sleep 100000 | sed 's/[^0-9]//g')
busy_submit_rate=$(sequential "$busy")
busy_concurrent_rate=$(load "$busy" 8 3)
busy_single_rate=$(load "$busy" 1 3)
busy_queued=$(queue "$busy" | field waiting)
GPUFLEET_DATA_DIR=$busy "$bin" cancel "$blocker" >/dev/null  # jobs outlive their server
sleep 1.5
kill "${pids[-1]}"

# 1b. Sequential CLI submits to the idle cluster, and what starting a process costs here.
submit_rate=$(sequential "$GPUFLEET_DATA_DIR")
t0=$(now); for _ in $(seq 300); do /bin/true; done; t1=$(now)
true_rate=$(echo "300 / ($t1 - $t0)" | bc -l)
t0=$(now); for _ in $(seq 300); do "$bin" --version >/dev/null; done; t1=$(now)
version_rate=$(echo "300 / ($t1 - $t0)" | bc -l)
while [ "$(queue "$GPUFLEET_DATA_DIR" | field waiting)" != 0 ] ||
  [ "$(queue "$GPUFLEET_DATA_DIR" | field running)" != 0 ]; do sleep 0.05; done

# 2 and 3. Concurrent durable submits, then until every one of them has run.
before=$(queue "$GPUFLEET_DATA_DIR" | field finished)
t0=$(now)
load=$(./build/bench/submit_load "$(cat "$GPUFLEET_DATA_DIR/server")" "$(cat "$GPUFLEET_DATA_DIR/token")" 8 3 || true)
concurrent_rate=$(echo "$load" | sed 's/.*, \([0-9]*\) jobs\/s/\1/')
submitted=$(echo "$load" | sed 's/.*acknowledged \([0-9]*\),.*/\1/')
while [ "$(queue "$GPUFLEET_DATA_DIR" | field finished)" -lt $((before + submitted)) ]; do sleep 0.05; done
t2=$(now)
e2e_rate=$(echo "$submitted / ($t2 - $t0)" | bc -l)

# 4. Submit -> running on the idle server.
median_up=$(latency "$GPUFLEET_DATA_DIR")
rss=$(awk '/^VmRSS/ {print $2}' /proc/$up/status)
hwm=$(awk '/^VmHWM/ {print $2}' /proc/$up/status)
finished=$(queue "$GPUFLEET_DATA_DIR" | field finished)

# 4b. The same through a remote agent, at the default heartbeat (1 s) and at 0.1 s.
remote() {
  local dir=$GPUFLEET_DATA_DIR/remote-$1
  local controller agent median
  "$bin" controller --data-dir "$dir" --listen 127.0.0.1:0 >"$dir.log" 2>&1 &
  controller=$!
  wait_file "$dir/server"
  "$bin" agent --allow-root-jobs --controller "$(cat "$dir/server")" --token-file "$dir/token" --hostname gpu-a \
    --data-dir "$dir/agent" --listen 127.0.0.1:0 --simulated-gpus 8 --heartbeat "$1" \
    >"$dir.agent.log" 2>&1 &
  agent=$!
  sleep 1.5
  median=$(latency "$dir")
  # This runs in a command substitution (a subshell): the cleanup trap would not see these.
  kill "$agent" "$controller"
  wait "$agent" "$controller" 2>/dev/null || true
  echo "$median"
}
median_remote_1=$(remote 1)
median_remote_01=$(remote 0.1)

{
  echo "# Controller figures"
  echo
  echo "\`bash bench/run_controller_bench.sh\` (N=$n) on $(nproc) CPUs, $(date -u +%F); 8 simulated GPUs;"
  echo "data on $(df --output=fstype "$base" | tail -1) ($base); the store commits with synchronous=FULL."
  echo "Ratios are against Slurm 22.05 on the same kind of machine."
  echo
  echo "| figure | gpufleet | Slurm | ratio | target (10x Slurm) |"
  echo "|---|---|---|---|---|"
  printf "| sequential CLI submit, busy cluster (jobs queue) | %.0f jobs/s | 66 jobs/s | %.2fx | 660 jobs/s |\n" "$busy_submit_rate" "$(echo "$busy_submit_rate / 66" | bc -l)"
  printf "| sequential CLI submit, idle cluster (each job runs at once) | %.0f jobs/s | 66 jobs/s | %.2fx | 660 jobs/s |\n" "$submit_rate" "$(echo "$submit_rate / 66" | bc -l)"
  printf "| (bounds: a shell starting \`/bin/true\`; \`gpufleet --version\`; one client's kept-alive HTTP submits, busy cluster) | %.0f/s; %.0f/s; %s/s | | | |\n" "$true_rate" "$version_rate" "$busy_single_rate"
  printf "| durable HTTP submits, 8 concurrent clients, busy cluster (%s jobs queued) | %s jobs/s | | | 2,000 jobs/s |\n" "$busy_queued" "$busy_concurrent_rate"
  printf "| durable HTTP submits, 8 concurrent clients, idle cluster (the server also runs them) | %s jobs/s | | | 2,000 jobs/s |\n" "$concurrent_rate"
  printf "| end-to-end trivial 1-GPU jobs (%s jobs: first submit to last end) | %.1f jobs/s | 8.3 jobs/s | %.1fx | 83 jobs/s |\n" "$submitted" "$e2e_rate" "$(echo "$e2e_rate / 8.3" | bc -l)"
  printf "| submit -> running, \`gpufleet up\`, median | %d ms | 890 ms | %.0fx faster | 90 ms |\n" "$median_up" "$(echo "890 / ($median_up + 0.001)" | bc -l)"
  printf "| submit -> running, remote agent, heartbeat 1 s (default), median | %d ms | 890 ms | %.1fx faster | |\n" "$median_remote_1" "$(echo "890 / ($median_remote_1 + 0.001)" | bc -l)"
  printf "| submit -> running, remote agent, heartbeat 0.1 s, median | %d ms | 890 ms | %.1fx faster | |\n" "$median_remote_01" "$(echo "890 / ($median_remote_01 + 0.001)" | bc -l)"
  printf "| server RSS (peak) with %d finished jobs in the store | %.1f MB (%.1f MB) | 230-260 MB (thousands of jobs) | | 50 MB at 10,000 |\n" "$finished" "$(echo "$rss / 1024" | bc -l)" "$(echo "$hwm / 1024" | bc -l)"
  echo
  printf "\nWhat bounds a sequential CLI submit here, whatever the client: the shell starts a process\n"
  printf "(%.2f ms for \`/bin/true\`), then the server answers one durable submit (%.2f ms on a\n" "$(echo "1000 / $true_rate" | bc -l)" "$(echo "1000 / $busy_single_rate" | bc -l)"
  printf "kept-alive connection, its fdatasync included): at best %.0f jobs/s, below the 660/s target.\n" "$(echo "1 / (1 / $true_rate + 1 / $busy_single_rate)" | bc -l)"
  echo "\`gpufleet\` is a static program that needs only the C library and runs the client commands"
  echo "itself (it starts as fast as \`/bin/true\`); it execs \`gpufleet-full\` for the servers."
  echo "Scripts that submit many jobs should use the HTTP API (figure 2). In the busy cluster the"
  echo "submitted jobs wait behind a job that holds every GPU: the figure is the submit path"
  echo "(HTTP, JSON, auth, idempotency check, group commit with fdatasync). In the idle cluster the"
  echo "same 2 cores also launch and reap every job. Job state changes are committed in batches"
  echo "(one commit per pass for placements and ends, one per local launch); what remains per job"
  echo "is two files (log, exit record) and a posix_spawn of the small static job shim (no fork"
  echo "of the server). A remote agent's heartbeat is a"
  echo "long poll: the controller answers it as soon as it has work for that node, and the agent"
  echo "reports the launch at once, so the heartbeat period does not bound submit -> running. The"
  echo "scheduling pass at 10,000 GPUs and 100,000 pending jobs is in schedule.md."
} >"$out"
cat "$out"
