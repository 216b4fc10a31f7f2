# Shared by the evaluation-grid scripts (sim_queue_grid.sh, sim_elastic_grid.sh); sourced, not run.
# They set `tmp` (a scratch directory) before calling these.

# cluster_toml NAME NODES: the path of a TOML cluster of NODES 8-GPU V100 nodes, written in $tmp.
cluster_toml() {
  local f="$tmp/$1.toml"
  printf 'name = "%s"\n[[nodes]]\ncount = %d\ngpus = 8\ngpu_model = "V100M32"\ncpu_cores = 64\nmemory_gib = 512\n' \
    "$1" "$2" > "$f"
  echo "$f"
}

# philly_demand FILE: the Philly trace's average GPU demand, all GPU-seconds over the span of
# submit times (the timestamps sort as text), to one decimal.
philly_demand() {
  local first last gpu_s span
  read -r first last gpu_s < <(awk -F, 'NR > 1 && $1 != "" {
      if (first == "" || $1 < first) first = $1; if ($1 > last) last = $1; g += $4 }
    END { gsub(/ /, "T", first); gsub(/ /, "T", last); printf "%s %s %.0f\n", first, last, g }' \
    "$1")
  span=$(( $(date -u -d "$last" +%s) - $(date -u -d "$first" +%s) ))
  awk -v g="$gpu_s" -v s="$span" 'BEGIN { printf "%.1f", g / s }'
}

# nodes_for DEMAND FACTOR: 8-GPU nodes for DEMAND x FACTOR GPUs, rounded.
nodes_for() {
  awk -v d="$1" -v f="$2" 'BEGIN { printf "%d", int(d * f / 8 + 0.5) }'
}
