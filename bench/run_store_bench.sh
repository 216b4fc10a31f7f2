#!/usr/bin/env bash
# The fleet store on PostgreSQL beside SQLite (issue 16), in the same run, written to
# bench/results/store.md:
#  1. durable HTTP submits per second from 8 clients (kept-alive connections, 3 s each) into a
#     busy `gpufleet up` (an 8-GPU job holds every GPU, so the submit path alone is measured),
#     ROUNDS times each, alternating the two stores; the median of the rounds;
#  2. submit -> running on an idle server, median of 30 one-at-a-time jobs, on each store;
#  3. a scheduling pass at 10,000 GPUs with 100,000 pending jobs (build/bench/store_pass_bench),
#     twice on each store, alternating.
# BASE=<another build directory> (of an earlier commit) measures (1) with its binaries too, in
# the same rounds: the baseline of a change. PostgreSQL 15 runs in a temporary directory on a
# Unix socket, with fsync on and synchronous_commit on (each acknowledged submit is on disk), as
# the SQLite store is (synchronous=FULL). Needs build/ (bash scripts/setup.sh --tests) and
# postgresql.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${ROUNDS:-3}
bin=$PWD/build/gpufleet
out=bench/results/store.md
cmake --build build --target gpufleet gpufleet-full submit_load store_pass_bench -j2 >/dev/null
base=${BASE:-}
if [ -n "$base" ]; then
  base=$(cd "$base" && pwd)
  [ -x "$base/gpufleet" ] || { echo "run_store_bench: no $base/gpufleet" >&2; exit 1; }
fi
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "run_store_bench: PostgreSQL is not installed" >&2; exit 1; }
work=$(mktemp -d /tmp/gfsb.XXXX)
pids=()
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  as_pg "$pgbin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=bench/bench_lib.sh
source bench/bench_lib.sh
[ "$(id -u)" = 0 ] && chown postgres "$work"
as_pg "$pgbin/initdb" -D "$work/pg" -A trust -U gpufleet >/dev/null
as_pg "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-k $work -c listen_addresses='' -c max_connections=50" start >/dev/null
databases=0
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Starts `gpufleet up` ($3, default $bin) on store $1 ("sqlite" or "pg", a fresh database each
# time) in data directory $2; waits for it.
start_up() {
  local exe=${3:-$bin}
  local args=(up --allow-root-jobs --data-dir "$2" --simulated-gpus 8)
  if [ "$1" = pg ]; then
    databases=$((databases + 1))
    as_pg "$pgbin/createdb" -h "$work" -U gpufleet "fleet$databases"
    args+=(--store "host=$work user=gpufleet dbname=fleet$databases" --listen "127.0.0.1:$(port)")
  else
    args+=(--listen 127.0.0.1:0); fi
  "$exe" "${args[@]}" >"$2.log" 2>&1 &
  pids+=("$!")
  wait_file "$2/server"
}
stop_last() { kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'; }

declare -A rates
builds=(new)
[ -n "$base" ] && builds+=(base)
for round in $(seq "$rounds"); do
  for build in "${builds[@]}"; do
    exe=$bin
    [ "$build" = base ] && exe=$base/gpufleet
    for store in sqlite pg; do
      dir=$work/busy-$build-$store-$round
      start_up "$store" "$dir" "$exe"
      blocker=$(GPUFLEET_DATA_DIR=$dir "$bin" submit --json --gpus 8 -- sleep 100000 | sed 's/[^0-9]//g')
      r=$(load "$dir" 8 3)
      rates[$build-$store]+="$r "
      echo "round $round: $build $store $r submits/s" >&2
      GPUFLEET_DATA_DIR=$dir "$bin" cancel "$blocker" >/dev/null 2>&1 || true
      sleep 1.5
      stop_last
      pkill -f "sleep 100000" 2>/dev/null || true
    done
  done
done
rate() { echo "${rates[$1]}" | tr ' ' '\n' | grep . | median; }
sqlite_rate=$(rate new-sqlite)
pg_rate=$(rate new-pg)

declare -A lat
for store in sqlite pg; do
  dir=$work/idle-$store
  start_up "$store" "$dir"
  sleep 1
  lat[$store]=$(latency "$dir")
  stop_last
done

{
  echo "# The fleet store: PostgreSQL beside SQLite"
  echo
  echo "\`bash bench/run_store_bench.sh\` (ROUNDS=$rounds) on $(nproc) CPUs, $(date -u +%F); \`gpufleet up\`"
  echo "with 8 simulated GPUs; PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}') on a Unix socket in /tmp (fsync on,"
  echo "synchronous_commit on), SQLite in /tmp (WAL, synchronous=FULL). Both in this run."
  echo
  echo "| figure | SQLite | PostgreSQL | PostgreSQL / SQLite | target |"
  echo "|---|---|---|---|---|"
  echo "| durable HTTP submits/s, 8 clients, busy cluster (median of $rounds x 3 s) | $sqlite_rate | $pg_rate | $(echo "scale=2; $pg_rate / $sqlite_rate" | bc -l) | >= 2000 on PostgreSQL |"
  echo "| submit -> running, idle server, median of 30 (ms) | ${lat[sqlite]} | ${lat[pg]} | | |"
  echo
  echo "Rounds (submits/s): SQLite ${rates[new-sqlite]}; PostgreSQL ${rates[new-pg]}."
  if [ -n "$base" ]; then
    echo
    echo "Baseline in the same rounds: \`BASE=<build of $(git -C "$base/.." log -1 --format=%h 2>/dev/null || echo ?)>\`:"
    echo "SQLite $(rate base-sqlite) submits/s (rounds ${rates[base-sqlite]}), PostgreSQL $(rate base-pg)"
    echo "(rounds ${rates[base-pg]})."
  fi
  echo
  echo "An HTTP submit costs one group-committed insert and nothing else on the store: the"
  echo "caller's token is checked from memory (\`Store::CredentialOf\`, forgotten on every change"
  echo "of users or tokens) and \`AddJob\` says whether a client token named an earlier job, so"
  echo "the controller no longer reads the job back. Before (the baseline), each submit also made"
  echo "two token reads and one job read, each waiting behind the commit in flight on the store's"
  echo "one connection."
  echo
  echo "## A scheduling pass at 10,000 GPUs with 100,000 pending jobs"
  echo
  echo "\`build/bench/store_pass_bench --store sqlite|postgresql\`, alternating, twice each (its"
  echo "header says what it does). \"lock held\" is the pass itself (the scheduler's decision and"
  echo "everything else the pass does under the controller's lock); the commit of its starts runs"
  echo "after it, with the lock released, before any of them launches."
  echo
  echo '```'
  for _ in 1 2; do
    for store in sqlite postgresql; do ./build/bench/store_pass_bench --store "$store"; done
  done
  echo '```'
} | tee "$out"
