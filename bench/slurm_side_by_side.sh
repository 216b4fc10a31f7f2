#!/usr/bin/env bash
# gpufleet and Slurm measured side by side on this machine, in alternating rounds (Slurm,
# gpufleet, Slurm, gpufleet, ...), each round with the rate at which a shell starts /bin/true as
# the machine-speed reference (issue 19). Writes bench/results/slurm_side_by_side.md.
#
# Slurm is Debian's slurm-wlm (22.05) with munge, installed here when missing (apt-get), tuned as
# the issue measured it: one node with 8 CPUs and 8 GPUs (character devices /dev/nvidia0..7,
# major 195, made with mknod and removed at the end: a GPU without its device file drains the
# node), SchedulerParameters=batch_sched_delay=0, select/cons_tres, no accounting, no cgroups.
# Both run their jobs as root.
#
# Figures per round (N sequential submits, M trivial jobs):
#   1. sequential CLI submits into a busy cluster (one job holds every GPU; the rest queue);
#   2. sequential CLI submits into an idle cluster (each job runs at once while the next comes);
#   3. M trivial 1-GPU jobs (`true`), submitted one after another: first submit to last end;
#   4. submit -> running, median of 20 jobs submitted one at a time;
#   5. the controller's peak RSS (slurmctld; gpufleet up) at the end of the round.
#
# Usage: bash bench/slurm_side_by_side.sh   (as root; N=200 M=500 ROUNDS=2 by default)
# Needs build/ (bash scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${N:-200}
M=${M:-500}
ROUNDS=${ROUNDS:-2}
out=bench/results/slurm_side_by_side.md
bin=$PWD/build/gpufleet
[ -x "$bin" ] || { echo "slurm_side_by_side.sh: build first (bash scripts/setup.sh)" >&2; exit 2; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null
fi

work=$(mktemp -d /tmp/gpufleet-vs-slurm.XXXX)
made_devices=()
pids=()
cleanup() {
  scancel --user=root >/dev/null 2>&1 || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "slurmctld -f $work" 2>/dev/null || true
  pkill -f "slurmd -f $work" 2>/dev/null || true
  pkill -f "munged.*$work" 2>/dev/null || true
  wait 2>/dev/null || true
  for d in "${made_devices[@]}"; do rm -f "$d"; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # through the EXIT trap
now() { date +%s.%N; }
rate() { echo "scale=1; $1 / ($3 - $2)" | bc; }  # count first last
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
true_rate() {
  local t0 t1
  t0=$(now)
  for _ in $(seq 200); do /bin/true; done
  t1=$(now)
  rate 200 "$t0" "$t1"
}

# --- Slurm --------------------------------------------------------------------------------------
for i in $(seq 0 7); do
  if [ ! -e "/dev/nvidia$i" ]; then
    mknod "/dev/nvidia$i" c 195 "$i"
    made_devices+=("/dev/nvidia$i")
  fi
done
mkdir -p "$work/state" "$work/spool" "$work/munge"
export MUNGE_SOCKET=$work/munge/socket
dd if=/dev/urandom of="$work/munge/key" bs=1024 count=1 status=none
chmod 0400 "$work/munge/key"
munged --force --socket "$MUNGE_SOCKET" --key-file "$work/munge/key" \
  --pid-file "$work/munge/pid" --log-file "$work/munge/log" --seed-file "$work/munge/seed"
conf=$work/slurm.conf
cat >"$conf" <<EOF
ClusterName=bench
SlurmctldHost=$(hostname -s)(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MpiDefault=none
SlurmdParameters=config_overrides
MinJobAge=2
NodeName=bench NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 Gres=gpu:8 State=UNKNOWN
PartitionName=main Nodes=bench Default=YES MaxTime=INFINITE State=UP
EOF
echo "NodeName=bench Name=gpu File=/dev/nvidia[0-7]" >"$work/gres.conf"
export SLURM_CONF=$conf
slurmctld -f "$conf" -i
slurmd -f "$conf" -N bench
for _ in $(seq 100); do
  sinfo -h -N -o %T 2>/dev/null | grep -qE '^idle' && break
  sleep 0.2
done
sinfo -h -N -o %T | grep -qE '^idle' || { echo "slurm did not come up:"; tail "$work"/*.log; exit 1; }

slurm_drain() { while [ -n "$(squeue -h -o %i 2>/dev/null)" ]; do sleep 0.05; done; }
slurm_round() {
  local t0 t1 holder id ids lat=()
  holder=$(sbatch --parsable --gres=gpu:8 -o /dev/null --wrap 'sleep 10000')
  t0=$(now)
  for _ in $(seq "$N"); do sbatch --parsable --gres=gpu:1 -o /dev/null --wrap true >/dev/null; done
  t1=$(now)
  s_busy=$(rate "$N" "$t0" "$t1")
  scancel --user=root
  slurm_drain
  t0=$(now)
  for _ in $(seq "$N"); do sbatch --parsable --gres=gpu:1 -o /dev/null --wrap true >/dev/null; done
  t1=$(now)
  s_idle=$(rate "$N" "$t0" "$t1")
  slurm_drain
  t0=$(now)
  for _ in $(seq "$M"); do sbatch --parsable --gres=gpu:1 -o /dev/null --wrap true >/dev/null; done
  slurm_drain
  t1=$(now)
  s_e2e=$(rate "$M" "$t0" "$t1")
  for _ in $(seq 20); do
    t0=$(now)
    id=$(sbatch --parsable --gres=gpu:1 -o /dev/null --wrap 'sleep 2')
    for _ in $(seq 3000); do
      [ "$(squeue -h -j "$id" -o %T 2>/dev/null)" = PENDING ] || break
      sleep 0.01
    done
    t1=$(now)
    lat+=("$(echo "($t1 - $t0) * 1000" | bc)")
    scancel "$id"
  done
  s_lat=$(printf '%s\n' "${lat[@]}" | median)
  s_rss=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$(cat "$work/slurmctld.pid")/status")
  slurm_drain
  : "$holder"
}

# --- gpufleet -----------------------------------------------------------------------------------
gpufleet_round() {
  local data t0 t1 pid id lat=() queue_json
  data=$(mktemp -d "$work/gpufleet.XXXX")
  export GPUFLEET_DATA_DIR=$data
  "$bin" up --simulated-gpus 8 --listen 127.0.0.1:0 --allow-root-jobs >"$data/up.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do [ -s "$data/server" ] && break; sleep 0.1; done
  queue_json() { curl -sf -H "Authorization: Bearer $(cat "$data/token")" "$(cat "$data/server")/v1/queue"; }
  drain() {
    for _ in $(seq 6000); do
      local q
      q=$(queue_json)
      echo "$q" | grep -q '"waiting":0[,}]' && echo "$q" | grep -q '"running":0[,}]' && return 0
      sleep 0.05
    done
  }
  local holder
  holder=$("$bin" submit --gpus 8 -- sleep 10000 | grep -o '[0-9]*$')
  t0=$(now)
  for _ in $(seq "$N"); do "$bin" submit --gpus 1 -- true >/dev/null; done
  t1=$(now)
  g_busy=$(rate "$N" "$t0" "$t1")
  "$bin" cancel "$holder" >/dev/null
  drain
  t0=$(now)
  for _ in $(seq "$N"); do "$bin" submit --gpus 1 -- true >/dev/null; done
  t1=$(now)
  g_idle=$(rate "$N" "$t0" "$t1")
  drain
  t0=$(now)
  for _ in $(seq "$M"); do "$bin" submit --gpus 1 -- true >/dev/null; done
  drain
  t1=$(now)
  g_e2e=$(rate "$M" "$t0" "$t1")
  for _ in $(seq 20); do
    t0=$(now)
    id=$("$bin" submit --gpus 1 -- sleep 2 | grep -o '[0-9]*$')
    for _ in $(seq 3000); do
      "$bin" show "$id" --json 2>/dev/null | grep -Eq '"state": ?"(PENDING|SCHEDULED)"' || break
      sleep 0.01
    done
    t1=$(now)
    lat+=("$(echo "($t1 - $t0) * 1000" | bc)")
    "$bin" cancel "$id" >/dev/null
  done
  g_lat=$(printf '%s\n' "${lat[@]}" | median)
  g_rss=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  unset GPUFLEET_DATA_DIR
}

rows=()
for round in $(seq "$ROUNDS"); do
  t_s=$(true_rate)
  slurm_round
  t_g=$(true_rate)
  gpufleet_round
  echo "round $round: /bin/true $t_s/s, $t_g/s; busy $s_busy vs $g_busy; idle $s_idle vs $g_idle;" \
    "e2e $s_e2e vs $g_e2e; latency $s_lat vs $g_lat ms; rss $s_rss vs $g_rss MB"
  rows+=("| $round | $t_s / $t_g | $s_busy / $g_busy ($(echo "scale=2; $g_busy / $s_busy" | bc)x) | $s_idle / $g_idle ($(echo "scale=2; $g_idle / $s_idle" | bc)x) | $s_e2e / $g_e2e ($(echo "scale=2; $g_e2e / $s_e2e" | bc)x) | $s_lat / $g_lat | $s_rss / $g_rss |")
done

{
  echo "# gpufleet and Slurm side by side"
  echo
  echo "\`bash bench/slurm_side_by_side.sh\` (N=$N sequential submits, M=$M trivial jobs, $ROUNDS rounds"
  echo "of Slurm then gpufleet) on $(nproc) CPUs, $(date -u +%Y-%m-%d). Slurm 22.05 (Debian's slurm-wlm,"
  echo "munge, slurmctld and slurmd on this machine, 8 CPUs and 8 GPUs declared, batch_sched_delay=0,"
  echo "cons_tres, no accounting or cgroups); gpufleet \`up\` with 8 simulated GPUs. Both run \`true\`"
  echo "as root. Each cell is Slurm / gpufleet, the ratio gpufleet over Slurm (higher is better for"
  echo "rates); the /bin/true rate before each system's part is the machine-speed reference."
  echo
  echo "| round | /bin/true per s | sequential CLI submit, busy cluster (jobs/s) | sequential CLI submit, idle cluster (jobs/s) | $M trivial jobs, first submit to last end (jobs/s) | submit -> running, median (ms) | controller peak RSS (MB) |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$out"
cat "$out"
