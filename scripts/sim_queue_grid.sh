#!/bin/bash
# The queue-policy evaluation grid of docs/sim/queue-grid.md (issue 18, section 1): every queue
# policy named below on
#   - Microsoft Philly (../shared/traces/philly) on clusters of 8-GPU nodes sized to the trace's
#     average GPU demand x 1.0, 1.25 and 1.5, and on philly-512 (the size the policies were first
#     compared at);
#   - synthetic traces (`gpufleet sim generate`): 4 run-time shapes x 3 GPU-count mixes x 3 loads
#     on 512 GPUs, from an evaluation seed that no parameter was chosen on.
# Writes OUT/grid.csv (one row per point and policy) and OUT/grid.md (the tables).
# Usage: scripts/sim_queue_grid.sh [OUT_DIR]   (default docs/sim/queue-grid)
# Environment: GPUFLEET (binary, default build/gpufleet), PHILLY (trace CSV), JOBS (synthetic jobs
# per trace, default 20000), SEED (default 202), POLICIES (comma list).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/sim/queue-grid}
bin=${GPUFLEET:-build/gpufleet}
philly=${PHILLY:-../shared/traces/philly/philly_pollux_osdi21.csv}
jobs=${JOBS:-20000}
seed=${SEED:-202}
policies=${POLICIES:-fifo,qssf,tiresias,las-qssf,gittins}
[ -x "$bin" ] || { echo "error: $bin not built (cmake --build build --target gpufleet)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
csv="$out/grid.csv"
echo "trace,point,policy,jobs,avg_jct_h,p99_jct_h,makespan_d,utilization,preemptions" > "$csv"

# run POINT TRACE CLUSTER: appends one row per policy.
run() {
  local point=$1 trace=$2 cluster=$3 dir="$tmp/run"
  rm -rf "$dir"
  "$bin" sim compare --trace "$trace" --cluster "$cluster" --policies "$policies" --threads 2 \
    --out "$dir" > /dev/null
  awk -F, -v trace="${trace%%:*}" -v point="$point" 'NR > 1 {
      printf "%s,%s,%s,%d,%.3f,%.3f,%.2f,%.4f,%d\n", trace, point, $1, $2, $5 / 3600, $8 / 3600,
             $10 / 86400, $11, $12 }' "$dir/compare.csv" >> "$csv"
}

# shellcheck source=scripts/sim_grid_lib.sh
source scripts/sim_grid_lib.sh

if [ -f "$philly" ]; then
  demand=$(philly_demand "$philly")
  echo "Philly: average GPU demand $demand GPUs" >&2
  for f in 1.0 1.25 1.5; do
    nodes=$(nodes_for "$demand" "$f")
    run "demand x$f ($nodes nodes)" "philly:$philly" "$(cluster_toml "philly-$nodes" "$nodes")"
  done
  run "philly-512 (64 nodes)" "philly:$philly" philly-512
else
  echo "NOTE: $philly not found: the Philly rows are skipped" >&2
fi

for d in heavy bimodal narrow pareto; do
  for s in small mixed large; do
    for load in 0.9 1.05 1.2; do
      t="$tmp/$d-$s-$load.csv"
      "$bin" sim generate --durations "$d" --sizes "$s" --load "$load" --jobs "$jobs" \
        --cluster-gpus 512 --seed "$seed" --out "$t"
      run "$d/$s/load $load" "csv:$t" philly-512
    done
  done
done

# The tables: per point, each policy's average JCT, then the target's ratios against Tiresias.
target=${TARGET:-gittins}
awk -F, -v target="$target" -v policies="$policies" '
  NR == 1 { next }
  { key = $1 SUBSEP $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    avg[key, $3] = $5; p99[key, $3] = $6; mk[key, $3] = $7 }
  END {
    np = split(policies, pol, ",")
    printf "| trace | point |"; for (i = 1; i <= np; i++) printf " %s |", pol[i]
    printf " %s / tiresias avg | p99 tiresias | p99 %s | %s / tiresias p99 | makespan tiresias / %s (d) |\n", target, target, target, target
    printf "|---|---|"; for (i = 1; i <= np + 5; i++) printf "---|"; printf "\n"
    for (k = 1; k <= n; k++) {
      key = order[k]; split(key, part, SUBSEP)
      printf "| %s | %s |", part[1], part[2]
      best = ""; for (i = 1; i <= np; i++) if (best == "" || avg[key, pol[i]] < avg[key, best]) best = pol[i]
      for (i = 1; i <= np; i++) printf (pol[i] == best ? " **%.2f** |" : " %.2f |"), avg[key, pol[i]]
      ra = avg[key, target] / avg[key, "tiresias"]; rp = p99[key, target] / p99[key, "tiresias"]
      if (ra < 1) wa++; if (rp <= 1) wp++
      printf " %.3f | %.1f | %.1f | %.3f | %.1f / %.1f |\n", ra, p99[key, "tiresias"], p99[key, target], rp, mk[key, "tiresias"], mk[key, target]
      lr += log(ra); lp += log(rp)
    }
    printf "\n%s: average JCT below Tiresias at %d of %d points (geometric mean of the ratio %.3f); p99 no worse at %d of %d (geometric mean %.3f). Average JCT in hours.\n", target, wa, n, exp(lr / n), wp, n, exp(lp / n)
  }' "$csv" > "$out/grid.md"
echo "wrote $csv and $out/grid.md" >&2
